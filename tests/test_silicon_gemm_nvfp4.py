"""nvfp4 GEMMs on AIConfigurator's tables (issue 12, h/nvfp4; docs/accuracy.md "nvfp4 GEMMs, fitted").

Oracles: one B200 GEMM's time by hand from the fitted constants and workbook fields; the per-framework k-step cycles
recovered from times made with known constants; the 24 measured B200 nvfp4 rows of the bundled subset
(tests/data/aiconfigurator, NOTICE) as a floor that a 15% change of each fitted constant breaks. No fit of the tables.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.calibration.silicon import conditions, fit, score, tables
from engine.calibration.silicon.fit_nvfp4 import k_step_by_framework
from engine.estimators.realistic import estimate_realistic
from engine.hardware.specs import load_specs
from tests.test_silicon_fit import SUBSET, one_gemm


@pytest.fixture(scope="module")
def b200():
    return load_specs()["B200"]


def nvfp4_rows():
    rows = tables.gemm_table(SUBSET)
    return rows[rows["dtype"] == "nvfp4"].reset_index(drop=True)


def test_one_b200_gemm_by_hand_from_the_fitted_constants(b200):
    """8192^3 nvfp4 x nvfp4 under TensorRT-LLM's tables' constants, overlap loss and k-step cycles set to 0: latency
    cycles / clock + the quantize kernel (its latency + m x k x bytes at the achievable bandwidth) + the power-capped
    matrix work (compute-bound; every tile shape divides 8192, so the executed MACs are m x n x k)."""
    constants = conditions.table_constants("trtllm")
    constants = replace(constants, gemm_overlap_loss={**constants.gemm_overlap_loss, "fp4": 0.0},
                        gemm_k_step_cycles={**constants.gemm_k_step_cycles, "fp4": 0.0})
    m = n = k = 8192.0
    gemm = one_gemm(m, n, k, "fp4", 0.5 + 1.0 / 16.0)      # nvfp4: e2m1 values + one e4m3 scale per 16
    assert gemm["dtype"][0] == "fp4"
    time = estimate_realistic(gemm, b200, constants=constants)["kernel_time_s"][0]
    latency = 4500.0 / 1.856e9                               # TABLE_NVFP4_CLOCK cycles (bf16's) at B200's clock
    quantize = 6.0e-6 + m * k * 4.0 / (8.0e12 * 0.815)       # trtllm's 6.0 us + 4 B per value at 0.815 x 8 TB/s
    power_flops = (1000.0 - 150.0) / 0.14e-12                # (TDP - static) / 0.14 pJ per FLOP: 6.07 PFLOP/s
    compute = 2.0 * m * n * k / power_flops                  # 181 us, under 1.36 x 0.71 x 9 PFLOP/s's 126 us
    memory = (2 * m * k * (0.5 + 1.0 / 16.0) + m * n * 2.0) / (8.0e12 * 0.815)
    assert compute > 1.4 * 2.0 * m * n * k / (1.36 * 0.71 * 9.0e15) and memory < compute / 4
    assert time == pytest.approx(latency + quantize + compute, rel=1e-6)
    # without the cap: whole waves at 1.36 x 0.71 of the fp4 rate (wave quantization: at most one wave in 8 more)
    uncapped = replace(constants, gemm_power_j_per_flop={**constants.gemm_power_j_per_flop, "fp4": 0.0})
    work = estimate_realistic(gemm, b200, constants=uncapped)["kernel_time_s"][0] - latency - quantize
    at_rate = 2.0 * m * n * k / (1.36 * 0.71 * 9.0e15)
    assert at_rate * 0.999 <= work <= at_rate * 1.125


def test_the_k_step_cycles_per_framework_are_recovered_from_synthetic_times():
    """Times made with known constants and k-step cycles 120 (one framework) and 20 (the other) on the subset's rows:
    k_step_by_framework, every other constant held, finds both, and a 15% change of either is visible."""
    devices = load_specs()
    rows = nvfp4_rows()
    halves = [rows.iloc[0::2].assign(framework="slow"), rows.iloc[1::2].assign(framework="fast")]
    groups = [fit.DeviceGemms(part.reset_index(drop=True), devices["B200"]) for part in halves]
    true = {"slow": 120.0, "fast": 20.0}
    fitted = (1.2, 9000.0, 0.15e-12, 0.0, 0.4, {"slow": 3e-6, "fast": 1e-6}, {}, {"slow": 4.0, "fast": 3.0}, 0.0, {})
    for g in groups:
        g.measured = g.predicted_clock(*fitted[:5], {}, true, quantize_latency=fitted[5], quantize_bytes=fitted[7])
    assert k_step_by_framework(groups, fitted, fit.K_STEP_CYCLES_GRIDS["nvfp4"]) == true
    from engine.calibration.fit import objective
    measured = np.concatenate([g.measured for g in groups])
    for framework in true:
        changed = {**true, framework: true[framework] * 1.15}
        predicted = np.concatenate([g.predicted_clock(*fitted[:5], {}, changed, quantize_latency=fitted[5],
                                                      quantize_bytes=fitted[7]) for g in groups])
        assert objective(predicted, measured) > 0.002


def test_the_fit_removes_split_k_and_quantizes_nvfp4_activations(b200):
    group = fit.DeviceGemms(nvfp4_rows(), b200)
    assert group.quantize_stream_s is not None and group.no_split_k is not None
    assert np.isinf(group.no_split_k[group.model.terms["split_k"] > 1]).all()


# The 24 measured rows: median / p90 |error| with the shipped tables' constants, 6.8% / 17.7% (no constant fitted on
# this subset alone; the fit pools 600 rows per device and framework of all four fp4-rated devices)
FLOOR = (0.069, 0.178)
CHANGES = [("clock", "efficiency", 0.85), ("clock", "latency_cycles", 1.15), ("power", "fp4", 1.15),
           ("clock", "overlap_loss", 1.15), ("k_step", "trtllm", 1.15), ("quantize_latency", "trtllm", 1.15),
           ("quantize_bytes", "trtllm", 1.15)]


def errors_with(rows, b200, change=None, monkeypatch=None) -> tuple[float, float]:
    constants = None
    if change:
        table, name, factor = change
        if table == "power":        # the cap the constants ship (RealisticConstants), else the tables' own
            base = conditions.DEFAULT_CONSTANTS
            power = base.gemm_power_j_per_flop.get(name, conditions.TABLE_NVFP4_CLOCK["power_j_per_flop"])
            constants = replace(base, gemm_power_j_per_flop={**base.gemm_power_j_per_flop, name: power * factor})
        elif table == "clock":
            monkeypatch.setattr(conditions, "TABLE_NVFP4_CLOCK", {**conditions.TABLE_NVFP4_CLOCK,
                                                                   name: conditions.TABLE_NVFP4_CLOCK[name] * factor})
        elif table == "k_step":
            monkeypatch.setattr(conditions, "TABLE_NVFP4_K_STEP_CYCLES", {
                **conditions.TABLE_NVFP4_K_STEP_CYCLES, name: conditions.TABLE_NVFP4_K_STEP_CYCLES[name] * factor})
        else:
            attribute = {"quantize_latency": "TABLE_QUANTIZE_LATENCY_S",
                         "quantize_bytes": "TABLE_QUANTIZE_BYTES_PER_VALUE"}[table]
            values = getattr(conditions, attribute)
            monkeypatch.setattr(conditions, attribute, {**values, name: {**values[name],
                                                                         "nvfp4": values[name]["nvfp4"] * factor}})
    error = np.abs(score.predicted_seconds(rows, "gemm", b200, "realistic", constants) / rows["time_s"].to_numpy()
                   - 1.0)
    return float(np.median(error)), float(np.quantile(error, 0.9))


def test_the_measured_subset_meets_its_floor(b200):
    rows = nvfp4_rows()
    assert len(rows) == 24 and set(rows["framework"]) == {"trtllm"}
    median, p90 = errors_with(rows, b200)
    assert median <= FLOOR[0] and p90 <= FLOOR[1]
    # the constants before the fit (nvfp4 as fp4 at efficiency 1, kernel_latency, no quantize kernel): far off
    plain = replace(conditions.DEFAULT_CONSTANTS, gemm_condition="warm")
    error = np.abs(score.method_seconds(*score.gemm_kernels(rows), len(rows), b200, "realistic", plain)
                   / rows["time_s"].to_numpy() - 1.0)
    assert np.median(error) > 0.25


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: f"{c[0]}-{c[1]}-x{c[2]}")
def test_a_15_percent_change_of_a_fitted_constant_breaks_the_floor(b200, change, monkeypatch):
    median, p90 = errors_with(nvfp4_rows(), b200, change, monkeypatch)
    assert median > FLOOR[0] or p90 > FLOOR[1]
