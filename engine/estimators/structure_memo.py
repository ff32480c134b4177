"""The realistic method's values that depend only on a table's strings, kept per structure (fast path, issue 15).

A kernel table has the same string columns (phase, name, type, op, unit, dtype) at every length of a sweep, while
its numbers change: a prefill of 1024, 1025, ... tokens has new GEMM shapes every call, a request new attention
contexts, so their timing runs each time (kept_rows.py keeps only a decode step's), but what the realistic method
derives from the strings alone does not change: the fused attention ids, rows, lead rows and launches, the GEMM and
element-wise masks, each row's kernel class, bytes per value and matrix rate, and the GEMM rows' per-dtype constants
(efficiencies, latencies, clock and power, tiling classes). `memo_for` returns one dict per structure that the
timing steps fill on first use (`remembered`) and read afterwards; None for a table whose rows are not the builder's
contiguous runs (RowGroups.contiguous), which computes every value.

The key is the device, the constants object, the launch mode, the row count, where each builder group starts (tables
of several rows per group) and every string column's value per group (a group's rows share them). What is kept is
a function of the key alone, never of a number column, so a hit gives bit for bit what computing gives. The
constants object is keyed by identity (it holds dicts) and kept alive by the entry, so its id is not reused. KEPT
entries, least recently used first out; `clear()` empties it (tests).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

import numpy as np

from engine.common.kept import touch, trim

KEPT = 64
_KEPT: OrderedDict = OrderedDict()
_OBJECT = np.dtype(object)
STRING_COLUMNS_KEY = "string columns"     # memo[STRING_COLUMNS_KEY]: the names of the string columns its key holds


def memo_for(out: dict, row_groups, hardware, constants, launch: str) -> dict | None:
    """The memo of this table's structure (a dict, empty when new), or None where its rows are not the builder's
    contiguous runs (RowGroups.contiguous)."""
    if not row_groups.contiguous:
        return None
    first = row_groups.first
    one_row_each = row_groups.one_row_each
    strings = [len(row_groups.inverse), None if one_row_each else first.tobytes()]
    for name, values in out.items():
        dtype = getattr(values, "dtype", None)
        if dtype is None or dtype == _OBJECT or dtype.kind in "US":
            strings.append(name)         # each group's value (a group's rows share every string column)
            strings.append(tuple((np.asarray(values) if one_row_each else np.asarray(values)[first]).tolist()))
    key = (hardware, id(constants), launch, *strings)
    try:
        entry = _KEPT.get(key)
    except TypeError:           # an unhashable value in a string column: no memo
        return None
    if entry is not None and entry[0] is constants:
        touch(_KEPT, key)
        return entry[1]
    memo: dict = {STRING_COLUMNS_KEY: frozenset(strings[2::2])}    # the string columns the key holds every row of
    _KEPT[key] = (constants, memo)
    trim(_KEPT, KEPT)
    return memo


def remembered(memo: dict | None, name, compute: Callable[[], object]):
    """memo[name], computed by `compute()` the first time; compute() every time without a memo. A kept value's
    arrays (the value itself, the items of a tuple, the fields of a dataclass with slots) are made read-only: every
    later estimate of the structure shares them."""
    if memo is None:
        return compute()
    if name not in memo:
        value = compute()
        items = value if isinstance(value, tuple) else [getattr(value, f) for f in getattr(value, "__slots__", ())]
        for item in (value, *items):
            if isinstance(item, np.ndarray):
                item.setflags(False)
        memo[name] = value
    return memo[name]


def clear() -> None:
    _KEPT.clear()
