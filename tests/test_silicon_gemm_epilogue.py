"""The unhidden epilogue of a warm GEMM on devices without asynchronous tensor-memory copies (h/gemm8, docs/accuracy.md).

- a candidate's time adds waves x tile_m x tile_n x bytes / (SRAM bytes per cycle per core x clock) (hand arithmetic);
- only a device whose matrix units have no fp8 rate (the workbook's proxy for "no TMA": A100) pays it;
- fit.DeviceGemms (the fit's fast model) gives realistic's kernel times with it (A100, warm condition);
- the model condition (estimate, serve) ignores it; shipped off (gemm_epilogue_bytes_per_value 0), tried and not kept;
- on A100's measured TensorRT-LLM bf16 table (installed calibration extra), the shipped warm constants score better
  with it than without.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.calibration import silicon
from engine.calibration.silicon import fit
from engine.estimators.gemm_condition import epilogue_s_per_value, synchronous_epilogue
from engine.estimators.realistic import DEFAULT_CONSTANTS, estimate_realistic
from engine.estimators.tiling import candidate_terms, candidate_times, epilogue_values
from engine.hardware.specs import load_specs

# shipped off (gemm_epilogue_bytes_per_value 0, docs/accuracy.md): the tests turn it on at 8 bytes per value
WARM = replace(DEFAULT_CONSTANTS, gemm_condition="warm", gemm_epilogue_bytes_per_value=8.0)
A100 = "A100-80GB-SXM"


def test_a_candidate_pays_its_waves_output_tiles_through_shared_memory():
    a100 = load_specs()[A100]
    column = lambda v: np.array([[float(v)]])       # noqa: E731
    # m = 4096, n = 4096 on 128 x 128 tiles: 1,024 tiles, 10 waves over 108 SMs
    terms = candidate_terms(column(4096), column(4096), column(4096), 1.0, column(1e8), column(1e12), a100, 2.0, 2e12)
    tile = (terms["tile_m"][0] == 128) & (terms["tile_n"][0] == 128) & (terms["split_k"][0] == 1)
    assert epilogue_values(terms)[0][tile] == pytest.approx(10 * 128 * 128)
    per_value = epilogue_s_per_value(a100, WARM)
    # 8 bytes per value at 128 bytes per cycle per SM, 1.41 GHz
    assert per_value == pytest.approx(8.0 / 128.0 / 1.41e9)
    base, _, _ = candidate_times(terms, 0.7, 0.9, 2e-6)
    paid, _, _ = candidate_times(terms, 0.7, 0.9, 2e-6, epilogue_s=per_value)
    np.testing.assert_allclose((paid - base)[0][tile], 10 * 128 * 128 * 8.0 / 128.0 / 1.41e9)


def test_only_devices_without_an_fp8_matrix_rate_pay_it():
    devices = load_specs()
    assert synchronous_epilogue(devices[A100]) and synchronous_epilogue(devices["A100-40GB-PCIe"])
    for name in ("H100-SXM", "H200-SXM", "B200", "GB200", "B300", "GB300"):
        assert not synchronous_epilogue(devices[name])
        assert epilogue_s_per_value(devices[name], WARM) == 0.0
    assert epilogue_s_per_value(devices[A100], replace(WARM, gemm_condition="model")) == 0.0   # model condition: none
    assert epilogue_s_per_value(devices[A100], replace(DEFAULT_CONSTANTS, gemm_condition="warm")) == 0.0  # shipped off
    assert epilogue_s_per_value(devices[A100], replace(WARM, gemm_epilogue_bytes_per_value=0.0)) == 0.0


def _a100_rows(count: int = 300):
    devices = load_specs()
    rows = fit.fit_rows({A100: devices[A100]}, frameworks=("trtllm",), rows_per_group=count)
    return devices, rows[rows["dtype"] == "bf16"].reset_index(drop=True)


needs_tables = pytest.mark.skipif(not silicon.is_installed(), reason="aiconfigurator-core (calibration extra) absent")


@needs_tables
def test_fit_model_is_the_realistic_method_with_the_epilogue(monkeypatch):
    monkeypatch.setattr(fit, "EPILOGUE_BYTES_PER_VALUE", 8.0)
    devices, rows = _a100_rows(120)
    group = fit.DeviceGemms(rows, devices[A100])
    columns, index = fit.gemm_kernels(rows)
    order = np.argsort(index)
    realistic = estimate_realistic(columns, devices[A100], constants=WARM)["kernel_time_s"][order]
    c = WARM
    clock = (c.gemm_matrix_efficiency["bf16"], c.gemm_latency_cycles["bf16"], c.gemm_power_j_per_flop["bf16"],
             c.gemm_split_k_cycles["bf16"], c.gemm_overlap_loss["bf16"], 0.0, c.gemm_k_step_cycles["bf16"])
    np.testing.assert_allclose(group.predicted_clock(*clock), realistic, rtol=1e-6)
    plain = estimate_realistic(columns, devices[A100], constants=replace(WARM, gemm_epilogue_bytes_per_value=0.0))
    assert np.all(realistic >= plain["kernel_time_s"][order] * (1 - 1e-12))
    assert np.any(realistic > plain["kernel_time_s"][order] * 1.02)
    model = replace(DEFAULT_CONSTANTS, gemm_epilogue_bytes_per_value=8.0)
    np.testing.assert_array_equal(estimate_realistic(columns, devices[A100])["kernel_time_s"],
                                  estimate_realistic(columns, devices[A100], constants=model)["kernel_time_s"])


@needs_tables
def test_a100_measured_table_is_closer_with_the_epilogue():
    devices, rows = _a100_rows()
    columns, index = fit.gemm_kernels(rows)
    measured, order = rows["time_s"].to_numpy(), np.argsort(index)

    def median_error(bytes_per_value):
        constants = replace(WARM, gemm_epilogue_bytes_per_value=bytes_per_value)
        predicted = estimate_realistic(columns, devices[A100], constants=constants)["kernel_time_s"][order]
        return float(np.median(np.abs(predicted / measured - 1.0)))

    # 300 rows, the shipped warm constants (fitted without it): 9.1% with it, 9.4% without
    assert median_error(8.0) < median_error(0.0) - 0.002
