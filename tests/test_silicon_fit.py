"""Per-dtype GEMM constants of the realistic method: applied as documented, and recoverable by the fit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from engine import estimate_gemm
from engine.estimators.realistic import DEFAULT_CONSTANTS, estimate_realistic
from engine.kernels.table import KernelTableBuilder
from engine.calibration.silicon import fit, tables
from engine.hardware.specs import load_specs

SUBSET = Path(__file__).parent / "data" / "aiconfigurator" / "systems"
# the additive form only (the shipped clock-and-power form and isolated latency removed; fp8's additive constants as
# shipped before it, fitted on the tables without the quantize kernel), then nothing fitted
ADDITIVE = replace(DEFAULT_CONSTANTS, gemm_matrix_efficiency={"fp8": 0.69, "fp8_g128": 0.78},
                   gemm_format_latency_s={"fp8": 2.25e-6, "fp8_g128": 0.0}, gemm_latency_cycles={},
                   gemm_power_j_per_flop={}, gemm_split_k_cycles={}, gemm_model_matrix_efficiency={},
                   gemm_quantize_latency_s={}, gemm_overlap_loss={}, gemm_k_step_cycles={})
UNCALIBRATED = replace(ADDITIVE, gemm_matrix_efficiency={}, gemm_format_latency_s={})


@pytest.fixture(scope="module")
def h100():
    return load_specs()["H100-SXM"]


def one_gemm(m, n, k, dtype, value_bytes):
    builder = KernelTableBuilder()
    builder.add(phase="gemm", name="GEMM", type="Ma_Mw", op="gemm", unit="matrix", dtype=dtype, m=m, k=k, n=n,
                macs=float(m) * n * k, weight_bytes=k * n * value_bytes, activation_bytes=(m * k + m * n) * value_bytes)
    return builder.build_columns()


def test_fp8_compute_bound_gemm_runs_at_the_fitted_fraction_of_the_device_rate(h100):
    table = one_gemm(8192, 8192, 8192, "fp8", 1.0)          # 64 x 32 tiles of 128 x 256: whole waves
    before = estimate_realistic(table, h100, constants=UNCALIBRATED)
    after = estimate_realistic(table, h100, constants=ADDITIVE)
    efficiency = ADDITIVE.gemm_matrix_efficiency["fp8"]
    extra = ADDITIVE.gemm_format_latency_s["fp8"]
    assert before["bound"][0] == after["bound"][0] == "compute"
    work_before = before["kernel_time_s"][0] - h100.kernel_latency_s
    work_after = after["kernel_time_s"][0] - h100.kernel_latency_s - extra
    assert work_after == pytest.approx(work_before / efficiency, rel=1e-3)    # the tiling may change a little
    # against the datasheet: 2 m n k FLOP at 132 SMs x 1.83 GHz x 4096 fp8 MAC x 2, times the two fractions
    peak_s = 2 * 8192.0 ** 3 / (132 * 1.83e9 * 4096 * 2)
    assert work_after == pytest.approx(peak_s / (h100.achievable_matrix_fraction * efficiency), rel=0.02)


def test_extra_latency_is_added_once_and_bf16_is_unchanged(h100):
    tiny = one_gemm(16, 128, 128, "fp8", 1.0)
    before = estimate_realistic(tiny, h100, constants=UNCALIBRATED)["kernel_time_s"][0]
    after = estimate_realistic(tiny, h100, constants=ADDITIVE)["kernel_time_s"][0]
    # a memory-bound tiny GEMM: the difference is the extra latency (the efficiency barely matters)
    assert after - before == pytest.approx(ADDITIVE.gemm_format_latency_s["fp8"], rel=0.01)
    bf16 = one_gemm(4096, 4096, 4096, "bf16", 2.0)       # fp8's entries do not reach bf16
    np.testing.assert_array_equal(estimate_realistic(bf16, h100, constants=ADDITIVE)["kernel_time_s"],
                                  estimate_realistic(bf16, h100, constants=UNCALIBRATED)["kernel_time_s"])
    # the public one-GEMM call uses the shipped constants too
    assert estimate_gemm(h100, 8192, 8192, 8192, "fp8", "realistic")["kernel_time_s"] > \
        estimate_realistic(one_gemm(8192, 8192, 8192, "fp8", 1.0), h100, constants=UNCALIBRATED)["kernel_time_s"][0]


@pytest.mark.parametrize("dtype, value_bytes", [("fp8_g128", 1.0 + 2 / 128), ("fp8_e4m3", 1.0)])
def test_a_dtype_uses_its_own_entry_else_its_formats(h100, dtype, value_bytes):
    """fp8_g128 (block-scaled) has its own efficiency; fp8_e4m3 has none and falls back to fp8's."""
    table = one_gemm(8192, 8192, 8192, dtype, value_bytes)
    before = estimate_realistic(table, h100, constants=UNCALIBRATED)["kernel_time_s"][0]
    after = estimate_realistic(table, h100, constants=ADDITIVE)["kernel_time_s"][0]
    table_entry = ADDITIVE.gemm_matrix_efficiency.get(dtype, ADDITIVE.gemm_matrix_efficiency["fp8"])
    extra = ADDITIVE.gemm_format_latency_s.get(dtype, ADDITIVE.gemm_format_latency_s["fp8"])
    latency = h100.kernel_latency_s
    assert after - latency - extra == pytest.approx((before - latency) / table_entry, rel=1e-3)


