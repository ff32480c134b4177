"""Bound label columns made from integer codes, and those codes found again (fast path, issue 15).

The estimators label each row's bound by indexing a small array of label strings with integer codes (one shared
str object per label). The report needs the codes back (engine/results/columns.py bound_codes: per decode step of
a request, ~4,000 rows), which object comparisons recover at ~25 ns a row and label. `labelled` keeps the codes of
the column it makes while that array lives, so `codes_of` hands them back; a column changed after (collectives,
the pipeline bubble) is a new array, which has none, and is labelled the slow way."""

from __future__ import annotations

import weakref
from functools import partial

import numpy as np

# id(column) -> (labels, codes, a weak reference to the column), while the column lives
_CODES: dict[int, tuple[np.ndarray, np.ndarray, weakref.ref]] = {}


def labelled(labels: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """labels[codes] (an object array of the label strings), its codes kept for `codes_of`."""
    column = labels[codes]
    key = id(column)
    # dropped when the column dies, before its id can be reused: the reference calls _CODES.pop(key, reference)
    # (a plain weak reference with a callback; weakref.finalize cost ~10x more); the entry keeps the reference alive
    _CODES[key] = (labels, codes, weakref.ref(column, partial(_CODES.pop, key)))
    return column


def codes_of(column) -> tuple[np.ndarray, np.ndarray] | None:
    """(labels, codes) of a column made by `labelled`, else None."""
    known = _CODES.get(id(column))
    return None if known is None else known[:2]


def present_codes(labels: np.ndarray, codes: np.ndarray) -> tuple[list, np.ndarray]:
    """For the column labels[codes]: the labels present, sorted (str), and each row's position among them (what
    engine/results/columns.py bound_codes gives for any column)."""
    if len(codes) <= SHORT_CODES:       # one step's rows: in Python (numpy's per-call set-up costs more)
        items = codes.tolist()
        present = {labels[code]: code for code in sorted(set(items))}
        ordered = sorted(present)
        position = dict.fromkeys(range(len(labels)), 0)
        for new, label in enumerate(ordered):
            position[present[label]] = new
        return ordered, np.fromiter(map(position.__getitem__, items), dtype=np.intp, count=len(items))
    present = {labels[code]: code for code in np.flatnonzero(np.bincount(codes, minlength=len(labels))).tolist()}
    ordered = sorted(present)
    position = np.zeros(len(labels), dtype=np.intp)
    for new, label in enumerate(ordered):
        position[present[label]] = new
    return ordered, position[codes]


SHORT_CODES = 64
