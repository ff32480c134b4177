"""Block-scaled fp8 GEMMs on Hopper: the promotion per framework in the leave-one-device-out fit (h/gemm10,
docs/accuracy.md).

- hand arithmetic: on H100 a compute-bound fp8_g128 GEMM with TensorRT-LLM's promotion at 3 FLOPs per output value per
  128-deep scale group takes 1 + 3 x 989.4 T / (128 x 61.84 T) = 1.375 times as long; an SGLang group, or B200 (native
  block scales), is not slowed by TensorRT-LLM's value;
- the fit finds one value per framework in times made with two different values;
- H200's held-out fp8_g128 fold (installed tables) sits in a band that a 15% change of the fitted promotion leaves.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.calibration.silicon import fit, tables
from engine.hardware.specs import load_specs
from tests.silicon_held_out import held_out_fold

SUBSET = Path(__file__).parent / "data" / "aiconfigurator" / "systems"


def _square(device: str, framework: str, size: int = 8192) -> pd.DataFrame:
    """One fp8_g128 GEMM of size x size x size (compute-bound on every device)."""
    return pd.DataFrame({"device": [device], "framework": [framework], "m": [size], "n": [size], "k": [size],
                         "time_s": [1.0], "weight_dtype": ["fp8_g128"], "activation_dtype": ["fp8_g128"],
                         "dtype": ["fp8_g128"]})


def _work(device: str, framework: str, block) -> float:
    group = fit.DeviceGemms(_square(device, framework), load_specs()[device], tile_store={})
    return float(group.clock_work(1.0, 0.0, 0.0, 0.0, block)[0])


def test_hand_arithmetic_of_the_promotion_per_framework():
    h100 = load_specs()["H100-SXM"]
    # H100: 1,978.9 T fp8 FLOP/s = 989.4 T MAC/s on the matrix units, 61.84 T FLOP/s on the vector units
    ratio = h100.matrix_flops_per_s("fp8") / 2 / (128 * h100.vector_flops_per_s)
    assert ratio == pytest.approx(0.125, rel=1e-4)
    plain = _work("H100-SXM", "trtllm", {})
    assert _work("H100-SXM", "trtllm", {"trtllm": 3.0, "sglang": 0.5}) / plain == pytest.approx(1.375, rel=1e-4)
    assert _work("H100-SXM", "sglang", {"trtllm": 3.0, "sglang": 0.5}) / plain == pytest.approx(1.0625, rel=1e-4)
    assert _work("H100-SXM", "vllm", {"trtllm": 3.0}) == pytest.approx(plain, rel=1e-12)
    # B200's matrix units take the block scales themselves (fp4-rated): no promotion on the vector units
    assert _work("B200", "trtllm", {"trtllm": 3.0}) == pytest.approx(_work("B200", "trtllm", {}), rel=1e-12)


def _subset_groups() -> list:
    """The shipped TensorRT-LLM subset's fp8 shapes on H100 and B200, relabelled fp8_g128, once per framework."""
    devices = load_specs()
    rows = tables.gemm_table(SUBSET)
    rows = rows[rows["dtype"] == "fp8"].assign(dtype="fp8_g128", weight_dtype="fp8_g128",
                                               activation_dtype="fp8_g128")
    both = pd.concat([rows.assign(framework=f) for f in ("trtllm", "sglang")], ignore_index=True)
    return list(fit.device_gemms(both, devices, tile_store={}).values())


def test_the_fit_finds_one_promotion_per_framework():
    groups = _subset_groups()
    truth = {"trtllm": 3.0, "sglang": 0.5}
    quantize = {"trtllm": 3.0e-6, "sglang": 3.5e-6}
    for g in groups:      # times made with the constants (efficiency 1.0, 4,500 cycles, no cap, split-K, loss, step)
        g.measured = g.predicted_clock(1.0, 4500.0, 0.0, 0.0, 0.0, truth, 0.0, quantize_latency=quantize)
    fitted = fit.fit_dtype_clock_block_scaled(groups, latency_cycles=4500.0, quantize_bytes=False)
    assert fitted[6] == pytest.approx(truth, abs=0.25)      # one step of the grid

    def p90_error(block) -> float:
        predicted = np.concatenate([g.predicted_clock(*fitted[:5], block, fitted[8], quantize_latency=fitted[5])
                                    for g in groups])
        return float(np.quantile(np.abs(predicted / np.concatenate([g.measured for g in groups]) - 1), 0.9))
    # measured: fitted 3.3% (the grids' steps); the frameworks' values swapped 19.3%, no promotion 16.7%
    assert p90_error(fitted[6]) < 0.05
    assert p90_error({"trtllm": fitted[6]["sglang"], "sglang": fitted[6]["trtllm"]}) > 0.15
    assert p90_error({}) > 0.15


# H200 held out (installed tables, fp8_g128, TensorRT-LLM + SGLang, 200 rows per device and framework; latency cycles
# held at 4,300, H200's bf16 fold; tile store 4 bytes, no k-step grid: one descent), the constants fitted on the other
# five devices. Measured on this branch: promotion {sglang 0, trtllm 2.25} (efficiency 1.11, split-K 9,200 cycles, loss
# 0.6), median |error| 15.36%; the same constants with the promotion x 0.85: 15.77%, x 1.15: 15.12% (this fold prefers
# more), none: 17.83% (main's form). The band holds the fitted value and none of the others.
PROMOTION_MEDIAN_BAND = (0.1530, 0.1545)


@pytest.fixture(scope="module")
def h200_fp8_g128_fold():
    return held_out_fold("fp8_g128", "H200-SXM", latency_cycles=4300.0)


def _median_error(fold, factor: float) -> float:
    held_out, c = fold
    block = {f: v * factor for f, v in c[6].items()}
    predicted = np.concatenate([g.predicted_clock(*c[:5], block, c[8], quantize_latency=c[5], quantize_bytes=c[7])
                                for g in held_out])
    return float(np.median(np.abs(predicted / np.concatenate([g.measured for g in held_out]) - 1)))


# one worker fits H200's fp8_g128 fold once for both files (tests/silicon_held_out.py caches it per process)
@pytest.mark.xdist_group("h200_fp8_g128_fold")
def test_h200_fp8_g128_held_out_band_that_a_15_percent_change_of_the_promotion_leaves(h200_fp8_g128_fold):
    low, high = PROMOTION_MEDIAN_BAND
    # TensorRT-LLM's Hopper kernel runs large block-scaled GEMMs at bf16's time, SGLang's at 0.73 of it
    assert h200_fp8_g128_fold[1][6]["trtllm"] > h200_fp8_g128_fold[1][6]["sglang"]
    assert low <= _median_error(h200_fp8_g128_fold, 1.0) <= high
    for factor in (0.85, 1.15, 0.0):
        assert not low <= _median_error(h200_fp8_g128_fold, factor) <= high, factor