def test_fit_recovers_known_constants_from_synthetic_times():
    devices = load_specs()
    rows = tables.gemm_table(SUBSET)
    rows = rows[rows["dtype"] == "fp8"].reset_index(drop=True)
    groups = []
    for device, part in rows.groupby("device"):
        group = fit.DeviceGemms(part, devices[device], condition="model")     # no quantize kernel
        group.measured = group.predicted(0.80, 1.5e-6)          # times from known constants
        groups.append(group)
    efficiency, extra = fit.fit_dtype(groups)
    assert efficiency == pytest.approx(0.80, abs=0.011) and extra == pytest.approx(1.5e-6, abs=0.26e-6)
    # a 15% change of the efficiency is visible in the objective the fit minimises
    assert fit.pooled_objective(groups, 0.80 * 1.15, 1.5e-6) > fit.pooled_objective(groups, 0.80, 1.5e-6) + 0.05


def test_leave_one_device_out_scores_each_device_with_the_others_fit():
    devices = load_specs()
    rows = tables.gemm_table(SUBSET)
    rows = rows[(rows["n"] >= fit.LEAST_N_K) & (rows["k"] >= fit.LEAST_N_K)].reset_index(drop=True)
    table = fit.leave_one_device_out(rows, devices)
    assert set(zip(table["device"], table["dtype"])) == {("H100-SXM", "bf16"), ("H100-SXM", "fp8"),
                                                         ("B200", "bf16"), ("B200", "fp8")}
    for column in ("before median_abs_error", "lodo median_abs_error", "shipped median_abs_error"):
        assert (table[column] >= 0).all()
    assert (table["count"] == rows.groupby(["device", "dtype"]).size().loc[list(zip(table["device"],
                                                                                     table["dtype"]))].to_numpy()).all()


# the clock-and-power form as the tables are timed (warm condition: latency cycles / clock, split-K cycles)
CLOCK = replace(ADDITIVE, gemm_condition="warm", gemm_latency_cycles={"bf16": 6000.0},
                gemm_power_j_per_flop={"bf16": 0.56e-12})
SPLIT = replace(CLOCK, gemm_split_k_cycles={"bf16": 4000.0})
OVERLAP = replace(SPLIT, gemm_overlap_loss={"bf16": 0.2})


def test_clock_form_latency_is_cycles_at_the_clock_and_the_power_cap_binds_on_large_blackwell_gemms():
    devices = load_specs()
    h100, b200 = devices["H100-SXM"], devices["B200"]
    tiny = one_gemm(1, 128, 128, "bf16", 2.0)                 # a GEMV: no tiles, the latency dominates
    plain = estimate_realistic(tiny, h100, constants=ADDITIVE)["kernel_time_s"][0]
    clock = estimate_realistic(tiny, h100, constants=CLOCK)["kernel_time_s"][0]
    assert plain - clock == pytest.approx(h100.kernel_latency_s - 6000.0 / 1.83e9, rel=1e-9)
    big = one_gemm(8192, 8192, 8192, "bf16", 2.0)
    # B200: 1000 W TDP - 150 W static = 850 W at 0.56 pJ/FLOP = 1518 TFLOP/s, under 0.71 x 2250 TFLOP/s
    capped = estimate_realistic(big, b200, constants=CLOCK)
    work = capped["kernel_time_s"][0] - 6000.0 / 1.856e9
    assert work == pytest.approx(2 * 8192.0 ** 3 / (850.0 / 0.56e-12), rel=0.02)     # whole waves: within 2%
    # H100: 595 W / 0.56 pJ = 1063 TFLOP/s, above 0.70 x 989: no cap, only the latency changes
    uncapped = estimate_realistic(big, h100, constants=CLOCK)["kernel_time_s"][0] - 6000.0 / 1.83e9
    assert uncapped == pytest.approx(estimate_realistic(big, h100, constants=ADDITIVE)["kernel_time_s"][0] - h100.kernel_latency_s,
                                     rel=1e-12)


def test_clock_form_of_the_fit_is_the_realistic_method():
    """fit.DeviceGemms.predicted_clock (the fit's fast model) gives realistic's kernel times under those constants."""
    devices = load_specs()
    rows = tables.gemm_table(SUBSET)
    rows = rows[rows["dtype"] == "bf16"].reset_index(drop=True)
    for device, part in rows.groupby("device"):
        group = fit.DeviceGemms(part, devices[device], tile_store={})
        columns, index = fit.gemm_kernels(part.reset_index(drop=True))
        realistic = estimate_realistic(columns, devices[device], constants=CLOCK)["kernel_time_s"]
        np.testing.assert_allclose(group.predicted_clock(1.0, 6000.0, 0.56e-12), realistic[np.argsort(index)],
                                   rtol=1e-6)
        with_split = estimate_realistic(columns, devices[device], constants=SPLIT)["kernel_time_s"]
        np.testing.assert_allclose(group.predicted_clock(1.0, 6000.0, 0.56e-12, 4000.0),
                                   with_split[np.argsort(index)], rtol=1e-6)
        with_overlap = estimate_realistic(columns, devices[device], constants=OVERLAP)["kernel_time_s"]
        np.testing.assert_allclose(group.predicted_clock(1.0, 6000.0, 0.56e-12, 4000.0, 0.2),
                                   with_overlap[np.argsort(index)], rtol=1e-6)
        assert np.all(with_overlap >= with_split * (1 - 1e-12)) and np.any(with_overlap > with_split * 1.01)


