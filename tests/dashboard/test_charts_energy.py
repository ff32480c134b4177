"""Energy charts on real engine output: bars add up to the engine's energy, one kernel checked by hand."""

from __future__ import annotations

import pandas as pd
import pytest

import engine
from dashboard.charts import energy_by_component_figure, energy_by_kernel_figure, energy_headline_frame
from dashboard.charts.energy import COMPONENT_COLORS, energy_unit
from dashboard.units import energy

REQUEST = engine.Scenario(phase="request", batch=1, input_length=1024, output_length=256)
COMPONENTS = {"compute (matrix)": "matrix_energy_j", "compute (vector)": "vector_energy_j", "HBM": "hbm_energy_j",
              "LLC": "llc_energy_j", "SRAM": "sram_energy_j", "links": "link_energy_j", "static": "static_energy_j"}
UNIT_SCALE = {"J": 1.0, "mJ": 1e3, "µJ": 1e6, "nJ": 1e9}


@pytest.fixture(scope="module")
def h100(devices):
    return devices["H100-SXM"]


@pytest.fixture(scope="module")
def estimate(h100, llama8b):
    return engine.estimate(h100, llama8b, REQUEST)


@pytest.fixture(scope="module")
def kernels(estimate):
    return estimate.kernels.assign(device="H100-SXM")


@pytest.fixture(scope="module")
def t4_estimate(devices, llama8b):
    return engine.estimate(devices["T4"], llama8b, REQUEST)


def stacks(fig) -> list:
    return [t for t in fig.data if t.meta and t.meta.get("role") == "stack"]


def unit_scale(fig) -> float:
    """J -> the y unit, read from the axis title ('Energy per device (mJ)' -> 1e3)."""
    title = fig.layout.yaxis.title.text
    return UNIT_SCALE[title[title.rindex("(") + 1:title.rindex(")")]]


def segment(fig, phase: str, stack: str, device: str = "H100-SXM") -> float:
    (trace,) = [t for t in stacks(fig) if t.meta["phase"] == phase and t.meta["stack"] == stack]
    return trace.y[list(trace.x).index(device)]


def phase_totals(fig) -> dict:
    totals: dict = {}
    for trace in stacks(fig):
        for device, y in zip(trace.x, trace.y):
            totals[trace.meta["phase"], device] = totals.get((trace.meta["phase"], device), 0.0) + y
    return totals


def test_the_scenario_has_energy_values(estimate):
    assert estimate.energy is not None and estimate.energy["energy_per_device_j"] > 0


@pytest.mark.parametrize("stack_by", ["name", "family"])
def test_kernel_bars_add_up_to_the_energy_per_device(kernels, estimate, stack_by):
    fig = energy_by_kernel_figure(kernels, stack_by=stack_by)
    scale = unit_scale(fig)
    assert "Energy per device (J)" == fig.layout.yaxis.title.text  # ~250 J for this request
    total = sum(sum(trace.y) for trace in stacks(fig)) / scale
    assert total == pytest.approx(estimate.energy["energy_per_device_j"], rel=1e-9)
    for (phase, _), value in phase_totals(fig).items():
        assert value / scale == pytest.approx(estimate.energy["phases"][phase]["energy_j"], rel=1e-9)
    expected_keys = kernels.groupby("phase")[stack_by].nunique().sum()
    assert len(stacks(fig)) == expected_keys


def test_component_stacks_match_the_engine_phase_components(kernels, estimate):
    fig = energy_by_component_figure(kernels)
    scale = unit_scale(fig)
    for phase, components in estimate.energy["phases"].items():
        for label, column in COMPONENTS.items():
            present = [t for t in stacks(fig) if t.meta["phase"] == phase and t.meta["stack"] == label]
            if components[column] == 0:
                assert present == []  # all-zero components (no LLC/SRAM/links on one roofline device) are dropped
            else:
                assert segment(fig, phase, label) / scale == pytest.approx(components[column], rel=1e-9)
    legend = {t.name for t in stacks(fig) if t.showlegend}
    assert legend == {"compute (matrix)", "compute (vector)", "HBM", "static"}
    assert all(t.marker.color == COMPONENT_COLORS[t.meta["stack"]] for t in stacks(fig))


def test_decode_lm_head_matrix_energy_by_hand(kernels, h100):
    # LM head in decode: C[1, 128256] = A[1, 4096] @ W[4096, 128256], once per generated token after the first
    macs = 1 * 4096 * 128256
    count = 256 - 1
    by_hand = macs * h100.matrix_energy_j_per_mac_bf16 * count
    (row,) = kernels[(kernels["phase"] == "decode") & (kernels["name"] == "LM_head")].itertuples()
    assert (row.m, row.k, row.n, row.count) == (1, 4096, 128256, count)
    assert row.count * row.matrix_energy_j == pytest.approx(by_hand, rel=1e-12)
    # its bar segment: matrix energy + HBM bytes at pJ/B + static power x time, per occurrence x count
    fig = energy_by_kernel_figure(kernels)
    parts = (macs * h100.matrix_energy_j_per_mac_bf16 + row.bytes * h100.memory_energy_j_per_byte
             + row.time_s * h100.static_power_w)
    assert segment(fig, "decode", "LM_head") / unit_scale(fig) == pytest.approx(count * parts, rel=1e-12)


