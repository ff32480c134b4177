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
Fitted on measured attention kernels (AttentionOverheads, RealisticConstants' attention block): the fixed
work per key tile and per CTA (prefill) and per (sequence, KV head) (decode), in core cycles, is added in t3.

Prefill (query tiles of FLASH_BLOCK_Q rows over key tiles of FLASH_BLOCK_K, causal): the work is
padded to whole tiles (the diagonal tiles run in full), spread over the cores in CTAs of one
(head, query tile); the largest CTA (the last query tile) bounds the time from below.
Decode: one query token per sequence; the group's query rows pad to the matrix unit's 16 rows and
the KV cache streams at the achievable bandwidth (flash-decoding / paged attention v2 split long
contexts so that even one sequence keeps every core busy; short ones pay the kernel latency).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.common.arrays import all_true, any_true
from engine.common.float_or_array import ceil, full_like, largest, logical_not, maximum, minimum, nan_to, where
# FLASH_BLOCK_Q / _K and query_tokens: re-exported (the prefill's tiles live in flash_prefill.py)
from engine.estimators.flash_prefill import (FLASH_BLOCK_K, FLASH_BLOCK_Q, _ceil_to, prefill_terms,  # noqa: F401
                                             query_tokens)
from engine.estimators.decode_split import (DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE,  # noqa: F401
                                            DECODE_SPLIT_VALUES, split_seconds)
from engine.estimators.row_groups import SMALL_UNIQUE, RowGroups, dense_ranks, unique_inverse
from engine.kernels.table import SLIDING_SUFFIX

ATTENTION_OPS = ("kv_read", "attention", "softmax")
BASE_NAMES = ("KVCache_Read", "Q*gK*gV", "Q*gK", "Softmax")   # longest first when stripping
MATRIX_MIN_ROWS = 16       # tensor-core fragments have 16 rows
# query heads per KV head a tensor-core decode kernel takes (TensorRT-LLM's XQA); beyond it the measured decode
# kernels run 3-20x slower on every device (aiconfigurator's tables, groups of 48-128): the vector units compute
DECODE_MATRIX_GROUP_MAX = 32
# the split-KV reduction's threshold and its ramp's cap: engine/estimators/decode_split.py (re-exported)
# query heads one CTA of a grouped-query decode takes (one 16-row matrix fragment); a wider group (up to
# DECODE_MATRIX_GROUP_MAX) takes the extra fragments' share of the kernel time
# (AttentionOverheads.decode_fragment_share)
DECODE_FRAGMENT_HEADS = 16
# the 8-bit decode kernel of devices whose matrix units take fp8 but not fp4 (AttentionOverheads.decode_fp8_cta_cycles,
# RealisticConstants.attention_decode_fp8_latency_cycles) takes groups of 2 to this many query heads per KV head (was 8;
# Hopper's fp8 groups of 12-16 run near its ~6 us floor), in fragments of 8 heads (decode_fp8_fragment_share)
DECODE_FP8_GROUP_MAX, DECODE_FP8_FRAGMENT_HEADS = 16, 8


@dataclass(frozen=True, slots=True)
class AttentionOverheads:
    """Fixed work of the fused attention kernels beyond their MACs and bytes (fitted: engine/calibration/silicon/attention_fit.py).

    prefill_tile_cycles   core cycles per (query tile, key tile) iteration of a flash CTA: the online softmax
                          (max, exp, rescale) and the tile loads' synchronisation, which do not shrink with the
                          head dim, so small head dims run further below the matrix peak
    prefill_cta_cycles    core cycles per CTA (one head x query tile): Q load, output rescale and store
    decode_cta_cycles     core cycles per (sequence, KV head) of a decode kernel: its split-KV partial results
                          and their reduction
    decode_bandwidth_efficiency   the KV stream's rate relative to a GEMM's achievable bandwidth (paged blocks)
    prefill_cta_rows_exponent     a prefill CTA's cycles scale as (its query rows / its tile's rows) ** exponent:
                          a short prompt's CTA (fewer than FLASH_BLOCK_Q query rows) loads, rescales and stores
                          fewer rows (0: every CTA costs prefill_cta_cycles)
    decode_wide_kv_cta_cycles, decode_pair_bytes_per_core_cycle, decode_split_cycles, decode_generic_mac_cycles:
                          the decode kernel-generation form (_decode_terms; 0: not charged)
    decode_fp8_cta_cycles the 8-bit matrix decode kernel's cycles per (sequence, KV head), in place of
                          decode_cta_cycles (_decode_terms' `fp8_matrix`; None: decode_cta_cycles)
    decode_fragment_share a grouped-query decode of more than DECODE_FRAGMENT_HEADS query heads per KV head takes
                          1 + share x (its extra 16-head fragments) times the kernel's time (0: none)
    decode_fp8_fragment_share     the same for the 8-bit matrix kernel (fp8_matrix_decode) and its 8-head fragments
    decode_stream_cap     the decode KV stream's rate at most this fraction of the peak bandwidth (1: the peak)
    decode_split_ramp_cycles      the split-KV reduction's cycles grow by this x the HBM bytes per core cycle
                          (bandwidth / (cores x clock), the bandwidth held where more no longer pays for the ramp,
                          at most DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE: decode_split.py) on devices without
                          fp4 units (0: none)
    decode_fp8_value_cycles       core cycles per K/V value of a one-query-head-per-KV-head decode over an 8-bit
                          cache on a device whose matrix units take fp8 and not fp4 (the conversion; 0: none)
    prefill_score_vector_flops    vector FLOPs per (padded) score of a flash prefill after its matrix work (the online
                          softmax: scale, max, exponential, sum, conversion), at the vector units' FLOPs per core cycle
                          x the device's softmax_rate_scale (FusedRates)
    prefill_cta_softmax_share     the share of prefill_cta_cycles that runs at softmax_rate_scale (the per-row
                          rescaling's exponentials); the rest does not scale (0: none)
    prefill_largest_cta_share     the share of the largest CTA's work (the last query tile's) a flash prefill adds to
                          its cores' mean work: CTAs of unequal causal spans on few waves do not balance over the
                          cores (flash_prefill.prefill_work; 0: the mean or the largest CTA, whichever is longer)
    Cycles are spread over the device's cores: seconds = cycles x units / (cores x clock).
    """

    prefill_tile_cycles: float = 0.0
    prefill_cta_cycles: float = 0.0
    decode_cta_cycles: float = 0.0
    decode_bandwidth_efficiency: float = 1.0
    prefill_cta_rows_exponent: float = 0.0
    decode_wide_kv_cta_cycles: float = 0.0
    decode_pair_bytes_per_core_cycle: float = 0.0
    decode_split_cycles: float = 0.0
    decode_generic_mac_cycles: float = 0.0
    decode_fp8_cta_cycles: float | None = None
    decode_fragment_share: float = 0.0
    decode_stream_cap: float = 1.0
    decode_fp8_value_cycles: float = 0.0
    decode_split_ramp_cycles: float = 0.0
    prefill_score_vector_flops: float = 0.0
    prefill_cta_softmax_share: float = 0.0
    decode_fp8_fragment_share: float = 0.0
    prefill_largest_cta_share: float = 0.0


def attention_groups(columns: dict, row_groups: RowGroups | None = None) -> np.ndarray:
    """Per row: the id of its fused attention kernel, or -1 for rows outside attention.

    Rows of one attention share phase, name prefix and position within their decode-step block.
    """
    row_groups = row_groups or RowGroups(columns)
    if row_groups.one_row_each and len(row_groups.first) <= SMALL_UNIQUE:
        return _small_attention_groups(row_groups)
    ops = row_groups.group_strings("op").tolist()                         # per group: string work once each
    attention = np.fromiter((op in ATTENTION_OPS for op in ops), dtype=bool, count=len(ops))
    rows = np.flatnonzero(attention[row_groups.inverse])
    result = np.full(len(row_groups.inverse), -1, dtype=np.int64)
    if rows.size == 0:
        return result
    block = row_groups.inverse[rows]

    def codes(key):   # per attention row: the rank of its group's value among the attention groups' values
        unique, code_of_group = unique_inverse(row_groups.group_strings(key)[attention])
        by_group = np.full(len(attention), -1, dtype=np.int64)
        by_group[attention] = code_of_group
        return unique, by_group[block]

    unique_names, name_code = codes("name")
    _, prefix_of_name = unique_inverse(np.array([_prefix(name) for name in unique_names], dtype=str))
    _, phase_code = codes("phase")
    position = _position_in_block(block)
    prefix_code = prefix_of_name.reshape(-1)[name_code.reshape(-1)]
    keys = (phase_code.reshape(-1) * (prefix_code.max() + 1) + prefix_code) * (position.max() + 1) + position
    ids = dense_ranks(keys)
    result[rows] = ids
    return result


def _small_attention_groups(row_groups: RowGroups) -> np.ndarray:
    """attention_groups of a short table of one row per group (a prefill or one decode step), in Python: each
    row is alone in its block (position 0), so an attention's id is the rank of its (phase, name prefix) among
    those of the attention rows, the order numpy's codes and dense ranks give."""
    ops = row_groups.group_strings("op").tolist()
    names = row_groups.group_strings("name").tolist()
    phases = row_groups.group_strings("phase").tolist()
    keys = [(phase, _prefix(name)) if op in ATTENTION_OPS else None for op, name, phase in zip(ops, names, phases)]
    rank = {key: index for index, key in enumerate(sorted({key for key in keys if key is not None}))}
    return np.array([-1 if key is None else rank[key] for key in keys], dtype=np.int64)


def _position_in_block(block: np.ndarray) -> np.ndarray:
    """Each row's position among the rows of its block (its group), counted in row order."""
    index = np.arange(block.size)
    if (block[1:] >= block[:-1]).all():       # the builder's order: each block one run (no sort)
        starts = np.concatenate(([True], block[1:] != block[:-1]))
        return index - np.maximum.accumulate(np.where(starts, index, 0))
    _, first = np.unique(block, return_index=True)
    return index - first[np.searchsorted(np.unique(block), block)]


def _prefix(name: str) -> str:
    """The name without its base: the `d`/`p` part of a chunk and the layer kind (` (sliding)`) remain."""
    for base in BASE_NAMES:
        if base in name:
            return name.replace(base, "", 1)
    return name


def is_scores_row(names: np.ndarray) -> np.ndarray:
    """True for the Q*gK rows (any prefix, any layer-kind suffix)."""
    return np.array([name.replace(SLIDING_SUFFIX, "").endswith("Q*gK") for name in names.astype(str).tolist()],
                    dtype=bool)


@dataclass(frozen=True, slots=True)
class FusedShapes:
    """Per fused attention kernel (arrays over groups): its lead row's shape and the group's summed work.

    decode: True for decode kernels (Va_Mqa); m, k, n, batch: the lead (Q*gK) row's GEMM shape (at least 1);
    matrix_macs, vector_flops, nbytes: the group's rows summed; score_macs: the Q*gK MACs (None: half the
    matrix MACs, as when scores and values have the same head width); window: the sliding window of each group
    (NaN or None: full attention)."""

    decode: np.ndarray
    m: np.ndarray
    k: np.ndarray
    n: np.ndarray
    batch: np.ndarray
    matrix_macs: np.ndarray
    vector_flops: np.ndarray
    nbytes: np.ndarray
    score_macs: np.ndarray | None = None
    window: np.ndarray | None = None
    kv_value_bytes: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class FusedRates:
    """The device rates a fused attention kernel runs at (matrix_fraction already x the attention efficiency)."""

    macs_per_s_per_core: np.ndarray      # peak matrix MAC/s of one core, per group (its dtype)
    cores: int
    clock_hz: float
    vector_flops_per_s: float
    bandwidth: float
    matrix_fraction: float
    memory_fraction: float
    matrix_fp4: bool = False      # the matrix units take 4-bit floats (fifth-generation tensor cores)
    matrix_fp8: bool = False      # the matrix units take 8-bit floats (fourth generation on)
    # the softmax's exponentials per core cycle relative to the baseline (flash_prefill.softmax_rate_scale: 1.5 on
    # Blackwell Ultra, 1 elsewhere)
    softmax_rate_scale: float = 1.0


def cached_value_bytes(total, out: dict, batch, n, k):
    """Per fused group: bytes per cached K/V value, its KV read (`total("kv_bytes")`, summed over the group's rows)
    over 2 (K and V) x batch (sequences x KV heads) x n (context) x k (head dim); None without a kv_bytes column."""
    if "kv_bytes" not in out:
        return None
    return total("kv_bytes") / (2.0 * batch * n * k)       # batch, n and k are at least 1 (fused_group_inputs)


def _eight_bit_cache(kv_value_bytes):
    """nan_to(kv_value_bytes, nan=2.0) < 1.5: an array compared as it is (NaN compares False, as 2.0 does; an infinity
    as the largest float nan_to_num puts in its place), without nan_to_num's copies; a float through nan_to."""
    if kv_value_bytes.__class__ is np.ndarray:
        return kv_value_bytes < 1.5
    return nan_to(kv_value_bytes, nan=2.0) < 1.5


def fp8_matrix_decode(shapes: FusedShapes, rates: FusedRates) -> np.ndarray:
    """Per group: a grouped-query decode (2 to DECODE_FP8_GROUP_MAX query heads per KV head, head dim up to 256) over an
    8-bit cache on a device whose matrix units take fp8 but not fp4: it runs the 8-bit matrix kernel (the tables'
    Hopper fp8 caches: a ~6 us floor and ~1,800 cycles per (sequence, KV head), against the 16-bit caches' ~8.5 us
    and ~8,000 cycles), with its own floor and CTA cycles."""
    if rates.matrix_fp4 or not rates.matrix_fp8 or shapes.kv_value_bytes is None:
        return full_like(shapes.m, False, dtype=bool)
    eight_bit = _eight_bit_cache(shapes.kv_value_bytes)
    return eight_bit & (shapes.m >= 2) & (shapes.m <= DECODE_FP8_GROUP_MAX) & (shapes.k <= 256)


def _decode_terms(shapes: FusedShapes, rates: FusedRates, overheads: AttentionOverheads, generic, fp8_matrix) -> dict:
    """A decode kernel's terms beyond its bytes (arrays over groups; 0 where an overhead is 0):
    generic_s   the generic kernel (generic: more than DECODE_MATRIX_GROUP_MAX query heads per KV head) computes each
                head's dot products on the vector units: 2 FLOPs per MAC at their peak, and at least
                decode_generic_mac_cycles core cycles per MAC (the tables: ~0.07 on A100, Hopper and Blackwell alike)
    pair_s      each (sequence, KV head) streams its share at decode_pair_bytes_per_core_cycle x cores x clock; this
                time is added to the HBM stream's (a decode reaches the HBM rate only over many pairs); MLA's latent
                kernels too (one pair per sequence: MLA decode LODO 20.9% -> 18.7% in-sample shipped)
    cta_cycles  per (sequence, KV head) CTA: decode_cta_cycles, + decode_wide_kv_cta_cycles for a grouped-query decode
                over a 16-bit cache on a device without fp4 matrix units (older tensor cores' kernels);
                decode_fp8_cta_cycles instead for the 8-bit matrix kernel (fp8_matrix_decode)
    split       on such a device, more than DECODE_SPLIT_VALUES cached values per head (context x head dim) split
                over CTAs and pay a reduction (fused_times: decode_split.split_seconds, whose ramp needs the stream)
    convert_s   Hopper's 8-bit one-head-per-KV-head kernel: decode_fp8_value_cycles per K/V value, a bound beside the
                stream (the tables: 2.5 / 2.75 TB/s on H100 / H200 at every length)
    scale       1 + decode_fragment_share x the 16-head fragments beyond the first of a grouped-query decode wider than
                DECODE_FRAGMENT_HEADS (the tables: groups of 24 and 32 take 1.13-1.26x the time of 16 at equal KV
                on every device, at every length; groups of 2-16 within 10%), + decode_fp8_fragment_share x the 8-bit
                matrix kernel's 8-head fragments beyond the first"""
    m, n, batch = shapes.m, shapes.n, shapes.batch
    latent = shapes.k > 256         # MLA's latent kernels (FlashMLA-style): none of the terms below but generic_s, pair_s
    core_cycles_s = 1.0 / (rates.cores * rates.clock_hz)
    generic_s = 2.0 * shapes.matrix_macs / rates.vector_flops_per_s
    generic_s = maximum(generic_s, shapes.matrix_macs * overheads.decode_generic_mac_cycles * core_cycles_s)
    pair_rate = overheads.decode_pair_bytes_per_core_cycle / core_cycles_s
    pair_s = shapes.nbytes / (batch * pair_rate) if pair_rate > 0 else full_like(m, 0.0)
    cta_cycles = full_like(m, overheads.decode_cta_cycles)
    split = False
    not_latent = logical_not(latent)
    if not rates.matrix_fp4:
        if shapes.kv_value_bytes is not None:
            wide = (m > 1) & logical_not(generic) & not_latent & (shapes.kv_value_bytes >= 1.5)   # NaN: False
            cta_cycles = cta_cycles + where(wide, overheads.decode_wide_kv_cta_cycles, 0.0)
        split = (n * shapes.k > DECODE_SPLIT_VALUES) & not_latent      # its seconds: fused_times (decode_split.py)
        if overheads.decode_fp8_cta_cycles is not None:
            cta_cycles = where(fp8_matrix, overheads.decode_fp8_cta_cycles, cta_cycles)
    fragments = where(logical_not(generic) & not_latent & (m > DECODE_FRAGMENT_HEADS),
                      ceil(m / DECODE_FRAGMENT_HEADS) - 1, 0.0)
    fp8_fragments = where(fp8_matrix, ceil(m / DECODE_FP8_FRAGMENT_HEADS) - 1, 0.0)
    convert_s = full_like(m, 0.0)
    if overheads.decode_fp8_value_cycles and rates.matrix_fp8 and not rates.matrix_fp4 \
            and shapes.kv_value_bytes is not None:
        eight_bit_mha = _eight_bit_cache(shapes.kv_value_bytes) & (m == 1) & not_latent
        convert_s = where(eight_bit_mha, shapes.nbytes * overheads.decode_fp8_value_cycles * core_cycles_s, 0.0)
    return {"convert_s": convert_s, "generic_s": generic_s, "pair_s": pair_s, "cta_cycles": cta_cycles, "split": split,
            "scale": 1.0 + overheads.decode_fragment_share * fragments + overheads.decode_fp8_fragment_share * fp8_fragments}


def fused_times(shapes: FusedShapes, rates: FusedRates, overheads: AttentionOverheads | None = None, fp8_matrix=None):
    """Chain of times of each fused kernel (arrays over groups): peak with tile padding (t1), with waves /
    parallelism (t2), at the achievable rates (t3), plus compute and memory parts.
    A sliding window's query tiles skip the key tiles outside their band of window + FLASH_BLOCK_Q - 1 keys.
    overheads (AttentionOverheads, default none): the fused kernels' per-tile and per-CTA cycles and the decode
    stream's bandwidth efficiency, added in t3. fp8_matrix: fp8_matrix_decode(shapes, rates) if the caller has it."""
    kind_is_decode, m, k, batch = shapes.decode, shapes.m, shapes.k, shapes.batch
    matrix_macs, vector_flops, nbytes = shapes.matrix_macs, shapes.vector_flops, shapes.nbytes
    overheads = overheads or AttentionOverheads()
    per_core, cores = rates.macs_per_s_per_core, rates.cores
    peak = per_core * cores
    vector_s = vector_flops / rates.vector_flops_per_s
    memory_peak = nbytes / rates.bandwidth
    if kind_is_decode.__class__ is bool:        # one group, as floats
        any_decode, any_prefill = kind_is_decode, not kind_is_decode
    else:
        kind_is_decode = np.asarray(kind_is_decode)
        any_decode, any_prefill = any_true(kind_is_decode), not all_true(kind_is_decode)
    prefill = prefill_terms(shapes, rates, overheads, kind_is_decode, any_decode) if any_prefill else None
    # decode: pad the group's query rows to whole matrix fragments; the KV cache streams
    padded_decode = matrix_macs * _ceil_to(m, MATRIX_MIN_ROWS) / m if any_decode else None
    if not any_prefill:
        padded, compute_waves = padded_decode, padded_decode / peak
    elif not any_decode:
        padded, compute_waves = prefill["padded"], prefill["waves"]
    else:
        padded = np.where(kind_is_decode, padded_decode, prefill["padded"])
        compute_waves = np.where(kind_is_decode, padded_decode / peak, prefill["waves"])
    compute = maximum(compute_waves / rates.matrix_fraction, vector_s)
    # decode with more query heads per KV head than the tensor-core decode kernel takes: the generic kernel
    # computes each head's dot products on the vector units (2 FLOPs per MAC); MLA's latent kernels (head dim
    # above 256) are built for many heads and keep the matrix units
    generic = kind_is_decode & (m > DECODE_MATRIX_GROUP_MAX) & (k <= 256)
    stream = rates.memory_fraction * where(kind_is_decode, overheads.decode_bandwidth_efficiency, 1.0)
    stream = minimum(stream, where(kind_is_decode, overheads.decode_stream_cap, 1.0))
    memory = maximum(memory_peak, nbytes / (rates.bandwidth * minimum(stream, 1.0)))
    # the decode terms where a decode group is present (np.where of an all-false condition keeps the other values)
    decode = _decode_terms(shapes, rates, overheads, generic, fp8_matrix_decode(shapes, rates) if fp8_matrix is None
                           else fp8_matrix) if any_decode else None
    # fixed work: per key tile and query-tile CTA (prefill), per (sequence, KV head) (decode; generic: query head)
    core_cycles_s = 1.0 / (cores * rates.clock_hz)
    if any_decode:
        compute = where(generic, maximum(compute, decode["generic_s"]), compute)
        memory = where(kind_is_decode, maximum(memory + decode["pair_s"], decode["convert_s"]), memory)
        decode_s = core_cycles_s * batch * where(generic, m, 1.0) * decode["cta_cycles"] + split_seconds(
            rates, overheads, decode["split"], nbytes / minimum(stream, 1.0), decode["pair_s"],
            maximum(compute, decode["convert_s"]))      # the split-KV reduction: never longer with more bandwidth
    if not any_prefill:
        fixed_s = decode_s
    elif not any_decode:
        fixed_s = core_cycles_s * prefill["cycles"]
    else:
        fixed_s = np.where(kind_is_decode, decode_s, core_cycles_s * prefill["cycles"])
    t0 = largest(matrix_macs / peak, vector_s, memory_peak)
    t1 = largest(padded / peak, vector_s, memory_peak, t0)
    t2 = largest(compute_waves, vector_s, memory_peak, t1)
    t3 = largest(compute, memory, t2) + fixed_s
    scale = where(kind_is_decode, decode["scale"] if any_decode else 1.0, 1.0)   # wide groups' extra fragments
    t3 = t3 * scale
    return {"t0": t0, "t1": t1, "t2": t2, "t3": t3, "compute": compute + fixed_s, "memory": memory, "scale": scale}
