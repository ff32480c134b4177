"""Layer 6, many runs: grids of scenario and hardware fields (grid.py, grid_spec.py, points.py, evaluation.py,
variants.py, model_axis.py, dask_cluster.py), one-field sweeps, layout sweeps, sensitivity and inverse design.

Layers and import rules: docs/architecture.md."""
