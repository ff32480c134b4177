"""Errors as one line naming the bad field (the CLI's messages, a sweep point's `error`)."""

from __future__ import annotations

from pydantic import ValidationError


class GridError(ValueError):
    """A grid field or value that cannot be swept (engine/explore/grid.py); names the field and what is expected."""


def one_line(error: BaseException) -> str:
    """A validation or loading error as a single line naming the bad field."""
    if isinstance(error, ValidationError):
        parts = []
        for item in error.errors():
            where = ".".join(str(p) for p in item.get("loc", ()))
            message = str(item.get("msg", "")).removeprefix("Value error, ")
            # a whole-object check (e.g. the parallel layout) names its fields itself
            parts.append(f"{where}: {message} (got {item.get('input')!r})" if where else message)
        return "; ".join(parts)
    return " ".join(str(error).split()) or type(error).__name__
