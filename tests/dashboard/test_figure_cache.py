"""dashboard/figure_cache.py: a shared figure is built once per view and serialised for st.plotly_chart once; what
Streamlit is given is the figure's browser dict (dashboard/browser_spec.py: the same chart, template written in),
and a figure that is not shared (built every rerun, maybe changed) is serialised on every call, itself unchanged."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io as pio
import plotly.tools
from streamlit.testing.v1 import AppTest

from dashboard.browser_spec import browser_dict
from dashboard.figure_cache import browser_json, for_streamlit, shared_figures
from dashboard.widgets import scenario_subtitle
from tests.conftest import REPO
from tests.dashboard.charts_sent import chart_specs


def figure(values) -> go.Figure:
    return go.Figure(go.Bar(x=["a", "b", "c"], y=values), layout=dict(title=dict(text="bars")))


def test_a_shared_figure_is_serialised_once_to_the_same_spec_streamlit_would_send():
    built = []

    def build():
        built.append(1)
        return [("bars", figure([1.0, 2.5, 4.0]))]
    key = "test-figure-cache-serialised"
    (title, shared), = shared_figures(key, "scenario line", build)
    assert shared_figures(key, "scenario line", build)[0][1] is shared and built == [1]   # built once
    given = for_streamlit(shared)
    # st.plotly_chart turns what it is given into a dict, then JSON: the figure's browser dict
    spec = pio.to_json(plotly.tools.return_figure_from_figure_or_data(given, validate_figure=True), validate=False)
    assert json.loads(spec) == json.loads(pio.to_json(browser_dict(shared.to_dict()), validate=False))
    assert "template" in shared.to_dict()["layout"]                                    # the figure is unchanged
    assert json.loads(spec)["layout"]["title"]["subtitle"]["text"] == "scenario line"
    assert for_streamlit(shared).to_dict() is not for_streamlit(shared).to_dict()     # each caller its own top level
    assert shared._shared_dict is for_streamlit(shared)._dict                          # made once


def test_a_figure_that_is_not_shared_is_serialised_on_every_call_and_left_as_it_is():
    fresh = figure([3.0, 1.0, 2.0])
    before = fresh.to_dict()
    assert for_streamlit(fresh).to_dict() == browser_dict(before)
    fresh.data[0].y = [9.0, 9.0, 9.0]                        # changed later: the next call sends the change
    assert list(for_streamlit(fresh).to_dict()["data"][0]["y"]) == [9.0, 9.0, 9.0]
    assert fresh.to_dict()["layout"] == before["layout"]


def test_the_overview_sends_the_charts_its_figures_hold():
    app = AppTest.from_file(str(REPO / "dashboard" / "app.py"), default_timeout=180).run()
    assert not app.exception
    specs = chart_specs(app)
    assert specs and all(spec["data"] and spec["layout"]["title"]["subtitle"]["text"] for spec in specs)
    again = app.run()
    assert chart_specs(again) == specs   # rerun: same charts


def test_a_shared_figure_given_another_scenario_line_is_serialised_again():
    (_, shared), = shared_figures("test-figure-cache-resubtitled", "first line", lambda: [("bars", figure([1.0]))])
    assert for_streamlit(shared).to_dict()["layout"]["title"]["subtitle"]["text"] == "first line"
    from dashboard.widgets import scenario_subtitle
    scenario_subtitle(shared, "second line")
    assert for_streamlit(shared).to_dict()["layout"]["title"]["subtitle"]["text"] == "second line"


def test_a_shared_figures_json_for_the_chart_component_is_made_once_and_follows_a_new_subtitle():
    key = "test-figure-cache-json"
    (_, shared), = shared_figures(key, "scenario line", lambda: [("bars", figure([1.0, 2.0, 3.0]))])
    text = browser_json(shared)
    assert json.loads(text) == json.loads(pio.to_json(browser_dict(shared.to_dict()), validate=False))
    assert browser_json(shared) is text                                              # made once
    scenario_subtitle(shared, "another line")                                        # a new subtitle: made again
    assert json.loads(browser_json(shared))["layout"]["title"]["subtitle"]["text"] == "another line"
    unshared = figure([1.0, 2.0, 3.0])
    assert json.loads(browser_json(unshared))["data"][0]["type"] == "bar"
