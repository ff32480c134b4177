"""Explore and sensitivity figure builders: what they draw is the frame's numbers, in place, with units.

Oracles are independent of the builders: hand-made frames with values from a formula (rows
shuffled), the engine's own row order (the first grid field varies slowest), hand-picked Pareto
points.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import engine
from dashboard.charts import (
    heatmap_figure, inverse_search_figure, line_figure, pareto_figure, pareto_front, tornado_figure,
)
from dashboard.charts.explore_fields import MAX_CLOUD_POINTS, is_geometric
from engine.explore.grid import sweep_grid

REQUEST = engine.Scenario(phase="request", batch=64, input_length=1024, output_length=256)


def traces(fig, role):
    return [t for t in fig.data if (t.meta or {}).get("role") == role]


def formula_frame(xs, ys, seed=0) -> pd.DataFrame:
    """tpot_s = (x * 10 + y) / 1000 at every (x, y), rows shuffled; one cell cannot run, one does not fit."""
    rows = [{"memory_bandwidth": x, "matrix_tflops": y, "tpot_s": (x * 10 + y) / 1000, "fits": True, "error": ""}
            for x in xs for y in ys]
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)
    frame.loc[(frame.memory_bandwidth == xs[0]) & (frame.matrix_tflops == ys[-1]), "fits"] = False
    broken = (frame.memory_bandwidth == xs[-1]) & (frame.matrix_tflops == ys[0])
    frame.loc[broken, ["error", "tpot_s"]] = ["too long for the model", np.nan]
    return frame


# ------------------------------------------------------------------------------------------ heatmap
def test_heatmap_z_is_the_metric_at_each_cell_in_display_units():
    xs, ys = [1000, 2000, 4000, 8000], [100, 300, 900]
    fig = heatmap_figure(formula_frame(xs, ys), "memory_bandwidth", "matrix_tflops", "tpot_s")
    metric = traces(fig, "metric")[0]
    assert list(metric.x) == xs and list(metric.y) == ys
    z = np.array(metric.z, dtype=float)
    assert z.shape == (3, 4)
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            if (x, y) == (8000, 100):
                assert math.isnan(z[i, j])                     # cannot run: no value
            else:
                assert z[i, j] == pytest.approx(x * 10 + y)    # tpot in ms = (x*10 + y) / 1000 s * 1e3


def test_heatmap_marks_cells_that_do_not_fit_or_cannot_run():
    xs, ys = [1000, 2000, 4000, 8000], [100, 300, 900]
    fig = heatmap_figure(formula_frame(xs, ys), "memory_bandwidth", "matrix_tflops", "tpot_s")
    unfit = np.array(traces(fig, "unfit")[0].z, dtype=float)
    error = np.array(traces(fig, "error")[0].z, dtype=float)
    assert [tuple(c) for c in np.argwhere(~np.isnan(unfit))] == [(2, 0)]    # y=900, x=1000
    assert [tuple(c) for c in np.argwhere(~np.isnan(error))] == [(0, 3)]    # y=100, x=8000
    hover = np.array(traces(fig, "metric")[0].customdata)
    assert hover[2, 0] == "does not fit in memory" and hover[0, 3] == "too long for the model"
    assert hover[1, 1] == "fits in memory"
    assert {"does not fit in memory", "cannot run (see table)"} <= {t.name for t in fig.data if t.showlegend}


def test_heatmap_of_an_engine_sweep_is_the_sweep_reshaped(devices, llama8b):
    bandwidths = [2000.0, 3350.0, 5000.0, 8000.0, 12000.0]
    peaks = [200.0, 600.0, 989.0, 2000.0]
    sweep = sweep_grid(llama8b, REQUEST, {"matrix_tflops": peaks, "memory_bandwidth": bandwidths},
                       hardware=devices["H100-SXM"])
    fig = heatmap_figure(sweep, "memory_bandwidth", "matrix_tflops", "tokens_per_s")
    expected = sweep["tokens_per_s"].to_numpy().reshape(len(peaks), len(bandwidths))   # first field slowest
    np.testing.assert_allclose(np.array(traces(fig, "metric")[0].z, dtype=float), expected, rtol=1e-12)


def test_heatmap_axes_carry_units_and_go_log_for_geometric_ranges():
    geometric = [1000 * 2 ** i for i in range(6)]
    fig = heatmap_figure(formula_frame(geometric, [100, 200, 300]), "memory_bandwidth", "matrix_tflops", "tpot_s",
                         base=(4000, 200))
    assert fig.layout.xaxis.title.text == "Memory bandwidth (GB/s)"
    assert fig.layout.yaxis.title.text == "Matrix peak, bf16 (TFLOP/s)"
    assert traces(fig, "metric")[0].colorbar.title.text == "TPOT (ms)"
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "linear"
    base = traces(fig, "base")[0]
    assert (base.x[0], base.y[0]) == (4000, 200)
    hover = traces(fig, "metric")[0].hovertemplate
    assert "GB/s" in hover and "TFLOP/s" in hover and "ms" in hover


def test_heatmap_over_devices_uses_a_category_axis():
    frame = pd.DataFrame({"device": ["A", "B", "A", "B"], "batch": [1, 1, 8, 8],
                          "tpot_s": [0.001, 0.002, 0.003, 0.004], "fits": True, "error": ""})
    fig = heatmap_figure(frame, "batch", "device", "tpot_s")
    metric = traces(fig, "metric")[0]
    assert list(metric.y) == ["A", "B"] and fig.layout.yaxis.type == "category"
    np.testing.assert_allclose(np.array(metric.z, dtype=float), [[1, 3], [2, 4]])


@pytest.mark.parametrize("values, expected", [
    ([1, 2, 4, 8, 16], True), ([1, 10, 100], True), ([1, 2, 3, 4, 5], False), ([0, 1, 2], False),
    ([100, 110, 121], False), (["H100", "A100"], False), ([1, 1000], True),
])
def test_is_geometric(values, expected):
    assert is_geometric(values) is expected


# --------------------------------------------------------------------------------------------- line
def test_line_figure_draws_one_line_per_device_with_hollow_unfit_points():
    frame = pd.DataFrame({"batch": [1, 8, 64, 1, 8, 64], "device": ["A"] * 3 + ["B"] * 3,
                          "tpot_s": [0.004, 0.005, 0.009, 0.003, 0.0035, 0.006],
                          "fits": [True, True, False, True, True, True], "error": ""})
    fig = line_figure(frame, "batch", "tpot_s", "device", base=8)
    lines = traces(fig, "line")
    assert [t.name for t in lines] == ["A", "B"]
    assert list(lines[0].x) == [1, 8, 64] and list(lines[0].y) == pytest.approx([4, 5, 9])
    assert list(lines[0].marker.symbol) == ["circle", "circle", "circle-open"]
    assert "-open" not in "".join(lines[1].marker.symbol)
    assert fig.layout.xaxis.title.text == "Batch (sequences)" and fig.layout.yaxis.title.text == "TPOT (ms)"
    assert fig.layout.shapes[0].x0 == 8                                  # the sidebar's batch


def test_line_figure_per_value_of_a_second_field_names_it_with_its_unit():
    frame = pd.DataFrame({"batch": [1, 8, 1, 8], "memory_bandwidth": [2000, 2000, 4000, 4000],
                          "tokens_per_s": [100.0, 700.0, 150.0, 1100.0], "fits": True, "error": ""})
    fig = line_figure(frame, "batch", "tokens_per_s", "memory_bandwidth")
    assert [t.name for t in traces(fig, "line")] == ["Memory bandwidth 2,000 GB/s", "Memory bandwidth 4,000 GB/s"]
    assert fig.layout.yaxis.title.text == "Output tokens/s (tokens/s)"


# ------------------------------------------------------------------------------------------- pareto
PARETO = pd.DataFrame({
    "name": ["a", "b", "c", "d", "e", "f", "g", "h", "i"],
    "latency": [1.0, 2.0, 2.0, 3.0, 4.0, 5.0, 5.0, np.nan, 1.0],
    "rate": [10.0, 30.0, 25.0, 30.0, 50.0, 50.0, 45.0, 99.0, 10.0],
})
# lower latency and higher rate are better: a (and its twin i), b (beats c at the same latency; d only ties it
# on rate with more latency), e (f ties it on rate with more latency, g is worse); h has no latency


def test_pareto_front_picks_exactly_the_non_dominated_points():
    front = pareto_front(PARETO, "latency", "rate")
    assert sorted(front["name"]) == ["a", "b", "e", "i"]
    assert list(front["latency"]) == sorted(front["latency"])


def test_pareto_front_with_other_directions():
    # higher latency and lower rate are better: g (5, 45) beats f (5, 50) and e (4, 50); d (3, 30) beats b (2, 30);
    # c (2, 25) has no point with latency >= 2 and rate <= 25; a and its twin i have the lowest rate
    front = pareto_front(PARETO, "latency", "rate", x_better="higher", y_better="lower")
    assert sorted(front["name"]) == ["a", "c", "d", "g", "i"]
    with pytest.raises(ValueError, match="x_better"):
        pareto_front(PARETO, "latency", "rate", x_better="smaller")


def test_pareto_figure_front_is_the_non_dominated_fitting_points():
    rng = np.random.default_rng(7)
    n = 3000
    frame = pd.DataFrame({"batch": rng.integers(1, 512, n), "device": rng.choice(["A", "B"], n),
                          "tpot_s": rng.uniform(0.002, 0.05, n), "tokens_per_s_per_device": rng.uniform(10, 5000, n),
                          "tokens_per_j": rng.uniform(1, 100, n), "fits": rng.random(n) > 0.2, "error": ""})
    fig = pareto_figure(frame, ["batch"])
    fits = frame[frame["fits"]]
    for trace in traces(fig, "front"):
        metric = trace.meta["metric"]
        front = pareto_front(fits, "tpot_s", metric)
        # brute force: no fitting point is at least as good in both and better in one
        for latency, value in zip(front["tpot_s"], front[metric]):
            better = (fits["tpot_s"] <= latency) & (fits[metric] >= value) & (
                (fits["tpot_s"] < latency) | (fits[metric] > value))
            assert not better.any()
        np.testing.assert_allclose(trace.x, front["tpot_s"] * 1e3)
        np.testing.assert_allclose(trace.y, front[metric])
    cloud = sum(len(t.x) for t in traces(fig, "cloud")) / 2            # two panels
    assert cloud <= MAX_CLOUD_POINTS
    titles = {fig.layout.xaxis.title.text, fig.layout.xaxis2.title.text}
    assert titles == {"TPOT (ms)"}
    assert fig.layout.yaxis.title.text == "Output tokens/s per device (tokens/s)"
    assert fig.layout.yaxis2.title.text == "Tokens per joule (tokens/J)"


# ---------------------------------------------------------------------------------------- tornado
def sensitivity_frame() -> pd.DataFrame:
    rows = []
    changes = {"tpot_s": {"clock": (0.02, -0.01), "memory_bandwidth": (0.25, -0.167), "num_cores": (0.0, 0.0)},
               "tokens_per_s": {"clock": (-0.03, 0.02), "memory_bandwidth": (-0.2, 0.2), "num_cores": (-0.5, 0.1)}}
    units = {"clock": "GHz", "memory_bandwidth": "GB/s", "num_cores": "count"}
    bases = {"clock": 1.98, "memory_bandwidth": 3350.0, "num_cores": 132.0}
    for metric, fields in changes.items():
        for field, (low, high) in fields.items():
            base = 0.005 if metric == "tpot_s" else 200.0
            rows.append(dict(field=field, label=field.replace("_", " "), unit=units[field], base_value=bases[field],
                             low_value=bases[field] * 0.8, high_value=bases[field] * 1.2, metric=metric, base=base,
                             low=base * (1 + low), high=base * (1 + high), low_change=low, high_change=high,
                             swing=abs(high - low), error=""))
    rows.append(dict(field="llc_bandwidth", label="llc bandwidth", unit="GB/s", base_value=None, low_value=None,
                     high_value=None, metric="tpot_s", base=0.005, low=np.nan, high=np.nan, low_change=np.nan,
                     high_change=np.nan, swing=np.nan, error="H100-SXM leaves llc_bandwidth blank"))
    return pd.DataFrame(rows)


def test_tornado_bars_are_the_frame_changes_sorted_by_swing():
    frame = sensitivity_frame()
    fig = tornado_figure(frame, metrics=["tpot_s", "tokens_per_s"], change=0.2)
    expected_order = {"tpot_s": ["memory bandwidth", "clock", "num cores"],
                      "tokens_per_s": ["num cores", "memory bandwidth", "clock"]}
    for axis, metric in (("yaxis", "tpot_s"), ("yaxis2", "tokens_per_s")):
        rows = frame[frame["metric"] == metric].set_index("label")
        for side in ("low", "high"):
            bar = next(t for t in fig.data if t.meta == {"role": side, "metric": metric})
            assert list(bar.y) == expected_order[metric]
            assert list(bar.x) == pytest.approx([rows.loc[label, f"{side}_change"] * 100 for label in bar.y])
        # largest swing on top: the category array is drawn bottom-up
        assert list(fig.layout[axis].categoryarray) == expected_order[metric][::-1]
    assert fig.layout.xaxis.title.text == "Change in TPOT (%)"
    assert fig.layout.xaxis2.title.text == "Change in Output tokens/s (%)"
    assert {t.name for t in fig.data} == {"field −20%", "field +20%"}
    assert any("llc bandwidth: H100-SXM leaves llc_bandwidth blank" in a.text for a in fig.layout.annotations)


def test_tornado_on_the_engine_frame(devices, llama8b):
    from engine.explore.hardware_sensitivity import sensitivity
    frame = sensitivity(llama8b, REQUEST, devices["H100-SXM"], change=0.1)
    fig = tornado_figure(frame, change=0.1)
    for trace in fig.data:
        rows = frame[frame["metric"] == trace.meta["metric"]]
        rows = rows[np.isfinite(rows["low_change"]) | np.isfinite(rows["high_change"])]
        assert list(trace.y) == list(rows.sort_values("swing", ascending=False, kind="stable")["label"])
        swings = rows.set_index("label").loc[list(trace.y), "swing"].to_numpy()
        assert np.all(np.diff(swings) <= 0)


# ---------------------------------------------------------------------------------------- inverse
def test_inverse_search_figure_marks_target_and_answer():
    tried = pd.DataFrame({"value": [1000.0, 2000.0, 4000.0, 8000.0], "tpot_s": [0.04, 0.02, 0.01, 0.005],
                          "meets": [False, False, True, True]})
    fig = inverse_search_figure(tried, "memory_bandwidth", "tpot_s", 0.015, 4000.0, base_value=3350.0)
    assert list(traces(fig, "tried")[0].y) == pytest.approx([40, 20, 10, 5])
    answer = traces(fig, "answer")[0]
    assert (answer.x[0], answer.y[0]) == (4000.0, pytest.approx(10.0))
    assert fig.layout.shapes[0].y0 == pytest.approx(15.0)                # the target in ms
    assert fig.layout.xaxis.title.text == "Memory bandwidth (GB/s)" and fig.layout.yaxis.title.text == "TPOT (ms)"


def test_tornado_thins_its_labels_to_what_a_panel_shows_and_says_how_many_it_left_out():
    """Issue 14: 30 fields in three stacked panels of a 720 px figure would overlap; each panel draws its largest
    swings, (720 - 116 top - 110 bottom - 2 x 64 between panels) / 3 panels // 18 px a label = 6 of them."""
    rows = []
    for metric in ("tpot_s", "ttft_s", "tokens_per_s"):
        for index in range(30):
            change = (index + 1) / 100
            rows.append(dict(field=f"f{index}", label=f"field {index}", unit="", base_value=1.0, low_value=0.8,
                             high_value=1.2, metric=metric, base=1.0, low=1 + change, high=1 - change,
                             low_change=change, high_change=-change, swing=2 * change, error=""))
    fig = tornado_figure(pd.DataFrame(rows), change=0.2)
    for trace in fig.data:
        assert list(trace.y) == [f"field {index}" for index in range(29, 23, -1)]     # the six largest swings
    assert any("24 fields with smaller swings not drawn" in a.text for a in fig.layout.annotations)
    few = tornado_figure(pd.DataFrame(rows[:4] + rows[30:34]), metrics=["tpot_s", "ttft_s"], change=0.2)
    assert all(len(trace.y) == 4 for trace in few.data) and not few.layout.annotations
