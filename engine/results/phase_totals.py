"""Totals of an estimate's kernel table: the time each bound holds per phase over the decode steps
(`step_bound_times`) and each phase's totals (`phase_total_rows`: time, work, launches, bound times, link traffic),
on numpy columns (the fast path of `engine.estimate`, issue 15; engine/results/columns.py holds the columns). Short
tables (a prefill or one decode step) take paths that add the same floats in the same order with fewer numpy calls
(tests/test_short_table_paths.py compares them with the general paths)."""

from __future__ import annotations

from typing import Optional

import numpy as np

from engine.common.arrays import SHORT_ROWS, all_true, equal_to, finite
from engine.kernels.table import group_runs
from engine.results.columns import bound_codes, first_seen_codes


def step_bound_times(columns: dict, bounds: Optional[tuple[list, np.ndarray]] = None) -> dict[tuple[str, str], float]:
    """{(phase, bound label): count x time_s summed} over the rows of a timed table before decode steps are
    combined: the time during which each bound holds, step by step (a kernel compute bound over a short
    context and memory bound over a long one counts on both sides). `bounds`: bound_codes(columns), where the
    caller has it already."""
    bounds, bound_code = bounds if bounds is not None else bound_codes(columns)
    work = np.asarray(columns["count"], dtype=float) * np.asarray(columns["time_s"], dtype=float)
    if len(work) <= SHORT_ROWS:
        return _short_step_bound_times(columns, bounds, bound_code, work)
    phase_code, phases = _phase_codes(columns)
    sums = np.bincount(phase_code * len(bounds) + bound_code, weights=work, minlength=len(phases) * len(bounds))
    return {(str(p), str(b)): float(sums[i * len(bounds) + j])
            for i, p in enumerate(phases) for j, b in enumerate(bounds)}


def _short_step_bound_times(columns: dict, bounds: list, bound_code: np.ndarray, work: np.ndarray) -> dict:
    """step_bound_times of a short table: the same sums in Python floats (np.bincount adds each row's weight to
    its bin in row order, from 0.0, in double precision, as these loops do)."""
    phase_list = np.asarray(columns["phase"], dtype=object).tolist()
    phases = list(dict.fromkeys(phase_list))
    code_of = {phase: code for code, phase in enumerate(phases)}
    width = len(bounds)
    sums = [0.0] * (len(phases) * width)
    for phase, bound, value in zip(phase_list, bound_code.tolist(), work.tolist()):
        sums[code_of[phase] * width + bound] += value
    return {(str(p), str(b)): sums[i * width + j] for i, p in enumerate(phases) for j, b in enumerate(bounds)}


def _phase_codes(columns: dict) -> tuple[np.ndarray, list]:
    """first_seen_codes of the `phase` column, read once per `group` (a group's rows share their phase)."""
    if "group" not in columns or len(columns["group"]) < SHORT_ROWS:     # a short table: row by row is quicker
        return first_seen_codes(columns["phase"])
    _, first, inverse = group_runs(columns["group"])
    order = np.argsort(first, kind="stable")           # groups by their first row: phases seen in row order
    codes, phases = first_seen_codes(np.asarray(columns["phase"])[first[order]])
    code_of_group = np.empty(len(first), dtype=np.intp)
    code_of_group[order] = codes
    return code_of_group[inverse], phases


