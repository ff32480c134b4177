"""What the browser does before the first chart (issue 14): the page's first element starts loading Plotly's chunk,
the very file Streamlit's own code imports for a chart, so the browser evaluates it while the server still runs."""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st
from streamlit.testing.v1 import AppTest

from dashboard import preload
from tests.conftest import REPO

APP = str(REPO / "dashboard" / "app.py")
STATIC_JS = Path(st.__file__).parent / "static" / "static" / "js"


def chunk_streamlit_imports() -> str:
    """The Plotly chunk named in Streamlit's main bundle, the module script of its index.html (what it imports
    when a chart arrives)."""
    page = (STATIC_JS.parent.parent / "index.html").read_text(encoding="utf-8")
    (main,) = re.findall(r'<script type="module"[^>]* src="\./static/js/([^"]+)"', page)
    names = set(re.findall(r"PlotlyChart\.[\w-]+\.js", (STATIC_JS / main).read_text(encoding="utf-8")))
    assert len(names) == 1, names
    return names.pop()


def test_the_preloaded_chunk_is_the_one_streamlit_imports_for_a_chart():
    assert preload.plotly_chunk() == chunk_streamlit_imports()
    assert (STATIC_JS / chunk_streamlit_imports()).stat().st_size > 1_000_000     # plotly.js inside


def test_the_page_sends_the_preload_first_and_hidden():
    app = AppTest.from_file(APP, default_timeout=180).run()
    assert not app.exception
    main = [element for element in app.main if type(element).__name__ != "SpecialBlock"]   # the sidebar
    first = main[0]
    assert type(first).__name__ == "Html" and first.proto.unsafe_allow_javascript
    body = first.proto.body
    assert "import(" in body and repr(chunk_streamlit_imports()) in body
    assert ":has(#plotly-preload){display:none}" in body.replace(" ", "") and 'id="plotly-preload"' in body
    assert len(app.get("html")) == 1
    assert '[data-testid="stSkeleton"]' in body and "animation:none" in body   # still placeholders: no repaints


def test_no_chunk_found_sends_nothing(monkeypatch, tmp_path):
    preload.plotly_chunk.cache_clear()
    monkeypatch.setattr(preload, "Path", lambda _: tmp_path / "a" / "b")   # a Streamlit without that file
    try:
        assert preload.plotly_chunk() is None
    finally:
        preload.plotly_chunk.cache_clear()


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

    estimate_cache.clear()
    started = {}
    monkeypatch.setattr(cli, "main", lambda: started.setdefault("argv", list(sys.argv)) and 0)
    monkeypatch.setattr(sys, "argv", ["serve"])
    assert serve.main(["--server.port", "8600"]) == 0
    assert started["argv"] == ["streamlit", "run", str(REPO / "dashboard" / "app.py"), "--server.port", "8600"]
    view = ViewState()
    hits = estimate_cache._kept.cache_info().hits
    engine.estimate(engine.load_hardware(view.devices[0]), engine.load_model(view.model),
                    Scenario(**view.scenario_fields), method=view.method)
    assert estimate_cache._kept.cache_info().hits == hits + 1      # the session's first estimate: already made
