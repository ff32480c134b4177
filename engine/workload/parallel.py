"""How a model is split over devices: tensor, pipeline, data and expert parallelism.

`ParallelLayout` holds the per-device sizes the decomposition uses (heads, MLP width, vocabulary
rows and layers per device) and checks that the model divides as asked, naming the field when
it does not. `add_pipeline_bubble` adds the pipeline's idle time to a timed kernel table.
Formulas and schedules: docs/parallelism.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from engine.common.sums import weighted_sum

# Kernels that run once per forward pass (first or last pipeline stage), not once per layer.
PER_PASS_KERNELS = ("Embedding", "AllReduce_embed", "Norm_final", "LM_head", "AllGather_logits")
BUBBLE_NAME = "Pipeline_bubble"
BUBBLE_BOUND = "pipeline_bubble"


class ParallelismError(ValueError):
    """A layout the model cannot be split into (names the parallel field and the model field)."""


@dataclass(frozen=True)
class ParallelLayout:
    tp: int
    pp: int
    dp: int
    ep: int
    prefill_micro_batches: int
    q_heads: int             # query heads per device
    kv_heads: int            # K/V heads per device (one replicated head when num_kv_heads < tp)
    intermediate: int        # MLP inner width per device
    vocab: int               # embedding / LM-head rows per device: ceil(vocab / tp)
    layers: float            # layers per stage, the mean: num_layers / pp (stages as even as can be)
    max_layers: int          # layers of the largest stage: ceil(num_layers / pp)

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.dp

    kv_head_copies: int      # devices holding each K/V head within a TP group (tp / num_kv_heads if > 1)
    experts: int = 0         # MoE: routed experts held per device (num_experts / ep; all of them when ep = 1)
    expert_intermediate: int = 0   # MoE: inner width of one expert on the device (split over tp when ep = 1)
    shared_intermediate: int = 0   # MoE: shared-expert inner width on the device (split over tp)


def parallel_layout(model, scenario) -> ParallelLayout:
    """Per-device sizes for `scenario`'s tp/pp/dp/ep on `model`, or ParallelismError naming the problem (kept per
    (model, tp, pp, dp, ep, prefill micro-batches): the model is frozen and the layout reads nothing else)."""
    key = (model, scenario.tp, scenario.pp, scenario.dp, scenario.ep, scenario.prefill_micro_batches)
    try:
        return _kept_layout(*key)
    except TypeError:          # an unhashable model: computed every time
        return _layout(*key)


@lru_cache(maxsize=256)
def _kept_layout(model, tp: int, pp: int, dp: int, ep: int, prefill_micro_batches: int) -> ParallelLayout:
    return _layout(model, tp, pp, dp, ep, prefill_micro_batches)


def _layout(model, tp: int, pp: int, dp: int, ep: int, prefill_micro_batches: int) -> ParallelLayout:
    qh, kvh, inner = model.num_attention_heads, model.num_key_value_heads, model.intermediate_size
    name = model.name
    if qh % tp:
        raise ParallelismError(f"tp={tp} does not divide num_attention_heads={qh} of {name}")
    if kvh % tp and tp % kvh:
        raise ParallelismError(f"tp={tp} and num_key_value_heads={kvh} of {name}: one must divide the other "
                               "(K/V heads are split over tp, or replicated when there are fewer than tp)")
    if inner % tp:
        raise ParallelismError(f"tp={tp} does not divide intermediate_size={inner} of {name}")
    if pp > model.num_layers:
        raise ParallelismError(f"pp={pp} is more pipeline stages than num_layers={model.num_layers} of {name}")
    experts = expert_inner = shared_inner = 0
    if getattr(model, "is_moe", False):
        experts, expert_inner, shared_inner = _expert_split(model, tp, dp, ep)
    elif ep > 1:
        raise ParallelismError(f"ep={ep} needs a mixture-of-experts model; {name} is dense")
    kv_heads = max(1, kvh // tp)
    return ParallelLayout(
        tp=tp, pp=pp, dp=dp, ep=ep, prefill_micro_batches=prefill_micro_batches,
        q_heads=qh // tp, kv_heads=kv_heads, intermediate=inner // tp, vocab=math.ceil(model.vocab_size / tp),
        layers=model.num_layers / pp, max_layers=math.ceil(model.num_layers / pp),
        kv_head_copies=tp // kvh if kvh < tp else 1,
        experts=experts, expert_intermediate=expert_inner, shared_intermediate=shared_inner,
    )


def _expert_split(model, tp: int, dp: int, ep: int) -> tuple[int, int, int]:
    """(experts per device, expert inner width per device, shared-expert width per device).

    ep = 1: every device holds every expert with its inner width split over tp (like the dense MLP).
    ep > 1: whole experts, num_experts / ep per device, over an expert-parallel group of ep devices
    that is a multiple of tp inside the tp x dp devices of a stage (attention stays tensor/data
    parallel; tokens reach their experts by all-to-all).
    """
    experts, inner, name = model.num_experts, model.moe_intermediate_size, model.name
    shared = getattr(model, "shared_expert_intermediate_size", 0)
    if shared % tp:
        raise ParallelismError(f"tp={tp} does not divide shared_expert_intermediate_size={shared} of {name}")
    if ep == 1:
        if inner % tp:
            raise ParallelismError(f"tp={tp} does not divide moe_intermediate_size={inner} of {name}")
        return experts, inner // tp, shared // tp
    if experts % ep:
        raise ParallelismError(f"ep={ep} does not divide num_experts={experts} of {name}")
    if ep % tp or (tp * dp) % ep:
        raise ParallelismError(f"ep={ep} must be a multiple of tp={tp} and divide tp x dp = {tp * dp} "
                               "(the expert-parallel group spans whole tensor-parallel groups of one stage)")
    return experts // ep, inner, shared // tp


def add_pipeline_bubble(columns: dict, scenario, micro_batches_by_phase: dict[str, int]) -> dict:
    """The timed table plus one `Pipeline_bubble` row per phase when pp > 1.

    Schedule (docs/parallelism.md): m micro-batches flow through pp equal stages (GPipe-style
    forward). One micro-batch takes t on a stage, so the last micro-batch leaves after
    (m + pp - 1) t; the device's own work is m t, the rest, (pp - 1) t, it waits. With S = the
    device's per-layer work of the phase (summed over micro-batches and steps, count x time) the
    bubble is (pp - 1) / m x S. Decode and chunked iterations have m = 1: a step passes every stage
    in turn, so the step takes pp x (stage work) + the hops. Per-pass kernels (embedding, final
    norm, LM head and their collectives) run once on the first or last stage and are not repeated.
    Every time-like column (time_s, ideal_time_s, the realistic gaps, ...) is scaled alike, so the
    bubble keeps each method's ideal/realistic split; the device computes nothing meanwhile.
    """
    if scenario.pp <= 1:
        return columns
    # string tests once per kernel (`group`), not once per decode-step row
    _, first, inverse = np.unique(columns["group"], return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    phase = np.asarray(columns["phase"])[first].astype(str)
    stage_kernel = ~np.isin(np.asarray(columns["name"])[first].astype(str), PER_PASS_KERNELS)
    count = columns["count"].astype(float)
    scaled = [c for c in BUBBLE_SCALED_COLUMNS if c in columns]
    new_rows = []
    for phase_name in dict.fromkeys(phase):
        rows = (stage_kernel & (phase == phase_name))[inverse]
        factor = (scenario.pp - 1) / micro_batches_by_phase.get(phase_name, 1)
        values = {c: factor * weighted_sum(np.nan_to_num(columns[c][rows].astype(float)), count[rows])
                  for c in scaled}
        new_rows.append((phase_name, values))
    return append_rows(columns, [
        dict(phase=p, name=BUBBLE_NAME, type="Bubble", op="bubble", unit="none", bound=BUBBLE_BOUND, count=1.0,
             group_size=float(scenario.pp), **v)
        for p, v in new_rows
    ])


# time-like per-occurrence columns a bubble row carries (scaled from the stage rows)
BUBBLE_SCALED_COLUMNS = ("time_s", "ideal_time_s", "kernel_time_s", "gap_tile_quantization_s",
                         "gap_wave_quantization_s", "gap_efficiency_s", "gap_overhead_s")


def append_rows(columns: dict, rows: list[dict]) -> dict:
    """`columns` with `rows` appended: given values, else NaN for numbers, "" for strings, new groups."""
    if not rows:
        return columns
    out = {}
    next_group = int(np.max(columns["group"])) + 1 if len(columns["group"]) else 0
    for key, values in columns.items():
        values = np.asarray(values)
        if key == "group":
            extra = np.arange(next_group, next_group + len(rows))
        elif values.dtype == object or values.dtype.kind in "US":
            extra = np.array([row.get(key, "") for row in rows], dtype=object)
        else:
            default = 0.0 if key in ZERO_DEFAULT_COLUMNS else np.nan
            extra = np.array([row.get(key, default) for row in rows], dtype=float)
        out[key] = np.concatenate([values.astype(extra.dtype) if values.dtype != extra.dtype and extra.dtype == object
                                   else values, extra])
    return out


ZERO_DEFAULT_COLUMNS = ("m", "k", "n", "batch", "macs", "matrix_flops", "vector_flops", "flops", "weight_bytes",
                        "activation_bytes", "kv_bytes", "bytes", "compute_time_s", "memory_time_s", "link_bytes",
                        "group_size", "communication_time_s", "hidden_time_s", "launches")
