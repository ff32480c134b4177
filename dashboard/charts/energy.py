"""Where the energy goes: per phase, a bar per device stacked by kernel, kernel family or energy component.

The kernel table is one device's view, so the bars are energy per device: count x energy per occurrence
(`total_energy_j` for the kernel stacks, count x `<component>_energy_j` for the component stacks), summed
over the phase. Devices whose spec lacks energy values have no energy columns (or NaN ones after devices
are stacked); they are left out of the bars and named in an annotation instead.
"""

from __future__ import annotations

from typing import Optional

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.frames import DEFAULT_DEVICE, in_order, with_device
from dashboard.charts.kernel_bars import family_colors, kernel_colors
from dashboard.charts.stacked import phase_stacked_bars
from dashboard.charts.theme import (
    BLUE, BLUISH_GREEN, GREY, ORANGE, REDDISH_PURPLE, SKY_BLUE, TEXT, VERMILLION, house_figure,
)
from dashboard.units import energy

# engine/results/energy.py's per-occurrence component columns, in stacking order (bottom first), with their labels
ENERGY_COMPONENTS = {
    "matrix_energy_j": "compute (matrix)",
    "vector_energy_j": "compute (vector)",
    "hbm_energy_j": "HBM",
    "llc_energy_j": "LLC",
    "sram_energy_j": "SRAM",
    "link_energy_j": "links",
    "static_energy_j": "static",
}
# Memory levels keep the colours they have on the roofline (theme.MEMORY_LEVEL_COLORS), links the communication colour
COMPONENT_COLORS = {
    "compute (matrix)": BLUE,
    "compute (vector)": SKY_BLUE,
    "HBM": VERMILLION,
    "LLC": ORANGE,
    "SRAM": REDDISH_PURPLE,
    "links": BLUISH_GREEN,
    "static": GREY,
}
# (factor from joules, unit): the first whose factor brings the largest bar to 1 or more is used
ENERGY_UNITS = ((1.0, "J"), (1e3, "mJ"), (1e6, "µJ"), (1e9, "nJ"))


def energy_unit(largest_joules: float) -> tuple[float, str]:
    """(factor, unit) for an axis whose largest value is `largest_joules`: J down to nJ."""
    for factor, unit in ENERGY_UNITS:
        if largest_joules * factor >= 1:
            return factor, unit
    return ENERGY_UNITS[-1]


def devices_without_energy(kernels: pd.DataFrame) -> list[str]:
    """The devices of `kernels` (a `device` column, or one device) whose rows carry no energy values."""
    frame = with_device(kernels)
    devices = in_order(frame["device"])
    if "total_energy_j" not in frame:
        return devices
    has_energy = frame["total_energy_j"].notna().groupby(frame["device"], sort=False).any()
    return [device for device in devices if not has_energy[device]]


def _missing_text(devices: list[str]) -> str:
    names = ["this device" if d == DEFAULT_DEVICE else str(d) for d in devices]  # one device, no `device` column
    return f"no energy values for {', '.join(names)} in the specs workbook"


def no_energy_figure(devices: list[str], title: str) -> go.Figure:
    """An empty chart that says which devices have no energy values (in place of bars)."""
    hidden = dict(visible=False)
    return house_figure([], dict(
        xaxis=hidden, yaxis=hidden,
        annotations=[dict(text=_missing_text(devices), x=0.5, y=0.5, xref="paper", yref="paper",
                          showarrow=False, font=dict(size=18, color=TEXT))],
    ), title)


def _with_energy(kernels: pd.DataFrame, title: str) -> tuple[Optional[pd.DataFrame], list[str], Optional[go.Figure]]:
    """(rows of the devices that have energy, devices that have none, the empty figure when no device has any)."""
    frame = with_device(kernels)
    missing = devices_without_energy(frame)
    if len(missing) == len(in_order(frame["device"])):
        return None, missing, no_energy_figure(missing, title)
    return frame[~frame["device"].isin(missing)], missing, None


