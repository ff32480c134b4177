"""dashboard/browser_spec.py: the dict the browser is sent for a figure carries the template's settings itself (the
figure's own values winning), no template, meta as `_meta`, and a data revision that follows the traces. That Plotly
draws the same plot from it is checked in Chromium (tests/browser/test_browser_spec_browser.py)."""

from __future__ import annotations

import copy

import plotly.graph_objects as go

from dashboard.browser_spec import browser_dict
from dashboard.charts.theme import house_figure

TEMPLATE = {
    "layout": {
        "font": {"size": 16, "color": "#111111"},
        "xaxis": {"showgrid": True, "gridcolor": "#EEEEEE", "zerolinecolor": "#DDDDDD", "zerolinewidth": 2},
        "yaxis": {"showgrid": True, "gridcolor": "#EEEEEE", "zerolinecolor": "#DDDDDD", "zerolinewidth": 2},
        "annotationdefaults": {"arrowcolor": "#222222", "arrowhead": 0},
        "colorway": ["#0072B2", "#D55E00"],
    },
    "data": {"bar": [{"opacity": 0.5}, {"opacity": 0.8}]},
}


def spec(data: list, **layout) -> dict:
    return {"data": data, "layout": {"template": copy.deepcopy(TEMPLATE), **layout}}


def test_the_template_is_written_into_the_layout_and_the_figure_wins():
    sent = browser_dict(spec([{"type": "scatter", "x": [1, 2], "y": [3, 4]}], font={"size": 20},
                             annotations=[{"text": "ridge", "arrowhead": 2}]))
    layout = sent["layout"]
    assert "template" not in layout
    assert layout["font"] == {"size": 20, "color": "#111111"}
    assert layout["colorway"] == ["#0072B2", "#D55E00"]
    assert layout["annotations"] == [{"text": "ridge", "arrowhead": 2, "arrowcolor": "#222222"}]
    assert layout["xaxis"]["gridcolor"] == "#EEEEEE" and layout["yaxis"]["zerolinewidth"] == 2


def test_every_axis_gets_the_template_axis_also_one_only_a_trace_names():
    sent = browser_dict(spec([{"type": "scatter", "x": [1], "y": [1]},
                              {"type": "scatter", "x": [1], "y": [2], "xaxis": "x2", "yaxis": "y2"}],
                             xaxis2={"title": {"text": "right"}}))
    layout = sent["layout"]
    assert {"xaxis", "yaxis", "xaxis2", "yaxis2"} <= set(layout)
    assert layout["xaxis2"]["title"] == {"text": "right"} and layout["xaxis2"]["gridcolor"] == "#EEEEEE"
    assert layout["yaxis2"]["gridcolor"] == "#EEEEEE"


def test_a_category_axis_does_not_get_a_zero_line_colour_that_would_turn_its_zero_line_on():
    bars = [{"type": "bar", "x": ["H100", "H200"], "y": [1.0, 2.0]}]
    layout = browser_dict(spec(bars))["layout"]
    assert "zerolinecolor" not in layout["xaxis"] and "zerolinewidth" not in layout["xaxis"]   # category: strings
    assert layout["yaxis"]["zerolinecolor"] == "#DDDDDD"                                       # numbers
    asked = browser_dict(spec(bars, xaxis={"zeroline": True}))["layout"]
    assert asked["xaxis"]["zerolinecolor"] == "#DDDDDD"               # a zero line asked for: the template's colour
    typed = browser_dict(spec([{"type": "bar", "x": [1, 2], "y": [1.0, 2.0]}], xaxis={"type": "category"}))
    assert "zerolinecolor" not in typed["layout"]["xaxis"]


def test_trace_defaults_cycle_per_type_and_the_trace_wins():
    sent = browser_dict(spec([{"type": "bar", "x": ["a"], "y": [1]}, {"type": "scatter", "x": [1], "y": [1]},
                              {"type": "bar", "x": ["a"], "y": [2]}, {"type": "bar", "x": ["a"], "y": [3]},
                              {"type": "bar", "x": ["a"], "y": [4], "opacity": 1.0}]))
    assert [trace.get("opacity") for trace in sent["data"]] == [0.5, None, 0.8, 0.5, 1.0]


def test_meta_goes_as_underscore_meta_and_the_figure_given_is_not_changed():
    figure = spec([{"type": "scatter", "x": [1], "y": [1], "meta": {"role": "ceiling"}}], meta={"unit": "J"})
    before = copy.deepcopy(figure)
    sent = browser_dict(figure)
    assert "meta" not in sent["data"][0] and "meta" not in sent["layout"]
    assert sent["data"][0]["_meta"] == {"role": "ceiling"} and sent["layout"]["_meta"] == {"unit": "J"}
    assert figure == before


def test_the_data_revision_follows_the_traces_only():
    one = browser_dict(spec([{"type": "scatter", "x": [1, 2], "y": [3, 4]}]))["layout"]["datarevision"]
    same = browser_dict(spec([{"type": "scatter", "x": [1, 2], "y": [3, 4]}], title={"text": "t"}))
    other = browser_dict(spec([{"type": "scatter", "x": [1, 2], "y": [3, 5]}]))["layout"]["datarevision"]
    assert one == same["layout"]["datarevision"] and one != other


def test_a_house_figure_and_a_numpy_figure_go_without_their_template():
    house = house_figure([{"type": "bar", "x": ["a", "b"], "y": [1.0, 2.0]}], {"yaxis": {"title": {"text": "GB"}}})
    sent = browser_dict(house.to_dict())
    assert "template" not in sent["layout"] and sent["layout"]["font"]["family"].startswith("Liberation Sans")
    assert "zerolinecolor" not in sent["layout"]["xaxis"] and "zerolinecolor" in sent["layout"]["yaxis"]
    import numpy as np
    numeric = go.Figure(go.Bar(x=np.array([1.0, 2.0]), y=np.array([3.0, 4.0])), layout={"template": TEMPLATE})
    assert browser_dict(numeric.to_dict())["layout"]["xaxis"]["zerolinecolor"] == "#DDDDDD"   # numbers, not categories
