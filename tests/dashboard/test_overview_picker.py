"""The overview draws one chart at a time (issue 14: compute only what is on screen): the picker's choice is in the
link, old links open on the roofline, All charts draws every one, and the deck holds every chart whichever is shown."""

from __future__ import annotations


import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state import OVERVIEW_CHARTS, ViewState, parse_query, to_query
from dashboard.views import overview
from tests.conftest import REPO
from tests.dashboard.charts_sent import chart_elements, chart_specs

APP = str(REPO / "dashboard" / "app.py")
TITLES = {"roofline": "Roofline", "gap": "Ideal roofline vs realistic", "kernels": "Kernel time by phase",
          "bounds": "Compute- vs memory-bound time", "memory": "Memory fit"}


def run_app(**params) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=180)
    for key, value in params.items():
        app.query_params[key] = value
    return app.run()


def chart_titles(app) -> list[str]:
    return [spec["layout"]["title"]["text"] for spec in chart_specs(app)]


def test_an_old_link_without_chart_opens_on_the_roofline_alone_and_keeps_its_url():
    app = run_app(batch="8")
    assert not app.exception and not app.error and not app.warning
    (title,) = chart_titles(app)
    assert title.startswith("Roofline")
    assert app.session_state["w_ov_chart"] == "roofline"
    assert "chart" not in app.query_params            # the default is left out: links made before it read the same
    assert ViewState().overview_chart == "roofline" and "chart" not in to_query(ViewState())


@pytest.mark.parametrize("name", [name for name in OVERVIEW_CHARTS if name != "all"])
def test_each_chart_in_the_link_draws_that_chart_only(name):
    app = run_app(chart=name)
    assert not app.exception and not app.error
    assert len(chart_elements(app)) == 1
    assert [s.value for s in app.main.subheader if s.value in TITLES.values()] == [TITLES[name]]
    assert app.query_params.get("chart", "roofline") == name          # the default is left out of links


def test_all_charts_draws_every_chart_in_the_deck_order():
    app = run_app(chart="all")
    assert not app.exception
    assert [s.value for s in app.main.subheader][:5] == [TITLES[name] for name in overview.CHARTS]
    assert len(chart_elements(app)) == 5


def test_picking_a_chart_redraws_and_writes_the_link():
    app = run_app()
    app.session_state["w_ov_chart"] = "memory"
    app.run()
    assert len(chart_elements(app)) == 1 and app.query_params["chart"] == "memory"
    assert [s.value for s in app.main.subheader if s.value in TITLES.values()] == ["Memory fit"]
    state, warnings = parse_query(dict(app.query_params))
    assert warnings == [] and state.overview_chart == "memory"


def test_a_bad_chart_parameter_warns_naming_it_and_shows_the_roofline():
    app = run_app(chart="pie")
    assert any("chart='pie'" in w.value and "roofline" in w.value for w in app.warning)
    (title,) = chart_titles(app)
    assert title.startswith("Roofline")


def test_the_deck_holds_every_chart_while_one_is_shown(monkeypatch):
    decks = []
    monkeypatch.setattr(overview, "deck_button", lambda slides, summary, key: decks.append(slides))
    app = run_app(chart="bounds")
    assert not app.exception and len(chart_elements(app)) == 1
    slides = decks[-1]() if callable(decks[-1]) else decks[-1]
    assert [title for title, _ in slides] == [TITLES[name] for name in overview.CHARTS]


def test_the_share_box_is_made_only_when_opened_and_then_holds_the_link():
    """Its code box pulls 1.5 MB of script into the browser: closed by default, the link made when opened."""
    app = run_app(batch="8", chart="memory")
    assert len(app.sidebar.code) == 0 and "Share this view" in [e.label for e in app.sidebar.expander]
    app.session_state["open_share"] = True
    app.run()
    link = app.sidebar.code[0].value
    assert "batch=8" in link and "chart=memory" in link

