"""Score the engine's methods against aiconfigurator's measured kernels (vectorized: one call per device).

    from engine.calibration.silicon import score, tables
    tidy = score.score_family(tables.gemm_table(systems=["h100_sxm"]), "gemm", methods=("roofline", "realistic"))
    score.summary(tidy)       # count, median / p90 of |predicted / measured - 1|, bias per method x device x family
                              # x precision (precision_label: dtypes, or a collective's op and implementation)

Each measurement becomes kernel-table rows built with the default decomposition's own formulas, all
measurements of one device in ONE table timed by the method in one call:
  gemm                  one Ma_Mw row, engine.kernels.fields.gemm_fields (weights, A read once, C written once)
  prefill_attention     engine.decomposition.attention.AttentionRows.add_mha for `batch` sequences of `input_length` new tokens
                        (no prior context, causal): Q*gK, Softmax, Q*gK*gV (realistic: one fused kernel)
  decode_attention      the same for one new token after `prior_tokens` cached ones: KVCache_Read, Q*gK, Softmax,
                        Q*gK*gV (the measurement's context_length = prior_tokens + 1 keys)
  prefill_mla           DeepSeek-V3's MLA attention core for a prompt (engine/decomposition/mla.py's naive form:
                        MHA over the decompressed K/V, scores over 192 channels, values over 128), no weight GEMMs
  decode_mla            the same for one decode token in the absorbed form: KVCache_Read of the 576-value latent,
                        MQA with one shared head (576 key, 512 value channels); no Q*W_UK / O*W_UV GEMMs
  moe                   the routed experts of one MoE layer as engine/decomposition/moe.py builds them: per device
                        E / moe_ep experts of intermediate / moe_tp, tokens x topk / moe_ep (token, expert) pairs
                        (balanced routing rows only) over the experts they reach (expected_active_experts):
                        the routing (MoE_topk over all tokens and E logits), grouped GEMMs Expert_up [, Expert_gate],
                        the activation, Expert_down, the weighted combine (gated unless the kernel_source says
                        nongated; no router GEMM: the collector passes the logits; no all-to-all). Balanced rows
                        route as the collector does (moe_routing.py), not at random
  collective            engine.estimators.collectives: factor x message bytes / link bandwidth + hops x hop latency,
                        the same for every method (ring algorithm; the group's link from the workbook)
GEMMs are timed under the tables' condition ("warm": weight copies back to back, conditions.table_constants).
Measured times are device-side per call, so realistic is scored on `kernel_time_s` (no host launch), the
other methods on `time_s`, as engine.calibration.measurements does for the Vidur kernels. Rows of a device the workbook
lacks are dropped (`devices_missing` says which).
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from engine.decomposition.passes import AttentionPart, ForwardPass
from engine.decomposition.attention import AttentionRows
from engine.decomposition.pass_kernels import BytesPerValue, PassKernels
from engine.hardware.dtypes import bytes_per_value, compute_dtype, gemm_dtype
from engine.decomposition.moe import expected_active_experts, topk_fields
from engine.kernels.fields import gemm_fields, mlp_activation_fields
from engine.kernels.table import KernelTableBuilder
from engine.calibration.silicon.conditions import moe_table_constants, table_constants
from engine.calibration.silicon.moe_routing import balanced_routing

FAMILIES = ("gemm", "prefill_attention", "decode_attention", "prefill_mla", "decode_mla", "moe", "collective")
DEFAULT_METHODS = ("roofline", "realistic")
COLLECTIVE_NAMES = {"all_reduce": "AllReduce_measured", "all_gather": "AllGather_measured",
                    "reduce_scatter": "ReduceScatter_measured", "all_to_all": "AllToAll_measured"}
ATTENTION_KEYS = ["heads", "kv_heads", "head_dim", "dtype", "kv_dtype", "window_size"]
MLA_KEYS = ["heads", "dtype", "kv_dtype", "window_size"]
# DeepSeek-V3 / R1 config.json: the MLA tables are collected with its dimensions (aiconfigurator's collector)
MLA_DIMS = {"kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}


def gemm_kernels(frame: pd.DataFrame) -> tuple[dict, np.ndarray]:
    """One GEMM row per measurement; returns (columns, measurement index of each row)."""
    builder, index = KernelTableBuilder(), []
    for (weight, activation), rows in frame.groupby(["weight_dtype", "activation_dtype"], sort=False):
        m, n, k = (rows[c].to_numpy(dtype=float) for c in ("m", "n", "k"))
        fields = gemm_fields(m, k, n, bytes_per_value(weight), bytes_per_value(activation))
        builder.add(phase="measured", name="GEMM", type="Ma_Mw", op="gemm", unit="matrix",
                    dtype=gemm_dtype(weight, activation), **fields)
        index.append(_positions(frame, rows))
    return builder.build_columns(), _concat(index)


def attention_kernels(frame: pd.DataFrame, decode: bool) -> tuple[dict, np.ndarray]:
    """The attention rows of each measurement (one fused group each); returns (columns, measurement index)."""
    def add(rows, part, key):
        heads, kv_heads, head_dim = (int(v) for v in key[:3])
        rows.add_mha(part, 1.0, "", heads, kv_heads, head_dim)
    return _fused_kernels(frame, decode, ATTENTION_KEYS, add)


def mla_kernels(frame: pd.DataFrame, decode: bool) -> tuple[dict, np.ndarray]:
    """The MLA attention core of each measurement as engine/decomposition/mla.py builds it for DeepSeek-V3's
    dimensions (MLA_DIMS), without the weight GEMMs the tables time separately: prompts in the naive form
    (MHA over the decompressed K/V: `heads` heads, scores over nope + rope channels, values over v), decode in
    the absorbed form (KVCache_Read of the latent, then MQA with one shared head of rank + rope key channels
    and rank value channels: nearly flat in query heads)."""
    rank, nope, rope, value = (MLA_DIMS[k] for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                                      "v_head_dim"))
    latent = rank + rope

    def add(rows, part, key):
        heads, act = int(key[0]), rows.kernels.value_bytes.activation
        if decode:      # decompose_mla._absorbed's core
            rows.kv_read(part, 1.0, "", latent, latent, 1)
            own = part.fresh_tokens * latent * act
            rows.core(part, 1.0, "", heads, 1, latent, rank, part.query_tokens * heads * latent * act + own,
                      part.query_tokens * heads * rank * act + own)
        else:           # decompose_mla._naive's core (no cached tokens)
            tokens = part.fresh_tokens
            rows.core(part, 1.0, "", heads, heads, nope + rope, value,
                      (part.query_tokens * heads * (nope + rope) + tokens * (heads * nope + rope)) * act,
                      (part.query_tokens + tokens) * heads * value * act)
    return _fused_kernels(frame.assign(window_size=0), decode, MLA_KEYS, add)


def _fused_kernels(frame: pd.DataFrame, decode: bool, keys: list, add) -> tuple[dict, np.ndarray]:
    """Per group of `keys` (its last three: dtype, kv_dtype, window_size), `add(AttentionRows, part, key)` adds
    the attention rows of its measurements; returns (columns, measurement index)."""
    builder, positions = KernelTableBuilder(), []
    for number, (key, rows) in enumerate(frame.groupby(keys, sort=False)):
        dtype, kv_dtype, window = key[-3:]
        window = int(window) if window and window > 0 else None
        batch = rows["batch"].to_numpy(dtype=float)
        if decode:
            part = AttentionPart.uniform("", batch, 1.0, rows["prior_tokens"].to_numpy(dtype=float), "Va_Mqa",
                                         window=window, per_row_count=True)
        else:
            part = AttentionPart.uniform("", batch, rows["input_length"].to_numpy(dtype=float), np.zeros(len(rows)),
                                         "Ma_Mqa", window=window, per_row_count=True)
        pass_ = ForwardPass(f"measured {number}", batch, batch, 1, (part,))   # own phase: one fused group per row
        value_bytes = BytesPerValue(bytes_per_value(dtype), bytes_per_value(dtype), bytes_per_value(kv_dtype))
        kernels = PassKernels(builder, pass_, value_bytes, gemm_dtype=dtype, attention_dtype=compute_dtype(dtype, kv_dtype),
                              vector_dtype=dtype, kv_dtype=kv_dtype)
        add(AttentionRows(kernels), part, key)
        positions.append(_positions(frame, rows))
    columns = builder.build_columns()
    # every kernel added for attention `number` (phase "measured <number>") has one row per measurement, in order
    _, first = np.unique(columns["group"], return_index=True)
    numbers = [int(str(phase).rsplit(" ", 1)[1]) for phase in columns["phase"][first]]
    return columns, _concat([positions[number] for number in numbers])


def moe_kernels(frame: pd.DataFrame) -> tuple[dict, np.ndarray]:
    """The routed-expert rows of each measurement (see the module docstring); returns (columns, index)."""
    builder, index = KernelTableBuilder(), []
    gated_rows = ~frame["kernel_source"].astype(str).str.endswith("nongated")
    for (weight, activation, gated), rows in frame.groupby(["weight_dtype", "activation_dtype", gated_rows],
                                                           sort=False):
        tokens, hidden, inner, topk, experts, moe_tp, moe_ep = (
            rows[c].to_numpy(dtype=float) for c in ("tokens", "hidden", "intermediate", "topk", "experts", "moe_tp",
                                                     "moe_ep"))
        inner = inner / moe_tp
        pairs = tokens * topk / moe_ep
        active = np.maximum(expected_active_experts(experts / moe_ep, experts, topk, tokens), 1e-9)
        balanced = (rows["distribution"] == "balanced").to_numpy() if "distribution" in rows else np.zeros(len(rows),
                                                                                                         bool)
        if balanced.any():      # the collector's round-robin routing (moe_routing.py), not random routing
            routed_pairs, routed_active, _ = balanced_routing(tokens[balanced], experts[balanced], topk[balanced],
                                                              moe_ep[balanced])
            pairs, active = pairs.copy(), active.copy()
            pairs[balanced], active[balanced] = routed_pairs, routed_active
        wgt, act, dtype = bytes_per_value(weight), bytes_per_value(activation), gemm_dtype(weight, activation)
        phase = "measured" if gated else "measured non-gated"     # one model per phase: gated or not
        common = dict(phase=phase, type="Ma_Mw", op="gemm", unit="matrix", dtype=dtype)
        grouped = [("Expert_up", hidden, inner)] + ([("Expert_gate", hidden, inner)] if gated else []) + \
            [("Expert_down", inner, hidden)]
        for name, k_dim, n_dim in grouped:
            builder.add(name=name, m=pairs / active, k=k_dim, n=n_dim, batch=active, macs=pairs * k_dim * n_dim,
                        group_size=experts / moe_ep,
                        weight_bytes=active * k_dim * n_dim * wgt, activation_bytes=pairs * (k_dim + n_dim) * act,
                        **common)
        builder.add(phase=phase, name="MoE_topk", type="Elementwise", op="topk", unit="vector", dtype=activation,
                    **topk_fields(tokens, experts, topk, act))
        builder.add(phase=phase, name="Expert_act", type="Elementwise", op="activation", unit="vector",
                    dtype=activation, **mlp_activation_fields(pairs, inner, "silu" if gated else "relu", gated, act))
        builder.add(phase=phase, name="MoE_combine", type="Elementwise", op="residual", unit="vector",
                    dtype=activation, m=tokens, n=hidden, vector_flops=2.0 * pairs * hidden,
                    activation_bytes=(pairs + tokens) * hidden * act)
        index += [_positions(frame, rows)] * (len(grouped) + 3)
    return builder.build_columns(), _concat(index)


def _positions(frame: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
    return frame.index.get_indexer(rows.index)


def _concat(parts: list) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=int)


def method_seconds(columns: dict, index: np.ndarray, count: int, hardware, method: str,
                   constants=None) -> np.ndarray:
    """Per measurement: the sum of its rows' device time under `method` (kernel_time_s where reported);
    `constants`: RealisticConstants for the realistic methods (default: the shipped ones)."""
    from engine.estimators import get_method
    from engine.estimators.realistic import estimate_realistic
    if count == 0:
        return np.zeros(0)
    if method.startswith("realistic") and constants is not None:
        launch = "graph" if method == "realistic-graph" else "eager"
        result = estimate_realistic(columns, hardware, None, launch=launch, constants=constants)
    else:
        result = get_method(method).estimate(columns, hardware, None)
    seconds = np.asarray(result.get("kernel_time_s", result["time_s"]), dtype=float)
    return np.bincount(index, weights=seconds, minlength=count)


def collective_seconds(frame: pd.DataFrame, hardware) -> np.ndarray:
    """Per measurement: engine.estimators.collectives' time for the message over the group (NaN where the device lacks an
    interconnect field)."""
    from engine.estimators.collectives import InterconnectError, collective_seconds as engine_seconds, link_fields
    result = np.full(len(frame), np.nan)
    for (op, size), rows in frame.groupby(["op", "group_size"], sort=False):
        try:
            fields = link_fields(hardware, int(size))
        except InterconnectError:
            continue
        result[_positions(frame, rows)] = engine_seconds(op, rows["message_bytes"].to_numpy(dtype=float), int(size),
                                                         fields)
    return result


def predicted_seconds(frame: pd.DataFrame, family: str, hardware, method: str, constants=None) -> np.ndarray:
    """The method's predicted seconds per measurement of one device (frame index is reset)."""
    if family == "collective":
        return collective_seconds(frame, hardware)
    if family == "gemm":     # timed as the tables were: warm (engine/calibration/silicon/conditions.py)
        columns, index = gemm_kernels(frame)
        if method.startswith("realistic") and frame["framework"].nunique() <= 1:
            constants = table_constants(str(frame["framework"].iloc[0]) if len(frame) else "", constants)
    elif family == "moe":     # timed as the tables were (conditions.moe_table_constants)
        columns, index = moe_kernels(frame)
        if method.startswith("realistic"):
            constants = moe_table_constants(constants)
    elif family in ("prefill_attention", "decode_attention"):
        columns, index = attention_kernels(frame, decode=family == "decode_attention")
    elif family in ("prefill_mla", "decode_mla"):
        columns, index = mla_kernels(frame, decode=family == "decode_mla")
    else:
        raise ValueError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
    return method_seconds(columns, index, len(frame), hardware, method, constants)


