"""Shared helpers every layer may use: one-line errors, numbers for people, spreadsheet-safe tables.

Layers and import rules: docs/architecture.md."""
