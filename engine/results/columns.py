"""An estimate's bookkeeping on numpy columns: kernels combined over decode steps, presentation columns,
totals per phase, MoE experts touched. The fast path of `engine.estimate` (issue 15): no pandas runs while
estimating; `KernelColumns.frame()` builds the user's DataFrame when it is first asked for (docs/methods.md,
"Lazy results"), exactly as the pandas path built it, so results are bit-identical
(tests/test_fast_path_identity.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Callable, Optional

import numpy as np

from engine.common.arrays import all_true, any_true, finite  # noqa: F401  (finite: imported from here too)
from engine.estimators import STEP_MEAN_COLUMNS
from engine.estimators.bound_labels import codes_of, present_codes
from engine.estimators.roofline import intensity
from engine.hardware.dtypes import compute_format
from engine.kernels.table import group_runs, kernel_family

# per-occurrence columns that are averaged (weighted by count) when decode steps are summed up
MEAN_COLUMNS = (
    "m", "k", "n", "batch", "context", "macs", "matrix_flops", "vector_flops", "flops", "weight_bytes",
    "activation_bytes", "kv_bytes", "bytes", "compute_time_s", "memory_time_s", "time_s", "link_bytes",
) + STEP_MEAN_COLUMNS


class KernelColumns:
    """One row per kernel as numpy columns: `source` (the table the DataFrame starts from), the rows kept
    (`keep`, None: all) and the columns appended after (`added`, values of the kept rows, in order).
    Reads like a kernel DataFrame: `name in columns`, `columns[name]` (a numpy array), `len(columns)`."""

    def __init__(self, source: dict, keep: Optional[np.ndarray] = None) -> None:
        self.source, self.keep = source, keep
        self.added: dict = {}
        self._arrays: dict = {}

    def __contains__(self, name) -> bool:
        return name in self.added or name in self.source

    def __getitem__(self, name) -> np.ndarray:
        if name in self.added:
            value = self.added[name]
            if value.__class__ is LazyColumn:
                value = value.value()
            return value if value.__class__ is np.ndarray else np.asarray(value)
        if name not in self._arrays:
            values = self.source[name]
            values = values if values.__class__ is np.ndarray else np.asarray(values)
            self._arrays[name] = values if self.keep is None else values[self.keep]
        return self._arrays[name]

    def __len__(self) -> int:
        return len(self["count"])

    def add(self, name: str, values) -> None:
        self.added[name] = values

    def add_lazy(self, compute: Callable[[], dict]) -> None:
        """Append the columns compute() returns ({name: values}, keys in the order of its `names` attribute),
        computed when first read (presentation columns only the DataFrame reads)."""
        shared = SharedColumns(compute)
        for name in shared.names:
            self.added[name] = LazyColumn(shared, name)

    def freeze(self) -> None:
        """Make every array read-only (the estimate cache shares them), also those of deferred columns once
        computed."""
        source = self.source
        deferred = isinstance(source, DeferredColumns)
        arrays = source.computed() if deferred else list(source.values())
        if deferred:
            source.read_only = True
        ndarray = np.ndarray
        for values in (*arrays, *self.added.values(), self.keep):
            if values.__class__ is ndarray or isinstance(values, ndarray):    # the class test first: quicker
                values.setflags(False)
            elif values.__class__ is LazyColumn:
                values.shared.freeze()

    def frame(self):
        """The kernel DataFrame in one construction: the columns, order and dtypes the pandas path gave."""
        import pandas as pd
        if self.keep is None:
            data = dict(self.source)
        else:
            data = {name: np.asarray(values)[self.keep] for name, values in self.source.items()}
        data.update({name: value.value() if value.__class__ is LazyColumn else value
                     for name, value in self.added.items()})
        return pd.DataFrame(data)


class SharedColumns:
    """Columns computed together on first read and kept (read-only once `freeze` was called: the estimate cache
    shares them between copies of an estimate)."""

    def __init__(self, compute: Callable[[], dict]) -> None:
        self.names = getattr(compute, "names")
        self._compute, self._values, self._read_only = compute, None, False

    def values(self) -> dict:
        if self._values is None:
            self._values = self._compute()
            if self._read_only:
                self.freeze()
        return self._values

    def freeze(self) -> None:
        self._read_only = True
        for values in (self._values or {}).values():
            if isinstance(values, np.ndarray):
                values.setflags(False)


class LazyColumn:
    """One column of SharedColumns (a KernelColumns.added value until read)."""

    __slots__ = ("shared", "name")

    def __init__(self, shared: SharedColumns, name: str) -> None:
        self.shared, self.name = shared, name

    def value(self):
        return self.shared.values()[self.name]


def combine_steps(columns: dict, bounds: Optional[tuple[list, np.ndarray]] = None) -> KernelColumns:
    """One row per kernel: rows sharing a `group` (a kernel at each decode step) are combined.

    Per-occurrence values become count-weighted means, so count x time_s still sums to the
    phase time; `bound` is the bound that holds for most of the kernel's time. Kernels no step runs
    (count 0) are dropped. `bounds`: bound_codes(columns), where the caller has it already. Means are
    computed when first read (DeferredColumns): an estimate's totals read a few, the DataFrame all.
    """
    groups = columns["group"]
    if _one_row_each(groups):
        count = np.asarray(columns["count"])
        return KernelColumns(columns, count > 0 if any_true(count <= 0) else None)
    codes, first, inverse = group_runs(groups)
    count = columns["count"].astype(float)
    total_count = np.bincount(inverse, weights=count)
    divisor = np.where(total_count > 0, total_count, 1.0)      # a kernel no iteration runs: dropped below
    deferred = {column: _step_mean(columns[column], count, first, inverse, divisor)
                for column in MEAN_COLUMNS if column in columns}
    out = {key: _DEFERRED if key in deferred else np.asarray(values)[first] for key, values in columns.items()}
    # bound: the label (compute, memory, llc, overhead, ...) holding most of the kernel's time
    labels, label_codes = bounds if bounds is not None else bound_codes(columns)
    work = columns["time_s"] * count
    time_by_label = np.bincount(inverse * len(labels) + label_codes, weights=work,
                                minlength=len(codes) * len(labels)).reshape(len(codes), len(labels))
    out["bound"] = np.array(labels, dtype=str)[time_by_label.argmax(axis=1)].astype(object)
    out["count"] = total_count
    out["intensity"] = _DEFERRED
    combined = DeferredColumns(out, deferred)
    deferred["intensity"] = lambda: _intensity(combined["flops"], combined["bytes"])
    return KernelColumns(combined, total_count > 0 if any_true(total_count <= 0) else None)


def _one_row_each(groups) -> bool:
    """Whether `groups` is 0, 1, 2, ... (one row per kernel: a prefill or one decode step; group_runs' first test)."""
    groups = np.asarray(groups)
    rows = len(groups)
    return bool(rows) and groups[-1] == rows - 1 and all_true(groups == np.arange(rows))


def _step_mean(values, count, first, inverse, divisor) -> Callable[[], np.ndarray]:
    """The count-weighted mean of `values` per group (NaN where the group's first row is NaN), when called."""
    def mean() -> np.ndarray:
        means = np.bincount(inverse, weights=finite(values) * count) / divisor
        return np.where(np.isnan(np.asarray(values)[first].astype(float)), np.nan, means)
    return mean


def _intensity(flops, nbytes) -> np.ndarray:
    return intensity(np.asarray(flops, dtype=float), np.asarray(nbytes, dtype=float))


_DEFERRED = object()     # a DeferredColumns value not computed yet


class DeferredColumns(Mapping):
    """Columns in table order, some computed on first read and then kept (combine_steps' per-step means: an
    estimate reads the few its totals need; the kernel DataFrame, built on first use, reads the rest).
    Arrays computed after `read_only` is set are made read-only (the estimate cache shares them)."""

    def __init__(self, values: dict, deferred: dict[str, Callable[[], np.ndarray]]) -> None:
        self._values, self._deferred = values, deferred
        self.read_only = False

    def __getitem__(self, name):
        value = self._values[name]
        if value is _DEFERRED:
            value = self._deferred.pop(name)()
            if self.read_only:
                value.setflags(False)
            self._values[name] = value
        return value

    def __contains__(self, name) -> bool:
        return name in self._values

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def computed(self) -> list:
        """The values computed so far."""
        return [value for value in self._values.values() if value is not _DEFERRED]


def bound_codes(columns: dict) -> tuple[list, np.ndarray]:
    """(the distinct `bound` labels as str, sorted; each row's position among them)."""
    known = codes_of(columns["bound"])
    if known is not None:                         # the estimator's own codes (engine/estimators/bound_labels.py)
        return present_codes(*known)
    bound = np.asarray(columns["bound"])
    bound = bound if bound.dtype == object else bound.astype(object)     # label_codes_of only reads it
    labels = set(bound.tolist())
    if not all(isinstance(label, str) for label in labels):
        bound = bound.astype(str).astype(object)
        labels = set(bound.tolist())
    labels = sorted(labels)                       # ties go to the first label in alphabetical order
    return labels, label_codes_of(bound, labels)


def first_seen_codes(values) -> tuple[np.ndarray, list]:
    """(code per value, the distinct values in order of first appearance): pandas.factorize without pandas."""
    values = np.asarray(values, dtype=object)
    labels = list(dict.fromkeys(values.tolist()))
    return label_codes_of(values, labels), labels


def label_codes_of(values: np.ndarray, labels: list) -> np.ndarray:
    """The position in `labels` of each of `values` (an object array holding only those labels); one
    vectorized comparison per label, since a table holds a handful of phases or bound labels."""
    codes = np.zeros(len(values), dtype=np.intp)
    for code, label in enumerate(labels[1:], start=1):
        codes[values == label] = code
    return codes


def group_sums(codes: np.ndarray, values: np.ndarray, groups: int) -> np.ndarray:
    """Per group code: the sum of `values` (NaN skipped), added exactly as pandas 3.1's `groupby(...).sum()`
    adds them, so the fast path's time shares are bit-identical to the pandas path's: `np.add.reduceat`
    over each group's run when every group is one contiguous run and no value is NaN, else a compensated
    (Kahan) sum in row order."""
    if len(codes) and not np.isnan(values).any() and (codes[1:] >= codes[:-1]).all():
        starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))
        sums = np.zeros(groups)
        sums[codes[starts]] = np.add.reduceat(values, starts)
        return sums
    total = [0.0] * groups
    compensation = [0.0] * groups
    for code, value in zip(codes.tolist(), values.tolist()):
        if value != value:
            continue
        y = value - compensation[code]
        t = total[code] + y
        c = t - total[code] - y
        compensation[code] = 0.0 if c != c else c
        total[code] = t
    return np.array(total, dtype=float)


