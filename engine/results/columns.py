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

from engine.common.arrays import all_true, any_true, equal_to, finite  # noqa: F401  (finite: imported from here too)
from engine.common.sums import weighted_sum
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
        return KernelColumns(columns, count > _ZERO if any_true(count <= _ZERO) else None)
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
    if rows <= _SHORT_GROUPS:        # a list comparison (no arange and ufunc set-up)
        return bool(rows) and groups.tolist() == list(range(rows))
    return groups[-1] == rows - 1 and all_true(groups == np.arange(rows))


_SHORT_GROUPS = 64
_ZERO = np.array(0.0)      # a 0-d operand: numpy converts a Python scalar operand on every call


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


def experts_touched(kernels) -> dict[str, float]:
    """Per phase: routed experts whose weights one device reads per MoE layer per step (the mean over the
    phase's steps), from the expert GEMMs' `batch` (engine/decomposition/moe.py). Empty for dense models."""
    rows = equal_to(np.asarray(kernels["name"]), "Expert_up")
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
            found[str(name)] = weighted_sum(batch_all[group], count) / float(count.sum())
    return found


def fallback_notes(kernels, hardware_name: str) -> list[str]:
    """A note per dtype whose matrix work runs at another format's rate (the device lacks its rate)."""
    if "matrix_rate_dtype" not in kernels:
        return []
    pairs = dict.fromkeys(zip(np.asarray(kernels["dtype"]).tolist(), np.asarray(kernels["matrix_rate_dtype"]).tolist()))
    return [f"{hardware_name} has no {dtype} matrix rate: {dtype} matrix work runs at the {rate} rate"
            for dtype, rate in pairs if rate and rate != compute_format(dtype)]
