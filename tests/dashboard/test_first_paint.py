"""What the browser does before the first chart (issue 14): the page's first element starts loading the charts'
Plotly bundle (dashboard/plotly_view.py), so the browser evaluates it while the server still runs."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from dashboard import plotly_view
from tests.conftest import REPO

APP = str(REPO / "dashboard" / "app.py")


def test_the_page_sends_the_preload_first_and_hidden():
    app = AppTest.from_file(APP, default_timeout=180).run()
    assert not app.exception
    main = [element for element in app.main if type(element).__name__ != "SpecialBlock"]   # the sidebar
    first = main[0]
    assert type(first).__name__ == "Html" and first.proto.unsafe_allow_javascript
    body = first.proto.body
    # it loads the charts' bundle with the chart component's own loader (one promise a page: fetched once)
    assert plotly_view.LOADER in body and "loadPlotly()" in body and plotly_view.BUNDLE_URL in body
    assert "PlotlyChart." not in body                           # not Streamlit's 4.7 MB chunk any more
    assert ":has(#plotly-preload){display:none}" in body.replace(" ", "") and 'id="plotly-preload"' in body
    assert len(app.get("html")) == 1
    assert '[data-testid="stSkeleton"]' in body and "animation:none" in body   # still placeholders: no repaints


def test_the_launcher_warms_the_default_view_then_runs_the_app_with_the_options(monkeypatch):
    """dashboard.serve: the default view's estimates are in the engine's cache (which every session of the server
    shares) before Streamlit starts, and `streamlit run dashboard/app.py` gets the options as given."""
    import sys

    import engine
    from dashboard import serve
    from dashboard.state import ViewState
    from engine.results import estimate_cache
    from engine.workload.scenario import Scenario
    from streamlit.web import cli

    from streamlit.web.server.starlette import starlette_static_routes
    monkeypatch.setattr(starlette_static_routes, "create_streamlit_static_handler",      # put back after the test
                        starlette_static_routes.create_streamlit_static_handler)
    estimate_cache.clear()
    started = {}
    monkeypatch.setattr(cli, "main", lambda: started.setdefault("argv", list(sys.argv)) and 0)
    monkeypatch.setattr(sys, "argv", ["serve"])
    assert serve.main(["--server.port", "8600"]) == 0
    assert started["argv"] == ["streamlit", "run", str(REPO / "dashboard" / "app.py"), "--server.port", "8600"]
    assert starlette_static_routes.create_streamlit_static_handler.early_plotly   # the page asks for Plotly early
    view = ViewState()
    hits = estimate_cache._kept.cache_info().hits
    engine.estimate(engine.load_hardware(view.devices[0]), engine.load_model(view.model),
                    Scenario(**view.scenario_fields), method=view.method)
    assert estimate_cache._kept.cache_info().hits == hits + 1      # the session's first estimate: already made
