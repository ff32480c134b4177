"""One line of text for a model's layer schedule: which MLPs are MoE, which attention layers slide.

    "3 dense + 58 MoE (256 experts, top-8, 1 shared); MLA"
    "48 MoE (128 experts, top-8); full attention"
    "62 dense; 5 sliding (1024) : 1 full"
    "32 dense; all sliding (4096)"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.models.config import ModelConfig


def describe_layer_pattern(model: ModelConfig) -> str:
    return f"{_mlp_pattern(model)}; {_attention_pattern(model)}"


def _mlp_pattern(model: ModelConfig) -> str:
    moe = model.num_moe_layers
    dense = model.num_layers - moe
    if not moe:
        return f"{dense} dense"
    details = f"{model.num_experts} experts, top-{model.experts_per_token}"
    if model.num_shared_experts:
        details += f", {model.num_shared_experts} shared"
    moe_text = f"{moe} MoE ({details})"
    if not dense:
        return moe_text
    if all(model.moe_layers[dense:]) and not any(model.moe_layers[:dense]):
        return f"{dense} dense + {moe_text}"  # dense first, then MoE (DeepSeek's first_k_dense_replace)
    return f"{moe_text} + {dense} dense interleaved"


def _attention_pattern(model: ModelConfig) -> str:
    if model.attention_kind == "mla":
        return "MLA" if not model.num_sliding_layers else f"MLA, {_window_pattern(model)}"
    return _window_pattern(model)


def _window_pattern(model: ModelConfig) -> str:
    kinds = model.layer_attention
    sliding = kinds.count("sliding")
    if not sliding:
        return "full attention"
    window = model.sliding_window
    if sliding == len(kinds):
        return f"all sliding ({window})"
    period = _period(kinds)
    if period:
        unit = kinds[:period]
        runs = _runs(unit)
        if len(runs) == 2 and runs[0][0] == "sliding":
            return f"{runs[0][1]} sliding ({window}) : {runs[1][1]} full"
    return f"{sliding} sliding ({window}) + {len(kinds) - sliding} full"


def _period(kinds: tuple[str, ...]) -> int | None:
    """Smallest p with kinds[i] == kinds[i % p] for every layer (the last repeat may be cut short)."""
    for p in range(1, len(kinds)):
        if all(kinds[i] == kinds[i % p] for i in range(len(kinds))):
            return p
    return None


def _runs(unit: tuple[str, ...]) -> list[tuple[str, int]]:
    runs: list[tuple[str, int]] = []
    for kind in unit:
        if runs and runs[-1][0] == kind:
            runs[-1] = (kind, runs[-1][1] + 1)
        else:
            runs.append((kind, 1))
    return runs
