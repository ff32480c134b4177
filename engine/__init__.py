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
    engine.sensitivity(model, scenario, hw, change=0.2)                           # +/-20% on each hardware field
    engine.least_value(model, scenario, hw, "memory_bandwidth", "tpot_s", 0.020)  # least bandwidth for TPOT <= 20 ms

    # serving at a fixed concurrency: closed-loop clients, continuous batching (docs/serving.md)
    engine.serve(hw, model, concurrency=32, input_length=1024, output_length=1024, method="realistic")
    # the design space: layouts x concurrency x token budget, Pareto front, SLA, fewest devices (docs/serving.md)
    engine.serving_search(hw, model, devices=8, sla=engine.SLA(ttft_max_s=0.5, tpot_max_s=0.02), requests_per_s=20)

The engine never imports streamlit or plotly.
"""

import importlib
import importlib.util

# Public name -> the module that defines it ("module" or "module:attribute" where the public name differs from
# the name inside the module; "module:" for a module offered whole). Nothing is imported until a name is first
# used, so `import engine` stays light (pandas, openpyxl and the workbook load with the first estimate).
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
    "layout_sweep": "engine.explore.layouts",
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

# What front ends (the dashboard, notebooks building their own views) need beyond the estimate itself: workbook
# fields and edits, dtypes, model configs, grid specs, sensitivity, serving workloads, validity notes, safe
# table exports, calibration data and number formatting. Same lazy rule as above.
_FRONT_END = {
    # hardware: workbook fields, the workbook's sources and writer, what-if edits, dtypes, link ceilings
    "WORKBOOK_FIELDS": "engine.hardware.device", "WORKBOOK_FIELD_BY_KEY": "engine.hardware.device",
    "load_sources": "engine.hardware.specs", "write_specs": "engine.hardware.specs",
    "EditError": "engine.hardware.what_if", "apply_edits": "engine.hardware.what_if",
    "workbook_values": "engine.hardware.what_if",
    "DTYPES": "engine.hardware.dtypes", "check_dtype": "engine.hardware.dtypes",
    "interconnect_ceilings": "engine.estimators.collectives",
    # models: catalog, config.json parsing and validation, the automatic decomposition
    "SUPPORTED_MODEL_TYPES": "engine.models", "ModelConfigError": "engine.models",
    "load_catalog_config": "engine.models", "parse_config_json": "engine.models.validation",
    "AutoModel": "engine.decomposition.auto", "auto_available": "engine.decomposition.auto:available",
    # methods: which are calibrated, and what each estimate cannot express
    "REALISTIC_METHODS": "engine.estimators.validity", "validation_notes": "engine.estimators.validity",
    # explore: grid fields and specs, metrics of one estimate, batch values, sensitivity
    "HARDWARE_FIELDS": "engine.explore.grid", "field_unit": "engine.explore.grid",
    "metrics_from_estimate": "engine.explore.grid",
    "is_geometric": "engine.explore.grid_spec", "parse_numbers": "engine.explore.grid_spec",
    "batch_sweep_values": "engine.explore.sweeps",
    "sensitivity": "engine.explore.hardware_sensitivity",
    "hardware_base_value": "engine.explore.hardware_sensitivity:base_value",
    "is_integer_field": "engine.explore.hardware_sensitivity:is_integer",
    # serving workloads
    "WORKLOADS": "engine.serving", "WORKLOAD_LABELS": "engine.serving",
    "doubling_concurrencies": "engine.serving", "expected_tokens_per_step": "engine.serving",
    "check_backend_device": "engine.serving.backends",
    # calibration: measured data and scoring (the module), scenario kinds, silicon results files
    "calibration_measurements": "engine.calibration.measurements:",
    "SCENARIO_KINDS": "engine.calibration.scenarios",
    "read_results": "engine.calibration.silicon.results", "ResultsFileError": "engine.calibration.silicon.results",
    "SERVING_BREAKDOWNS": "engine.calibration.silicon.results",
    "results_with_verdicts": "engine.calibration.silicon.targets:with_verdicts",
    # exports: cells that would run as formulas in a spreadsheet are neutralised
    "neutralise_table": "engine.common.table_safety", "to_safe_csv": "engine.common.table_safety",
    # numbers for people: each value in the unit that suits it (the module: duration, data_size, energy, ...)
    "readable": "engine.common.readable:",
}
_PUBLIC.update(_FRONT_END)

__all__ = [
    "BYTES_PER_VALUE", "Estimate", "Hardware", "METHODS", "PHASES", "Scenario", "ScenarioError",
    "bytes_per_value", "decompose", "decompose_seed", "estimate", "estimate_gemm", "fewest_devices", "get_method",
    "is_automatic", "layout_sweep", "load_any_model", "load_hardware", "load_model", "load_specs", "ModelConfig",
    "roofline_ceilings", "sweep", "sweep_grid", "sweep_points", "sweep_grid_dask", "GridError", "least_value",
    "serve", "serving_curve", "ServingOptions", "serving_search", "SLA", "catalog_ids",
    *_FRONT_END,
]


def _public(name: str):
    module_name, _, attribute = _PUBLIC[name].partition(":")
    module = importlib.import_module(module_name)
    value = module if ":" in _PUBLIC[name] and not attribute else getattr(module, attribute or name)
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
