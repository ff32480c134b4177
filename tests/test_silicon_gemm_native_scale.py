"""The fixed cycles an fp8-family GEMM adds on native block-scale matrix units (gemm_native_scale_cycles, h/gemm9,
docs/accuracy.md).

- hand arithmetic: a warm fp8 GEMM on B200 (rated for fp4) takes exactly cycles / clock longer; on H100, in bf16 and in
  the model condition (estimate, serve) nothing changes;
- fit.DeviceGemms (the fit's fast model) gives realistic's kernel times with the cycles set;
- the fit finds the cycles in times made with them;
- the tile store (gemm_tile_store_bytes_per_value, fit.TILE_STORE_BYTES_PER_VALUE): seconds per value from workbook
  fields, the fit's fast model equals realistic with it, and GB200's held-out fp8 band a 15% change of the bytes leaves;
- the leave-one-device-out residuals by shape regime (gemm_residuals.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from engine.calibration.silicon import fit, tables
from engine.estimators.gemm_condition import native_scale_latency_applies
from engine.estimators.realistic import DEFAULT_CONSTANTS, estimate_realistic
from engine.hardware.specs import load_specs
from tests.silicon_held_out import held_out_fold

SUBSET = Path(__file__).parent / "data" / "aiconfigurator" / "systems"
WARM = replace(DEFAULT_CONSTANTS, gemm_condition="warm", gemm_quantize_latency_s={"fp8": 3.0e-6, "fp8_g128": 3.0e-6})


def _rows(device: str, dtype: str):
    """The shipped TensorRT-LLM subset's rows of `device` (its fp8 shapes relabelled `dtype` where fp8-family)."""
    rows = tables.gemm_table(SUBSET)
    source = "bf16" if dtype == "bf16" else "fp8"
    rows = rows[(rows["device"] == device) & (rows["dtype"] == source)].reset_index(drop=True)
    return rows.assign(dtype=dtype, weight_dtype=dtype, activation_dtype=dtype)


def _kernel_times(rows, hardware, constants):
    columns, index = fit.gemm_kernels(rows)
    return estimate_realistic(columns, hardware, constants=constants)["kernel_time_s"][np.argsort(index)]


def test_which_gemms_pay_the_cycles():
    devices = load_specs()
    b200, h100 = devices["B200"], devices["H100-SXM"]
    assert native_scale_latency_applies(b200, "fp8") and native_scale_latency_applies(b200, "fp8_g128")
    assert not native_scale_latency_applies(b200, "bf16")
    assert not native_scale_latency_applies(h100, "fp8") and not native_scale_latency_applies(h100, "fp8_g128")


