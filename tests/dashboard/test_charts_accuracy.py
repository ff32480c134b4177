"""The accuracy scatter with every measurement kind: one coloured trace per kind, points where the rows say."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard.charts.accuracy import KIND_COLORS, accuracy_figure
from dashboard.charts.theme import BLACK, SKY_BLUE, VERMILLION
from engine.calibration import measurements as calibration

NAN = np.nan
# kind, m, n, k, batch, context, measured_s, predicted_s: every row a different point (hand-picked numbers)
ROWS = [("gemm", 16, 6144, 4096, NAN, NAN, 20e-6, 22e-6),
        ("swiglu", 16, 14336, NAN, NAN, NAN, 5e-6, 4e-6),
        ("rmsnorm", 16, 4096, NAN, NAN, NAN, 3e-6, 3.3e-6),
        ("residual_add", 16, 4096, NAN, NAN, NAN, 2e-6, 2.5e-6),
        ("attention_prefill", NAN, NAN, NAN, 2, 512, 40e-6, 30e-6),
        ("attention_decode", NAN, NAN, NAN, 8, 4096, 60e-6, 75e-6),
        ("decode_step", NAN, NAN, NAN, 8, 2048, 9e-3, 7.2e-3),
        ("prefill_step", NAN, NAN, NAN, 1, 1024, 31e-3, 27e-3)]


def tidy_frame() -> pd.DataFrame:
    frame = pd.DataFrame(ROWS, columns=["kind", "m", "n", "k", "batch", "context", "measured_s", "predicted_s"])
    frame = frame.assign(device="H200-SXM", model="meta-llama/Llama-3.1-8B", op="x", tokens=16, tp=1, dtype="bf16",
                         method="realistic")
    other = frame.assign(method="roofline", measured_s=1.0, predicted_s=2.0)    # far off the realistic points
    tidy = pd.concat([frame, other], ignore_index=True)
    return tidy.assign(error=tidy["predicted_s"] / tidy["measured_s"] - 1)


def test_every_calibration_kind_has_its_own_colour():
    assert set(KIND_COLORS) == set(calibration.ALL_KINDS)
    assert len(set(KIND_COLORS.values())) == len(KIND_COLORS)
    assert (KIND_COLORS["attention_prefill"], KIND_COLORS["attention_decode"], KIND_COLORS["decode_step"]) == (
        SKY_BLUE, VERMILLION, BLACK)


def test_one_trace_per_kind_at_the_rows_measured_and_predicted_times():
    figure = accuracy_figure(tidy_frame(), "realistic")
    markers = [t for t in figure.data if t.mode == "markers"]
    assert len(markers) == 8
    by_kind = {t.name.split(" · ")[0]: t for t in markers}
    assert set(by_kind) == set(calibration.ALL_KINDS)
    for kind, _, _, _, _, _, measured, predicted in ROWS:
        trace = by_kind[kind]
        assert trace.name == f"{kind} · H200-SXM"
        assert trace.marker.color == KIND_COLORS[kind]
        assert list(trace.x) == pytest.approx([measured * 1e6])       # us, not s: the roofline rows (1 s) are out
        assert list(trace.y) == pytest.approx([predicted * 1e6])
    assert figure.layout.xaxis.title.text == "Measured time (us)"
    assert "realistic" in figure.layout.yaxis.title.text


def test_scenario_hover_names_batch_and_context_and_kernels_keep_their_shape():
    figure = accuracy_figure(tidy_frame(), "realistic")
    hover = {t.name.split(" · ")[0]: t.hovertext[0] for t in figure.data if t.mode == "markers"}
    step = hover["decode_step"]
    assert "batch 8" in step and "context 2048" in step and "meta-llama/Llama-3.1-8B" in step
    assert "m=" not in step and "nan" not in step.lower()
    assert "measured 9000.0 us" in step and "predicted 7200.0 us" in step and "(-20%)" in step
    assert "batch 8, context 4096" in hover["attention_decode"]
    assert "batch 2, context 512" in hover["attention_prefill"]
    assert "m=16 n=6144 k=4096" in hover["gemm"]                     # whole numbers, not 16.0
    assert "batch" not in hover["gemm"]


def test_rows_of_other_methods_are_not_plotted():
    figure = accuracy_figure(tidy_frame(), "roofline")
    markers = [t for t in figure.data if t.mode == "markers"]
    assert len(markers) == len(ROWS)
    assert all(list(t.x) == [1e6] and list(t.y) == [2e6] for t in markers)
    assert accuracy_figure(tidy_frame(), "hierarchical").data == ()