@lru_cache(maxsize=4096)
def _family(name: str) -> str:
    return kernel_family(name)


PRESENTATION_COLUMNS = ("family", "total_time_s", "time_share")


class _Presentation:
    """presentation_columns of a kernel table, when called (a class, not a closure: an estimate stays picklable)."""

    names = PRESENTATION_COLUMNS

    def __init__(self, kernels) -> None:
        self.kernels = kernels

    def __call__(self) -> dict:
        return presentation_columns(self.kernels)


def lazy_presentation_columns(kernels: KernelColumns) -> None:
    """Append the presentation columns to `kernels`, computed when first read (the DataFrame reads them)."""
    kernels.add_lazy(_Presentation(kernels))


def presentation_columns(kernels) -> dict:
    """family (for grouped charts), total_time_s = count x time_s, and time_share within the phase."""
    names = kernels["name"]
    family = [_family(name) for name in names]
    total_time = np.asarray(kernels["count"]) * np.asarray(kernels["time_s"])
    codes, phases = first_seen_codes(kernels["phase"])
    phase_time = group_sums(codes, np.asarray(total_time, dtype=float), len(phases))[codes]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(phase_time > 0, total_time / phase_time, 0.0)
    return {"family": family, "total_time_s": total_time, "time_share": share}


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


