"""Model families: which parser maps a Hugging Face `model_type`'s config.json onto ModelConfig fields.

`parse_hf_config` picks the parser from FAMILIES (by `model_type`, else by the `architectures` class) and
rejects fields a family does not model (mixture of experts, latent attention), naming the field. The parsers
live by kind: families_dense.py (Llama-style and LayerNorm decoders), families_gemma.py (Gemma 2/3),
families_moe.py (Mixtral, Qwen-MoE, DeepSeek, Kimi, gpt-oss, MiniMax); the readers they share are in
decoder_fields.py. Every field is read through ConfigReader, so a bad or missing value raises
ModelConfigError naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.models.config_reader import ConfigReader, ModelConfigError, field_error
from engine.models.decoder_fields import Fields
from engine.models.families_dense import parse_gpt2, parse_gpt_neox, parse_llama_family, parse_opt, parse_phi3, \
    parse_qwen3
from engine.models.families_gemma import parse_gemma2, parse_gemma3, parse_gemma3_text
from engine.models.families_moe import parse_deepseek, parse_gpt_oss, parse_kimi_k25, parse_minimax_m2, \
    parse_mixtral, parse_qwen_moe

# Fields that mean "mixture of experts" or "multi-head latent attention". A family that does not model
# them rejects a config that sets them, naming the field.
MOE_AND_MLA_FIELDS: dict[str, str] = {
    "num_local_experts": "mixture of experts",
    "num_experts": "mixture of experts",
    "n_routed_experts": "mixture of experts",
    "moe_intermediate_size": "mixture of experts",
    "q_lora_rank": "multi-head latent attention (DeepSeek MLA)",
    "kv_lora_rank": "multi-head latent attention (DeepSeek MLA)",
}


@dataclass(frozen=True)
class Family:
    parse: Callable[[ConfigReader], Fields]
    uses: frozenset[str] = frozenset()  # which MOE_AND_MLA_FIELDS this family models


_QWEN_MOE_FIELDS = frozenset({"num_experts", "moe_intermediate_size"})
_DEEPSEEK_FIELDS = frozenset({"n_routed_experts", "moe_intermediate_size", "q_lora_rank", "kv_lora_rank"})

FAMILIES: dict[str, Family] = {
    "llama": Family(parse_llama_family),
    "mistral": Family(parse_llama_family),
    "qwen2": Family(parse_llama_family),
    "gpt2": Family(parse_gpt2),
    "gpt_neox": Family(parse_gpt_neox),
    "opt": Family(parse_opt),
    "mixtral": Family(parse_mixtral, frozenset({"num_local_experts"})),
    "qwen2_moe": Family(parse_qwen_moe, _QWEN_MOE_FIELDS),
    "qwen3": Family(parse_qwen3),
    "qwen3_moe": Family(parse_qwen_moe, _QWEN_MOE_FIELDS),
    "deepseek_v2": Family(parse_deepseek, _DEEPSEEK_FIELDS),
    "deepseek_v3": Family(parse_deepseek, _DEEPSEEK_FIELDS),
    "gemma2": Family(parse_gemma2),
    "gemma3": Family(parse_gemma3),
    "gemma3_text": Family(parse_gemma3_text),
    "phi3": Family(parse_phi3),
    "gpt_oss": Family(parse_gpt_oss, frozenset({"num_local_experts"})),
    "kimi_k2": Family(parse_deepseek, _DEEPSEEK_FIELDS),   # Kimi-K2: DeepSeek-V3 shapes
    "kimi_k25": Family(parse_kimi_k25),     # its MoE and MLA fields are under text_config
    "minimax_m2": Family(parse_minimax_m2, frozenset({"num_local_experts"})),
}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(FAMILIES)

# When a config has no model_type, its architecture class tells us the family.
ARCHITECTURE_TO_MODEL_TYPE: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "GPT2LMHeadModel": "gpt2",
    "GPTNeoXForCausalLM": "gpt_neox",
    "OPTForCausalLM": "opt",
    "MixtralForCausalLM": "mixtral",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "Gemma3ForConditionalGeneration": "gemma3",
    "Phi3ForCausalLM": "phi3",
    "GptOssForCausalLM": "gpt_oss",
    "KimiK25ForConditionalGeneration": "kimi_k25",
    "MiniMaxM2ForCausalLM": "minimax_m2",
}


def model_type_of(data: dict) -> str:
    model_type = data.get("model_type")
    if model_type is None:
        for architecture in data.get("architectures") or ():
            if architecture in ARCHITECTURE_TO_MODEL_TYPE:
                return ARCHITECTURE_TO_MODEL_TYPE[architecture]
        raise ModelConfigError(
            "config.json field 'model_type' is missing (and no known 'architectures' entry); "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    if model_type not in FAMILIES:
        raise field_error("model_type", model_type,
                          f"not supported yet; supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    return model_type


def parse_hf_config(data: dict) -> tuple[str, Fields]:
    """(model_type, ModelConfig keyword arguments) for the dict of a config.json."""
    model_type = model_type_of(data)
    family = FAMILIES[model_type]
    if data.get("is_encoder_decoder") is True:
        raise field_error("is_encoder_decoder", True, "encoder-decoder models are not supported")
    for field, feature in MOE_AND_MLA_FIELDS.items():
        if data.get(field) and field not in family.uses:
            modelled = sorted(t for t, f in FAMILIES.items() if field in f.uses)
            raise field_error(field, data[field], f"{feature} is not modelled for model_type {model_type!r} "
                                                  f"(it is for {', '.join(modelled)})")
    return model_type, family.parse(ConfigReader(data, model_type))
