"""What the browser is sent for a chart: the same figure, in a form Plotly redraws once per rerun instead of twice.

On every rerun that changes a chart, Streamlit's element id (a hash of the figure's JSON) changes, so its chart
component is mounted afresh: Plotly purges the old plot and draws the new one. Right after mounting, the component
re-themes its copy of the figure (a JSON round trip, so every object in it is new) and hands it to `Plotly.react`
again. Plotly.react compares old and new figures to decide what to redraw, and three things in our figures made it
recompute and redraw everything a second time (measured in Chromium: two full draws of 80-140 ms each per rerun):
- `layout.template` (compared by reference: any new object means "recompute everything");
- data arrays without `layout.datarevision` (then compared by reference too);
- `meta` on traces or layout (an object, compared by reference; a change means "redraw").
So the browser gets: the template's settings written into the figure itself (the values a chart sets win, as they
do over a template), no template; `datarevision`, a digest of the traces (a new figure gets a new one, so Plotly
never keeps old data); `meta` (the charts' own bookkeeping: roles, devices, units; no hover text of ours reads it)
sent as `_meta`, which plotly.js keeps in the input and leaves out of what it compares and draws (the tests read the
charts a page sends from it). The plot drawn is the same (a browser check compares Plotly's full layout and data of both
forms: benchmarks/rerun_cpu.py's docs, docs/responsiveness.md). The figure objects on the server are unchanged:
exports, slides and tests use them as before.
"""

from __future__ import annotations

import copy
import hashlib
import re

from plotly.io.json import to_json_plotly

RENAMED = {"meta": "_meta"}       # plotly.js compares meta objects by reference: a new copy redraws the plot
AXIS = re.compile(r"^([xy])axis(\d*)$")
ITEM_DEFAULTS = {"annotations": "annotationdefaults", "shapes": "shapedefaults", "images": "imagedefaults",
                 "sliders": "sliderdefaults", "updatemenus": "updatemenudefaults"}
# trace types drawn on x/y axes (the ones our charts use, and their kin); others (pie, table, ...) have no axes
CARTESIAN = {"scatter", "scattergl", "bar", "histogram", "box", "violin", "heatmap", "contour", "waterfall", "funnel",
             "histogram2d", "histogram2dcontour", "ohlc", "candlestick", "image"}


def under(value, default):
    """`value` over `default`: dicts merged key by key (value's keys win, recursively), any other value kept as is."""
    if isinstance(value, dict) and isinstance(default, dict):
        merged = copy.deepcopy(default)
        for key, item in value.items():
            merged[key] = under(item, merged[key]) if key in merged else item
        return merged
    return value


def _axis_names(layout: dict, data: list) -> set[str]:
    """Every x/y axis the figure has: named in the layout or used by a cartesian trace ('x2' -> 'xaxis2')."""
    names = {key for key in layout if AXIS.match(key)}
    for trace in data:
        if trace.get("type", "scatter") in CARTESIAN:
            for letter in "xy":
                ref = trace.get(f"{letter}axis", letter)
                names.add(f"{letter}axis{ref[1:]}")
    return names


def _is_category(name: str, axis: dict, data: list) -> bool:
    """Whether plotly.js makes the axis `name` a category axis: its type when set, else the values of the first
    cartesian trace on it with any (strings more than twice as many as numbers: plotly.js's test)."""
    if axis.get("type") not in (None, "-"):
        return axis["type"] in ("category", "multicategory")
    letter, ref = name[0], name[0] + name[5:]
    for trace in data:
        if trace.get("type", "scatter") not in CARTESIAN or trace.get(f"{letter}axis", letter) != ref:
            continue
        values = trace.get(letter)
        if isinstance(values, dict) or hasattr(values, "dtype"):     # a typed array ({dtype, bdata}) or numpy
            dtype = values.get("dtype", "f8") if isinstance(values, dict) else values.dtype.str
            if len(dtype) and dtype.lstrip("<>|=")[:1] in "iuf":
                return False
            values = list(values) if not isinstance(values, dict) else []
        if values is None or len(values) == 0:
            continue
        values = list(values)
        if any(isinstance(value, (list, tuple)) for value in values):
            return True
        strings = sum(isinstance(value, str) for value in values)
        return strings > 2 * (len(values) - strings)
    return False


def _axis_default(name: str, axis: dict, default: dict, data: list) -> dict:
    """The template's axis settings for the axis `name`. plotly.js draws a zero line by default on a non-category
    axis, or on any axis whose own settings name a zero-line colour or width: written into a category axis, the
    template's zero-line colour would turn its zero line on. So a category axis that does not set `zeroline` gets
    them only as the template gave them, that is not at all."""
    if "zeroline" in axis or not _is_category(name, axis, data):
        return default
    return {key: value for key, value in default.items() if key not in ("zerolinecolor", "zerolinewidth")}


def _flatten_layout(layout: dict, template_layout: dict, data: list) -> dict:
    flat = {RENAMED.get(key, key): value for key, value in layout.items() if key != "template"}
    for key, default in template_layout.items():
        if key in ("xaxis", "yaxis"):
            for name in _axis_names(layout, data):
                if name[0] == key[0]:
                    axis = flat.get(name, {})
                    flat[name] = under(axis, _axis_default(name, axis, default, data))
        elif key in ITEM_DEFAULTS.values():
            items = next(name for name, defaults in ITEM_DEFAULTS.items() if defaults == key)
            if flat.get(items):
                flat[items] = [under(item, default) for item in flat[items]]
        else:
            flat[key] = under(flat[key], default) if key in flat else copy.deepcopy(default)
    return flat


def _flatten_data(data: list, template_data: dict) -> list:
    """Each trace over its type's template entries, cycled as plotly.js does (the n-th trace of a type takes entry
    n modulo their count); `meta` as `_meta`."""
    seen: dict[str, int] = {}
    flat = []
    for trace in data:
        kind = trace.get("type", "scatter")
        trace = {RENAMED.get(key, key): value for key, value in trace.items()}
        defaults = template_data.get(kind) or []
        if defaults:
            index = seen.get(kind, 0)
            seen[kind] = index + 1
            trace = under(trace, defaults[index % len(defaults)])
        flat.append(trace)
    return flat


def browser_dict(figure_dict: dict) -> dict:
    """The plotly dict of a figure (`figure.to_dict()`, not changed) as the browser is sent it: template written in,
    no template, `meta` as `_meta`, `layout.datarevision` a digest of the traces."""
    layout = figure_dict.get("layout") or {}
    template = layout.get("template") or {}
    data = _flatten_data(list(figure_dict.get("data") or []), template.get("data") or {})
    flat_layout = _flatten_layout(layout, template.get("layout") or {}, data)
    flat_layout["datarevision"] = hashlib.blake2b(to_json_plotly(data).encode(), digest_size=8).hexdigest()
    return {**{key: value for key, value in figure_dict.items() if key not in ("data", "layout")},
            "data": data, "layout": flat_layout}