SHORT_ROWS = 64     # tables up to this many rows (one step's kernels) are summed in Python floats


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
    if "group" not in columns or len(columns["group"]) < 64:     # a short table: row by row is quicker
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
    launches = count * numbers("launches") if "launches" in kernels else count     # count x 1.0 is count
    launches = np.where(np.asarray(kernels["op"]) == "bubble", 0.0, finite(launches))
    bound = np.asarray(kernels["bound"])
    present = set(bound.tolist())
    if bound.dtype != object or not all(label.__class__ is str for label in present):
        bound = bound.astype(str)               # labels as str (an object array of str objects compares alike)
        present = set(bound.tolist())
    present |= {label for _, label in (by_bound or {})}
    labels = ["compute", "memory"] + sorted(present - {"compute", "memory"})
    one = _one_phase_sums(kernels, count) if len(names) == 1 else None
    if one is not None:
        products, sums = one
        time = products[0]
        per_row_sums = dict(zip(PER_ROW_TOTALS, sums[:4]))
        per_row_sums["kernel_launches"] = np.add.reduce(launches)
        link_sums = dict(zip(LINK_TOTALS, sums[4:]))
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
    """For a table of one phase: (time_s, macs, flops, bytes and the LINK_COLUMNS, each x count, as the rows of one
    array; their sums), in one multiplication and one reduction (each row reduced as np.add.reduce reduces it alone:
    the contiguous last axis of a C-ordered array). None where a value is not finite (the link columns then go
    through `finite`) or a link column is missing."""
    if not all(name in kernels for name in LINK_COLUMNS):
        return None
    values = np.array([kernels[name] for name in ("time_s", "macs", "flops", "bytes") + LINK_COLUMNS], dtype=float)
    if not all_true(np.isfinite(values)):
        return None
    products = np.multiply(values, count)
    return products, np.add.reduce(products, axis=1)