def score_family(frame: pd.DataFrame, family: str, methods=DEFAULT_METHODS, devices: dict | None = None,
                 constants=None) -> pd.DataFrame:
    """Tidy: the measurement rows + family, precision, method, predicted_s, error (predicted / measured - 1).

    `devices`: {workbook name: Hardware} (default: the bundled specs.xlsx); rows of other devices dropped;
    `constants`: RealisticConstants for the realistic methods (default: the shipped ones).
    """
    if devices is None:
        from engine.hardware.specs import load_specs
        devices = load_specs()
    parts = []
    known = frame[frame["device"].isin(list(devices))]
    keys = ["device", "framework"] if "framework" in known else ["device"]    # GEMM conditions are per framework
    for key, rows in known.groupby(keys, sort=False, dropna=False):
        device = key[0]
        rows = rows.reset_index(drop=True)
        for method in methods:
            predicted = predicted_seconds(rows, family, devices[device], method, constants)
            parts.append(rows.assign(family=family, precision=precision_label(rows, family), method=method,
                                     predicted_s=predicted,
                                     error=predicted / rows["time_s"].to_numpy() - 1.0))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def devices_missing(frame: pd.DataFrame, devices: dict) -> list[str]:
    """Systems of `frame` without a device in `devices` (named system -> device, or system alone)."""
    pairs = frame[["system", "device"]].drop_duplicates()
    return sorted(f"{s} ({d if isinstance(d, str) else 'no workbook device'})"
                  for s, d in pairs.itertuples(index=False) if d not in devices)


