"""The Explore page through Streamlit's AppTest: every view renders, the heatmap shows the engine's
numbers, the inverse design's answer meets its target, and the controls live in the URL."""

from __future__ import annotations

import base64

import numpy as np
import pytest

import engine
from dashboard.state import EXPLORE_VIEWS
from engine.explore.grid import sweep_grid
from engine.hardware.what_if import apply_edits
from tests.dashboard.test_app import run_app, texts, url_state
from tests.dashboard.charts_sent import chart_specs

HEATMAP = {"page": "explore", "ex.view": "heatmap", "ex.x": "memory_bandwidth", "ex.xv": "log:1000:10000:12",
           "ex.y": "matrix_tflops", "ex.yv": "log:100:5000:9", "ex.metric": "tpot_s", "batch": "16",
           "method": "roofline"}                                   # checked against engine.estimate's roofline


def figures(app) -> list[dict]:
    """The charts the page sends, their bookkeeping (sent as `_meta`, dashboard/browser_spec.py) back as `meta`."""
    specs = chart_specs(app)
    for spec in specs:
        for item in (spec["layout"], *spec["data"]):
            if "_meta" in item:
                item["meta"] = item.pop("_meta")
    return specs


def array(value) -> np.ndarray:
    """A figure JSON array: a plain list, or plotly's typed array {"dtype", "bdata" (base64), "shape"}."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return flat.reshape([int(n) for n in str(shape).split(",")]) if shape else flat
    return np.array(value, dtype=float)


def number(text: str) -> float:
    return float(text.split()[0].replace(",", ""))


@pytest.mark.parametrize("view", EXPLORE_VIEWS)
def test_every_view_renders_a_chart(view):
    app = run_app(**{"page": "explore", "ex.view": view, "hw": "H100-SXM,MI300X"})
    assert not app.exception
    assert not app.error, texts(app.error)
    assert len(figures(app)) >= 1
    assert url_state(app).explore_view == view
    assert app.get("download_button")                         # chart exports, deck, table downloads


def test_heatmap_shows_the_engine_sweep_for_the_same_grid(devices, llama8b):
    app = run_app(**HEATMAP)
    assert not app.exception and not app.error
    heatmap = next(trace for trace in figures(app)[0]["data"] if trace["type"] == "heatmap")
    bandwidths = list(np.geomspace(1000, 10000, 12))
    peaks = list(np.geomspace(100, 5000, 9))
    expected = sweep_grid(llama8b, engine.Scenario(batch=16), {"matrix_tflops": peaks, "memory_bandwidth": bandwidths},
                          hardware=devices["H100-SXM"])
    z = array(heatmap["z"])
    assert z.shape == (9, 12)
    np.testing.assert_allclose(z, expected["tpot_s"].to_numpy().reshape(9, 12) * 1e3, rtol=1e-9)
    np.testing.assert_allclose(heatmap["x"], bandwidths, rtol=1e-9)
    np.testing.assert_allclose(heatmap["y"], peaks, rtol=1e-9)
    layout = figures(app)[0]["layout"]
    assert layout["xaxis"]["type"] == layout["yaxis"]["type"] == "log"          # log: ranges
    assert layout["xaxis"]["title"]["text"] == "Memory bandwidth (GB/s)"


def test_an_evenly_spaced_range_gets_a_linear_axis():
    app = run_app(**{**HEATMAP, "ex.xv": "1000:10000:10", "ex.yv": "100,1000,10000"})
    assert not app.exception and not app.error
    layout = figures(app)[0]["layout"]
    assert layout["xaxis"]["type"] == "linear"
    assert layout["yaxis"]["type"] == "log"                                  # a list spanning two decades


def test_heatmap_of_a_cloned_edited_device_uses_the_edit(devices, llama8b):
    app = run_app(**{**HEATMAP, "ex.view": "line", "ex.x": "batch", "ex.xv": "1,8,64", "ex.y": "none",
                     "hw": "H100-NEXT,H100-SXM", "clone.H100-NEXT": "H100-SXM",
                     "edit.H100-NEXT": "memory_bandwidth:6000"})
    assert not app.exception and not app.error
    lines = {trace["name"]: trace for trace in figures(app)[0]["data"] if trace.get("meta", {}).get("role") == "line"}
    assert set(lines) == {"H100-NEXT", "H100-SXM"}
    edited = apply_edits(devices["H100-SXM"], {"memory_bandwidth": 6000})
    for name, hardware in (("H100-NEXT", edited), ("H100-SXM", devices["H100-SXM"])):
        for batch, tpot_ms in zip(lines[name]["x"], array(lines[name]["y"])):
            result = engine.estimate(hardware, llama8b, engine.Scenario(batch=batch))
            assert tpot_ms == pytest.approx(result.tpot_s * 1e3, rel=1e-9)


def test_inverse_answer_meets_the_target_when_re_estimated(devices, llama8b):
    app = run_app(**{"page": "explore", "ex.view": "inverse", "ex.ifield": "memory_bandwidth", "ex.metric": "tpot_s",
                     "ex.target": "3", "method": "roofline"})      # re-estimated with the roofline below
    assert not app.exception and not app.error
    assert "memory bandwidth" in texts(app.success).lower()
    shown = {m.label: m.value for m in app.metric}
    answer = number(shown["Least memory bandwidth"])
    assert shown["Least memory bandwidth"].endswith("GB/s")
    met = engine.estimate(apply_edits(devices["H100-SXM"], {"memory_bandwidth": answer}), llama8b, engine.Scenario())
    assert met.tpot_s <= 3e-3
    below_label = next(label for label in shown if label.startswith("Just below"))
    below = number(below_label.split("(")[1])
    missed = engine.estimate(apply_edits(devices["H100-SXM"], {"memory_bandwidth": below}), llama8b, engine.Scenario())
    assert missed.tpot_s > 3e-3 * 0.999
    assert below < answer < 1.001 * below                     # the bisection is tight
    titles = [figure["layout"]["title"]["text"] for figure in figures(app)]
    assert any(title.startswith("Roofline") for title in titles)
    roofline = next(f for f in figures(app) if f["layout"]["title"]["text"].startswith("Roofline"))
    hbm = {trace["meta"]["device"]: trace["meta"]["value"] for trace in roofline["data"]
           if trace.get("meta", {}).get("level") == "HBM"}
    assert len(hbm) == 2 and hbm.pop("H100-SXM") == 3.35e12               # the sidebar's device and the answer
    assert next(iter(hbm.values())) == pytest.approx(answer * 1e9, rel=1e-3)


def test_inverse_for_tensor_parallel_ways_names_the_layout():
    app = run_app(**{"page": "explore", "ex.view": "inverse", "ex.ifield": "tp", "ex.metric": "tokens_per_s",
                     "ex.target": "400", "method": "roofline"})
    assert not app.exception and not app.error
    shown = {m.label: m.value for m in app.metric}
    label = next(label for label in shown if label.startswith("Least"))
    assert int(number(shown[label])) in (2, 4, 8)
    assert number(shown["Output tokens/s there"]) >= 400


def test_changing_a_control_updates_the_url_and_resets_the_range():
    app = run_app(**HEATMAP)
    app.selectbox(key="w_ex_x").set_value("clock").run()
    assert not app.exception and not app.error
    state = url_state(app)
    assert state.explore_x == "clock" and state.explore_x_values == ""      # the old GB/s range is dropped
    assert "ex.xv" not in app.query_params
    heatmap = next(trace for trace in figures(app)[0]["data"] if trace["type"] == "heatmap")
    assert min(heatmap["x"]) < 1.98 < max(heatmap["x"])                      # automatic range around H100's clock
    app.selectbox(key="w_ex_metric").set_value("tokens_per_s").run()
    assert url_state(app).explore_metric == "tokens_per_s"
    assert figures(app)[0]["data"][0]["colorbar"]["title"]["text"] == "Output tokens/s (tokens/s)"


def test_bad_range_in_the_url_warns_and_falls_back_to_the_automatic_range():
    app = run_app(**{**HEATMAP, "ex.xv": "1000:oops:5"})
    assert not app.exception and not app.error
    assert "ex.xv" in texts(app.warning)
    assert url_state(app).explore_x_values == ""
    assert figures(app)


def test_bad_range_typed_in_the_box_names_the_widget_and_url_key():
    app = run_app(**HEATMAP)
    app.text_input(key="w_ex_xv").set_value("log:-5:10:3").run()
    assert not app.exception
    message = texts(app.error)
    assert "X values" in message and "ex.xv" in message and "start and stop > 0" in message
    app.text_input(key="w_ex_xv").set_value("H100-SXM").run()
    assert "expected numbers" in texts(app.error)


def test_heatmap_picks_a_y_field_when_none_is_set():
    app = run_app(**{"page": "explore", "ex.view": "heatmap", "ex.x": "batch"})
    assert not app.exception and not app.error
    assert url_state(app).explore_y == "matrix_tflops"
    assert any(trace["type"] == "heatmap" for trace in figures(app)[0]["data"])


def test_device_field_sweeps_the_named_devices():
    app = run_app(**{"page": "explore", "ex.view": "heatmap", "ex.x": "batch", "ex.xv": "1,16",
                     "ex.y": "device", "ex.yv": "H100-SXM,MI300X,A100-80GB-SXM"})
    assert not app.exception and not app.error
    heatmap = next(trace for trace in figures(app)[0]["data"] if trace["type"] == "heatmap")
    assert heatmap["y"] == ["H100-SXM", "MI300X", "A100-80GB-SXM"]
    app = run_app(**{"page": "explore", "ex.view": "heatmap", "ex.x": "batch", "ex.y": "device", "ex.yv": "Z9000"})
    assert "unknown device 'Z9000'" in texts(app.error) and "ex.yv" in texts(app.error)


def test_sensitivity_change_control_reaches_the_engine():
    app = run_app(**{"page": "explore", "ex.view": "sensitivity", "ex.change": "10"})
    assert not app.exception and not app.error
    tornado = figures(app)[0]
    assert {trace["name"] for trace in tornado["data"]} == {"field −10%", "field +10%"}
    table = app.dataframe[0].value
    assert np.allclose(table["high_value"] / table["base_value"], 1.1, rtol=1e-2)


@pytest.mark.parametrize("params, fragment", [
    ({"ex.xv": "99999999999999999999"}, "1e+20 is outside what batch can take (from 1 to 1,000,000)"),
    ({"ex.xv": "1:1e308:200"}, "outside what batch can take"),
    ({"ex.x": "memory_bandwidth", "ex.xv": "1:1e308:200"}, "outside what memory_bandwidth can take"),
    ({"ex.view": "heatmap", "ex.x": "batch", "ex.y": "input_length", "ex.yv": "1,1e12"},
     "Y values (URL parameter ex.yv): 1e+12 is outside what input_length can take"),
])
def test_absurd_axis_values_name_the_url_parameter_instead_of_raising(params, fragment):
    app = run_app(page="explore", **params)
    assert not app.exception
    message = texts(app.error)
    assert fragment in message
    assert "URL parameter ex." in message
