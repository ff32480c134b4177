"""Where the time goes: per phase, a bar per device stacked by kernel (or kernel family)."""

from __future__ import annotations

from typing import Optional

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.frames import in_order, with_device
from dashboard.charts.stacked import phase_stacked_bars
from dashboard.charts.theme import (
    BLACK, BLUE, BLUISH_GREEN, GREY, ORANGE, REDDISH_PURPLE, SERIES_COLORS, SKY_BLUE, VERMILLION,
)
from dashboard.units import duration

FAMILY_COLORS = {
    "MLP": BLUE,
    "attention projections": BLUISH_GREEN,
    "attention core": ORANGE,
    "norms & residuals": REDDISH_PURPLE,
    "embedding & head": SKY_BLUE,
    "communication": VERMILLION,
    "MoE": BLACK,
}


def _lighter(hex_color: str, amount: float) -> str:
    """Mix a colour with white (amount 0 = unchanged, 1 = white)."""
    rgb = [int(hex_color[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * amount):02X}" for c in rgb)


def family_colors(families: list[str]) -> dict[str, str]:
    """A colour per family: the known ones fixed, others from the series palette."""
    spare = [c for c in SERIES_COLORS if c not in FAMILY_COLORS.values()] + [GREY]
    colors, next_spare = {}, 0
    for family in families:
        if family in FAMILY_COLORS:
            colors[family] = FAMILY_COLORS[family]
        else:
            colors[family] = spare[next_spare % len(spare)]
            next_spare += 1
    return colors


def kernel_colors(kernels: pd.DataFrame) -> dict[str, str]:
    """A colour per kernel name: its family's colour, lighter for each further kernel of the family."""
    names = in_order(kernels["name"])
    family_of = dict(zip(kernels["name"], kernels["family"])) if "family" in kernels else {n: n for n in names}
    by_family: dict[str, list[str]] = {}
    for name in names:
        by_family.setdefault(family_of[name], []).append(name)
    base = family_colors(list(by_family))
    colors = {}
    for family, members in by_family.items():
        for j, name in enumerate(members):
            colors[name] = _lighter(base[family], 0.6 * j / max(len(members) - 1, 1) if len(members) > 1 else 0.0)
    return colors


def kernel_time_bars(kernels: pd.DataFrame, stack_by: str = "name", percent: bool = False,
                     title: Optional[str] = None) -> go.Figure:
    """Per phase (facets), a bar per device stacked by kernel name or family.

    kernels: `Estimate.kernels` rows, several devices stacked with a `device` column.
    Absolute mode: y = sum of `total_time_s` (count x time_s) in ms, so each bar equals the
    phase's `time_s`; percent mode: share of the phase (each bar sums to 100).
    """
    if stack_by not in ("name", "family"):
        raise ValueError(f"stack_by must be 'name' or 'family', got {stack_by!r}")
    frame = with_device(kernels)
    if "total_time_s" not in frame:
        frame = frame.assign(total_time_s=frame["count"] * frame["time_s"])
    if stack_by == "family" and "family" not in frame:
        raise ValueError("stack_by='family' needs a 'family' column (the engine's kernels have one)")
    colors = kernel_colors(frame) if stack_by == "name" else family_colors(in_order(frame["family"]))
    what = "kernel" if stack_by == "name" else "kernel family"
    default = f"Time per phase by {what}" + (" (% of phase)" if percent else "")
    return phase_stacked_bars(
        zip(frame["phase"], frame["device"], frame[stack_by], frame["total_time_s"]),
        color_of=lambda key: colors.get(key, GREY), percent=percent, unit_scale=1e3,
        y_title="Share of phase time (%)" if percent else "Time (ms)", title=title or default,
        total_format=duration, hover_value=duration,
    )