def precision_label(frame: pd.DataFrame, family: str) -> pd.Series:
    """What the accuracy is grouped by besides device and family: GEMMs their weight / activation dtypes
    (one name when alike: bf16, fp8, fp8_g128, nvfp4; int4_g128/bf16 is weight-only), attention its dtype and
    KV-cache dtype when they differ, collectives their op and implementation (all_reduce (nccl))."""
    if family == "collective":
        return frame["op"].astype(str) + " (" + frame["implementation"].astype(str) + ")"
    matrix = family in ("gemm", "moe")
    first, second = ("weight_dtype", "activation_dtype") if matrix else ("dtype", "kv_dtype")
    same = frame[first] == frame[second]
    joiner = "/" if matrix else ", kv "
    return frame[first].where(same, frame[first].astype(str) + joiner + frame[second].astype(str))


def summary(tidy: pd.DataFrame, by=("method", "device", "family", "precision")) -> pd.DataFrame:
    """Per group: count, median and p90 of |error|, bias (median signed error), groups sorted."""
    from engine.calibration.measurements import summary as error_summary
    return error_summary(tidy, by=by).sort_values(list(by), ignore_index=True)


def measured_kernels(family: str, root=None, framework: str = "trtllm", systems=None) -> pd.DataFrame:
    """The measurements a family is scored on: one version of `framework` per system (files.one_version_each;
    collectives: NCCL and the framework's custom all-reduce); full-attention rows only; MoE: balanced routing only."""
    from engine.calibration.silicon import tables
    from engine.calibration.silicon.files import one_version_each
    if family == "collective":
        frame = one_version_each(tables.collective_table(root, systems))
        return frame[frame["framework"].isin(["nccl", framework])].reset_index(drop=True)
    reader = {"gemm": tables.gemm_table, "prefill_attention": tables.context_attention_table,
              "decode_attention": tables.generation_attention_table, "moe": tables.moe_table,
              "prefill_mla": lambda *a: tables.mla_table("context", *a),
              "decode_mla": lambda *a: tables.mla_table("generation", *a)}[family]
    frame = one_version_each(reader(root, systems, [framework]))
    if family == "moe":
        frame = frame[frame["distribution"] == "balanced"].reset_index(drop=True)
    if "window_size" in frame:
        frame = frame[frame["window_size"] == 0].reset_index(drop=True)
    return frame
