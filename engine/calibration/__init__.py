"""Layer 6, against measurements: kernel times from files and GPUs (measurements.py, scenarios.py), fitting the
realistic method (fit.py), and public silicon tables across devices (silicon/).

Layers and import rules: docs/architecture.md."""