def phase_frame(totals: dict[str, dict]):
    """The `phases` DataFrame of phase_total_rows (one row per phase, index named `phase`)."""
    import pandas as pd
    frame = pd.DataFrame.from_dict(totals, orient="index")
    frame.index.name = "phase"
    return frame


def experts_touched(kernels) -> dict[str, float]:
    """Per phase: routed experts whose weights one device reads per MoE layer per step (the mean over the
    phase's steps), from the expert GEMMs' `batch` (engine/decomposition/moe.py). Empty for dense models."""
    rows = np.asarray(kernels["name"]) == "Expert_up"
    if not any_true(rows):
        return {}
    phase = np.asarray(kernels["phase"])[rows]
    count_all = np.asarray(kernels["count"], dtype=float)[rows]
    batch_all = np.asarray(kernels["batch"], dtype=float)[rows]
    found = {}
    for name in dict.fromkeys(phase.tolist()):
        group = phase == name
        count = count_all[group]
        if count.sum() > 0:
            found[str(name)] = float(np.dot(batch_all[group], count) / count.sum())
    return found


def fallback_notes(kernels, hardware_name: str) -> list[str]:
    """A note per dtype whose matrix work runs at another format's rate (the device lacks its rate)."""
    if "matrix_rate_dtype" not in kernels:
        return []
    pairs = dict.fromkeys(zip(np.asarray(kernels["dtype"]).tolist(), np.asarray(kernels["matrix_rate_dtype"]).tolist()))
    return [f"{hardware_name} has no {dtype} matrix rate: {dtype} matrix work runs at the {rate} rate"
            for dtype, rate in pairs if rate and rate != compute_format(dtype)]
