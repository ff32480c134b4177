"""One fused attention kernel per attention of the kernel table (flash-style prefill, KV-streaming decode).

The default decomposition lists one attention as separate rows: [KVCache_Read,] Q*gK, Softmax,
Q*gK*gV (with a `d`/`p` prefix in a chunked batch). Serving engines run them as ONE kernel
(FlashAttention for prefill, paged/flash-decoding for decode), so the realistic method times
the group once and charges it to its rows in proportion to each row's ideal (roofline) time:
count x time_s still sums to the phase time and every row keeps its own shape and bytes.

The fused kernel starts from the rows' summed ideal (the roofline method's time for them, in which
the softmax runs after the matrix work) and adds the fused kernel's own losses: its tile padding
(t1 - t0), waves (t2 - t1) and achievable rates (t3 - t2), each measured on the fused kernel's own
roofline t0, plus one kernel latency and one launch. So no row is charged less than its ideal.

Prefill (query tiles of FLASH_BLOCK_Q rows over key tiles of FLASH_BLOCK_K, causal): the work is
padded to whole tiles (the diagonal tiles run in full), spread over the cores in CTAs of one
(head, query tile); the largest CTA (the last query tile) bounds the time from below.
Decode: one query token per sequence; the group's query rows pad to the matrix unit's 16 rows and
the KV cache streams at the achievable bandwidth (flash-decoding / paged attention v2 split long
contexts so that even one sequence keeps every core busy; short ones pay the kernel latency).
"""

from __future__ import annotations

import numpy as np

from engine.estimators.row_groups import RowGroups

ATTENTION_OPS = ("kv_read", "attention", "softmax")
BASE_NAMES = ("KVCache_Read", "Q*gK*gV", "Q*gK", "Softmax")   # longest first when stripping
FLASH_BLOCK_Q = 128        # FlashAttention-2 forward tile for head_dim <= 128 (query rows)
FLASH_BLOCK_K = 64         # ... and key columns
MATRIX_MIN_ROWS = 16       # tensor-core fragments have 16 rows


def _ceil_to(x, multiple):
    return np.ceil(np.divide(x, multiple)) * multiple


def attention_groups(columns: dict, row_groups: RowGroups | None = None) -> np.ndarray:
    """Per row: the id of its fused attention kernel, or -1 for rows outside attention.

    Rows of one attention share phase, name prefix and position within their decode-step block.
    """
    row_groups = row_groups or RowGroups(columns)
    op = row_groups.strings("op")
    rows = np.flatnonzero(np.isin(op, ATTENTION_OPS))
    result = np.full(len(op), -1, dtype=np.int64)
    if rows.size == 0:
        return result
    unique_names, name_code = np.unique(row_groups.strings("name")[rows], return_inverse=True)
    _, prefix_of_name = np.unique([_prefix(name) for name in unique_names], return_inverse=True)
    _, phase_code = np.unique(row_groups.strings("phase")[rows], return_inverse=True)
    block = row_groups.inverse[rows]
    _, first = np.unique(block, return_index=True)
    position = np.arange(rows.size) - first[np.searchsorted(np.unique(block), block)]
    prefix_code = prefix_of_name.reshape(-1)[name_code.reshape(-1)]
    keys = (phase_code.reshape(-1) * (prefix_code.max() + 1) + prefix_code) * (position.max() + 1) + position
    _, ids = np.unique(keys, return_inverse=True)
    result[rows] = ids.reshape(-1)
    return result


def _prefix(name: str) -> str:
    for base in BASE_NAMES:
        if name.endswith(base):
            return name[: -len(base)]
    return name


def query_tokens(m, k, n, batch, macs):
    """Query tokens per sequence of a causal Q*gK row, recovered from its shape and MACs.

    Q*gK has m = q x group, k = head_dim, n = context = prior + q, batch = sequences x kv_heads and
    MACs = batch x group x head_dim x (q x prior + q(q+1)/2), so q = 2 (n + 1/2 - MACs / (batch k m)).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.rint(2.0 * (n + 0.5 - macs / (batch * k * m)))
    return np.clip(np.nan_to_num(q, nan=1.0), 1.0, np.maximum(n, 1.0))


def fused_times(kind_is_decode, m, k, n, batch, matrix_macs, vector_flops, nbytes, rates) -> dict:
    """Chain of times of each fused kernel (arrays over groups): peak with tile padding (t1),
    with waves / parallelism (t2), at the achievable rates (t3), plus compute and memory parts."""
    per_core, cores = rates["macs_per_s_per_core"], rates["cores"]
    peak = per_core * cores
    vector_s = vector_flops / rates["vector_flops_per_s"]
    memory_peak = nbytes / rates["bandwidth"]
    # prefill: causal flash tiles
    q = query_tokens(m, k, n, batch, matrix_macs / 2.0)
    heads = batch * m / q
    prior = n - q
    blocks = np.ceil(q / FLASH_BLOCK_Q)
    last = _ceil_to(prior + q, FLASH_BLOCK_K)
    padded_pairs = FLASH_BLOCK_Q * ((blocks - 1) * _ceil_to(prior, FLASH_BLOCK_K)
                                    + FLASH_BLOCK_Q * blocks * (blocks - 1) / 2.0 + last)
    padded_prefill = np.maximum(2.0 * heads * k * padded_pairs, matrix_macs)
    largest_cta = 2.0 * FLASH_BLOCK_Q * k * last
    waves_prefill = np.maximum(padded_prefill / cores, largest_cta) / per_core
    # decode: pad the group's query rows to whole matrix fragments; the KV cache streams
    padded_decode = matrix_macs * _ceil_to(m, MATRIX_MIN_ROWS) / m
    padded = np.where(kind_is_decode, padded_decode, padded_prefill)
    compute_waves = np.where(kind_is_decode, padded_decode / peak, waves_prefill)
    memory_waves = memory_peak
    compute = np.maximum(compute_waves / rates["matrix_fraction"], vector_s)
    memory = np.maximum(memory_waves, nbytes / (rates["bandwidth"] * rates["memory_fraction"]))
    t0 = np.maximum.reduce([matrix_macs / peak, vector_s, memory_peak])
    t1 = np.maximum.reduce([padded / peak, vector_s, memory_peak, t0])
    t2 = np.maximum.reduce([compute_waves, vector_s, memory_waves, t1])
    t3 = np.maximum.reduce([compute, memory, t2])
    return {"t0": t0, "t1": t1, "t2": t2, "t3": t3, "compute": compute, "memory": memory}
