"""Layer 1, what is asked: the `Scenario` (scenario.py) and how the model is split over devices (parallel.py).

Layers and import rules: docs/architecture.md."""
