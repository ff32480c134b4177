"""Panels side by side as plain layout keys: what make_subplots(rows=1, cols=n) sets up, without its cost."""

from __future__ import annotations

from dashboard.charts.theme import TEXT

PANEL_TITLE_FONT = dict(size=18, color=TEXT)


def axis_ids(panel: int) -> tuple[str, str]:
    """('x', 'y') for the first panel (0), ('x2', 'y2') for the second, ..."""
    suffix = str(panel + 1) if panel else ""
    return f"x{suffix}", f"y{suffix}"


def panels_layout(titles: list[str], spacing: float, shared_y: bool = False) -> dict:
    """xaxis/yaxis, xaxis2/yaxis2, ... side by side, `spacing` (paper fraction) apart, and the panel titles.

    Laid out as make_subplots(rows=1, cols=len(titles), subplot_titles=titles,
    horizontal_spacing=spacing, shared_yaxes=shared_y) does; the titles are the first annotations.
    """
    width = (1.0 - spacing * (len(titles) - 1)) / len(titles)
    layout, annotations = {}, []
    for panel, title in enumerate(titles):
        x, y = axis_ids(panel)
        start = panel * (width + spacing)
        layout[f"xaxis{x[1:]}"] = dict(anchor=y, domain=[start, start + width])
        layout[f"yaxis{y[1:]}"] = dict(anchor=x, domain=[0.0, 1.0],
                                       **(dict(matches="y", showticklabels=False) if shared_y and panel else {}))
        if title:
            annotations.append(dict(text=title, x=start + width / 2, y=1.0, xref="paper", yref="paper",
                                    xanchor="center", yanchor="bottom", showarrow=False, font=PANEL_TITLE_FONT))
    layout["annotations"] = annotations
    return layout
