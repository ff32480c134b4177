"""Place text labels on a chart so that they do not cover one another.

Plotly does not avoid collisions between annotations. Here each label's box is estimated in
pixels (from its text length, font size, anchor and shifts) on an assumed plot area, and each
label takes the first of its candidate positions whose box is inside the plot and clear of the
boxes already placed. The plot area assumed is the smallest one the chart is drawn in (the
dashboard's main column at 1440 px), so the labels stay apart on wider exports too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Optional

CHAR_WIDTH = 0.6      # average glyph width of Liberation Sans / Arial, in font sizes (digits 0.56, capitals 0.67)
LINE_HEIGHT = 1.3     # line height in font sizes
TAG = re.compile(r"<[^>]+>")

Box = tuple[float, float, float, float]      # x0, x1, y0, y1 in pixels, y upwards from the plot's bottom


@dataclass(frozen=True)
class PlotArea:
    """The plot area in pixels and the log10 ranges of its axes (log axes: annotations are in log10 units)."""
    width_px: float
    height_px: float
    x_range: tuple[float, float]
    y_range: tuple[float, float]

    def pixels(self, x: float, y: float) -> tuple[float, float]:
        (x0, x1), (y0, y1) = self.x_range, self.y_range
        return (x - x0) / (x1 - x0) * self.width_px, (y - y0) / (y1 - y0) * self.height_px

    def contains(self, box: Box, margin: float = 2.0) -> bool:
        x0, x1, y0, y1 = box
        return x0 >= -margin and y0 >= -margin and x1 <= self.width_px + margin and y1 <= self.height_px + margin


def text_size(text: str, font_size: float) -> tuple[float, float]:
    """Width and height in pixels of (possibly multi-line, <br>-separated) annotation text."""
    lines = TAG.sub("", text.replace("<br>", "\n")).split("\n")
    return max(len(line) for line in lines) * CHAR_WIDTH * font_size, len(lines) * LINE_HEIGHT * font_size


def label_box(label: dict, plot: PlotArea) -> Box:
    """The pixel box of a plotly annotation dict (x, y in axis units, anchors, shifts, textangle 0 or -90)."""
    width, height = text_size(label["text"], label.get("font", {}).get("size", 14))
    pad = 2 * (label.get("borderpad", 1) + 1)
    width, height = width + pad, height + pad
    if label.get("textangle") in (-90, 90, 270):
        width, height = height, width
    x, y = plot.pixels(label["x"], label["y"])
    x += label.get("xshift", 0)
    y += label.get("yshift", 0)
    xanchor, yanchor = label.get("xanchor", "center"), label.get("yanchor", "middle")
    x0 = x - width if xanchor == "right" else x - width / 2 if xanchor == "center" else x
    y0 = y - height if yanchor == "top" else y - height / 2 if yanchor == "middle" else y
    return x0, x0 + width, y0, y0 + height


def overlaps(a: Box, b: Box, gap: float = 1.0) -> bool:
    return a[0] < b[1] + gap and b[0] < a[1] + gap and a[2] < b[3] + gap and b[2] < a[3] + gap


def place(label: dict, candidates: Iterable[dict], placed: list[Box], plot: PlotArea) -> dict:
    """`label` updated with the first candidate (a dict of annotation fields) whose box is inside the plot
    and clear of `placed`; the chosen box is appended to `placed`. When none is clear, the candidate
    overlapping the fewest placed boxes is taken."""
    best: Optional[tuple[int, dict, Box]] = None
    for candidate in candidates:
        trial = {**label, **candidate}
        box = label_box(trial, plot)
        if not plot.contains(box):
            continue
        clashes = sum(overlaps(box, other) for other in placed)
        if clashes == 0:
            placed.append(box)
            return trial
        if best is None or clashes < best[0]:
            best = (clashes, trial, box)
    if best is None:
        placed.append(label_box(label, plot))
        return label
    placed.append(best[2])
    return best[1]


def side_by_side(labels: list[dict], plot: PlotArea, gap: float = 2.0) -> list[dict]:
    """Vertical (textangle -90) labels anchored right of their x: each moved left (xshift) until it clears
    the ones to its right, so labels of nearby x stand side by side instead of on top of each other."""
    placed: list[Box] = []
    out = []
    for label in sorted(labels, key=lambda item: -item["x"]):
        label = dict(label)
        box = label_box(label, plot)
        while any(overlaps(box, other) for other in placed):
            left = min(other[0] for other in placed if overlaps(box, other))
            label["xshift"] = label.get("xshift", 0) - (box[1] - left + gap)
            box = label_box(label, plot)
        placed.append(box)
        out.append(label)
    return out


def wrap_name(name: str, chars: int) -> str:
    """A device name broken into lines of at most `chars` characters at hyphens and spaces
    ('A100-80GB-SXM', 9 -> 'A100-<br>80GB-SXM'); a part longer than `chars` keeps its own line."""
    parts = re.findall(r"[^-\s]+(?:-|\s+|$)", name) or [name]
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1].rstrip()) + len(part.rstrip()) <= chars:
            lines[-1] += part
        else:
            lines.append(part)
    return "<br>".join(line.rstrip() for line in lines)


def category_ticks(names: list[str], panel_px: float, font_size: float = 14) -> dict:
    """Axis settings that keep category tick labels level: each name wrapped to the width of its slot
    (`panel_px` shared by the categories), so plotly has no reason to rotate them."""
    slot = panel_px / max(len(names), 1)
    chars = max(int(slot / (CHAR_WIDTH * font_size)), 4)
    return dict(tickmode="array", tickvals=list(names), ticktext=[wrap_name(str(n), chars) for n in names],
                tickangle=0)
