"""The seed notebook's decomposition, reproduced as written (slips included) for the `seed` method.

Mirrors `perform_prefill`, `perform_decode` and `perform_chunkedprefill` of
../shared/seeds/004_*.txt. Known slips kept here on purpose (and corrected in decompose.py):
- `qrouped_q=` typo: the GQA factor never reaches the attention rows (grouped_q stays 1);
- attention counts the full square (no causal saving) and uses k = hidden_size;
- chunked decode attention uses n = head_dim * num_kv_heads instead of the context;
- no norms, rotary, softmax, residuals, embedding or LM head; KV store of decode omitted.
Columns follow the notebook: compute (MACs), weight (elements), kv_cache (elements).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.workload.scenario import Scenario

WEIGHT_IS_KN = ("Ma_Mw", "Va_Mw")    # weight = k * n
WEIGHT_IS_MK = ("Mw_Ma", "Vw_Va")    # weight = m * k
KV_TYPES = ("KVCache", "Async_KVCache")


def seed_chunk_parameters(s: Scenario) -> dict[str, int]:
    """The notebook's single-average chunk: token mix and approximate contexts."""
    d_tokens = s.chunk_size * s.output_length // (s.input_length + s.output_length)
    p_tokens = s.chunk_size - d_tokens
    return {
        "p_context_length": int(s.input_length / 1.73 - p_tokens // 2),
        "p_tokens": p_tokens,
        "d_context_length": s.context_length if s.context_length is not None else s.input_length + s.output_length // 2,
        "d_tokens": d_tokens,
    }


def seed_layer_rows(model, phase: str, **p) -> list[tuple]:
    """(type, name, m, k, n, batch) per layer, exactly as the notebook's add_layer calls."""
    h, inter = model.hidden_size, model.intermediate_size
    d, qh, kvh = model.head_dim, model.num_attention_heads, model.num_key_value_heads
    qkv_n = d * (qh + 2 * kvh)
    if phase == "prefill":
        L, B = p["seq_length"], p["batch"]
        return [("Ma_Mw", "Q/K/V*W", L, h, qkv_n, B), ("Ma_Mqa", "Q*gK", L, h, L, B),
                ("Ma_Mqa", "Q*gK*gV", L, h, L, B), ("Ma_Mw", "O*W", L, h, h, B),
                ("Ma_Mw", "FFN_up", L, h, inter, B), ("Ma_Mw", "FFN_gate", L, h, inter, B),
                ("Ma_Mw", "FFN_down", L, inter, h, B), ("Async_KVCache", "KVCache_Store", L, d, 2 * kvh, B)]
    if phase == "decode":
        C, B = p["context_length"], p["batch"]
        return [("Va_Mw", "Q/K/V*W", 1, h, qkv_n, B), ("KVCache", "KVCache_Read", C, d, 2 * kvh, B),
                ("Va_Mqa", "Q*gK", 1, h, C, B), ("Va_Mqa", "Q*gK*gV", 1, h, C, B),
                ("Va_Mw", "O*W", 1, h, h, B), ("Va_Mw", "FFN_up", 1, h, inter, B),
                ("Va_Mw", "FFN_gate", 1, h, inter, B), ("Va_Mw", "FFN_down", 1, inter, h, B)]
    pc, pt, dc, dt = p["p_context_length"], p["p_tokens"], p["d_context_length"], p["d_tokens"]
    return [("Ma_Mw", "Q/K/V*W", pt + dt, h, qkv_n, 1),
            ("KVCache", "dKVCache_Read", dc, d, 2 * kvh, dt),
            ("Va_Mqa", "dQ*gK", 1, h, d * kvh, dt), ("Va_Mqa", "dQ*gK*gV", 1, h, d * kvh, dt),
            ("Async_KVCache", "pKVCache_Read", pc, d, 2 * kvh, 1),
            ("Ma_Mqa", "pQ*gK", pt, h, pc, 1), ("Ma_Mqa", "pQ*gK*gV", pt, h, pc, 1),
            ("Async_KVCache", "KVCache_Store", pt, d, 2 * kvh, 1),
            ("Ma_Mw", "O*W", pt + dt, h, h, 1), ("Ma_Mw", "FFN_up", pt + dt, h, inter, 1),
            ("Ma_Mw", "FFN_gate", pt + dt, h, inter, 1), ("Ma_Mw", "FFN_down", pt + dt, inter, h, 1)]


def seed_rows_frame(rows: list[tuple], phases: list[str], groups: list[int], count: float) -> pd.DataFrame:
    """The notebook's WorkloadProfile.layers for `rows`, with compute/weight/kv_cache filled."""
    frame = pd.DataFrame(rows, columns=["type", "name", "m", "k", "n", "batch"])
    m, k, n, batch = (frame[c].to_numpy(dtype=float) for c in ("m", "k", "n", "batch"))
    kinds = frame["type"].to_numpy()
    is_kv = np.isin(kinds, KV_TYPES)
    frame["compute_macs"] = np.where(is_kv, np.nan, m * k * n * batch)
    frame["weight_elems"] = np.select(
        [np.isin(kinds, WEIGHT_IS_KN), np.isin(kinds, WEIGHT_IS_MK)], [k * n, m * k], np.nan)
    frame["kv_cache_elems"] = np.where(is_kv, m * k * n * batch, np.nan)
    frame.insert(0, "phase", phases)
    frame["count"] = float(count)
    frame["group"] = groups
    return frame


def decompose_seed(model, scenario: Scenario) -> pd.DataFrame:
    """The seed's per-layer rows for the scenario; `count` = layers.

    A request's decode steps each get their own rows (the context grows); rows of the same
    kernel share a `group` id so results can be summed per kernel.
    """
    s = scenario
    rows, phases, groups = [], [], []

    def extend(phase: str, layer_rows: list[tuple], group_offset: int) -> None:
        rows.extend(layer_rows)
        phases.extend([phase] * len(layer_rows))
        groups.extend(range(group_offset, group_offset + len(layer_rows)))

    if s.phase in ("prefill", "request"):
        extend("prefill", seed_layer_rows(model, "prefill", seq_length=s.input_length, batch=s.batch), 0)
    if s.phase == "decode":
        extend("decode", seed_layer_rows(model, "decode", context_length=s.decode_context, batch=s.batch), 0)
    if s.phase == "request":
        offset = len(rows)
        for context in range(s.input_length + 1, s.input_length + s.output_length):
            extend("decode", seed_layer_rows(model, "decode", context_length=context, batch=s.batch), offset)
    if s.phase == "chunked":
        extend("chunked", seed_layer_rows(model, "chunked", **seed_chunk_parameters(s)), 0)
    return seed_rows_frame(rows, phases, groups, model.num_layers)
