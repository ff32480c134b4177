"""What limits each phase: share of time by bound (compute, memory, ...), per phase and device."""

from __future__ import annotations

import re
from typing import Optional

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.frames import with_device, with_phase_column
from dashboard.charts.stacked import phase_stacked_bars
from dashboard.charts.theme import bound_color, bound_sort_key
from dashboard.units import duration

BOUND_COLUMN = re.compile(r"^(?P<bound>.+)_bound_time_s$")


def bound_columns(phases: pd.DataFrame) -> dict[str, str]:
    """{bound: column} for every `<bound>_bound_time_s` column (compute, memory, overhead, ...)."""
    found = {m["bound"]: c for c in phases.columns if (m := BOUND_COLUMN.match(str(c)))}
    return dict(sorted(found.items(), key=lambda item: bound_sort_key(item[0])))


def bound_share_figure(phases: pd.DataFrame, title: Optional[str] = None) -> go.Figure:
    """Per phase (facets), a bar per device: % of the phase's time spent in kernels of each bound.

    phases: `Estimate.phases` (phase as index or column) with a `device` column when several
    devices are stacked; every `<bound>_bound_time_s` column becomes a stack segment.
    """
    frame = with_device(with_phase_column(phases))
    columns = bound_columns(frame)
    if not columns:
        raise ValueError("phases has no '<bound>_bound_time_s' columns")
    phases, devices = list(frame["phase"]), list(frame["device"])
    segments = [(phase, device, bound, time_s) for bound, column in columns.items()
                for phase, device, time_s in zip(phases, devices, frame[column])]
    return phase_stacked_bars(
        segments, color_of=bound_color, percent=True, unit_scale=1.0, y_title="Share of phase time (%)",
        title=title or "Share of time by bound", stack_order=list(columns),
        label=lambda bound, share: f"{bound} {share:.0f}%",  # "compute 83%"
        hover_value=duration,
    )