def _energy_bars(segments: list[tuple], *, missing: list[str], percent: bool, title: str, **style) -> go.Figure:
    """phase_stacked_bars in J (or mJ, ...) per device, naming the devices left out for lack of energy values."""
    totals: dict[tuple, float] = {}
    for phase, device, _, value in segments:
        totals[phase, device] = totals.get((phase, device), 0.0) + (0.0 if pd.isna(value) else float(value))
    factor, unit = energy_unit(max(totals.values(), default=0.0))
    figure = phase_stacked_bars(
        segments, percent=percent, unit_scale=factor, title=title,
        y_title="Share of phase energy (%)" if percent else f"Energy per device ({unit})",
        total_format=energy, hover_value=energy, **style,
    )
    figure.layout.meta = dict(unit=unit, unit_scale=factor)  # what the bars were multiplied by (J -> unit)
    if missing:
        figure.add_annotation(text=_missing_text(missing), x=1.0, y=1.0, xref="paper", yref="paper", yshift=30,
                              xanchor="right", yanchor="bottom", showarrow=False, font=dict(size=14, color=TEXT))
    return figure


def energy_by_kernel_figure(kernels: pd.DataFrame, stack_by: str = "name", percent: bool = False,
                            title: Optional[str] = None) -> go.Figure:
    """Per phase (facets), a bar per device stacked by kernel name or family: energy per device.

    kernels: `Estimate.kernels` rows, several devices stacked with a `device` column. Absolute mode:
    y = sum of `total_energy_j` (count x energy_j), so each bar equals the phase's energy per device
    (`Estimate.energy["phases"][phase]["energy_j"]`); percent mode: share of the phase (each bar sums to 100).
    """
    if stack_by not in ("name", "family"):
        raise ValueError(f"stack_by must be 'name' or 'family', got {stack_by!r}")
    what = "kernel" if stack_by == "name" else "kernel family"
    title = title or f"Energy per phase by {what}" + (" (% of phase)" if percent else "")
    frame, missing, empty = _with_energy(kernels, title)
    if empty is not None:
        return empty
    if stack_by == "family" and "family" not in frame:
        raise ValueError("stack_by='family' needs a 'family' column (the engine's kernels have one)")
    colors = kernel_colors(frame) if stack_by == "name" else family_colors(in_order(frame["family"]))
    segments = list(zip(frame["phase"], frame["device"], frame[stack_by], frame["total_energy_j"]))
    return _energy_bars(segments, missing=missing, percent=percent, title=title,
                        color_of=lambda key: colors.get(key, GREY))


def energy_by_component_figure(kernels: pd.DataFrame, percent: bool = False, title: Optional[str] = None) -> go.Figure:
    """Per phase (facets), a bar per device stacked by where the energy goes: compute (matrix, vector),
    HBM, LLC, SRAM, links and static power. Segment = sum over the phase's kernels of count x
    `<component>_energy_j`; components that are zero everywhere get no segment and no legend entry.
    """
    title = title or "Energy per phase by component" + (" (% of phase)" if percent else "")
    frame, missing, empty = _with_energy(kernels, title)
    if empty is not None:
        return empty
    phases, devices = frame["phase"].tolist(), frame["device"].tolist()
    count = frame["count"].to_numpy(dtype=float)
    segments = []
    for column, label in ENERGY_COMPONENTS.items():
        if column not in frame:
            continue
        values = count * frame[column].to_numpy(dtype=float)
        segments += [(phase, device, label, value) for phase, device, value in zip(phases, devices, values)]
    return _energy_bars(segments, missing=missing, percent=percent, title=title, stack_order=list(COMPONENT_COLORS),
                        color_of=lambda key: COMPONENT_COLORS.get(key, GREY),
                        label=lambda key, share: f"{key} {share:.0f}%")


def energy_headline_frame(summaries: dict) -> pd.DataFrame:
    """One row per device of energy headline numbers from {device: `Estimate.energy`} (None: no energy values).

    Columns carry their units: energy per token in mJ, request energy in J (all devices), power in W.
    """
    rows = []
    for device, summary in summaries.items():
        summary = summary or {}
        per_token = summary.get("energy_per_token_j")
        rows.append({
            "device": device,
            "energy per token (mJ)": None if per_token is None else per_token * 1e3,
            "tokens per J": summary.get("tokens_per_j"),
            "request energy (J)": summary.get("request_energy_j"),
            "average power (W)": summary.get("average_power_w"),
            "TDP (W)": summary.get("tdp_w"),
            "exceeds TDP": summary.get("exceeds_tdp") if summary else None,
        })
    return pd.DataFrame(rows)
