"""Views that used to mislead (issue 14): each names, draws or keeps what the user actually set."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from dashboard.context import scenario_line
from dashboard.state import ViewState
from dashboard.widgets import file_name
from engine.workload import Scenario
from tests.conftest import REPO

APP = str(REPO / "dashboard" / "app.py")


def run_app(**params) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=180)
    for key, value in params.items():
        app.query_params[key] = value
    return app.run()


def figures(app) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in app.get("plotly_chart")]


EDITED = "H100-SXM (edited: memory bandwidth 6,700 GB/s)"


def test_scenario_line_names_parallelism_and_edits_in_header_chart_subtitles_and_file_names():
    app = run_app(tp="4", **{"edit.H100-SXM": "memory_bandwidth:6700"})
    assert not app.exception
    header = app.main.caption[0].value
    assert EDITED in header and "TP 4" in header
    for figure in figures(app):
        subtitle = figure["layout"]["title"]["subtitle"]["text"].replace("<br>", " · ")
        assert EDITED in subtitle and "TP 4" in subtitle
    for chart in app.get("plotly_chart"):
        name = json.loads(chart.proto.config)["toImageButtonOptions"]["filename"]
        assert "tp-4" in name and "edited-memory-bandwidth-6-700-gb-s" in name


def test_scenario_line_names_every_layout_degree_above_one_and_chunked_prefill():
    state = ViewState(devices=("H100-SXM", "MI300X"), tp=2, pp=4, dp=1, ep=8, chunked_prefill=True, chunk_size=512)
    scenario = Scenario(phase="request", batch=8, input_length=2048, output_length=128, tp=2, pp=4, dp=1, ep=8,
                        chunked_prefill=True, chunk_size=512)
    line = scenario_line("some/model", state, scenario)
    assert "on H100-SXM, MI300X" in line
    assert "TP 2 x PP 4 x EP 8" in line and "DP" not in line
    assert "chunked prefill (chunk 512)" in line
    assert file_name("Roofline", line, "svg").startswith("roofline-some-model-on-h100-sxm-mi300x-tp-2-x-pp-4-x-ep-8")
    plain = scenario_line("m", ViewState(), Scenario())
    assert "TP" not in plain and "chunked prefill" not in plain and "edited" not in plain
