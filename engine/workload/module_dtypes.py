"""Mixed weight dtypes: the modules a quantized checkpoint leaves unquantized.

Quantized checkpoints rarely quantize every weight. Their quantization config lists the modules they leave out
(ModelOpt's `exclude_modules`, compressed-tensors' `ignore`, transformers' `modules_to_not_convert`), and those
stay in their original precision, bf16 as a rule. Public examples (aiconfigurator-core 0.12.0 ships their
hf_quant_config.json under model_configs/):

    nvidia/DeepSeek-V3.1-NVFP4   nvfp4 but the MLA projections q_a, q_b, kv_a, kv_b (attention_qkv) and lm_head
    nvidia/GLM-5-NVFP4           nvfp4 but all attention projections (attention) and lm_head
    nvidia/MiniMax-M2.5-NVFP4    nvfp4 but attention, the router and lm_head
    nvidia/Kimi-K2.6-NVFP4       nvfp4 but attention, the shared experts, the first (dense) layer and lm_head
    nvidia/Qwen3-235B-A22B-NVFP4 nvfp4 but the router and lm_head
    openai/gpt-oss-120b          mxfp4 experts; attention, the router, the embedding and lm_head bf16
    nvidia/Llama-3.1-70B-Instruct-FP8, Qwen3-32B-FP8: fp8 but lm_head

A Scenario says so with `unquantized_modules` (the groups below) and `unquantized_dtype` (their dtype, bf16 by
default): those modules' GEMMs read `unquantized_dtype` weights and multiply with activations no narrower than
it (the wider of it and the scenario's activation dtype), and the weights' memory counts them at that size.
The routed experts always take `weight_dtype`: a checkpoint whose experts stay unquantized is not quantized.
"""

from __future__ import annotations

from engine.hardware.dtypes import bytes_per_value, check_dtype, number_format

# Module groups of the hand decomposition (engine/decomposition) a checkpoint may leave unquantized.
MODULE_GROUPS: dict[str, str] = {
    "attention_qkv": "the attention's input projections: Q/K/V (MHA, GQA); q_a, q_b (or q), kv_a and kv_b (MLA, "
                     "with kv_b's absorbed W_UK / W_UV)",
    "attention_output": "the attention's output projection (o_proj)",
    "dense_mlp": "the MLP of dense layers (every layer of a dense model, the first dense layers of an MoE model)",
    "shared_experts": "the shared experts of mixture-of-experts layers",
    "router": "the MoE router (gate)",
    "embedding": "the token embedding table",
    "lm_head": "the output projection to the vocabulary",
}
# Names that stand for several groups.
MODULE_ALIASES: dict[str, tuple[str, ...]] = {"attention": ("attention_qkv", "attention_output")}


def check_modules(modules) -> tuple[str, ...]:
    """`modules` (names of MODULE_GROUPS or MODULE_ALIASES, an iterable or one comma-separated string) as a sorted
    tuple of groups without repeats; ValueError naming an unknown one and the choices."""
    if isinstance(modules, str):
        modules = [part for part in modules.split(",") if part.strip()]
    groups: set[str] = set()
    for module in modules:
        name = str(module).strip().lower()
        if name in MODULE_ALIASES:
            groups.update(MODULE_ALIASES[name])
        elif name in MODULE_GROUPS:
            groups.add(name)
        else:
            raise ValueError(f"unquantized_modules: {module!r} is not a module group; expected some of "
                             f"{', '.join([*MODULE_GROUPS, *MODULE_ALIASES])}")
    return tuple(sorted(groups))


def module_gemm_dtypes(weight: str, activation: str, unquantized: str, module: str | None,
                  unquantized_modules: tuple[str, ...]) -> tuple[str, str]:
    """(weight dtype, activation dtype) of the GEMMs of `module` (a MODULE_GROUPS name, or None for the routed
    experts and anything else that always takes the scenario's dtypes)."""
    if module is None or module not in unquantized_modules:
        return weight, activation
    widest = max((unquantized, activation), key=lambda d: number_format(d).element_bits)
    return unquantized, widest


def weight_bytes_of(weight_dtype: str, unquantized_dtype: str, unquantized_modules: tuple[str, ...],
                    module: str | None) -> float:
    """Bytes per weight value of `module` (module_gemm_dtypes' weight dtype)."""
    if module is not None and module in unquantized_modules:
        return bytes_per_value(check_dtype(unquantized_dtype))
    return bytes_per_value(weight_dtype)


def tensor_module(name: str) -> str | None:
    """The module group of a tensor of ModelConfig.params_per_layer_breakdown (None: routed experts, norms,
    sinks: they take the scenario's weight dtype)."""
    if name.startswith("experts_"):
        return None
    if name.startswith("shared_experts"):
        return "shared_experts"
    if name.startswith("mlp_"):
        return "dense_mlp"
    if name == "router":
        return "router"
    if name == "o_proj":
        return "attention_output"
    if name.endswith("_proj") or name == "kv_a_proj_with_mqa":
        return "attention_qkv"
    return None
