"""Fancy indexing by an index array made of a few runs of consecutive values, as slices (fast path, issue 15).

A request's ~4,100 attention rows are two contiguous row ranges, and their fused-group ids seven runs (0, 1, 2, ...
per decode-step kernel): `values[index]` and `target[index] = values` through numpy's index machinery cost ~15
instructions per element, a slice's copy well under one. `IndexRuns(index)` finds the runs once; `take` and `put`
give exactly what the fancy indexing gives (same values, a new array for `take`). An index of many runs, or with a
negative value, keeps the fancy indexing."""

from __future__ import annotations

import numpy as np

MAX_RUNS = 16


class IndexRuns:
    def __init__(self, index: np.ndarray):
        self.index = index
        self.runs = None          # [(start, stop, first value)] over positions of `index`, or None: fancy indexing
        if index.size == 0 or index[0] < 0:
            return
        breaks = np.flatnonzero(np.diff(index) != 1) + 1
        if len(breaks) >= MAX_RUNS:
            return
        starts = [0, *breaks.tolist()]
        stops = starts[1:] + [index.size]
        firsts = index[starts].tolist()
        if min(firsts) < 0:
            return
        self.runs = list(zip(starts, stops, firsts))
        self.largest = max(first + stop - start for start, stop, first in self.runs) - 1     # index.max()

    def take(self, values: np.ndarray) -> np.ndarray:
        """values[index] (a new array)."""
        if self.runs is None:
            return values[self.index]
        if len(self.runs) == 1:
            start, stop, first = self.runs[0]
            return values[first:first + stop - start].copy()
        return np.concatenate([values[first:first + stop - start] for start, stop, first in self.runs])

    def take_columns(self, values: np.ndarray) -> np.ndarray:
        """values[:, index] of a 2-D array (a new array): take() of each row at once."""
        if self.runs is None:
            return values[:, self.index]
        if len(self.runs) == 1:
            start, stop, first = self.runs[0]
            return values[:, first:first + stop - start].copy()
        return np.concatenate([values[:, first:first + stop - start] for start, stop, first in self.runs], axis=1)

    def put(self, target: np.ndarray, values) -> None:
        """target[index] = values (values an array over the index's positions)."""
        if self.runs is None:
            target[self.index] = values
            return
        for start, stop, first in self.runs:
            target[first:first + stop - start] = values[start:stop]

    def sums(self, weights: np.ndarray, length: int) -> np.ndarray:
        """np.bincount(index, weights=weights, minlength=length): each run's weights added to its slice of the sums,
        the runs in order, so every sum adds its terms in np.bincount's (row) order, bit for bit."""
        if self.runs is None:
            return np.bincount(self.index, weights=weights, minlength=length)
        weights = np.asarray(weights, dtype=float)
        total = np.zeros(max(length, self.largest + 1))
        for start, stop, first in self.runs:
            total[first:first + stop - start] += weights[start:stop]
        return total

    def sums_columns(self, weights: np.ndarray, length: int) -> np.ndarray:
        """sums() of each row of a 2-D float array at once: every sum adds its terms in the same order."""
        if self.runs is None:
            return np.stack([np.bincount(self.index, weights=row, minlength=length) for row in weights])
        total = np.zeros((len(weights), max(length, self.largest + 1)))
        for start, stop, first in self.runs:
            total[:, first:first + stop - start] += weights[:, start:stop]
        return total

    def least(self, keys: np.ndarray) -> np.ndarray | None:
        """Per value 0 .. index.max() that occurs, the least of its positions' integer `keys` (row_groups.least_per_id's
        answer) by np.minimum over the runs' slices; None where the index is not a few runs."""
        if self.runs is None:
            return None
        unset = np.iinfo(np.int64).max
        least = np.full(self.largest + 1, unset, dtype=np.int64)
        for start, stop, first in self.runs:
            np.minimum(least[first:first + stop - start], keys[start:stop], out=least[first:first + stop - start])
        return least[least != unset]
