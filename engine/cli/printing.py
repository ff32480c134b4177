"""How the CLI prints results: JSON (NaN and infinities as null) or one `name  value` line per field."""

from __future__ import annotations

import json
import math


def print_json(data) -> None:
    print(json.dumps(finite(data), indent=2, allow_nan=False))


def print_fields(fields: dict, as_json: bool) -> None:
    """A flat record as JSON, or one `name  value` line per field."""
    if as_json:
        print_json(fields)
        return
    width = max(map(len, fields)) + 2
    for key, value in fields.items():
        print(f"{key:<{width}} {value}")


def finite(value):
    """JSON has no NaN/Infinity: they become null."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return finite(value.item())
    return value
