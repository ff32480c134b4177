"""Figure builders on real engine output: ceilings at datasheet values, points where the engine puts them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import engine
from dashboard.charts import (
    BOUND_COLORS, FIGURE_SIZE, bound_share_figure, kernel_table_frame, kernel_time_bars, memory_fit_figure,
    ridge_crossings, roofline_figure, sweep_figure,
)
from dashboard.charts.theme import WARNING
from tests.conftest import REPO

DEVICES = ("H100-SXM", "A100-80GB-SXM")
REQUEST = engine.Scenario(phase="request", batch=1, input_length=1024, output_length=256)


@pytest.fixture(scope="module")
def hardware(devices):
    return {name: devices[name] for name in DEVICES}


@pytest.fixture(scope="module")
def results(hardware, llama8b):
    return {name: engine.estimate(hw, llama8b, REQUEST) for name, hw in hardware.items()}


@pytest.fixture(scope="module")
def kernels(results):
    return pd.concat([r.kernels.assign(device=name) for name, r in results.items()], ignore_index=True)


@pytest.fixture(scope="module")
def phases(results):
    return pd.concat([r.phases.reset_index().assign(device=name) for name, r in results.items()], ignore_index=True)


@pytest.fixture(scope="module")
def ceilings(hardware):
    return pd.concat([engine.roofline_ceilings(hw) for hw in hardware.values()], ignore_index=True)


@pytest.fixture(scope="module")
def roofline(ceilings, kernels):
    return roofline_figure(ceilings, kernels)


def traces(fig, **meta):
    return [t for t in fig.data if t.meta and all(t.meta.get(k) == v for k, v in meta.items())]


def plottable_count(frame):
    return int(((frame["flops"] > 0) & (frame["bytes"] > 0)).sum())


# --- roofline ---------------------------------------------------------------------------------

def test_roofline_is_log_log_with_unit_titles(roofline):
    assert roofline.layout.xaxis.type == "log" and roofline.layout.yaxis.type == "log"
    assert "(FLOP/byte)" in roofline.layout.xaxis.title.text
    assert "(FLOP/s)" in roofline.layout.yaxis.title.text
    assert roofline.layout.title.text


def test_compute_roofs_sit_at_the_datasheet_peaks(roofline, hardware):
    for name, hw in hardware.items():
        (bf16,) = traces(roofline, role="ceiling", kind="compute", device=name, dtype="bf16")
        assert np.allclose(bf16.y, hw.matrix_flops_per_s("bf16"), rtol=1e-12)
        (vector,) = traces(roofline, role="ceiling", kind="compute", device=name, unit="vector")
        assert np.allclose(vector.y, hw.vector_flops_per_s, rtol=1e-12)
        # only the dtype the kernels ran at (bf16) is drawn by default, not tf32/fp16/int8
        assert {t.meta["dtype"] for t in traces(roofline, role="ceiling", kind="compute", device=name)} == {"bf16", "fp32"}


def test_memory_slopes_pass_through_one_flop_per_byte_at_the_bandwidth(roofline, hardware):
    for name, hw in hardware.items():
        (hbm,) = traces(roofline, role="ceiling", kind="memory", device=name, level="HBM")
        x, y = np.asarray(hbm.x, float), np.asarray(hbm.y, float)
        # y = bandwidth * x at both ends: on log-log axes the line through (1, bandwidth) with slope 1
        assert np.allclose(y / x, hw.memory_bandwidth_bytes_per_s, rtol=1e-12)
        assert x[0] < 1 < x[1]
        # the slope ends where it meets the top roof
        assert y[1] == pytest.approx(hw.matrix_flops_per_s("bf16"), rel=1e-12)
        (sram,) = traces(roofline, role="ceiling", kind="memory", device=name, level="SRAM")
        assert np.allclose(np.asarray(sram.y) / np.asarray(sram.x), hw.sram_bandwidth_bytes_per_s, rtol=1e-12)


def test_ridge_points_are_peak_over_hbm_bandwidth(roofline, hardware):
    labels = [a for a in roofline.layout.annotations if a.name == "ridge"]
    for name, hw in hardware.items():
        expected = {hw.matrix_flops_per_s("bf16") / hw.memory_bandwidth_bytes_per_s,
                    hw.vector_flops_per_s / hw.memory_bandwidth_bytes_per_s}
        (markers,) = traces(roofline, role="ridge", device=name)
        assert sorted(markers.x) == pytest.approx(sorted(expected), rel=1e-12)
        mine = [a for a in labels if name in a.text]
        # annotations on log axes are placed in log10 units
        assert sorted(10 ** a.x for a in mine) == pytest.approx(sorted(expected), rel=1e-9)
        for ridge in expected:
            assert any(f"{ridge:.0f} FLOP/B" in a.text for a in mine)


def test_dtype_choice_draws_only_those_roofs(ceilings, kernels, hardware):
    fig = roofline_figure(ceilings[ceilings["device"] == "H100-SXM"], kernels[kernels["device"] == "H100-SXM"],
                          dtypes=["fp8"], show_vector=False)
    compute = traces(fig, role="ceiling", kind="compute")
    assert [t.meta["dtype"] for t in compute] == ["fp8"]
    assert np.allclose(compute[0].y, hardware["H100-SXM"].matrix_flops_per_s("fp8"))


def test_one_point_per_plottable_kernel_per_device(roofline, kernels):
    for name in DEVICES:
        mine = kernels[kernels["device"] == name]
        points = traces(roofline, role="kernels", device=name)
        assert sum(len(t.x) for t in points) == plottable_count(mine)
        assert plottable_count(mine) < len(mine)  # KV-cache traffic (0 FLOP) and softmax (0 bytes) exist
    folded = int((kernels["op"] == "kv_read").sum())   # KV-cache reads ride on the attention points (drawn)
    left_out = len(kernels) - plottable_count(kernels) - folded
    (note,) = [a for a in roofline.layout.annotations if "not plotted" in a.text]
    assert note.text.startswith(f"{left_out} kernels")


def test_points_sit_where_the_roofline_puts_them(roofline, hardware):
    """Roofline method: compute-bound matrix kernels attain the bf16 peak, memory-bound ones bandwidth x intensity."""
    for name, hw in hardware.items():
        (compute,) = traces(roofline, role="kernels", device=name, bound="compute")
        matrix = [y for y, text in zip(compute.y, compute.hovertext) if "Softmax" not in text]
        assert np.allclose(matrix, hw.matrix_flops_per_s("bf16"), rtol=1e-9)
        (memory,) = traces(roofline, role="kernels", device=name, bound="memory")
        attained = np.asarray(memory.y) / np.asarray(memory.x)
        # attention points that carry their KV-cache read take its time plus their own (tiny) compute time:
        # a few percent under the slope; every other memory-bound kernel is on it
        folded = np.array(["includes the KV-cache read" in text for text in memory.hovertext])
        assert folded.any()
        assert np.allclose(attained[~folded], hw.memory_bandwidth_bytes_per_s, rtol=1e-9)
        assert np.all(attained[folded] <= hw.memory_bandwidth_bytes_per_s * (1 + 1e-9))
        assert np.all(attained[folded] > 0.9 * hw.memory_bandwidth_bytes_per_s)
        assert compute.marker.color == BOUND_COLORS["compute"] and memory.marker.color == BOUND_COLORS["memory"]


def test_hover_names_the_kernel_and_its_shape(roofline, kernels):
    hovered = set()
    for trace in traces(roofline, role="kernels"):
        for name, text in zip(trace.meta["names"], trace.hovertext):
            assert f"<b>{name}</b>" in text and trace.meta["device"] in text
            assert "m=" in text and "FLOP" in text and "µs" in text and trace.meta["bound"] in text
            hovered.add(name)
    plottable = kernels[(kernels["flops"] > 0) & (kernels["bytes"] > 0)]
    assert hovered == set(plottable["name"])


# --- kernel time bars ---------------------------------------------------------------------------

def bar_totals(fig):
    """{(phase, device): sum of the stacked segments}."""
    totals = {}
    for trace in traces(fig, role="stack"):
        for device, y in zip(trace.x, trace.y):
            key = (trace.meta["phase"], device)
            totals[key] = totals.get(key, 0.0) + y
    return totals


@pytest.mark.parametrize("stack_by", ["name", "family"])
def test_bar_stacks_sum_to_the_phase_totals(kernels, phases, stack_by):
    fig = kernel_time_bars(kernels, stack_by=stack_by)
    totals = bar_totals(fig)
    assert len(totals) == len(phases)
    for _, row in phases.iterrows():
        assert totals[(row["phase"], row["device"])] == pytest.approx(row["time_s"] * 1e3, rel=1e-9)
    assert "(ms)" in fig.layout.yaxis.title.text
    expected = kernels.groupby("phase")[stack_by].nunique().sum()
    assert len(traces(fig, role="stack")) == expected


def test_percent_bars_sum_to_100(kernels):
    fig = kernel_time_bars(kernels, stack_by="name", percent=True)
    totals = bar_totals(fig)
    assert totals and all(v == pytest.approx(100.0, rel=1e-9) for v in totals.values())
    assert "(%)" in fig.layout.yaxis.title.text


def test_bars_need_a_known_stack(kernels):
    with pytest.raises(ValueError, match="stack_by"):
        kernel_time_bars(kernels, stack_by="bound")


# --- bound shares ---------------------------------------------------------------------------------

def test_bound_shares_match_the_phase_totals(phases):
    fig = bound_share_figure(phases)
    for _, row in phases.iterrows():
        (compute,) = [t for t in traces(fig, role="stack", phase=row["phase"]) if t.meta["stack"] == "compute"]
        share = compute.y[list(compute.x).index(row["device"])]
        assert share == pytest.approx(100 * row["compute_bound_time_s"] / row["time_s"], rel=1e-9)
    assert all(v == pytest.approx(100.0) for v in bar_totals(fig).values())
    assert "(%)" in fig.layout.yaxis.title.text


def test_new_bound_columns_become_segments(results):
    phases = results["H100-SXM"].phases.copy()  # phase as the index, as the engine returns it
    phases["overhead_bound_time_s"] = 0.25 * phases["memory_bound_time_s"]
    phases["memory_bound_time_s"] *= 0.75
    fig = bound_share_figure(phases)
    (overhead,) = [t for t in traces(fig, role="stack", phase="decode") if t.meta["stack"] == "overhead"]
    decode = phases.loc["decode"]
    assert overhead.y[0] == pytest.approx(100 * decode["overhead_bound_time_s"] / decode["time_s"], rel=1e-9)
    assert overhead.marker.color == BOUND_COLORS["overhead"]


# --- memory fit ---------------------------------------------------------------------------------

def memory_frame(pairs):
    return pd.DataFrame([{**estimate.memory.to_dict(), "device": device} for device, estimate in pairs])


def test_memory_fit_stacks_gigabytes_and_no_warning_when_it_fits(results):
    frame = memory_frame(results.items())
    fig = memory_fit_figure(frame)
    weights = [t for t in fig.data if t.meta and t.meta.get("part") == "weights_bytes"][0]
    assert np.allclose(weights.y, frame["weights_bytes"] / 1e9)
    assert "(GB)" in fig.layout.yaxis.title.text
    assert not any("does not fit" in a.text for a in fig.layout.annotations)
    capacities = [s for s in fig.layout.shapes if s.name == "capacity"]
    assert [s.y0 for s in capacities] == pytest.approx(list(frame["capacity_bytes"] / 1e9))
    assert all(s.line.color != WARNING for s in capacities)


def test_memory_fit_warns_when_the_model_does_not_fit(devices, llama70b, results):
    big = engine.estimate(devices["H100-SXM"], llama70b, REQUEST)
    assert not big.memory.fits
    frame = memory_frame([("H100-SXM 8B", results["H100-SXM"]), ("H100-SXM 70B", big)])
    fig = memory_fit_figure(frame)
    warnings = [a for a in fig.layout.annotations if "does not fit" in a.text]
    assert len(warnings) == 1 and warnings[0].x == "H100-SXM 70B"
    colors = [s.line.color for s in fig.layout.shapes if s.name == "capacity"]
    assert colors[1] == WARNING and colors[0] != WARNING


# --- sweeps ---------------------------------------------------------------------------------------

def decode_sweep(hardware, model, batches, input_length=128):
    rows = []
    for name, hw in hardware.items():
        for batch in batches:
            phase = engine.estimate(hw, model, engine.Scenario(phase="decode", batch=batch,
                                                               input_length=input_length)).phases.loc["decode"]
            rows.append(dict(device=name, phase="decode", batch=batch, input_length=input_length,
                             time_s=phase["time_s"], flops=phase["flops"], bytes=phase["bytes"],
                             intensity=phase["flops"] / phase["bytes"], ridge_point=hw.ridge_point("bf16"),
                             compute_bound_share=phase["compute_bound_time_s"] / phase["time_s"],
                             tokens_per_s=batch / phase["time_s"]))
    return pd.DataFrame(rows)


def test_sweep_marks_where_decode_crosses_the_ridge(hardware, llama8b):
    batches = [1, 4, 16, 64, 256, 1024]
    sweep = decode_sweep(hardware, llama8b, batches)
    fig = sweep_figure(sweep)
    for name, hw in hardware.items():
        mine = sweep[sweep["device"] == name].sort_values("batch")
        (ridge,) = traces(fig, role="ridge", device=name)
        assert np.allclose(ridge.y, hw.ridge_point("bf16"))
        (crossing,) = traces(fig, role="crossing", device=name)
        at = crossing.x[0]
        below = mine[mine["batch"] <= at]["intensity"].iloc[-1]
        above = mine[mine["batch"] >= at]["intensity"].iloc[0]
        assert below < hw.ridge_point("bf16") <= above
        (throughput,) = traces(fig, role="tokens_per_s", device=name)
        assert np.allclose(throughput.y, mine["batch"] / mine["time_s"])
    assert fig.layout.xaxis.type == "log" and "Batch" in fig.layout.xaxis.title.text
    assert "(FLOP/byte)" in fig.layout.yaxis.title.text and "(tokens/s)" in fig.layout.yaxis2.title.text
    time_fig = sweep_figure(sweep, right="time_s")
    (step,) = traces(time_fig, role="time_s", device="H100-SXM")
    assert np.allclose(step.y, sweep[sweep["device"] == "H100-SXM"].sort_values("batch")["time_s"] * 1e3)
    assert "(ms)" in time_fig.layout.yaxis2.title.text


def test_sweep_that_never_crosses_says_so(hardware, llama8b):
    sweep = decode_sweep(hardware, llama8b, [1, 2, 4, 8])
    crossings = ridge_crossings(sweep)
    assert list(crossings["status"]) == ["memory-bound throughout"] * 2 and crossings["crossing"].isna().all()
    fig = sweep_figure(sweep)
    assert not traces(fig, role="crossing")
    assert any("memory-bound throughout" in a.text for a in fig.layout.annotations)


def test_sweep_crossing_interpolates_in_log_space():
    sweep = pd.DataFrame({"device": "X", "batch": [1, 100], "intensity": [1.0, 100.0], "ridge_point": 10.0,
                          "time_s": 1.0, "tokens_per_s": 1.0})
    assert ridge_crossings(sweep)["crossing"].iloc[0] == pytest.approx(10.0)


# --- table, theme, purity -------------------------------------------------------------------------

def test_kernel_table_is_readable_and_adds_up(kernels, phases):
    table = kernel_table_frame(kernels)
    for column in ("Kernel", "m", "k", "n", "Batch", "Calls", "MACs per call", "FLOPs per call", "Bytes per call",
                   "Intensity (FLOP/byte)", "Time per call (s)", "Total time (s)", "Share of phase (%)", "Bound"):
        assert column in table.columns
    assert len(table) == len(kernels)
    totals = table.groupby(["Device", "Phase"])["Total time (s)"].sum()
    for _, row in phases.iterrows():
        assert totals[(row["device"], row["phase"])] == pytest.approx(row["time_s"], rel=1e-9)
    shares = table.groupby(["Device", "Phase"])["Share of phase (%)"].sum()
    assert np.allclose(shares, 100, rtol=1e-9)
    assert str(table["m"].dtype) == "Int64"
    softmax = table[table["Kernel"] == "Softmax"]["Intensity (FLOP/byte)"]
    assert np.isinf(softmax).all()  # softmax moves no bytes in this decomposition: the export keeps inf


def test_theme_is_white_large_and_sixteen_by_nine(roofline):
    assert FIGURE_SIZE[0] * 9 == FIGURE_SIZE[1] * 16
    template = roofline.layout.template.layout
    assert template.paper_bgcolor == "white" and template.plot_bgcolor == "white"
    assert template.font.size >= 14


def test_chart_and_export_modules_do_not_import_streamlit():
    code = ("import sys; import dashboard.charts, dashboard.export; "
            "assert 'streamlit' not in sys.modules, 'streamlit imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
