"""The Serving page and its charts: numbers equal engine.serve, controls in the URL, failures named."""

from __future__ import annotations

import pandas as pd
import pytest

import engine
from dashboard.charts.serving import serving_curve_figure, serving_latency_figure
from dashboard.state import ViewState, parse_query, to_query
from engine.serving import doubling_concurrencies, serve, serving_curve
from tests.dashboard.test_app import run_app, url_state


@pytest.fixture(scope="module")
def curve():
    h100, h200 = engine.load_hardware("H100-SXM"), engine.load_hardware("H200-SXM")
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    fields = dict(input_length=1024, output_length=128)
    return pd.concat([serving_curve(hw, model, [1, 4, 16, 64], **fields) for hw in (h100, h200)], ignore_index=True)


def test_doubling_concurrencies():
    assert doubling_concurrencies(256, 24) == [1, 2, 4, 8, 16, 24, 32, 64, 128, 256]
    assert doubling_concurrencies(100) == [1, 2, 4, 8, 16, 32, 64, 100]


def test_curve_figure_plots_each_device_through_its_concurrencies(curve):
    figure = serving_curve_figure(curve, concurrency=16)
    lines = [trace for trace in figure.data if trace.showlegend is not False]
    assert [trace.name for trace in lines] == ["H100-SXM", "H200-SXM"]
    h100 = curve[curve["device"] == "H100-SXM"]
    assert list(lines[0].x) == pytest.approx(list(h100["tokens_per_s_per_user"]))
    assert list(lines[0].y) == pytest.approx(list(h100["tokens_per_s_per_device"]))
    assert list(lines[0].text) == ["1", "4", "16", "64"]
    ring = figure.data[1]           # the chosen concurrency, ringed on its device's line
    assert list(ring.x) == pytest.approx(list(h100.loc[h100["concurrency"] == 16, "tokens_per_s_per_user"]))
    # more clients: more throughput per device, less speed per user (a trade-off curve)
    assert (h100["tokens_per_s_per_device"].diff().dropna() > 0).all()
    assert (h100["tokens_per_s_per_user"].diff().dropna() < 0).all()


def test_curve_leaves_out_points_that_cannot_run():
    model = engine.load_model("meta-llama/Llama-3.1-70B")
    rows = serving_curve(engine.load_hardware("H100-SXM"), model, [1, 2], input_length=256, output_length=16)
    assert (rows["error"].str.contains("does not fit")).all()
    figure = serving_curve_figure(rows)
    assert len(figure.data[0].x) == 0


def test_latency_figure_in_milliseconds(curve):
    figure = serving_latency_figure(curve)
    ttft_mean = next(t for t in figure.data if t.name == "H100-SXM mean" and t.xaxis == "x")
    assert list(ttft_mean.y) == pytest.approx(list(curve[curve["device"] == "H100-SXM"]["ttft_s"] * 1e3))


def test_serving_keys_round_trip_and_stay_out_of_other_pages():
    state = ViewState(page="serving", serving_concurrency=48, serving_max_concurrency=512, serving_token_budget=2048,
                      serving_backend="vllm")
    assert parse_query(to_query(state)) == (state, [])
    assert not any(key.startswith("sv.") for key in to_query(ViewState(page="overview")))
    _, warnings = parse_query({"sv.c": "0", "sv.backend": "tgi"})
    assert any("sv.c" in w for w in warnings) and any("sv.backend" in w for w in warnings)


def test_serving_page_shows_engine_numbers():
    app = run_app(page="serving", **{"sv.c": "8", "sv.cmax": "32", "in": "512", "out": "64", "method": "realistic"})
    assert not app.exception and not app.error
    expected = serve(engine.load_hardware("H100-SXM"), engine.load_model("meta-llama/Llama-3.1-8B"), concurrency=8,
                     input_length=512, output_length=64, method="realistic")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Tokens/s per device"] == f"{expected.tokens_per_s_per_device:,.0f}"
    assert metrics["TPOT mean"] == f"{expected.tpot_s * 1e3:.2f} ms"
    assert metrics["TTFT p90"] == f"{expected.ttft_p90_s * 1e3:,.1f} ms"
    state = url_state(app)
    assert (state.page, state.serving_concurrency, state.serving_max_concurrency) == ("serving", 8, 32)


def test_serving_page_says_how_weight_only_gemms_are_calibrated():
    app = run_app(page="serving", **{"sv.c": "4", "sv.cmax": "8", "in": "256", "out": "32", "method": "realistic",
                                     "wdt": "int4_g128"})
    assert not app.exception and not app.error
    notes = [info.value for info in app.info if "weight-only int4_g128 GEMMs" in info.value]
    assert notes and "not cross-validated across devices" in notes[0]