def test_decode_matrix_component_from_the_gemm_shapes(kernels, h100):
    matrix = kernels[(kernels["phase"] == "decode") & (kernels["unit"] == "matrix")]
    by_hand = sum(r.count * r.m * r.k * r.n * r.batch * h100.matrix_energy_j_per_mac_bf16
                  for r in matrix.itertuples())
    fig = energy_by_component_figure(kernels)
    assert segment(fig, "decode", "compute (matrix)") / unit_scale(fig) == pytest.approx(by_hand, rel=1e-9)


@pytest.mark.parametrize("build", [lambda k: energy_by_kernel_figure(k, "name", percent=True),
                                   lambda k: energy_by_kernel_figure(k, "family", percent=True),
                                   lambda k: energy_by_component_figure(k, percent=True)])
def test_percent_mode_sums_to_100_per_phase(kernels, build):
    fig = build(kernels)
    totals = phase_totals(fig)
    assert {phase for phase, _ in totals} == {"prefill", "decode"}
    assert all(v == pytest.approx(100.0, rel=1e-9) for v in totals.values())
    assert fig.layout.yaxis.title.text == "Share of phase energy (%)"


def test_small_energies_are_drawn_in_millijoules(h100, llama8b):
    step = engine.estimate(h100, llama8b, engine.Scenario(phase="decode", batch=1, context_length=1024))
    fig = energy_by_kernel_figure(step.kernels)  # one device, no `device` column
    assert fig.layout.yaxis.title.text == "Energy per device (mJ)"  # one decode step: under a joule
    assert sum(sum(t.y) for t in stacks(fig)) / 1e3 == pytest.approx(step.energy["energy_per_device_j"], rel=1e-9)


def test_device_without_energy_gives_an_annotated_empty_figure(t4_estimate):
    assert t4_estimate.energy is None and "total_energy_j" not in t4_estimate.kernels
    for build in (energy_by_kernel_figure, energy_by_component_figure):
        fig = build(t4_estimate.kernels.assign(device="T4"))
        assert len(fig.data) == 0
        assert [a.text for a in fig.layout.annotations] == ["no energy values for T4 in the specs workbook"]
        fig = build(t4_estimate.kernels)
        assert [a.text for a in fig.layout.annotations] == ["no energy values for this device in the specs workbook"]


def test_devices_without_energy_are_left_out_and_named(kernels, t4_estimate, estimate):
    mixed = pd.concat([kernels, t4_estimate.kernels.assign(device="T4")], ignore_index=True)
    fig = energy_by_kernel_figure(mixed)
    assert {d for t in stacks(fig) for d in t.x} == {"H100-SXM"}
    assert sum(sum(t.y) for t in stacks(fig)) == pytest.approx(estimate.energy["energy_per_device_j"], rel=1e-9)
    assert "no energy values for T4 in the specs workbook" in [a.text for a in fig.layout.annotations]


def test_kernel_bars_need_a_known_stack(kernels):
    with pytest.raises(ValueError, match="stack_by"):
        energy_by_kernel_figure(kernels, stack_by="bound")


def test_headline_frame_carries_units(estimate, t4_estimate):
    frame = energy_headline_frame({"H100-SXM": estimate.energy, "T4": t4_estimate.energy})
    h100, t4 = frame.iloc[0], frame.iloc[1]
    tokens = 256  # output tokens of one request
    assert h100["energy per token (mJ)"] == pytest.approx(estimate.energy["energy_per_device_j"] / tokens * 1e3)
    assert h100["tokens per J"] == pytest.approx(tokens / estimate.energy["energy_per_device_j"])
    assert h100["average power (W)"] == pytest.approx(
        estimate.energy["energy_per_device_j"] / estimate.phases["time_s"].sum())
    assert h100["TDP (W)"] == 700 and not h100["exceeds TDP"]
    assert pd.isna(t4["energy per token (mJ)"]) and pd.isna(t4["average power (W)"])


def test_energy_formats_and_units():
    assert energy(248.3) == "248 J" and energy(0.0123) == "12.3 mJ" and energy(2500) == "2.5 kJ"
    assert energy_unit(248.3) == (1.0, "J") and energy_unit(0.5) == (1e3, "mJ") and energy_unit(5e-5) == (1e6, "µJ")
