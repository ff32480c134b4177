"""Small helpers the chart builders share: device/phase order and number formatting."""

from __future__ import annotations

import math

import pandas as pd

DEFAULT_DEVICE = "device"
SI_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def with_device(frame: pd.DataFrame, default: str = DEFAULT_DEVICE) -> pd.DataFrame:
    """`frame` with a `device` column (added as `default` when the caller gave one device)."""
    if "device" in frame.columns:
        return frame
    return frame.assign(device=default)


def with_phase_column(frame: pd.DataFrame) -> pd.DataFrame:
    """The engine's phases frame has `phase` as its index; charts want it as a column."""
    if "phase" in frame.columns:
        return frame
    out = frame.reset_index()
    if "phase" not in out.columns:
        out = out.rename(columns={out.columns[0]: "phase"})
    return out


def in_order(values) -> list:
    """Distinct values in order of first appearance."""
    return list(dict.fromkeys(values))


def records(frame: pd.DataFrame) -> list[dict]:
    """The rows as plain dicts of Python values: `to_dict("records")`, but quick on small, wide frames."""
    columns = list(frame.columns)
    return [dict(zip(columns, row)) for row in zip(*(frame[column].tolist() for column in columns))]


def si(value: float, unit: str = "", digits: int = 3) -> str:
    """1.98e15, 'FLOP/s' -> '1.98 PFLOP/s' (decimal prefixes, as everywhere in the engine)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return f"∞ {unit}".strip()
    magnitude = abs(value)
    for factor, prefix in SI_PREFIXES:
        if magnitude >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}".strip()
    return f"{value:.{digits}g} {unit}".strip()


def shape_text(row) -> str:
    """'m=1024 k=4096 n=14336 batch=1' from a kernel row (missing parts left out)."""
    parts = []
    for key in ("m", "k", "n", "batch"):
        value = row.get(key) if hasattr(row, "get") else None
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            parts.append(f"{key}={value:g}")
    return " ".join(parts)


def wrap_words(text: str, width: int = 70) -> str:
    """Long hover text broken into lines (<br>) at spaces."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + len(word) < width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)
