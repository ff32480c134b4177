"""llm-roofline engine: how fast would this LLM run on that chip, and why.

    import engine
    hw = engine.load_hardware("H100-SXM")
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    result = engine.estimate(hw, model, engine.Scenario(phase="request", batch=8))
    result.kernels, result.phases, result.ttft_s, result.tpot_s

    model = engine.load_any_model("path/to/config.json")   # a hand model, else traced (optional `auto` extra)
    engine.fewest_devices(hw, model, scenario)              # smallest tp x pp layout that fits
    engine.sweep(hw, model, scenario, "batch", [1, 8, 64])  # one row per value and phase
    engine.layout_sweep(hw, model, scenario, "tp", (1, 2, 4, 8))
    engine.roofline_ceilings(hw)                            # compute and memory ceilings of a device

    # a grid of scenario and hardware fields, one row per point (docs/sweeps.md)
    engine.sweep_grid(model, engine.Scenario(phase="decode"),
                      {"batch": [1, 8, 64], "memory_bandwidth": [2000, 3350, 4800], "device": ["H100-SXM", "B200"]})
    engine.sweep_points(model, scenario, points_frame, hardware=hw)   # an explicit list of points
    engine.sweep_grid_dask(model, scenario, grid, hardware=hw, address="tcp://scheduler:8786")  # on Dask

    # which knob matters, and how much of it is enough (docs/design_space.md)
    from engine.explore.sensitivity import sensitivity
    sensitivity(model, scenario, hw, change=0.2)                              # +/-20% on each hardware field
    engine.least_value(model, scenario, hw, "memory_bandwidth", "tpot_s", 0.020)  # least bandwidth for TPOT <= 20 ms

    # serving at a fixed concurrency: closed-loop clients, continuous batching (docs/serving.md)
    engine.serve(hw, model, concurrency=32, input_length=1024, output_length=1024, method="realistic")
    # the design space: layouts x concurrency x token budget, Pareto front, SLA, fewest devices (docs/serving.md)
    engine.serving_search(hw, model, devices=8, sla=engine.SLA(ttft_max_s=0.5, tpot_max_s=0.02), requests_per_s=20)

The engine never imports streamlit or plotly.
"""

import importlib
import importlib.util

# Public name -> the module that defines it. Nothing is imported until a name is first used, so
# `import engine` stays light (pandas, openpyxl and the workbook load with the first estimate).
_PUBLIC = {
    "is_automatic": "engine.decomposition.auto", "load_any_model": "engine.decomposition.auto",
    "roofline_ceilings": "engine.hardware.ceilings",
    "decompose": "engine.decomposition.transformer",
    "decompose_seed": "engine.decomposition.seed",
    "BYTES_PER_VALUE": "engine.hardware.dtypes", "bytes_per_value": "engine.hardware.dtypes",
    "ScenarioError": "engine.results.run", "estimate": "engine.results.run", "estimate_gemm": "engine.results.run",
    "METHODS": "engine.estimators", "get_method": "engine.estimators",
    "GridError": "engine.explore.grid", "sweep_grid": "engine.explore.grid", "sweep_points": "engine.explore.grid",
    "Hardware": "engine.hardware.device",
    "least_value": "engine.explore.inverse",
    "layout_sweep": "engine.explore.layout_sweep",
    "fewest_devices": "engine.results.memory",
    "Estimate": "engine.results.report",
    "sweep": "engine.explore.sweeps",
    "PHASES": "engine.workload.scenario", "Scenario": "engine.workload.scenario",
    "load_hardware": "engine.hardware.specs", "load_specs": "engine.hardware.specs",   # openpyxl and the workbook
    "load_model": "engine.models", "ModelConfig": "engine.models", "catalog_ids": "engine.models",
    "serve": "engine.serving", "serving_curve": "engine.serving", "ServingOptions": "engine.serving",
    "serving_search": "engine.serving", "SLA": "engine.serving",
    "sweep_grid_dask": "engine.explore.dask_cluster",   # Dask itself is imported only when a Dask sweep runs
}

__all__ = [
    "BYTES_PER_VALUE", "Estimate", "Hardware", "METHODS", "PHASES", "Scenario", "ScenarioError",
    "bytes_per_value", "decompose", "decompose_seed", "estimate", "estimate_gemm", "fewest_devices", "get_method",
    "is_automatic", "layout_sweep", "load_any_model", "load_hardware", "load_model", "load_specs", "ModelConfig",
    "roofline_ceilings", "sweep", "sweep_grid", "sweep_points", "sweep_grid_dask", "GridError", "least_value",
    "serve", "serving_curve", "ServingOptions", "serving_search", "SLA",
]


def _public(name: str):
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value          # later lookups skip __getattr__
    return value


def __getattr__(name):
    if name in _PUBLIC:
        return _public(name)
    if not name.startswith("_") and importlib.util.find_spec(f"engine.{name}") is not None:
        return importlib.import_module(f"engine.{name}")     # a subpackage: engine.models, engine.hardware.device, ...
    raise AttributeError(f"module 'engine' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
