"""Per-row views of the kernel table's string columns, computed once per `group` (fast path).

Rows added by one KernelTableBuilder.add call (a kernel at every decode step) share a `group`
and every string column, so string work (masks, dtype lookups) runs on one row per group and is
broadcast back; a request's ~4,000 per-step rows become a few dozen groups.
"""

from __future__ import annotations

import numpy as np

from engine.common.arrays import all_true

class RowGroups:
    def __init__(self, columns: dict):
        rows = len(columns["op"])
        groups = np.asarray(columns["group"]) if "group" in columns else np.arange(rows)
        if rows and groups[-1] == rows - 1 and all_true(groups == np.arange(rows)):
            # one row per group in the builder's order (a prefill or a decode step): the branch below's answer
            self.first, self.inverse, self.one_row_each = np.arange(rows, dtype=np.intp), groups.astype(np.intp), True
            self.contiguous = True
            self._columns, self._strings = columns, {}
            return
        starts = np.flatnonzero(groups[1:] != groups[:-1]) + 1 if rows else np.zeros(0, dtype=np.intp)
        if rows and groups[0] == 0 and all_true(groups[starts] == np.arange(1, len(starts) + 1)):
            # the builder's order: groups 0, 1, 2, ... each one contiguous run (np.unique's answer, without sorting)
            self.first = np.concatenate(([0], starts)).astype(np.intp)
            self.inverse = groups.astype(np.intp)
            self.one_row_each = len(self.first) == rows       # a prefill or one decode step: one row per group
            self.contiguous = True         # each row's group follows from `first` and the row count
        else:
            _, self.first, inverse = np.unique(groups, return_index=True, return_inverse=True)
            self.inverse = inverse.reshape(-1)
            self.one_row_each = False
            self.contiguous = False
        self._columns = columns
        self._strings: dict[str, np.ndarray] = {}

    def strings(self, key: str) -> np.ndarray:
        """The column as a str array, converted once per group."""
        return self.per_row(self.group_strings(key))

    def per_row(self, values: np.ndarray) -> np.ndarray:
        """values[inverse] (one value per group, broadcast to the rows). Along the builder's contiguous runs, a
        request's table is a few long groups (a kernel at every decode step) between ranges of one-row groups: those
        ranges are copied as slices and each long group as its value broadcast (fancy indexing and np.repeat cost
        ~15-30 instructions per element, a slice's copy well under one); many long groups keep the fancy indexing."""
        if not self.contiguous or self.one_row_each:
            return values[self.inverse]
        if not hasattr(self, "_pieces"):
            self._pieces = _row_pieces(self.first, len(self.inverse))
        if self._pieces is None:
            return values[self.inverse]
        rows = np.empty(len(self.inverse), dtype=values.dtype)
        for row_start, row_stop, start, stop in self._pieces:     # a long group's one value broadcasts
            rows[row_start:row_stop] = values[start:stop]
        return rows

    def share_strings(self, store: dict) -> None:
        """Keep group_strings' arrays in `store` (a dict shared by the tables of one structure: structure_memo.py)."""
        self._strings = store

    def group_strings(self, key: str) -> np.ndarray:
        """The column's value of each group (one per group, in group order), as a str array (converted once
        per key; read-only, as every caller shares it)."""
        if key not in self._strings:
            values = np.asarray(self._columns[key])[self.first].astype(str)
            values.setflags(False)
            self._strings[key] = values
        return self._strings[key]

    def map(self, key: str, function) -> np.ndarray:
        """function(value) per group, broadcast to the rows (e.g. bytes per value of each dtype)."""
        values = np.asarray(self._columns[key])[self.first].tolist()
        once: dict = {}                       # function called once per distinct value (a handful of dtypes)
        for value in values:
            if value not in once:
                once[value] = function(value)
        mapped = np.array([once[value] for value in values])
        return mapped if self.one_row_each else self.per_row(mapped)


MAX_LONG_GROUPS = 16     # RowGroups.per_row by pieces up to this many groups of more than one row