def test_overlap_loss_adds_its_part_of_the_shorter_term():
    """A balanced GEMM (compute = memory in its tiling) is 1 + loss times the roofline's max; the model condition
    (estimate, serve) has none."""
    h100 = load_specs()["H100-SXM"]
    gemm = one_gemm(256, 8192, 8192, "bf16", 2.0)
    split = estimate_realistic(gemm, h100, constants=SPLIT)
    overlap = estimate_realistic(gemm, h100, constants=OVERLAP)
    compute, memory = split["compute_time_s"][0], split["memory_time_s"][0]
    assert overlap["kernel_time_s"][0] - split["kernel_time_s"][0] == pytest.approx(0.2 * min(compute, memory),
                                                                                   rel=1e-6)
    model = replace(OVERLAP, gemm_condition="model")
    assert estimate_realistic(gemm, h100, constants=model)["kernel_time_s"][0] == \
        estimate_realistic(gemm, h100, constants=replace(SPLIT, gemm_condition="model"))["kernel_time_s"][0]


def test_split_k_pays_its_reduction_pass():
    """A skinny, deep GEMM (one 128 x 128 output tile, k = 8192) splits k over the cores; charging a split-K
    tiling 4,000 cycles for its reduction keeps the split only where it saves more than that."""
    h100 = load_specs()["H100-SXM"]
    skinny = one_gemm(16, 128, 8192, "bf16", 2.0)
    free = estimate_realistic(skinny, h100, constants=CLOCK)
    charged = estimate_realistic(skinny, h100, constants=SPLIT)
    assert free["split_k"][0] > 1 and charged["split_k"][0] > 1       # 8192-deep: still worth splitting
    # one tile of 16 (padded to the tile) x 128 x 8192 at 2048 bf16 MAC/cycle is far above 4,000 cycles unsplit
    assert charged["kernel_time_s"][0] == pytest.approx(free["kernel_time_s"][0] + 4000.0 / 1.83e9, rel=1e-9)
    shallow = one_gemm(16, 128, 512, "bf16", 2.0)                      # 512-deep: splitting no longer pays
    assert estimate_realistic(shallow, h100, constants=CLOCK)["split_k"][0] > 1
    assert estimate_realistic(shallow, h100, constants=SPLIT)["split_k"][0] == 1


def test_clock_fit_recovers_known_constants_from_synthetic_times():
    devices = load_specs()
    rows = tables.gemm_table(SUBSET)
    rows = rows[rows["dtype"] == "bf16"].reset_index(drop=True)
    groups = []
    for device, part in rows.groupby("device"):
        group = fit.DeviceGemms(part, devices[device], tile_store={})
        group.measured = group.predicted_clock(1.05, 5000.0, 0.0)
        groups.append(group)
    efficiency, cycles, joules, split, overlap = fit.fit_dtype_clock(groups)
    assert efficiency == pytest.approx(1.05, abs=0.011) and cycles == pytest.approx(5000.0, abs=101.0)
    assert overlap == 0.0
    # with an overlap loss in the times the fit finds one (the 46 rows cannot pin it together with the split-K
    # cycles, which they never use) and reproduces the times
    for group in groups:
        group.measured = group.predicted_clock(1.05, 5000.0, 0.0, 0.0, 0.3)
    fitted = fit.fit_dtype_clock(groups)
    error = np.concatenate([g.predicted_clock(*fitted) / g.measured - 1.0 for g in groups])
    assert fitted[4] >= 0.1 and np.median(np.abs(error)) < 0.01


def test_clock_constants_with_puts_the_fitted_form_into_realistic():
    constants = fit.clock_constants_with({"bf16": (1.0, 6000.0, 0.56e-12, 0.0)}, base=ADDITIVE)
    assert constants.gemm_latency_cycles == CLOCK.gemm_latency_cycles
    assert constants.gemm_power_j_per_flop == CLOCK.gemm_power_j_per_flop
    assert constants.gemm_matrix_efficiency["fp8"] == ADDITIVE.gemm_matrix_efficiency["fp8"]
    big = one_gemm(8192, 8192, 8192, "bf16", 2.0)
    b200 = load_specs()["B200"]
    assert estimate_realistic(big, b200, constants=replace(constants, gemm_condition="warm"))["kernel_time_s"][0] == \
        estimate_realistic(big, b200, constants=CLOCK)["kernel_time_s"][0]
