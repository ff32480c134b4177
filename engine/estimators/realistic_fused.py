"""The realistic method's fused attention kernels: each attention group's inputs (shapes, rates, lead row, ideal sum),
its time by fused_times (engine/estimators/fused_attention.py), and its charge to the group's rows by their ideal
times (engine/estimators/realistic.py describes the chain of times)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from engine.common.arrays import all_true, any_true
from engine.common.float_or_array import maximum, where
from engine.common.index_runs import IndexRuns
from engine.estimators.attention_cache_width import group_kv_value_bytes, prefill_macs_per_s_per_core, row_ideals
from engine.estimators.fused_attention import (AttentionOverheads, FusedRates, FusedShapes, _eight_bit_cache,
                                               cached_value_bytes, fp8_matrix_decode, fused_times, is_scores_row)
from engine.estimators.fused_offset import one_transition_offset, transition_offsets
from engine.estimators.mla_attention import (any_mla, combine, decode_constants, decode_kernel_s, mla_groups,
                                             one_core_decode_s, prefill_constants, split_decode)
from engine.estimators.realistic_constants import DeviceRates, decode_attention_latency_s
from engine.estimators.realistic_gemms import KernelRows, TimeChain
from engine.estimators.row_groups import RowGroups, least_per_id
from engine.estimators.structure_memo import remembered


@dataclass(frozen=True, slots=True)
class FusedGroups:
    """Per fused attention kernel: its shapes and rates (fused_times' inputs), its lead row and its rows' ideal sum."""

    shapes: FusedShapes
    rates: FusedRates
    lead: np.ndarray          # the row each group's shape comes from (its Q*gK row, else its first matrix row)
    ideal_sum: np.ndarray     # the group's rows' roofline times summed (row_ideal where set)
    row_ideal: np.ndarray | None = None     # per attention row: its ideal where a kernel's rate raised it (else None)
    # per group: the offset at the bandwidth where a memory-bound fused roofline turns compute-bound (fused_offset.py;
    # 0 where compute-bound; None where no group is memory-bound)
    transition_offset: np.ndarray | float | None = None

    @property
    def decode(self) -> np.ndarray:
        return self.shapes.decode


def _fused_rates(rates, constants, per_core_macs, decode, kv_value_bytes) -> FusedRates:
    """The fused attention kernel's rates for its groups (arrays) or one group (floats): the matrix rate raised to
    fp8's for a prefill over an 8-bit cache, the attention matrix efficiency applied."""
    return FusedRates(
        macs_per_s_per_core=prefill_macs_per_s_per_core(per_core_macs, decode, kv_value_bytes,
                                                        rates.fp8_macs_per_s_per_core),
        cores=rates.cores, clock_hz=rates.clock_hz,
        vector_flops_per_s=rates.vector_flops_per_s, bandwidth=rates.bandwidth,
        matrix_fraction=rates.matrix_fraction * constants.attention_matrix_efficiency,
        memory_fraction=rates.memory_fraction, matrix_fp4=rates.matrix_fp4, matrix_fp8=rates.matrix_fp8,
        softmax_rate_scale=rates.softmax_rate_scale)


def fused_group_inputs(out, fused, row_groups: RowGroups, rates: DeviceRates, per_core_macs, constants,
                       memo: dict | None = None) -> FusedGroups:
    """Per attention group: fused_times' inputs, its lead row (its Q*gK row, else its first matrix row), ideal sum.
    `memo`: the table structure's (structure_memo.py; `fused` is then the one it keeps), which keeps the groups'
    rows, lead rows and row kinds."""
    rows, at_rows, group, groups, by_group, is_scores, is_matrix, lead, decode = remembered(
        memo, "group_layout", lambda: _group_layout(fused, row_groups))
    of_rows = lambda column: at_rows.take(np.asarray(out[column])).astype(float, copy=False)  # noqa: E731
    total = lambda column: by_group.sums(of_rows(column), groups)  # noqa: E731
    m, k, n, batch = (np.maximum(out[c][lead].astype(float), 1.0) for c in ("m", "k", "n", "batch"))
    kv_value_bytes = group_kv_value_bytes(out, lead, lambda: cached_value_bytes(total, out, batch, n, k))
    fused_rates = _fused_rates(rates, constants, per_core_macs[lead], decode, kv_value_bytes)
    score_macs, matrix_macs, vector_flops, nbytes, time_sum = _group_sums(out, at_rows, by_group, groups, is_scores)
    score_macs = np.where(score_macs > 0, score_macs, matrix_macs / 2.0)   # a group without a Q*gK row
    window = out["attention_window"][lead].astype(float) if "attention_window" in out else None
    shapes = FusedShapes(decode=decode, m=m, k=k, n=n, batch=batch, matrix_macs=matrix_macs,
                         vector_flops=vector_flops, nbytes=nbytes, score_macs=score_macs,
                         window=window, kv_value_bytes=kv_value_bytes)
    row_rate, kernel_rate = at_rows.take(per_core_macs), by_group.take(fused_rates.macs_per_s_per_core)
    ideals = row_ideals(out, rows, is_matrix, row_rate, kernel_rate)
    return FusedGroups(shapes=shapes, rates=fused_rates, lead=lead,
                       ideal_sum=time_sum if ideals is None else by_group.sums(ideals, groups), row_ideal=ideals,
                       transition_offset=transition_offsets(out, at_rows, group, groups, by_group, shapes,
                                                            fused_rates, is_matrix, row_rate, kernel_rate))


_SUMMED = ("macs", "vector_flops", "bytes", "time_s")


def _group_sums(out, at_rows: IndexRuns, by_group: IndexRuns, groups: int, is_scores: np.ndarray) -> tuple:
    """Per group: the sums of its scores rows' MACs, of its rows' MACs, vector FLOPs, bytes and roofline times, in
    one take and one sum of the columns stacked (float64 columns; others one column at a time). Each sum adds its
    terms in row order, as by_group.sums of one column does, so the bits are those."""
    columns = [np.asarray(out[column]) for column in _SUMMED]
    if any(values.dtype != np.float64 or values.ndim != 1 for values in columns):
        of_rows = [at_rows.take(values).astype(float, copy=False) for values in columns]
        return tuple(by_group.sums(values, groups) for values in (np.where(is_scores, of_rows[0], 0.0), *of_rows))
    stacked = np.empty((len(columns) + 1, len(columns[0])))     # row 0: the scores rows' MACs, set below
    np.stack(columns, out=stacked[1:])
    weights = at_rows.take_columns(stacked)
    weights[0] = np.where(is_scores, weights[1], 0.0)
    return tuple(by_group.sums_columns(weights, groups))


def _group_layout(fused: np.ndarray, row_groups: RowGroups) -> tuple:
    """fused_group_inputs' rows and groups: (attention rows, their IndexRuns, their group ids, the group count, the
    ids' IndexRuns, is_scores and is_matrix per row, each group's lead row, decode per group)."""
    rows = np.flatnonzero(fused >= 0)
    at_rows = IndexRuns(rows)         # a request's attention rows: a few row ranges (slices, not fancy indexing)
    group = at_rows.take(fused)
    groups = int(group.max()) + 1
    by_group = IndexRuns(group)       # ... and their group ids: a few runs 0, 1, 2, ... (sums by slices)
    # string tests once per group, then per row (repeated along the builder's runs where they are contiguous)
    is_scores = at_rows.take(row_groups.per_row(is_scores_row(row_groups.group_strings("name"))))
    is_matrix = at_rows.take(row_groups.per_row(row_groups.group_strings("op") == "attention"))
    priority = 2 * (~is_matrix).astype(np.int64) + (~is_scores).astype(np.int64)   # scores, matrix, other rows
    keys = priority * rows.size + np.arange(rows.size)
    least = by_group.least(keys)
    lead = rows[(least_per_id(group, keys) if least is None else least) % rows.size]   # lexsort's first
    decode = (row_groups.group_strings("type") == "Va_Mqa")[row_groups.inverse[lead]]   # compared once per kernel
    return rows, at_rows, group, groups, by_group, is_scores, is_matrix, lead, decode


def fused_group_kernel_s(inputs: FusedGroups, rates: DeviceRates, constants) -> tuple[dict, np.ndarray]:
    """fused_times of each group and its device time: latency + t3 + the rows' ideal sum over the fused t0 (arrays
    over groups; for FusedGroups of floats (one_group_inputs), floats). MLA's kernels with MLA's constants where
    `constants.mla_attention` is set, on devices with row waves (engine/estimators/mla_attention.py)."""
    mla = constants.mla_attention
    if mla is not None and rates.row_waves and (mla.prefill is not None or mla.decode is not None):
        prefill, decode = mla_groups(inputs.shapes, mla)
        if any_mla(prefill, decode):
            return _with_mla(inputs, rates, constants, mla, prefill, decode)
    return shared_kernel_s(inputs, rates, constants)


def _with_mla(inputs: FusedGroups, rates: DeviceRates, constants, mla, prefill, decode) -> tuple[dict, np.ndarray]:
    """fused_group_kernel_s with MLA's prefill and decode kernels (`prefill`, `decode`: which groups) timed with its
    constants: a prefill as the shared model with MLA's values (an 8-bit cache's on an fp8 device), a decode as its
    floor + max(the shared model with MLA's values and no latency, the 8-bit latent's conversion), or on a device
    whose cores cannot hold the split-context kernels' tiles, the one-core kernel's time (mla_attention.py)."""
    # the shared model's times where a group is neither (none: combine takes the MLA values for every group)
    times, kernel = (None, None) if all_true(prefill | decode) else shared_kernel_s(inputs, rates, constants)
    kv = inputs.shapes.kv_value_bytes
    eight_bit = False if kv is None else _eight_bit_cache(kv)
    if any_true(prefill):
        sixteen = prefill_constants(constants, mla.prefill)
        mla_times, mla_kernel = shared_kernel_s(
            with_attention_matrix_efficiency(inputs, rates, sixteen.attention_matrix_efficiency), rates, sixteen)
        if rates.matrix_fp8 and any_true(prefill & eight_bit):
            eight = prefill_constants(constants, mla.prefill, eight_bit=True)
            eight_times, eight_kernel = shared_kernel_s(
                with_attention_matrix_efficiency(inputs, rates, eight.attention_matrix_efficiency), rates, eight)
            mla_times, mla_kernel = combine(eight_bit, eight_times, eight_kernel, mla_times, mla_kernel)
        times, kernel = combine(prefill, mla_times, mla_kernel, times, kernel)
    if any_true(decode):
        decode_times, body = shared_kernel_s(inputs, rates, decode_constants(constants, mla.decode))
        if mla.one_core_decode is not None and not split_decode(rates):     # a core too small for the split kernels
            # never below the split model's body, whose time chain (t1-t3) the rows keep: no negative overhead gap
            mla_kernel = maximum(one_core_decode_s(mla.one_core_decode, rates, inputs.shapes), body)
        else:
            mla_kernel = decode_kernel_s(mla.decode, rates, inputs.shapes, body, eight_bit)
        times, kernel = combine(decode, decode_times, mla_kernel, times, kernel)
    return times, kernel


def shared_kernel_s(inputs: FusedGroups, rates: DeviceRates, constants) -> tuple[dict, np.ndarray]:
    """fused_group_kernel_s with the shared (MHA / GQA) constants for every group."""
    overheads = constants.attention_overheads
    if not rates.row_waves:     # tile and CTA cycles are a SIMT GPU's; a TPU core streams the whole attention
        overheads = AttentionOverheads(decode_bandwidth_efficiency=overheads.decode_bandwidth_efficiency)
    shapes = inputs.shapes
    fp8_matrix = fp8_matrix_decode(shapes, inputs.rates)       # decided once for the kernel time and its latency
    times = fused_times(shapes, inputs.rates, overheads, fp8_matrix)
    prefill = constants.attention_prefill_latency_s
    decode = decode_attention_latency_s(constants, rates, shapes.k, fp8_matrix)
    latency = where(shapes.decode, (rates.kernel_latency_s if decode is None else decode) * times["scale"],
                    rates.kernel_latency_s if prefill is None else prefill)
    offset = maximum(inputs.ideal_sum - times["t0"], 0.0)
    if inputs.transition_offset is not None:     # never larger with less bandwidth (fused_offset.py)
        offset = maximum(offset, inputs.transition_offset)
    return times, latency + times["t3"] + offset


def one_group_inputs(out, rows: np.ndarray, row_groups: RowGroups, rates: DeviceRates, per_core_macs,
                     constants, memo: dict | None = None) -> FusedGroups | None:
    """fused_group_inputs of one attention group (`rows`, every row of group 0) as Python floats (decode a bool, lead
    an int); None where its lead row has a sliding window. Sums add in row order, as np.bincount adds them.
    `memo`: the table structure's (structure_memo.py), which keeps the group's lead row and row kinds."""
    lead, is_scores, is_matrix, decode = remembered(memo, ("one_group", rows.tobytes()),
                                                    lambda: _one_group_layout(rows, row_groups))
    window = float(out["attention_window"][lead]) if "attention_window" in out else math.nan
    if math.isfinite(window):
        return None

    def total(column, pick=None):
        result = 0.0
        values = np.asarray(out[column])[rows].astype(float).tolist()
        for value in values if pick is None else (value for value, picked in zip(values, pick) if picked):
            result += value
        return result

    m, k, n, batch = (max(float(out[c][lead]), 1.0) for c in ("m", "k", "n", "batch"))
    matrix_macs, score_macs = total("macs"), total("macs", is_scores)
    kv_value_bytes = group_kv_value_bytes(out, lead, lambda: cached_value_bytes(total, out, batch, n, k))
    fused_rates = _fused_rates(rates, constants, float(per_core_macs[lead]), decode, kv_value_bytes)
    shapes = FusedShapes(
        decode=decode, m=m, k=k, n=n,
        batch=batch, matrix_macs=matrix_macs, vector_flops=total("vector_flops"), nbytes=total("bytes"),
        score_macs=score_macs if score_macs > 0 else matrix_macs / 2.0, window=None, kv_value_bytes=kv_value_bytes)
    row_rate = np.asarray(per_core_macs)[rows]
    transition = one_transition_offset(out, rows, shapes, fused_rates, is_matrix, row_rate)
    if fused_rates.macs_per_s_per_core > per_core_macs[lead]:      # an 8-bit cache's prefill: its rows' ideals
        ideals = row_ideals(out, rows, np.array(is_matrix), row_rate,
                            np.full(len(rows), fused_rates.macs_per_s_per_core))
        return FusedGroups(shapes=shapes, rates=fused_rates, lead=lead, ideal_sum=float(sum(ideals.tolist())),
                           row_ideal=ideals, transition_offset=transition)
    return FusedGroups(shapes=shapes, rates=fused_rates, lead=lead, ideal_sum=total("time_s"),
                       transition_offset=transition)


def _one_group_layout(rows: np.ndarray, row_groups: RowGroups) -> tuple:
    """(lead row, is_scores and is_matrix per row (lists), decode) of one attention group: the lead is the first scores
    row, else the first matrix row, else the first row (fused_group_inputs' priority)."""
    names, ops = row_groups.group_strings("name"), row_groups.group_strings("op")
    of_row = row_groups.inverse[rows].tolist()
    is_scores = is_scores_row(names[of_row]).tolist()
    is_matrix = [ops[index] == "attention" for index in of_row]
    order = [2 * (not matrix) + (not scores) for matrix, scores in zip(is_matrix, is_scores)]
    lead = rows.tolist()[order.index(min(order))]
    decode = bool(row_groups.group_strings("type")[row_groups.inverse[lead]] == "Va_Mqa")
    return lead, tuple(is_scores), tuple(is_matrix), decode


def _attention_rows(fused: np.ndarray) -> tuple:
    """(the attention rows, their IndexRuns, their group ids, whether they form one group)."""
    rows = np.flatnonzero(fused >= 0)
    at_rows = IndexRuns(rows)         # a request's attention rows: a few row ranges (slices, not fancy indexing)
    group = at_rows.take(fused)
    return rows, at_rows, group, not any_true(group)


def time_fused(table: KernelRows, fused: np.ndarray, chain: TimeChain, time: np.ndarray,
               kernel_time: np.ndarray, memo: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Time each attention group once and charge it to its rows by their ideal times: (time, kernel_time).
    `memo`: the table structure's (structure_memo.py; `fused` is then the one it keeps)."""
    rows, at_rows, group, one = remembered(memo, "attention_rows", lambda: _attention_rows(fused))
    inputs = None
    if one:                         # one group (a phase's attention): in Python floats
        try:
            inputs = one_group_inputs(table.out, rows, table.row_groups, table.rates, table.per_core_macs,
                                      table.constants, memo)
            if inputs is not None:
                times, group_kernel = fused_group_kernel_s(inputs, table.rates, table.constants)
                return _charge_one_group(table, inputs, times, group_kernel, at_rows, chain, time, kernel_time)
        except ArithmeticError:     # a division by zero or a non-finite value: numpy's arrays say what it gives
            inputs = None
    inputs = fused_group_inputs(table.out, fused, table.row_groups, table.rates, table.per_core_macs,
                                table.constants, memo)
    times, group_kernel = fused_group_kernel_s(inputs, table.rates, table.constants)
    ideal_sum, ideal = inputs.ideal_sum, chain.ideal
    if inputs.row_ideal is not None:      # rows of a kernel at a raised rate: their ideal at that rate
        at_rows.put(ideal, inputs.row_ideal)
    ideal_rows = at_rows.take(ideal)
    offset = maximum(ideal_sum - times["t0"], 0.0)
    group_time = maximum(group_kernel, table.host_launch_s)
    gaps = (times["t1"] - times["t0"], times["t2"] - times["t1"], times["t3"] - times["t2"],
            group_time - times["t3"] - offset)
    # each row's share of its group: its ideal time over the group's (an equal share where the group's is 0)
    # values[group]: a request's groups are a few runs 0, 1, 2, ...
    per_row = remembered(memo, "group_runs", lambda: IndexRuns(group))
    row_gaps, kernel_part, compute_part, memory_part = _row_parts(
        per_row, group, ideal_rows, ideal_sum, (*gaps, group_kernel, times["compute"], times["memory"]))
    t1 = ideal_rows + row_gaps[0]
    t2 = t1 + row_gaps[1]
    t3 = t2 + row_gaps[2]
    time = time.copy()
    kernel_time = kernel_time.copy()
    for column, values in ((chain.t1, t1), (chain.t2, t2), (chain.t3, t3), (time, t3 + row_gaps[3]),
                           (kernel_time, kernel_part), (chain.compute, compute_part), (chain.memory, memory_part)):
        at_rows.put(column, values)
    return time, kernel_time


def _row_parts(per_row: IndexRuns, group: np.ndarray, ideal_rows: np.ndarray, ideal_sum, values) -> tuple:
    """Each row's share of its group's `values` (the four gaps, the kernel time, compute and memory): the group's value
    x the row's ideal over the group's (an equal share where the group's is 0), as (gaps, kernel, compute, memory).
    Arrays over the groups are taken to the rows in one take and multiplied in one product (the same products)."""
    if all(isinstance(v, np.ndarray) and v.shape == ideal_sum.shape for v in values):
        taken = per_row.take_columns(np.stack((ideal_sum, *values)))
        group_ideal, taken = taken[0], taken[1:]
    else:
        group_ideal, taken = per_row.take(ideal_sum), None
    if all_true(ideal_sum > 0):     # every group's share is its rows' ideal over the group's (no equal shares)
        share = ideal_rows / group_ideal
    else:
        share = np.divide(ideal_rows, group_ideal, out=1.0 / per_row.take(np.bincount(group)), where=group_ideal > 0)
    parts = taken * share if taken is not None else [per_row.take(value) * share for value in values]
    return parts[:4], parts[4], parts[5], parts[6]


def _charge_one_group(table: KernelRows, inputs: FusedGroups, times: dict, group_kernel, at_rows: IndexRuns,
                      chain: TimeChain, time: np.ndarray, kernel_time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """time_fused's charge of one group (floats) to its rows, in Python floats: each operation is the IEEE double
    operation numpy does on the arrays, in the same order, so the values are bit for bit the arrays' ones."""
    ideal_sum, ideal = inputs.ideal_sum, chain.ideal
    if inputs.row_ideal is not None:      # rows of a kernel at a raised rate: their ideal at that rate
        at_rows.put(ideal, inputs.row_ideal)
    ideal_rows = at_rows.take(ideal).tolist()
    t0, t1, t2, t3 = (float(times[name]) for name in ("t0", "t1", "t2", "t3"))
    offset = maximum(ideal_sum - t0, 0.0)
    group_time = maximum(group_kernel, table.host_launch_s)
    gap1, gap2, gap3, gap4 = t1 - t0, t2 - t1, t3 - t2, float(group_time - t3 - offset)
    # each row's share of the group: its ideal time over the group's (an equal share where the group's is 0)
    share = [value / ideal_sum for value in ideal_rows] if ideal_sum > 0 else [1.0 / len(ideal_rows)] * len(ideal_rows)
    group_kernel, compute, memory = float(group_kernel), float(times["compute"]), float(times["memory"])
    values = []
    for value, part in zip(ideal_rows, share):
        row_t1 = value + gap1 * part
        row_t2 = row_t1 + gap2 * part
        row_t3 = row_t2 + gap3 * part
        values.append((row_t1, row_t2, row_t3, row_t3 + gap4 * part, group_kernel * part, compute * part,
                       memory * part))
    columns = np.array(values).T
    time = time.copy()
    kernel_time = kernel_time.copy()
    for column, row_values in zip((chain.t1, chain.t2, chain.t3, time, kernel_time, chain.compute, chain.memory),
                                  columns):
        at_rows.put(column, row_values)
    return time, kernel_time


def with_attention_matrix_efficiency(inputs: FusedGroups, rates: DeviceRates, efficiency: float) -> FusedGroups:
    """`inputs` with its fused rates' matrix fraction recomputed for another attention matrix efficiency."""
    return replace(inputs, rates=replace(inputs.rates, matrix_fraction=rates.matrix_fraction * efficiency))