def _row_pieces(first: np.ndarray, rows: int) -> list | None:
    """RowGroups.per_row's pieces of builder groups starting at rows `first`, as (first row, row stop, first group,
    group stop): a range of one-row groups (a slice of the groups' values) or one longer group (its value
    broadcast); None where more than MAX_LONG_GROUPS groups have several rows."""
    lengths = np.diff(np.append(first, rows))
    long = np.flatnonzero(lengths > 1)
    if len(long) > MAX_LONG_GROUPS:
        return None
    starts = first.tolist() + [rows]
    pieces, start = [], 0
    for group in long.tolist():
        if group > start:
            pieces.append((starts[start], starts[group], start, group))
        pieces.append((starts[group], starts[group + 1], group, group + 1))
        start = group + 1
    if len(first) > start:
        pieces.append((starts[start], rows, start, len(first)))
    return pieces


SMALL_UNIQUE = 64     # up to this many values a Python sort beats np.unique's set-up


def unique_inverse(values) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) of a 1-D array of strings or integers: the sorted distinct
    values and each value's position among them. A short array (one estimate's groups) is sorted in Python."""
    values = np.asarray(values)
    if len(values) > SMALL_UNIQUE:
        unique, inverse = np.unique(values, return_inverse=True)
        return unique, inverse.reshape(-1)
    items = values.tolist()
    distinct = sorted(set(items))
    position = {value: index for index, value in enumerate(distinct)}
    inverse = np.fromiter((position[value] for value in items), dtype=np.intp, count=len(items))
    return np.array(distinct, dtype=values.dtype), inverse


def unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, axis=0, return_inverse=True) of a 2-D array of numbers without NaNs: the distinct rows in
    lexicographic order and each row's position among them, through one lexsort of the columns (np.unique sorts the
    rows as records: ~20x slower on a serving pass's few thousand GEMM rows)."""
    keys = np.asarray(keys)
    if keys.ndim != 2 or not len(keys):
        unique, inverse = np.unique(keys, axis=0, return_inverse=True)
        return unique, inverse.reshape(-1)
    order = np.lexsort(keys.T[::-1])            # the first column first, as np.unique orders rows
    ordered = keys[order]
    starts = np.empty(len(keys), dtype=bool)
    starts[0] = True
    np.any(ordered[1:] != ordered[:-1], axis=1, out=starts[1:])
    inverse = np.empty(len(keys), dtype=np.intp)
    inverse[order] = np.cumsum(starts) - 1
    return ordered[starts], inverse


def dense_ranks(keys: np.ndarray) -> np.ndarray:
    """np.unique(keys, return_inverse=True)[1] of non-negative integer keys: each key's rank among the distinct
    keys. Keys within a few times their count are ranked through a table of those present (no sort)."""
    keys = np.asarray(keys)
    if keys.size == 0 or keys.max() > 8 * keys.size + 1024:
        return np.unique(keys, return_inverse=True)[1].reshape(-1)
    present = np.zeros(int(keys.max()) + 1, dtype=bool)
    present[keys] = True
    return (np.cumsum(present) - 1)[keys]


def least_per_id(ids: np.ndarray, keys: np.ndarray | None = None) -> np.ndarray:
    """Per id 0 .. ids.max() that occurs: the least of its rows' `keys` (non-negative integers; default the row
    positions, which gives np.unique(ids, return_index=True)[1]), without a sort (np.minimum.at)."""
    keys = np.arange(ids.size) if keys is None else keys
    if ids.size <= SMALL_UNIQUE:                  # a few rows (one step's attention): in Python
        least: dict = {}
        for id_, key in zip(ids.tolist(), keys.tolist()):
            if id_ not in least or key < least[id_]:
                least[id_] = key
        return np.array([least[id_] for id_ in sorted(least)], dtype=np.int64)
    unset = np.iinfo(np.int64).max
    least = np.full(int(ids.max()) + 1, unset, dtype=np.int64)
    np.minimum.at(least, ids, keys)
    return least[least != unset]
