"""Dashboard views (one per page): each renders one view from a PageContext (thin: engine math, chart builders)."""
