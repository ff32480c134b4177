"""Model configurations: parse a Hugging Face config.json and count what it implies.

    from engine.models import load_model
    model = load_model("meta-llama/Llama-3.1-8B")   # bundled copy: works offline
    model.params_total, model.kv_cache_bytes_per_token("fp8")
    model.params_active, model.layer_pattern(), model.kv_cache_bytes(32768, "bf16")   # MoE, MLA, windows

Sources, in order: the bundled catalog (`catalog_ids()`), a local config.json or a folder
holding one, then the Hugging Face Hub (honouring offline mode and the local cache).
"""

from engine.models.config import SUPPORTED_MODEL_TYPES, ModelConfig, ModelConfigError
from engine.models.loading import ModelLoadError, catalog_ids, load_catalog_config, load_model

__all__ = [
    "SUPPORTED_MODEL_TYPES",
    "ModelConfig",
    "ModelConfigError",
    "ModelLoadError",
    "catalog_ids",
    "load_catalog_config",
    "load_model",
]
