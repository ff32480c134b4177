"""The seed notebook's decomposition, reproduced as written (slips included) for the `seed` method.

Mirrors `perform_prefill`, `perform_decode` and `perform_chunkedprefill` of
../shared/seeds/004_*.txt. Known slips kept here on purpose (corrected in transformer.py):
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


def seed_chunk_parameters(scenario: Scenario) -> dict[str, int]:
    """The notebook's single-average chunk: token mix and approximate contexts."""
    inputs, outputs = scenario.input_length, scenario.output_length
    decode_tokens = scenario.chunk_size * outputs // (inputs + outputs)
    prefill_tokens = scenario.chunk_size - decode_tokens
    decode_context = scenario.context_length if scenario.context_length is not None else inputs + outputs // 2
    return {
        "p_context_length": int(inputs / 1.73 - prefill_tokens // 2),
        "p_tokens": prefill_tokens,
        "d_context_length": decode_context,
        "d_tokens": decode_tokens,
    }


def seed_layer_rows(model, phase: str, **p) -> list[tuple]:
    """(type, name, m, k, n, batch) per layer, exactly as the notebook's add_layer calls."""
    hidden, intermediate = model.hidden_size, model.intermediate_size
    head_dim, kv_heads = model.head_dim, model.num_key_value_heads
    qkv_width = head_dim * (model.num_attention_heads + 2 * kv_heads)
    kv_width = 2 * kv_heads                    # K and V heads: the KV rows' n
    if phase == "prefill":
        tokens, batch = p["seq_length"], p["batch"]
        return [("Ma_Mw", "Q/K/V*W", tokens, hidden, qkv_width, batch),
                ("Ma_Mqa", "Q*gK", tokens, hidden, tokens, batch),
                ("Ma_Mqa", "Q*gK*gV", tokens, hidden, tokens, batch),
                ("Ma_Mw", "O*W", tokens, hidden, hidden, batch),
                ("Ma_Mw", "FFN_up", tokens, hidden, intermediate, batch),
                ("Ma_Mw", "FFN_gate", tokens, hidden, intermediate, batch),
                ("Ma_Mw", "FFN_down", tokens, intermediate, hidden, batch),
                ("Async_KVCache", "KVCache_Store", tokens, head_dim, kv_width, batch)]
    if phase == "decode":
        context, batch = p["context_length"], p["batch"]
        return [("Va_Mw", "Q/K/V*W", 1, hidden, qkv_width, batch),
                ("KVCache", "KVCache_Read", context, head_dim, kv_width, batch),
                ("Va_Mqa", "Q*gK", 1, hidden, context, batch), ("Va_Mqa", "Q*gK*gV", 1, hidden, context, batch),
                ("Va_Mw", "O*W", 1, hidden, hidden, batch), ("Va_Mw", "FFN_up", 1, hidden, intermediate, batch),
                ("Va_Mw", "FFN_gate", 1, hidden, intermediate, batch),
                ("Va_Mw", "FFN_down", 1, intermediate, hidden, batch)]
    prefill_context, prefill_tokens = p["p_context_length"], p["p_tokens"]
    decode_context, decode_tokens = p["d_context_length"], p["d_tokens"]
    tokens = prefill_tokens + decode_tokens
    decode_kv = head_dim * kv_heads            # the notebook's decode attention n in a chunk (its slip, kept)
    return [("Ma_Mw", "Q/K/V*W", tokens, hidden, qkv_width, 1),
            ("KVCache", "dKVCache_Read", decode_context, head_dim, kv_width, decode_tokens),
            ("Va_Mqa", "dQ*gK", 1, hidden, decode_kv, decode_tokens),
            ("Va_Mqa", "dQ*gK*gV", 1, hidden, decode_kv, decode_tokens),
            ("Async_KVCache", "pKVCache_Read", prefill_context, head_dim, kv_width, 1),
            ("Ma_Mqa", "pQ*gK", prefill_tokens, hidden, prefill_context, 1),
            ("Ma_Mqa", "pQ*gK*gV", prefill_tokens, hidden, prefill_context, 1),
            ("Async_KVCache", "KVCache_Store", prefill_tokens, head_dim, kv_width, 1),
            ("Ma_Mw", "O*W", tokens, hidden, hidden, 1), ("Ma_Mw", "FFN_up", tokens, hidden, intermediate, 1),
            ("Ma_Mw", "FFN_gate", tokens, hidden, intermediate, 1),
            ("Ma_Mw", "FFN_down", tokens, intermediate, hidden, 1)]


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
    rows, phases, groups = [], [], []

    def extend(phase: str, layer_rows: list[tuple], group_offset: int) -> None:
        rows.extend(layer_rows)
        phases.extend([phase] * len(layer_rows))
        groups.extend(range(group_offset, group_offset + len(layer_rows)))

    if scenario.phase in ("prefill", "request"):
        extend("prefill", seed_layer_rows(model, "prefill", seq_length=scenario.input_length, batch=scenario.batch), 0)
    if scenario.phase == "decode":
        extend("decode", seed_layer_rows(model, "decode", context_length=scenario.decode_context, batch=scenario.batch), 0)
    if scenario.phase == "request":
        offset = len(rows)
        for context in range(scenario.input_length + 1, scenario.input_length + scenario.output_length):
            extend("decode", seed_layer_rows(model, "decode", context_length=context, batch=scenario.batch), offset)
    if scenario.phase == "chunked":
        extend("chunked", seed_layer_rows(model, "chunked", **seed_chunk_parameters(scenario)), 0)
    return seed_rows_frame(rows, phases, groups, model.num_layers)
