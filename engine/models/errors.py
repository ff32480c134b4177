"""The one error a config.json can raise, and its message: the field, its value (shown short) and the problem."""

from __future__ import annotations

from typing import Any


class ModelConfigError(ValueError):
    """A config.json this engine cannot model; the message names the field and its value."""


def shown(value: Any) -> str:
    """repr(value) short enough for one line (a 400-digit number, a long list), never raising."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"a {int(value.bit_length() * 0.30103) + 1}-digit number"
    text = repr(value)
    return text if len(text) <= 80 else text[:60] + f"... ({type(value).__name__} of {len(text):,} characters)"


def field_error(field: str, value: Any, problem: str) -> ModelConfigError:
    return ModelConfigError(f"config.json field {field!r} is {shown(value)}: {problem}")
