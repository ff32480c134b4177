"""Ideal-vs-realistic and accuracy charts, checked against the engine's numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engine
from dashboard.charts.accuracy import accuracy_figure
from dashboard.charts.gaps import GAP_CAUSES, ideal_vs_realistic_figure
from engine.calibration import measurements as calibration


@pytest.fixture(scope="module")
def realistic_kernels(devices, llama8b):
    frames = []
    for name in ("H100-SXM", "MI300X"):
        result = engine.estimate(devices[name], llama8b, engine.Scenario(), method="realistic")
        frames.append(result.kernels.assign(device=name))
    return pd.concat(frames, ignore_index=True), {n: engine.estimate(devices[n], llama8b, engine.Scenario(),
                                                                     method="realistic") for n in ("H100-SXM", "MI300X")}


def test_realistic_bars_stack_to_the_phase_time_and_ideal_segments_to_the_ideal(realistic_kernels, devices, llama8b):
    """Several devices: one bar per device, its bottom segment the ideal roofline."""
    kernels, results = realistic_kernels
    figure = ideal_vs_realistic_figure(kernels)
    for device, result in results.items():
        for phase, time_s in result.phases["time_s"].items():
            panel = [t for t in figure.data
                     if t.xaxis == ("x" if phase == "prefill" else "x2")]
            realistic = sum(t.y[list(t.x).index(device)] for t in panel)
            ideal = next(t for t in panel if t.name == "ideal roofline").y[list(panel[0].x).index(device)]
            assert realistic == pytest.approx(time_s * 1e3, rel=1e-9)
            roofline = engine.estimate(devices[device], llama8b, engine.Scenario()).phases.loc[phase, "time_s"]
            assert ideal == pytest.approx(roofline * 1e3, rel=1e-6)   # the ideal is the roofline
    assert {t.name for t in figure.data} == {label for _, label, _ in GAP_CAUSES}
    assert figure.layout.yaxis.title.text.endswith("(ms)")


def test_one_device_shows_the_ideal_bar_beside_the_realistic_one(realistic_kernels, devices, llama8b):
    kernels, results = realistic_kernels
    figure = ideal_vs_realistic_figure(kernels[kernels["device"] == "H100-SXM"])
    roofline = engine.estimate(devices["H100-SXM"], llama8b, engine.Scenario()).phases
    for phase, time_s in results["H100-SXM"].phases["time_s"].items():
        panel = [t for t in figure.data if t.xaxis == ("x" if phase == "prefill" else "x2")]
        assert sum(t.y[list(t.x).index("H100-SXM<br>realistic")] for t in panel) == pytest.approx(time_s * 1e3)
        assert sum(t.y[list(t.x).index("H100-SXM<br>ideal")] for t in panel) == pytest.approx(
            roofline.loc[phase, "time_s"] * 1e3, rel=1e-6)


def test_accuracy_figure_has_one_point_per_measurement():
    tidy = calibration.predict(calibration.load_measurements(calibration.BUNDLED_SAMPLE), methods=("realistic",))
    figure = accuracy_figure(tidy, "realistic")
    points = sum(len(t.x) for t in figure.data if t.mode == "markers")
    assert points == tidy["predicted_s"].notna().sum()
    assert figure.layout.xaxis.type == "log" and figure.layout.yaxis.type == "log"
    identity = next(t for t in figure.data if t.name == "predicted = measured")
    np.testing.assert_allclose(identity.x, identity.y)
    assert "(us)" in figure.layout.xaxis.title.text


def test_communication_appears_in_the_stacked_bars_with_tensor_parallelism(devices, llama70b):
    from dashboard.charts import kernel_time_bars
    result = engine.estimate(devices["H100-SXM"], llama70b, engine.Scenario(tp=4))
    kernels = result.kernels.assign(device="H100-SXM")
    figure = kernel_time_bars(kernels, stack_by="family", percent=False)
    communication = [t for t in figure.data if t.name == "communication"]
    assert communication, "the all-reduces of TP=4 must show as their own segment"
    collectives = kernels[kernels["op"] == "collective"]
    expected_ms = {phase: (rows["count"] * rows["time_s"]).sum() * 1e3 for phase, rows in collectives.groupby("phase")}
    shown = sum(sum(t.y) for t in communication)
    assert shown == pytest.approx(sum(expected_ms.values()), rel=1e-9)
