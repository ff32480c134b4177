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
    from engine.sensitivity import sensitivity
    sensitivity(model, scenario, hw, change=0.2)                              # +/-20% on each hardware field
    engine.least_value(model, scenario, hw, "memory_bandwidth", "tpot_s", 0.020)  # least bandwidth for TPOT <= 20 ms

    # serving at a fixed concurrency: closed-loop clients, continuous batching (docs/serving.md)
    engine.serve(hw, model, concurrency=32, input_length=1024, output_length=1024, method="realistic")
    # the design space: layouts x concurrency x token budget, Pareto front, SLA, fewest devices (docs/serving.md)
    engine.serving_search(hw, model, devices=8, sla=engine.SLA(ttft_max_s=0.5, tpot_max_s=0.02), requests_per_s=20)

The engine never imports streamlit or plotly.
"""

from engine.auto import is_automatic, load_any_model
from engine.ceilings import roofline_ceilings
from engine.decompose import decompose
from engine.decompose_seed import decompose_seed
from engine.dtypes import BYTES_PER_VALUE, bytes_per_value
from engine.estimate import ScenarioError, estimate, estimate_gemm
from engine.estimators import METHODS, get_method
from engine.grid import GridError, sweep_grid, sweep_points
from engine.hardware import Hardware
from engine.inverse import least_value
from engine.layout_sweep import layout_sweep
from engine.memory import fewest_devices
from engine.report import Estimate
from engine.sweeps import sweep
from engine.workload import PHASES, Scenario

__all__ = [
    "BYTES_PER_VALUE", "Estimate", "Hardware", "METHODS", "PHASES", "Scenario", "ScenarioError",
    "bytes_per_value", "decompose", "decompose_seed", "estimate", "estimate_gemm", "fewest_devices", "get_method",
    "is_automatic", "layout_sweep", "load_any_model", "load_hardware", "load_model", "load_specs", "ModelConfig",
    "roofline_ceilings", "sweep", "sweep_grid", "sweep_points", "sweep_grid_dask", "GridError", "least_value",
    "serve", "serving_curve", "ServingOptions", "serving_search", "SLA",
]


def __getattr__(name):  # specs and models load lazily (openpyxl, huggingface_hub)
    if name in ("load_hardware", "load_specs"):
        from engine import specs
        return getattr(specs, name)
    if name in ("load_model", "ModelConfig", "catalog_ids"):
        from engine import models
        return getattr(models, name)
    if name in ("serve", "serving_curve", "ServingOptions", "serving_search", "SLA"):   # engine/serving (docs/serving.md)
        from engine import serving
        return getattr(serving, name)
    if name == "sweep_grid_dask":   # Dask itself is imported only when a Dask sweep runs
        from engine.grid_dask import sweep_grid_dask
        return sweep_grid_dask
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
