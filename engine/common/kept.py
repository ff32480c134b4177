"""Least-recently-used bookkeeping of the engine's per-structure caches (OrderedDicts) that tolerates other threads.

The dashboard runs every browser session's script in its own thread against one engine, so two estimates may use a
cache at once. Each OrderedDict operation is atomic, but a sequence is not: between one thread's `get(key)` and its
`move_to_end(key)`, another may evict that key (KeyError), and two threads may both trim a full cache. Losing an
entry only costs a recomputation, so these helpers treat a key already gone as done instead of raising.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Hashable


def touch(kept: OrderedDict, key: Hashable) -> None:
    """Mark `key` as used last (kept the longest); nothing if another thread has just evicted it."""
    try:
        kept.move_to_end(key)
    except KeyError:
        pass


def trim(kept: OrderedDict, limit: int) -> None:
    """Drop the least recently used entries until at most `limit` are left (another thread may be trimming too)."""
    while len(kept) > limit:
        try:
            kept.popitem(last=False)
        except KeyError:        # emptied by another thread meanwhile
            return
