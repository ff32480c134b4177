"""The multi-device roofline's legend: one column per device under the plot, plus a key to the bound colours.

With several devices the legend has to fit under the plot at the dashboard's width (960 px) and in the
1280 x 720 export. Each device's column lists its memory slopes (the compute roofs and interconnect
slopes are named on the plot) and its title says which dash and marker are that device's; its kernel
points belong to the same group, so clicking the title hides or shows the whole device. The bound
colours are explained once, in a "Kernels" column, not once per device.
"""

from __future__ import annotations

from dashboard.charts.placement import CHAR_WIDTH
from dashboard.charts.theme import bound_color, bound_sort_key, device_style

DASH_WORDS = {"solid": "solid", "dash": "dashed", "dot": "dotted", "dashdot": "dash-dot", "longdash": "long-dashed",
              "longdashdot": "long-dash-dot"}
SYMBOL_GLYPHS = {"circle": "●", "diamond": "◆", "square": "■", "triangle-up": "▲", "cross": "✚", "star": "★"}
FONT = 13                 # legend entries
TITLE_FONT = 14           # group titles
ROW_PX = 20               # one legend row
SYMBOL_PX = 46            # the line or marker sample left of an entry's text
GAP_PX = 12               # between columns
BOUNDS_GROUP = "bounds"


def device_legend_group(device: str, index: int) -> dict:
    """legendgroup and title of a device's column: 'MI300X: dashed, ◆'."""
    style = device_style(index)
    title = f"{device}: {DASH_WORDS.get(style['dash'], style['dash'])}, {SYMBOL_GLYPHS.get(style['symbol'], '')}"
    return dict(legendgroup=f"device {device}", legendgrouptitle=dict(text=title, font=dict(size=TITLE_FONT)))


def bound_key_traces(bounds) -> list[dict]:
    """Legend-only entries, one per bound present: the colour of its kernels' points (any device's marker)."""
    return [dict(type="scatter", x=[None], y=[None], mode="markers", name=f"{bound}-bound", hoverinfo="skip",
                 marker=dict(color=bound_color(bound), symbol="circle", size=11, line=dict(color="white", width=1)),
                 legendgroup=BOUNDS_GROUP, legendgrouptitle=dict(text="Kernels: colour = bound",
                                                                  font=dict(size=TITLE_FONT)),
                 meta=dict(role="bound key", bound=bound))
            for bound in sorted(set(bounds), key=bound_sort_key)]


def legend_columns(traces: list[dict]) -> list[tuple[str, list[str]]]:
    """(title, entry names) of each legend group in order, from the traces shown in the legend."""
    columns: dict[str, tuple[str, list[str]]] = {}
    for trace in traces:
        if trace.get("showlegend") is False or "legendgroup" not in trace:
            continue
        title = trace.get("legendgrouptitle", {}).get("text", "")
        columns.setdefault(trace["legendgroup"], (title, []))[1].append(trace["name"])
    return list(columns.values())


def legend_height(columns: list[tuple[str, list[str]]], width_px: float) -> float:
    """Pixels the horizontal legend takes at `width_px`: columns side by side, wrapped into as many rows of
    columns as the width needs; each row of columns as tall as its longest column plus its title."""
    if not columns:
        return 0.0
    widths = [max(len(title) * CHAR_WIDTH * TITLE_FONT,
                  max((len(name) for name in names), default=0) * CHAR_WIDTH * FONT + SYMBOL_PX) + GAP_PX
              for title, names in columns]
    height, used, tallest = 0.0, 0.0, 0
    for width, (_, names) in zip(widths, columns):
        if used and used + width > width_px:          # this column starts a new row of columns
            height += (tallest + 1.5) * ROW_PX
            used, tallest = 0.0, 0
        used += width
        tallest = max(tallest, len(names))
    return height + (tallest + 1.5) * ROW_PX + 10      # the last row and the legend's padding
