"""More hardware never slower, larger never faster: the cases benchmarks/monotonicity_hunt.py found, kept as tests.

Each case is a what-if edit of one workbook field that improves the device (a higher matrix rate) or a larger workload;
the oracle is the physical property itself: no kernel row (a fused attention kernel's rows summed: one launch whose
time the table shares out over its rows) and no total gets slower with the better device.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine


def kernel_seconds(result) -> dict:
    """{row name: seconds} per kernel, a fused attention group's rows summed into one entry."""
    kernels = result.kernels
    seconds = kernels["time_s"] * kernels["count"]
    fused = kernels["fused_group"].fillna(-1).astype(int) if "fused_group" in kernels else np.full(len(kernels), -1)
    names = np.where(fused >= 0, "attention group " + fused.astype(str), kernels["phase"] + "/" + kernels["name"])
    return seconds.groupby(names).sum().to_dict()


def assert_not_slower(base, better):
    assert better.total_time_s <= base.total_time_s * (1 + 1e-9)
    before, after = kernel_seconds(base), kernel_seconds(better)
    assert before.keys() == after.keys()
    slower = {name: (before[name], after[name]) for name in before if after[name] > before[name] * (1 + 1e-9)}
    assert not slower


@pytest.mark.parametrize("factor", [1.25, 1.5, 2.0, 3.0])
def test_a_higher_bf16_rate_never_slows_an_fp8_cache_prefill(devices, factor):
    """GB300 (fp4 at 6x its bf16 rate): the prefill attention over an fp8 cache runs at the fp8 rate; the softmax's
    rate followed the fp4 / (4 x bf16) ratio, so 1.5x the bf16 rate made it 18% slower (2.27 -> 2.67 ms per layer
    group for Llama-3.1-70B, batch 63 x 1,238 tokens)."""
    hw = devices["GB300"]
    model = engine.load_model("meta-llama/Llama-3.1-70B")
    scenario = engine.Scenario(phase="prefill", batch=63, input_length=1238, weight_dtype="fp8", kv_dtype="fp8")
    better = hw.with_changes(matrix_macs_per_cycle_per_core_bf16=hw.matrix_macs_per_cycle_per_core_bf16 * factor)
    for method in ("realistic", "realistic-graph"):
        assert_not_slower(engine.estimate(hw, model, scenario, method=method),
                          engine.estimate(better, model, scenario, method=method))
