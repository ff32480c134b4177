"""The tiles the tables' per-tensor fp8 kernels take at m > 128 on matrix units without native block scales
(engine/calibration/silicon/fit_tiles.py; h/gemm12, docs/accuracy.md).

- hand arithmetic: H100 (132 cores), fp8, n = k = 8,192, efficiency 1, no cap: at m = 640 the 128 x 128 tile alone
  ("square") runs ceil(5 x 64 / 132) = 3 waves of 128 x 128 x 8,192 MACs per core; 128-row tiles without split-K
  ("tile_m") find 128 x 64, ceil(5 x 128 / 132) = 5 waves of 128 x 64 x 8,192; at m = 128 every rule is the free search;
  Blackwell (native block scales) and bf16 groups are not eligible;
- the fold's choice recovers the rule that made synthetic times, per framework;
- fp8_g128 (h/gemm13): on H100 a rule's tiles run at the matrix rate / (1 + promotion FLOPs x ratio), the ratio
  from the workbook (matrix MAC/s / (128 x vector FLOP/s) = 0.125); the fold recovers TensorRT-LLM's rule and its
  promotion from synthetic times although the descent's promotion (fitted under the free search) is handed in wrong,
  and keeps the free search's promotion for a framework that stays free.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.calibration.silicon import fit
from engine.calibration.silicon.fit_tiles import excluded_candidates, fit_large_m_tiles, large_m_tiles
from engine.estimators.realistic import DeviceRates
from engine.hardware.specs import load_specs

def _group(device: str, ms, dtype: str = "fp8", framework: str = "sglang") -> fit.DeviceGemms:
    rows = pd.DataFrame({"device": device, "framework": framework, "m": list(ms), "n": 8192, "k": 8192,
                         "time_s": 1.0, "weight_dtype": dtype, "activation_dtype": dtype, "dtype": dtype})
    return fit.DeviceGemms(rows, load_specs()[device], tile_store={})


def test_hand_arithmetic_of_the_large_m_rules():
    hardware = load_specs()["H100-SXM"]
    group = _group("H100-SXM", [640, 128])
    assert group.large_m_eligible
    per_core = hardware.matrix_macs_per_s("fp8") / hardware.num_cores
    matrix = DeviceRates.of(hardware).matrix_fraction
    expected = {"square": 3 * 128 * 128 * 8192 / per_core / matrix, "tile_m": 5 * 128 * 64 * 8192 / per_core / matrix}
    free = group.clock_work(1.0, 0.0)
    for rule, seconds in expected.items():
        with large_m_tiles([group], {"sglang": rule}):
            work = group.clock_work(1.0, 0.0)
        assert work[0] == pytest.approx(seconds, rel=1e-9)
        assert work[1] == free[1]               # m = 128: the free search
    assert free[0] <= expected["tile_m"] < expected["square"]
    assert group.large_m_tile == ""             # back to the free search after the block
    for other in (_group("B200", [640]), _group("H100-SXM", [640], dtype="bf16")):
        assert not other.large_m_eligible
        with large_m_tiles([other], {"sglang": "square"}):
            assert other.large_m_tile == ""
    assert excluded_candidates(group.model.terms, np.array([640.0]), "") is None
    with pytest.raises(ValueError, match="large-m tile rule"):
        excluded_candidates(group.model.terms, np.array([640.0]), "128x128")


def _synthetic_groups() -> list:
    """H100 and B200 fp8 groups of SGLang and vLLM: m 64 to 896 (most above 128), n and k 2,048 to 8,192."""
    shapes = [(m, n, k) for m in (64, 192, 320, 448, 640, 896) for n in (2048, 4096, 8192) for k in (2048, 8192)]
    rows = pd.DataFrame([{"device": d, "framework": f, "m": m, "n": n, "k": k, "time_s": 1.0, "weight_dtype": "fp8",
                          "activation_dtype": "fp8", "dtype": "fp8"}
                         for d in ("H100-SXM", "B200") for f in ("sglang", "vllm") for m, n, k in shapes])
    return list(fit.device_gemms(rows, load_specs(), tile_store={}).values())


@pytest.mark.parametrize("truth", [{"sglang": "square", "vllm": ""}, {"sglang": "", "vllm": "tile_m"}])
def test_the_fold_recovers_the_rule_of_synthetic_times(truth):
    groups = _synthetic_groups()
    assert any(g.large_m_eligible for g in groups) and not all(g.large_m_eligible for g in groups)
    fitted = (1.0, 4500.0, 0.0, 0.0, 0.0, {}, {}, {}, 0.0, {})     # fit_dtype_clock_block_scaled's tuple
    with large_m_tiles(groups, truth):
        for g in groups:
            g.measured = g.predicted_clock(1.0, 4500.0, 0.0)
    rules, refitted = fit_large_m_tiles(groups, fitted)
    assert rules == truth
    assert refitted == fitted       # per-tensor fp8 has no promotion: every constant held


def test_hand_arithmetic_of_a_rule_with_the_block_scale_promotion():
    hardware = load_specs()["H100-SXM"]
    group = _group("H100-SXM", [640], dtype="fp8_g128", framework="trtllm")
    assert group.large_m_eligible
    ratio = hardware.matrix_macs_per_s("fp8") / (128 * DeviceRates.of(hardware).vector_flops_per_s)
    assert ratio == pytest.approx(0.125, rel=1e-3)
    per_core = hardware.matrix_macs_per_s("fp8") / hardware.num_cores
    matrix = DeviceRates.of(hardware).matrix_fraction
    with large_m_tiles([group], {"trtllm": "tile_m"}):
        work = group.clock_work(1.0, 0.0, block_scale_flops={"trtllm": 3.0})
    assert work[0] == pytest.approx(5 * 128 * 64 * 8192 / per_core / matrix * (1 + 3.0 * ratio), rel=1e-9)


def _synthetic_block_scaled_groups() -> list:
    """H100 and B200 fp8_g128 groups of TensorRT-LLM and SGLang: m 64 to 2,304 (most above 128, many unaligned)."""
    shapes = [(m, n, k) for m in (64, 192, 320, 448, 640, 896, 1152, 2304) for n in (2048, 4096, 8192)
              for k in (2048, 8192)]
    rows = pd.DataFrame([{"device": d, "framework": f, "m": m, "n": n, "k": k, "time_s": 1.0,
                          "weight_dtype": "fp8_g128", "activation_dtype": "fp8_g128", "dtype": "fp8_g128"}
                         for d in ("H100-SXM", "B200") for f in ("trtllm", "sglang") for m, n, k in shapes])
    return list(fit.device_gemms(rows, load_specs(), tile_store={}).values())


def test_the_fold_recovers_a_rule_with_its_promotion():
    groups = _synthetic_block_scaled_groups()
    truth, promotion = {"trtllm": "tile_m", "sglang": ""}, {"trtllm": 2.25, "sglang": 1.0}
    with large_m_tiles(groups, truth):
        for g in groups:
            g.measured = g.predicted_clock(1.0, 4500.0, 0.0, block_scale_flops=promotion)
    handed = {"trtllm": 3.75, "sglang": 1.0}        # the free search's promotion, too large for 128-row tiles
    fitted = (1.0, 4500.0, 0.0, 0.0, 0.0, {}, handed, {}, 0.0, {})
    rules, refitted = fit_large_m_tiles(groups, fitted)
    assert rules == truth and refitted[6] == promotion
    assert refitted[:6] + refitted[7:] == fitted[:6] + fitted[7:]
    held_rules, held = fit_large_m_tiles(groups, fitted, refit_promotion=False)
    assert held[6] == handed and held_rules != truth   # the rule alone, promotion held: not the truth
