"""'Did you mean' for a mistyped name (a device, a model id): the closest known names, by difflib."""

from __future__ import annotations

import difflib
from typing import Iterable


def close_names(name, known: Iterable[str], count: int = 3) -> list[str]:
    """Up to `count` of `known` closest to `name` (letter case ignored), best first."""
    by_lower = {}
    for candidate in known:
        by_lower.setdefault(str(candidate).lower(), str(candidate))
    matches = difflib.get_close_matches(str(name).strip().lower(), list(by_lower), n=count, cutoff=0.6)
    return [by_lower[match] for match in matches]


def did_you_mean(name, known: Iterable[str]) -> str:
    """"did you mean 'A' or 'B'?" for the closest known names, or "" when none is close."""
    matches = close_names(name, known)
    if not matches:
        return ""
    quoted = [repr(match) for match in matches]
    return "did you mean " + (" or ".join([", ".join(quoted[:-1]), quoted[-1]]) if len(quoted) > 1 else quoted[0]) + "?"
