"""More hardware never slower, larger never faster: the cases benchmarks/monotonicity_hunt.py found, kept as tests.

Each case is a what-if edit of one workbook field that improves the device (a higher matrix rate) or a larger workload;
the oracle is the physical property itself: no kernel row (a fused attention kernel's rows summed: one launch whose
time the table shares out over its rows) and no total gets slower with the better device.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import engine
from engine.estimators.realistic import DEFAULT_CONSTANTS, NORM_CLASS, estimate_realistic


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


def norm_times(hw, tokens_list, constants) -> list[tuple[float, float]]:
    """(Norm_attn seconds, total seconds) of Llama-3.1-8B prefills of each token count, realistic, `constants`."""
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    times = []
    for tokens in tokens_list:
        scenario = engine.Scenario(phase="prefill", batch=1, input_length=tokens)
        out = estimate_realistic(engine.decompose(model, scenario), hw, scenario, constants=constants)
        names = list(out["name"])
        seconds = np.asarray(out["time_s"]) * np.asarray(out["count"])
        times.append((float(np.asarray(out["time_s"])[names.index("Norm_attn")]), float(seconds.sum())))
    return times


SHARED_GAMMA = replace(DEFAULT_CONSTANTS, kernel_classes={     # the norm form before session 21 (and its constants)
    **DEFAULT_CONSTANTS.kernel_classes, "norm": replace(NORM_CLASS, bandwidth_efficiency=0.49, latency_s=0.875e-6,
                                                        floor_s=2.125e-6, row_bytes_per_cycle=3.62,
                                                        row_weights_cached=False)})


def test_the_old_shared_gamma_form_made_a_longer_prefill_faster(devices):
    """The norm form before session 21 shared gamma out over the tokens: JGS ran Llama-3.1-8B's 2-token prefill faster
    than its 1-token one (3.149 -> 3.103 ms). The shipped class's CTAs stream their token's row only, gamma from the
    cache (refitted on Vidur's RMSNorm rows; engine/estimators/realistic.row_cta_bytes)."""
    assert NORM_CLASS.row_weights_cached
    (_, one), (_, two) = norm_times(devices["JGS"], (1, 2), SHARED_GAMMA)
    assert two < one


@pytest.mark.parametrize("name", ["JGS", "NVL-AX", "H100-SXM", "A100-80GB-SXM"])
def test_a_norm_of_more_tokens_is_never_shorter(devices, name):
    """A row-wise norm runs one CTA per token, each streaming its token's activations (gamma from the cache):
    within a wave of CTAs more tokens never shorten it, and a prefill of one more token is never faster (sharing gamma
    out over the tokens, JGS ran Llama-3.1-8B's 2-token prefill 1.5% faster than its 1-token one)."""
    times = norm_times(devices[name], (1, 2, 3, 4, 8, 16), DEFAULT_CONSTANTS)
    for (norm, total), (next_norm, next_total) in zip(times, times[1:]):
        assert next_norm >= norm * (1 - 1e-12)
        assert next_total >= total * (1 - 1e-12)


@pytest.mark.parametrize("method", ["roofline", "realistic"])
def test_more_devices_per_node_never_slow_a_group_that_spans_nodes(devices, method):
    """A100-40GB-PCIe (2 devices per node), tp = 4: nodes of 3 hold the group as 2 + 2, as nodes of 2 do (an equal
    share per node); as 3 + 1 its all-reduces took 27.6 -> 29.0 us and a Llama-3.1-70B decode step 2.1% longer."""
    hw = devices["A100-40GB-PCIe"]
    model = engine.load_model("meta-llama/Llama-3.1-70B")
    scenario = engine.Scenario(phase="decode", batch=4, input_length=95, tp=4)
    results = [engine.estimate(hw.with_changes(devices_per_node=per_node), model, scenario, method=method)
               for per_node in (2, 3, 4)]
    for base, better in zip(results, results[1:]):
        assert_not_slower(base, better)


def test_a_chunked_prefill_request_with_more_output_never_finishes_sooner(devices):
    """Qwen3-8B on A100-40GB-PCIe, 127 prompts of 2,031 tokens in chunks of 260: an iteration whose chunk holds the
    end of one prompt and the start of the next had its prefill attention shaped by the mean key span (1,040) below
    its mean keys per query (1,566), recovered as 1 query per sequence with 128-row tiles: 155 ms instead of ~20 ms.
    Which iterations did depended on the output length, so 21 output tokens finished 0.8% sooner than 20 (and
    24 than 23 by 3.9%). Oracle: physical monotonicity, and no prefill iteration far above the others."""
    model = engine.load_model("Qwen/Qwen3-8B")
    totals = []
    for output in (20, 21, 23, 24):
        scenario = engine.Scenario(phase="request", batch=127, input_length=2031, output_length=output, chunk_size=260,
                                   weight_dtype="int4", activation_dtype="fp8", chunked_prefill=True)
        result = engine.estimate(devices["A100-40GB-PCIe"], model, scenario, method="realistic")
        iterations = result.iterations
        prefill = iterations[iterations["prefill_tokens"] > 0]["time_s"]
        assert prefill.max() < 1.5 * prefill.median()
        totals.append(result.total_time_s)
    assert totals == sorted(totals)
