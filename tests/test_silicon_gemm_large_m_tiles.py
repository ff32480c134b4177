"""The tiles the tables' per-tensor fp8 kernels take at m > 128 on matrix units without native block scales
(engine/calibration/silicon/fit_tiles.py; h/gemm12, docs/accuracy.md).

- hand arithmetic: H100 (132 cores), fp8, n = k = 8,192, efficiency 1, no cap: at m = 640 the 128 x 128 tile alone
  ("square") runs ceil(5 x 64 / 132) = 3 waves of 128 x 128 x 8,192 MACs per core; 128-row tiles without split-K
  ("tile_m") find 128 x 64, ceil(5 x 128 / 132) = 5 waves of 128 x 64 x 8,192; at m = 128 every rule is the free search;
  Blackwell (native block scales) and bf16 groups are not eligible;
- the fold's choice recovers the rule that made synthetic times, per framework.
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
    assert fit_large_m_tiles(groups, fitted) == truth