@pytest.mark.parametrize("dtype", ["fp8", "fp8_g128"])
def test_a_warm_fp8_gemm_on_b200_takes_cycles_over_clock_longer(dtype):
    devices = load_specs()
    b200 = devices["B200"]
    rows = _rows("B200", dtype)
    base = _kernel_times(rows, b200, WARM)
    added = _kernel_times(rows, b200, replace(WARM, gemm_native_scale_cycles={dtype: 1856.0}))
    # 1,856 cycles at B200's 1.856 GHz: exactly 1 us on every GEMM, whatever its shape
    np.testing.assert_allclose(added - base, 1.0e-6, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("device, dtype, constants", [
    ("H100-SXM", "fp8", WARM),                  # Hopper's matrix units take no block scales
    ("H100-SXM", "fp8_g128", WARM),
    ("B200", "bf16", WARM),                     # not an fp8-family GEMM
    ("B200", "fp8", DEFAULT_CONSTANTS),         # the model condition (estimate, serve)
])
def test_nothing_else_moves(device, dtype, constants):
    hardware = load_specs()[device]
    rows = _rows(device, dtype)
    base = _kernel_times(rows, hardware, constants)
    added = _kernel_times(rows, hardware, replace(constants, gemm_native_scale_cycles={dtype: 3000.0}))
    np.testing.assert_array_equal(added, base)


@pytest.mark.parametrize("dtype", ["fp8", "fp8_g128"])
def test_fit_model_is_the_realistic_method_with_native_scale_cycles(dtype):
    devices = load_specs()
    constants = replace(WARM, gemm_native_scale_cycles={dtype: 1500.0})
    for device in ("B200", "H100-SXM"):
        rows = _rows(device, dtype)
        group = fit.DeviceGemms(rows.assign(framework="x"), devices[device], tile_store={})
        realistic = _kernel_times(rows, devices[device], constants)
        c = constants
        clock = (c.gemm_matrix_efficiency[dtype], c.gemm_latency_cycles[dtype],
                 c.gemm_power_j_per_flop.get(dtype, c.gemm_power_j_per_flop["fp8"]), c.gemm_split_k_cycles[dtype],
                 c.gemm_overlap_loss[dtype], 0.0, 0.0)
        fast = group.predicted_clock(*clock, quantize_latency={"x": 3.0e-6}, native_scale_cycles=1500.0)
        np.testing.assert_allclose(fast, realistic, rtol=1e-6)


def test_the_fit_finds_the_cycles_the_times_were_made_with():
    devices = load_specs()
    groups = [fit.DeviceGemms(_rows(device, "fp8").assign(framework="x"), devices[device], tile_store={})
              for device in ("B200", "H100-SXM")]
    for group in groups:        # made with 6,000 native-scale cycles (B200's rows only) and a 3 us quantize kernel
        group.measured = group.predicted_clock(1.0, 4500.0, 0.0, 0.0, 0.0, quantize_latency={"x": 3.0e-6},
                                               native_scale_cycles=6000.0)
    median = {}
    for native in (True, False):
        fitted = fit.fit_dtype_clock_block_scaled(groups, latency_cycles=4500.0, block_scale=False,
                                                  quantize_bytes=False, native_scale=native)
        error = np.concatenate([g.predicted_clock(*fitted[:5], fitted[6], fitted[8], quantize_latency=fitted[5],
                                                  native_scale_cycles=fitted[9].get("x", 0.0)) / g.measured - 1.0
                                for g in groups])
        median[native] = np.median(np.abs(error))
        assert (fitted[9].get("x", 0.0) > 0) == native      # {framework: cycles}
    # 34 rows of 8-620 us: the other constants trade with the cycles, so the fit lands near, not on, them
    assert median[True] < 0.01 and median[False] > 0.02


def test_regime_table_bins_signed_errors_by_shape():
    import pandas as pd
    from engine.calibration.silicon import gemm_residuals
    frame = pd.DataFrame({"dtype": "fp8", "device": "B200", "framework": "x", "n": 4096, "k": 512,
                          "m": [1, 16, 64, 128, 4096], "time_s": [1e-5, 2e-5, 4e-5, 1e-4, 1e-3],
                          "predicted_s": [1.1e-5, 2.4e-5, 3.6e-5, 0.9e-4, 1.05e-3]})
    table = gemm_residuals.regime_table(gemm_residuals.with_errors([frame]), "m")
    # m <= 64: errors +10%, +20%, -10% -> median +10; m <= 1k: -10%; m > 1k: +5%
    assert table.loc[("fp8", "B200")].to_dict() == {"m<=64": "+10.0 (3)", "m<=1k": "-10.0 (1)", "m>1k": "+5.0 (1)"}
    with pytest.raises(ValueError, match="unknown regime"):
        gemm_residuals.regime_table(frame, "batch")


def test_the_residuals_are_the_held_out_rows_with_their_fold_prediction():
    from engine.calibration.silicon import gemm_residuals
    devices = load_specs()
    rows = tables.gemm_table(SUBSET)
    rows = rows[rows["dtype"] == "bf16"].reset_index(drop=True)
    parts = []
    table = fit.leave_one_device_out(rows, devices, residuals=parts)
    frame = gemm_residuals.with_errors(parts)
    summary = gemm_residuals.summary_table(frame)
    for line in table.itertuples():
        held = frame[(frame["device"] == line.device) & (frame["dtype"] == line.dtype)]
        assert len(held) == line.count == len(rows[rows["device"] == line.device])
        lodo = table[(table["device"] == line.device) & (table["dtype"] == line.dtype)].iloc[0]
        assert np.median(np.abs(held["error"])) == pytest.approx(lodo["lodo median_abs_error"], rel=1e-9)
        assert summary.loc[(line.dtype, line.device), "median |error| %"] == pytest.approx(
            100 * lodo["lodo median_abs_error"], abs=0.006)


def test_tile_store_seconds_per_value_from_workbook_fields():
    from engine.estimators.gemm_condition import tile_store_s_per_value
    b200 = load_specs()["B200"]
    rows = _rows("B200", "fp8")
    columns, _ = fit.gemm_kernels(rows)
    out, mask = columns, np.ones(len(columns["m"]), dtype=bool)
    constants = replace(WARM, gemm_tile_store_bytes_per_value={"fp8": 8.0})
    # 8 bytes per value / 128 bytes per cycle per SM / 1.856 GHz = 33.675 ps per output value per wave
    np.testing.assert_allclose(tile_store_s_per_value(out, mask, b200, constants), 8.0 / 128.0 / 1.856e9, rtol=1e-12)
    assert tile_store_s_per_value(out, mask, b200, replace(constants, gemm_condition="model")) == 0.0
    bf16 = fit.gemm_kernels(_rows("B200", "bf16"))[0]
    np.testing.assert_array_equal(tile_store_s_per_value(bf16, np.ones(len(bf16["m"]), dtype=bool), b200, constants),
                                  0.0)


@pytest.mark.parametrize("device", ["B200", "H100-SXM"])
def test_fit_model_is_the_realistic_method_with_the_tile_store(device, monkeypatch):
    hardware = load_specs()[device]
    constants = replace(WARM, gemm_tile_store_bytes_per_value={"fp8": 8.0})
    monkeypatch.setattr(fit, "TILE_STORE_BYTES_PER_VALUE", {"fp8": 8.0})
    rows = _rows(device, "fp8")
    group = fit.DeviceGemms(rows.assign(framework="x"), hardware)
    realistic = _kernel_times(rows, hardware, constants)
    c = constants
    clock = (c.gemm_matrix_efficiency["fp8"], c.gemm_latency_cycles["fp8"], c.gemm_power_j_per_flop["fp8"],
             c.gemm_split_k_cycles["fp8"], c.gemm_overlap_loss["fp8"], 0.0, 0.0)
    np.testing.assert_allclose(group.predicted_clock(*clock, quantize_latency={"x": 3.0e-6}), realistic, rtol=1e-6)
    plain = _kernel_times(rows, hardware, WARM)
    assert np.all(realistic >= plain * (1 - 1e-12)) and np.any(realistic > plain * 1.005)


# GB200 held out (installed tables, fp8, trtllm + vLLM + SGLang, 200 rows per device and framework; latency cycles held
# at 4,400, GB200's bf16 fold; no k-step grid), constants fitted with the tile store at fit.TILE_STORE_BYTES_PER_VALUE
# (4 bytes): median |error| 9.33%, p90 25.35%. The same constants with the store at 0.85x the bytes: 9.56% / 25.59%;
# 1.15x: 9.20% / 25.29% (this fold prefers more; refitted, 8 bytes makes GB200's and GB300's folds worse,
# docs/accuracy.md); none: 10.37% / 27.86%. So the median is pinned to a band a 15% change either way leaves.
TILE_STORE_MEDIAN_BAND = (0.0928, 0.0938)
TILE_STORE_P90_FLOOR = 0.2540


@pytest.fixture(scope="module")
def gb200_fp8_fold():
    return held_out_fold("fp8", "GB200", latency_cycles=4400.0, block_scale=False)


def _held_out_errors(fold, factor: float) -> np.ndarray:
    """|error| of the held-out GB200 rows with the fitted constants and the tile store x `factor`."""
    held_out, c = fold
    errors = []
    for g in held_out:
        store = g.model.epilogue          # GB200 has no device epilogue: all of it is the tile store
        g.model.epilogue = None if factor == 0 else store * factor
        try:
            errors.append(g.predicted_clock(*c[:5], c[6], c[8], quantize_latency=c[5], quantize_bytes=c[7]) / g.measured
                          - 1.0)
        finally:
            g.model.epilogue = store
    return np.abs(np.concatenate(errors))


def _within(errors: np.ndarray) -> bool:
    low, high = TILE_STORE_MEDIAN_BAND
    return low <= np.median(errors) <= high and np.quantile(errors, 0.9) <= TILE_STORE_P90_FLOOR


def test_gb200_fp8_held_out_band_that_a_15_percent_change_of_the_tile_store_leaves(gb200_fp8_fold):
    assert fit.TILE_STORE_BYTES_PER_VALUE["fp8"] == 4.0
    assert _within(_held_out_errors(gb200_fp8_fold, 1.0))
    for factor in (0.85, 1.15, 0.0):
        assert not _within(_held_out_errors(gb200_fp8_fold, factor)), factor
