"""The k loop's per-step cycles of a warm GEMM (gemm_k_step_cycles, h/gemm7, docs/accuracy.md).

- a candidate's time adds waves x ceil(k slice / TILE_K) x cycles / clock (hand arithmetic on one GEMM);
- fit.DeviceGemms (the fit's fast model) gives realistic's kernel times with gemm_k_step_cycles set (warm condition);
- the model condition (estimate, serve) ignores it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from engine.calibration.silicon import fit, tables
from engine.estimators.realistic import DEFAULT_CONSTANTS, estimate_realistic
from engine.estimators.tiling import TILE_K, candidate_terms, candidate_times, k_steps
from engine.hardware.specs import load_specs

SUBSET = Path(__file__).parent / "data" / "aiconfigurator" / "systems"
WARM = replace(DEFAULT_CONSTANTS, gemm_condition="warm")


def test_a_candidate_pays_its_waves_k_steps_at_the_clock():
    h100 = load_specs()["H100-SXM"]
    column = lambda v: np.array([[float(v)]])       # noqa: E731
    # m = 4096, n = 4096 (on 256 x 128 tiles: 16 x 32 = 512 tiles, 4 waves over 132 SMs), k = 8192 (256 steps)
    terms = candidate_terms(column(4096), column(4096), column(8192), 1.0, column(1e8), column(1e12), h100, 2.0, 3.35e12)
    first = (terms["tile_m"][0] == 256) & (terms["tile_n"][0] == 128) & (terms["split_k"][0] == 1)
    assert k_steps(terms)[0][first] == pytest.approx(4 * 8192 / TILE_K)
    base, _, _ = candidate_times(terms, 0.7, 0.9, 2e-6)
    stepped, _, _ = candidate_times(terms, 0.7, 0.9, 2e-6, k_step_s=20.0 / h100.clock_hz)
    np.testing.assert_allclose(stepped - base, k_steps(terms) * 20.0 / h100.clock_hz)
    # a split-K candidate runs fewer steps per wave: split 2 halves the k slice
    split = (terms["tile_m"][0] == 256) & (terms["tile_n"][0] == 128) & (terms["split_k"][0] == 2)
    assert k_steps(terms)[0][split] == pytest.approx(8 * 4096 / TILE_K)        # 1,024 tiles: 8 waves


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_fit_model_is_the_realistic_method_with_k_step_cycles(dtype):
    devices = load_specs()
    rows = tables.gemm_table(SUBSET)
    rows = rows[rows["dtype"] == dtype].reset_index(drop=True)
    quantize = {dtype: 3.0e-6} if dtype == "fp8" else {}
    constants = replace(WARM, gemm_k_step_cycles={dtype: 25.0}, gemm_quantize_latency_s=quantize)
    for device, part in rows.groupby("device"):
        group = fit.DeviceGemms(part.assign(framework="x"), devices[device], tile_store={})
        columns, index = fit.gemm_kernels(part.reset_index(drop=True))
        order = np.argsort(index)
        realistic = estimate_realistic(columns, devices[device], constants=constants)["kernel_time_s"][order]
        clock = (constants.gemm_matrix_efficiency[dtype], constants.gemm_latency_cycles[dtype],
                 constants.gemm_power_j_per_flop.get(dtype, 0.0), constants.gemm_split_k_cycles[dtype],
                 constants.gemm_overlap_loss[dtype], 0.0, 25.0)
        fast = group.predicted_clock(*clock, quantize_latency={"x": 3.0e-6} if quantize else None)
        np.testing.assert_allclose(fast, realistic, rtol=1e-6)
        plain = estimate_realistic(columns, devices[device], constants=replace(constants, gemm_k_step_cycles={}))
        # the steps never make a GEMM faster, and make some slower
        assert np.all(realistic >= plain["kernel_time_s"][order] * (1 - 1e-12))
        assert np.any(realistic > plain["kernel_time_s"][order] * 1.01)


def test_model_condition_ignores_the_k_step_cycles():
    h100 = load_specs()["H100-SXM"]
    rows = tables.gemm_table(SUBSET)
    rows = rows[(rows["device"] == "H100-SXM") & (rows["dtype"] == "bf16")].reset_index(drop=True)
    columns, _ = fit.gemm_kernels(rows)
    base = estimate_realistic(columns, h100, constants=replace(DEFAULT_CONSTANTS, gemm_k_step_cycles={}))
    stepped = estimate_realistic(columns, h100, constants=replace(DEFAULT_CONSTANTS,
                                                                   gemm_k_step_cycles={"bf16": 40.0}))
    np.testing.assert_array_equal(stepped["kernel_time_s"], base["kernel_time_s"])


def test_the_fit_finds_the_k_step_cycles_the_times_were_made_with():
    devices = load_specs()
    rows = tables.gemm_table(SUBSET)
    rows = rows[rows["dtype"] == "bf16"].reset_index(drop=True)
    groups = list(fit.device_gemms(rows.assign(framework="x"), devices).values())
    for group in groups:        # times made with 20 cycles per step (46 rows: the other constants trade with it)
        group.measured = group.predicted_clock(1.15, 4500.0, 0.0, 0.0, 0.1, 0.0, 20.0)
    median = {}
    for k_step in (True, False):
        fitted = fit.fit_dtype_clock_block_scaled(groups, block_scale=False, quantize_bytes=False, k_step=k_step)
        error = np.concatenate([g.predicted_clock(*fitted[:5], fitted[6], fitted[8]) / g.measured - 1.0
                                for g in groups])
        median[k_step] = np.median(np.abs(error))
        assert (fitted[8] > 0) == k_step
    assert median[True] < 0.01 < median[False]


# measured rows of the shipped TensorRT-LLM subset (tests/data/aiconfigurator, in the tables the constants were fitted
# on): (device, m, n, k) -> the shipped constants' error, within 0.4% of the measured time (B200 -0.33%, -0.22%;
# H100 +0.03%); bf16's k-step cycles x 0.85 give -1.08%, -1.26%, -0.43%, x 1.15 +0.43%, +0.82%, +0.49%, none -5.4%,
# -7.2%, -3.0%
K_STEP_ROWS = (("B200", 9, 6144, 2048), ("B200", 5, 5120, 4096), ("H100-SXM", 2305, 16384, 51200))


def _k_step_row_errors(factor: float) -> list[float]:
    from engine.calibration.silicon import score
    from engine.calibration.silicon.conditions import table_constants
    devices = load_specs()
    rows = tables.gemm_table(SUBSET)
    constants = table_constants("trtllm")
    constants = replace(constants, gemm_k_step_cycles={"bf16": constants.gemm_k_step_cycles["bf16"] * factor})
    errors = []
    for device, m, n, k in K_STEP_ROWS:
        row = rows[(rows["device"] == device) & (rows["dtype"] == "bf16") & (rows["m"] == m) & (rows["n"] == n)
                   & (rows["k"] == k)].reset_index(drop=True)
        assert len(row) == 1, (device, m, n, k)
        columns, index = score.gemm_kernels(row)
        predicted = score.method_seconds(columns, index, 1, devices[device], "realistic", constants)[0]
        errors.append(predicted / row["time_s"].iloc[0] - 1.0)
    return errors


def test_measured_deep_rows_sit_within_their_bound_that_a_15_percent_change_of_the_k_step_cycles_breaks():
    assert DEFAULT_CONSTANTS.gemm_k_step_cycles == {"bf16": 10.0}
    assert max(abs(e) for e in _k_step_row_errors(1.0)) <= 0.004
    for factor in (0.85, 1.15, 0.0):
        assert max(abs(e) for e in _k_step_row_errors(factor)) > 0.004
