"""Explore over a list of models: `model` as a categorical axis (line, heatmap, Pareto), in the URL, with
bad ids named by their widget and URL key (AppTest and the pure chart builders, no browser)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engine
from dashboard.charts import line_figure, pareto_figure
from dashboard.state import EXPLORE_FIELDS, ViewState, parse_query, to_query
from tests.dashboard.test_app import run_app, texts, url_state
from tests.dashboard.test_app_explore import array, figures

LLAMA, QWEN = "meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-7B"
H100 = engine.load_hardware("H100-SXM")


def test_a_line_over_models_shows_each_models_own_estimate():
    app = run_app(**{"page": "explore", "ex.x": "model", "ex.xv": f"{LLAMA},{QWEN}", "ex.metric": "tpot_s",
                     "method": "roofline", "batch": "8"})
    assert not app.exception and not app.error, texts(app.error)
    figure = figures(app)[0]
    [line] = [t for t in figure["data"] if t.get("meta", {}).get("role") == "line"]
    assert line["x"] == [LLAMA, QWEN]
    assert figure["layout"]["xaxis"]["type"] == "category"
    assert figure["layout"]["xaxis"]["title"]["text"] == "Model"
    assert "Model %{x}" in line["hovertemplate"]
    scenario = engine.Scenario(phase="request", batch=8, input_length=1024, output_length=256)
    expected = [engine.estimate(H100, engine.load_model(m), scenario, method="roofline").tpot_s * 1e3
                for m in (LLAMA, QWEN)]
    np.testing.assert_allclose(array(line["y"]), expected, rtol=1e-9)
    assert url_state(app).explore_x == "model"


def test_a_heatmap_of_batch_by_model_has_one_row_per_model():
    app = run_app(**{"page": "explore", "ex.view": "heatmap", "ex.x": "batch", "ex.xv": "1,16,256",
                     "ex.y": "model", "ex.yv": f"{LLAMA},{QWEN}", "ex.metric": "memory_per_device_bytes",
                     "method": "roofline"})
    assert not app.exception and not app.error, texts(app.error)
    heatmap = next(t for t in figures(app)[0]["data"] if t["type"] == "heatmap")
    assert heatmap["y"] == [LLAMA, QWEN] and list(array(heatmap["x"])) == [1, 16, 256]
    z = array(heatmap["z"])
    assert z.shape == (2, 3)
    assert (np.diff(z, axis=1) > 0).all()                  # more sequences, more KV cache
    table = app.dataframe[0].value                         # on screen: labelled columns, charts' units (GB)
    assert table["Model"].tolist() == [LLAMA] * 3 + [QWEN] * 3
    published = {LLAMA: 8_030_261_248, QWEN: 7_615_616_512}
    for model, params in published.items():
        weights = table.loc[table["Model"] == model, "Weights per device (GB)"]
        assert weights.tolist() == pytest.approx([params * 2 / 1e9] * 3, rel=1e-9)


def test_the_model_axis_defaults_to_the_compare_models_selection_and_shows_weights_per_device():
    app = run_app(**{"page": "explore", "ex.x": "model", "models": f"{QWEN},{LLAMA}", "method": "roofline",
                     "ex.metric": "weights_per_device_bytes", "tp": "2"})
    assert not app.exception and not app.error, texts(app.error)
    figure = figures(app)[0]
    [line] = [t for t in figure["data"] if t.get("meta", {}).get("role") == "line"]
    assert line["x"] == [QWEN, LLAMA]
    assert figure["layout"]["yaxis"]["title"]["text"] == "Weights per device (GB)"
    # Llama-3.1-8B over two ranks: its 65 RMSNorm weights of 4,096 stay whole, the rest halves (bf16: 2 bytes)
    norms = 65 * 4096
    assert array(line["y"])[1] == pytest.approx(((8_030_261_248 - norms) / 2 + norms) * 2 / 1e9, rel=1e-12)


@pytest.mark.parametrize("key, field_key, bad, reason", [
    ("ex.xv", "ex.x", "nobody/no-such-model", "cannot be loaded"),
    ("ex.yv", "ex.y", "/etc/passwd", "expected a catalog id"),
])
def test_a_bad_model_on_an_axis_names_the_widget_and_url_key(key, field_key, bad, reason, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    other = {"ex.x": "batch"} if field_key == "ex.y" else {}
    app = run_app(**{"page": "explore", field_key: "model", key: f"{LLAMA},{bad}", **other})
    assert not app.exception
    message = texts(app.error)
    label = "X values" if key == "ex.xv" else "Y values"
    assert f"{label} (URL parameter {key})" in message and repr(bad) in message and reason in message


def test_model_is_an_explore_field_that_round_trips_through_the_url():
    assert "model" in EXPLORE_FIELDS
    state = ViewState(page="explore", explore_x="batch", explore_y="model", explore_y_values=f"{LLAMA},{QWEN}")
    assert parse_query(to_query(state)) == (state, [])


def model_frame() -> pd.DataFrame:
    return pd.DataFrame({"model": [LLAMA, LLAMA, QWEN, QWEN], "batch": [1, 64, 1, 64],
                         "tpot_s": [0.008, 0.010, 0.007, 0.009],
                         "tokens_per_s_per_device": [125.0, 6400.0, 140.0, 7100.0],
                         "tokens_per_j": [1.0, 20.0, 1.2, 22.0],
                         "fits": [True, True, True, False], "error": ["", "", "", ""]})


def test_a_line_per_model_names_each_line_by_its_id():
    figure = line_figure(model_frame(), "batch", "tpot_s", series="model")
    lines = [t for t in figure.data if t.meta["role"] == "line"]
    assert [t.name for t in lines] == [LLAMA, QWEN]
    assert list(lines[1].marker.symbol)[1].endswith("-open")        # Qwen at batch 64 does not fit: hollow
    assert figure.layout.legend.title.text == "Model"


def test_pareto_hover_shows_the_model_as_text_not_as_a_number():
    figure = pareto_figure(model_frame(), ["batch", "model"], latency="tpot_s")
    cloud = next(t for t in figure.data if t.meta["role"] == "cloud")
    assert "<br>Model %{customdata[1]}<extra>" in cloud.hovertemplate
    assert "%{customdata[1]:.4g}" not in cloud.hovertemplate
    assert "Batch %{customdata[0]:.4g} sequences" in cloud.hovertemplate
