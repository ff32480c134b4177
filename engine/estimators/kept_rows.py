"""A decode step's rows outside its fused attention, their realistic timing kept per structure (fast path, issue 15).

A decode step's weight GEMMs (GEMVs at batch 1) and element-wise kernels (norms, activations, residuals, rotary,
KV store, MoE routing) have the same shapes at every context: their realistic times depend on the model, the
layout, the dtypes, the batch and the device, not on the context, so a sweep over the context (a user's, or
benchmarks/engine_speed.py --cold) times the same rows at every step; only the fused attention reads the context.
`timed_rows` runs the timing of those rows (realistic.py: time_gemms, then _time_elementwise) once per distinct
input and keeps what it wrote (the TimeChain's and the tile columns' values of those rows); a later call whose
inputs are equal writes the kept values instead, bit for bit.

The key is every input those steps can read, by value: each column of the roofline's table at the rows (numbers by
their bits, in one float array: 64-bit integers viewed as floats, narrower numbers converted exactly; the columns'
names and dtypes beside them; strings as values), the rows themselves, the name and phase of every row of the
table (MoE rows test the table's other rows), the TimeChain's values at the rows, the rows' per-core MAC rates
and bytes per value, the host launch, the device
(frozen, hashed by value) and the constants object (by identity: a RealisticConstants holds dicts; the entry
keeps it alive, so its id is not reused). Only short tables of decode rows alone (one decode step, <= SHORT_TABLE_ROWS
rows) are kept: a prefill's GEMMs change with its length, so building the key would cost more than it saves. KEPT
entries, least recently used first out; `clear()` empties it (tests).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

import numpy as np

from engine.common.arrays import SHORT_ROWS, any_true
from engine.common.kept import touch, trim
from engine.estimators.realistic_gemms import KernelRows, TimeChain
from engine.estimators.structure_memo import STRING_COLUMNS_KEY, remembered

KEPT = 64
SHORT_TABLE_ROWS = SHORT_ROWS
CHAIN_FIELDS = ("ideal", "t1", "t2", "t3", "compute", "memory", "latency", "floor")
TILE_COLUMNS = ("tile_m", "tile_n", "split_k", "tiles", "waves")
_KEPT: OrderedDict = OrderedDict()
_PLANS: dict = {}      # column dtypes -> how the key reads them (_plan)


def timed_rows(table: KernelRows, rows: np.ndarray, chain: TimeChain, time_rows: Callable[[], None],
               memo: dict | None = None) -> None:
    """time_rows() (which times `rows` of `table` in place on `chain` and the tile columns), or the values it wrote
    for an equal decode step before. `memo`: the table's structure memo (structure_memo.py), which stands for the
    string columns it was keyed on (see _key)."""
    key = _key(table, rows, chain, memo)
    if key is None:
        time_rows()
        return
    kept = _KEPT.get(key)
    if kept is not None and kept[0] is table.constants and kept[2] is memo:
        touch(_KEPT, key)
        _write(table, rows, chain, kept[1])
        return
    time_rows()
    _KEPT[key] = (table.constants, _written(table, rows, chain), memo)
    trim(_KEPT, KEPT)


def clear() -> None:
    _KEPT.clear()


def _key(table: KernelRows, rows: np.ndarray, chain: TimeChain, memo: dict | None = None):
    """The inputs of the rows' timing by value, or None where the table is not a decode step's (see the module).
    With the structure memo, the string columns it was keyed on (every row's value: structure_memo.memo_for) are
    the memo itself (by identity: the entry keeps it, and timed_rows checks it is the same object) instead of their
    values; string columns added after it (the roofline's bound and rate dtype) are keyed by value as without it."""
    out = table.out
    if len(rows) > SHORT_TABLE_ROWS or not any_true(rows):
        return None
    if memo is None:
        phases = tuple(np.asarray(out["phase"]).tolist())
        if set(phases) != {"decode"}:
            return None
        parts = [table.hardware, id(table.constants), table.host_launch_s, rows.tobytes(), phases,
                 tuple(np.asarray(out["name"]).tolist()), tuple(out)]
        covered = ()
    else:
        if not remembered(memo, "all_decode", lambda: set(np.asarray(out["phase"]).tolist()) == {"decode"}):
            return None
        covered = memo.get(STRING_COLUMNS_KEY, ())
        parts = [table.hardware, id(table.constants), table.host_launch_s, rows.tobytes(), id(memo), tuple(out)]
    arrays = (*out.values(), table.per_core_macs, table.value_bytes, *(getattr(chain, field) for field in CHAIN_FIELDS))
    try:
        kinds = tuple([values.dtype for values in arrays])
    except AttributeError:                        # a column that is not an array: not kept
        return None
    numbers, objects = _PLANS.get(kinds) or _plan(kinds)
    if covered:         # the memo stands for these string columns (tuple(out) above names every column in order)
        names = tuple(out)
        objects = tuple(i for i in objects if i >= len(names) or names[i] not in covered)
    parts.append(kinds)
    picked = np.flatnonzero(rows)
    try:
        stacked = np.concatenate([arrays[i] if view is None else arrays[i].view(view) for i, view in numbers],
                                 dtype=np.float64).reshape(len(numbers), len(rows))
    except ValueError:                            # a column of another length or shape: not kept
        return None
    parts.append(stacked.take(picked, axis=1).tobytes())
    if objects:
        strings = np.empty((len(objects), len(rows)), dtype=object)
        strings[:] = [arrays[i] for i in objects]
        parts.append(tuple(strings.take(picked, axis=1).ravel().tolist()))
    return tuple(parts)


def _plan(kinds: tuple) -> tuple:
    """For columns of dtypes `kinds`: [(position, None or float64 to view 64-bit integers' bits as)] of the numbers
    (converted to float exactly), and the positions of the others (strings, compared by value)."""
    numbers, objects = [], []
    for position, kind in enumerate(kinds):
        if kind.kind not in "biuf":
            objects.append(position)
        else:
            numbers.append((position, np.float64 if kind.itemsize == 8 and kind.kind != "f" else None))
    _PLANS[kinds] = plan = (tuple(numbers), tuple(objects))
    return plan


def _written(table: KernelRows, rows: np.ndarray, chain: TimeChain) -> dict:
    """What the timing wrote: the rows' values of the chain's arrays and of the tile columns (copies)."""
    values = {field: getattr(chain, field)[rows] for field in CHAIN_FIELDS}      # boolean indexing copies
    values.update({column: table.out[column][rows] for column in TILE_COLUMNS})
    return values


def _write(table: KernelRows, rows: np.ndarray, chain: TimeChain, values: dict) -> None:
    for field in CHAIN_FIELDS:
        getattr(chain, field)[rows] = values[field]
    for column in TILE_COLUMNS:
        table.out[column][rows] = values[column]