def phase_total_rows(kernels, by_bound: Optional[dict[tuple[str, str], float]] = None) -> dict[str, dict]:
    """{phase: {time_s, macs, flops, bytes, kernel_launches, <bound>_bound_time_s..., link_bytes,
    communication_time_s, hidden_communication_time_s}} from a kernel table (DataFrame or KernelColumns);
    report.phase_totals documents the columns."""
    def numbers(name):
        return np.asarray(kernels[name], dtype=float)
    phase = np.asarray(kernels["phase"])
    names = list(dict.fromkeys(phase.tolist()))
    count = numbers("count")
    one = _one_phase_sums(kernels, count) if len(names) == 1 else None
    if one is None:
        launches = count * numbers("launches") if "launches" in kernels else count     # count x 1.0 is count
        launches = np.where(equal_to(np.asarray(kernels["op"]), "bubble"), 0.0, finite(launches))
    bound = np.asarray(kernels["bound"])
    present = set(bound.tolist())
    if bound.dtype != object or not all(label.__class__ is str for label in present):
        bound = bound.astype(str)               # labels as str (an object array of str objects compares alike)
        present = set(bound.tolist())
    present |= {label for _, label in (by_bound or {})}
    labels = ["compute", "memory"] + sorted(present - {"compute", "memory"})
    if one is not None:
        products, sums = one
        time = products[0]
        per_row_sums = dict(zip(PER_ROW_TOTALS + ("kernel_launches",), sums[:5]))
        link_sums = dict(zip(LINK_TOTALS, sums[5:]))
    else:
        zeros = np.zeros(len(count))
        link_bytes, communication, hidden = (finite(kernels[name]) * count if name in kernels else zeros
                                             for name in LINK_COLUMNS)
        time = numbers("time_s") * count
        macs, flops, traffic = numbers("macs"), numbers("flops"), numbers("bytes")
        per_row = {"time_s": time, "macs": macs * count, "flops": flops * count, "bytes": traffic * count,
                   "kernel_launches": launches}
        links = dict(zip(LINK_TOTALS, (link_bytes, communication, hidden)))
    totals = {}
    for name in names:
        rows = None if len(names) == 1 else phase == name     # one phase: every row, no selection
        pick = (lambda values: values) if rows is None else (lambda values: values[rows])  # noqa: E731
        row = (dict(per_row_sums) if one is not None
               else {key: np.add.reduce(pick(values)) for key, values in per_row.items()})
        for label in labels:
            row[f"{label}_bound_time_s"] = (by_bound.get((name, label), 0.0) if by_bound is not None
                                            else np.add.reduce(pick(time)[pick(bound) == label]))
        row.update(link_sums if one is not None else {key: np.add.reduce(pick(values)) for key, values in links.items()})
        totals[name] = row
    return totals


PER_ROW_TOTALS = ("time_s", "macs", "flops", "bytes")
LINK_COLUMNS = ("link_bytes", "communication_time_s", "hidden_time_s")
LINK_TOTALS = ("link_bytes", "communication_time_s", "hidden_communication_time_s")


def _one_phase_sums(kernels, count: np.ndarray) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """For a table of one phase: (time_s, macs, flops, bytes, launches (or 1) and the LINK_COLUMNS, each x count, as
    the rows of one array; their sums), in one multiplication and one reduction (each row reduced as np.add.reduce
    reduces it alone: the contiguous last axis of a C-ordered array). Where every product is finite (so is every
    factor) `finite` changes none of them, and count x 1 is count: the general path's values. None (the general
    path) where a product is not finite, a link column is missing or a row is a pipeline bubble (no launches)."""
    if not all(name in kernels for name in LINK_COLUMNS) or "bubble" in np.asarray(kernels["op"]).tolist():
        return None
    rows = len(count)
    launches = kernels["launches"] if "launches" in kernels else (_ONES[:rows] if rows <= len(_ONES) else np.ones(rows))
    values = np.array([kernels[name] for name in PER_ROW_TOTALS] + [launches]
                      + [kernels[name] for name in LINK_COLUMNS], dtype=float)
    products = np.multiply(values, count)
    if not all_true(np.isfinite(products)):
        return None
    return products, np.add.reduce(products, axis=1)


_ONES = np.ones(64)
_ONES.setflags(False)


def phase_frame(totals: dict[str, dict]):
    """The `phases` DataFrame of phase_total_rows (one row per phase, index named `phase`)."""
    import pandas as pd
    frame = pd.DataFrame.from_dict(totals, orient="index")
    frame.index.name = "phase"
    return frame
