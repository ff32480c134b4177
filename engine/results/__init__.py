"""Layer 5, one run and what it reports: `estimate` (run.py), the Estimate and its metrics (report.py), its
numpy bookkeeping (columns.py), memory per device (memory.py) and energy (energy.py).

Layers and import rules: docs/architecture.md."""
