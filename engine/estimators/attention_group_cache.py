"""The fused attention group of each row, kept per table structure (fast path, issue 15).

`attention_groups` reads only the table's string columns op, name and phase (one value per builder group) and
where each builder group's rows lie; a request's table (~4,100 rows, one per decode step of each attention kernel)
has the same structure at every prompt length of a sweep, while ranking its groups costs ~1/10 of the realistic
method. Where the rows are the builder's contiguous runs (RowGroups.contiguous: each row's group is given by the
runs' starts and the row count), the key is those starts, the row count and the groups' op, name and phase values;
a hit returns a copy of the kept ids, bit for bit attention_groups' answer, and of the rows' launches computed
from them (`launches`, a function of the ids alone). One-step tables (one row per group) take
attention_groups' own short path. KEPT entries, least recently used first out; `clear()` empties it (tests)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from engine.common.kept import touch, trim
from engine.estimators.fused_attention import attention_groups
from engine.estimators.row_groups import RowGroups

KEPT = 64
_KEPT: OrderedDict = OrderedDict()


def kept_attention_groups(columns: dict, row_groups: RowGroups, launches=None) -> tuple[np.ndarray, np.ndarray | None]:
    """(attention_groups(columns, row_groups), launches(those ids) or None without `launches`), kept per structure
    (copies: a caller may keep or change them)."""
    if row_groups.one_row_each or not row_groups.contiguous:
        fused = attention_groups(columns, row_groups)
        return fused, None if launches is None else launches(fused)
    key = (len(row_groups.inverse), row_groups.first.tobytes(), launches,
           *(tuple(row_groups.group_strings(column).tolist()) for column in ("op", "name", "phase")))
    kept = _KEPT.get(key)
    if kept is None:
        fused = attention_groups(columns, row_groups)
        kept = (fused, None if launches is None else launches(fused))
        _KEPT[key] = tuple(None if values is None else values.copy() for values in kept)
        trim(_KEPT, KEPT)
        return kept
    touch(_KEPT, key)
    return tuple(None if values is None else values.copy() for values in kept)


def clear() -> None:
    _KEPT.clear()
