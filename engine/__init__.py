"""llm-roofline engine: how fast would this LLM run on that chip, and why.

    import engine
    hw = engine.load_hardware("H100-SXM")
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    result = engine.estimate(hw, model, engine.Scenario(phase="request", batch=8))
    result.kernels, result.phases, result.ttft_s, result.tpot_s

The engine never imports streamlit or plotly.
"""

from engine.ceilings import roofline_ceilings
from engine.decompose import decompose
from engine.decompose_seed import decompose_seed
from engine.dtypes import BYTES_PER_VALUE, bytes_per_value
from engine.estimate import ScenarioError, estimate, estimate_gemm
from engine.estimators import METHODS, get_method
from engine.hardware import Hardware
from engine.report import Estimate
from engine.workload import PHASES, Scenario

__all__ = [
    "BYTES_PER_VALUE", "Estimate", "Hardware", "METHODS", "PHASES", "Scenario", "ScenarioError",
    "bytes_per_value", "decompose", "decompose_seed", "estimate", "estimate_gemm", "get_method",
    "load_hardware", "load_model", "load_specs", "ModelConfig", "roofline_ceilings",
]


def __getattr__(name):  # specs and models load lazily (openpyxl, huggingface_hub)
    if name in ("load_hardware", "load_specs"):
        from engine import specs
        return getattr(specs, name)
    if name in ("load_model", "ModelConfig", "catalog_ids"):
        from engine import models
        return getattr(models, name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
