"""The split-KV reduction of the older decode kernels (no fp4 units) starts beyond 32,768 cached values per head
(tokens x head dim), not at a fixed context (h/dattn6).

Measured (aiconfigurator-core 0.12.0, trtllm generation attention, H200-SXM, bf16): one query head per KV head at head
dim 64 takes 9.6 us at 512 tokens (4 pairs) and 15.6 us at 1,024 (16 pairs); head dim 256, 6 query heads per KV
head, 4 pairs, 15.4 us already at 256 tokens. The step sits at the same cached values per head, 512 x 64 = 256 x 128
= 128 x 256 = 32,768, for bf16 and fp8 caches alike (not at equal bytes). Under the old 256-token rule the first row
was predicted +55% slow and the third -42% fast.
"""

from __future__ import annotations

import pandas as pd
import pytest

from engine.calibration.silicon import attention_fit, score
from engine.hardware.specs import load_specs

NO_SPLIT = {"decode_split_cycles": 0.0, "decode_split_ramp_cycles": 0.0}


@pytest.fixture(scope="module")
def devices():
    return load_specs()


def _row(batch, heads, kv_heads, head_dim, context, measured_s):
    return pd.DataFrame({"device": ["H200-SXM"], "batch": [float(batch)], "heads": heads, "kv_heads": kv_heads,
                         "head_dim": head_dim, "dtype": "bf16", "kv_dtype": "bf16", "window_size": 0,
                         "time_s": measured_s, "input_length": 1.0, "prior_tokens": [context - 1.0],
                         "context_length": [float(context)]})


def _error(devices, frame, values=None):
    constants = None if values is None else attention_fit.constants_with(values)
    predicted = score.predicted_seconds(frame, "decode_attention", devices["H200-SXM"], "realistic", constants)[0]
    return predicted / frame["time_s"].iloc[0] - 1.0


@pytest.mark.parametrize("batch, heads, kv_heads, head_dim, context, measured_s, splits", [
    (1, 4, 4, 64, 512, 9.58e-6, False),     # 32,768 values per head: not split
    (2, 8, 8, 64, 1024, 15.59e-6, True),    # 65,536
    (1, 24, 4, 256, 256, 15.39e-6, True),   # 65,536 at 256 tokens
    (4, 20, 4, 128, 32, 9.32e-6, False),    # 4,096
])
def test_split_starts_beyond_32768_values_per_head(devices, batch, heads, kv_heads, head_dim, context, measured_s,
                                                   splits):
    frame = _row(batch, heads, kv_heads, head_dim, context, measured_s)
    assert abs(_error(devices, frame)) < 0.15
    split_s = (_error(devices, frame) - _error(devices, frame, NO_SPLIT)) * measured_s
    # the reduction at the H200's clock: 4,360 + 221 x 4.8 TB/s / (132 x 1.83 GHz) cycles ~ 8,751 cycles ~ 4.78 us
    # (session 21's refit with decode_split.py; was 3,380 + 302 x ... ~ 5.13 us). H200 sits just below the ramp's cap
    # (19.87 of 20 B per core cycle): what it would take more at the cap is < 0.02 us on these rows
    assert split_s == pytest.approx(4.782e-6 if splits else 0.0, rel=0.01, abs=1e-9)


def _decode_seconds(hardware, context=4097):
    """The realistic decode attention of one sequence, Llama-3.1-8B's shape (32 query heads, 8 KV heads, head dim 128),
    through the scoring path the fit uses."""
    frame = _row(1, 32, 8, 128, context, 1e-5).assign(device=hardware.name)
    return score.predicted_seconds(frame, "decode_attention", hardware, "realistic", None)[0]


@pytest.mark.parametrize("scale", [3.0, 30.0, 250.0])
def test_more_bandwidth_never_lengthens_decode_attention(devices, scale):
    # physics, not the fit: the same kernel with more HBM bandwidth is never slower (the ramp term grows with bytes
    # per core cycle; past the fitted devices' 13.4-19.9 B it is held at DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE)
    from engine.hardware.what_if import apply_edits
    h100 = devices["H100-SXM"]
    faster = apply_edits(h100, {"memory_bandwidth": 3350.0 * scale})
    assert _decode_seconds(faster) <= _decode_seconds(h100)


def test_the_ramp_is_held_beyond_the_fitted_devices(devices):
    # H100 with 30x and 100x its bandwidth: 416 and 1,387 B per core cycle (3.35 TB/s x scale / (132 x 1.83 GHz)), far
    # beyond the cap; the reduction is charged at the cap at both: (4,360 + 221 x 20) / 1.83 GHz = 4.80 us, not
    # (4,360 + 221 x 416) / 1.83 GHz = 52 us
    from engine.estimators.fused_attention import DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE
    from engine.hardware.what_if import apply_edits
    assert DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE == 20.0
    for scale in (30.0, 100.0):
        edited = apply_edits(devices["H100-SXM"], {"memory_bandwidth": 3350.0 * scale})
        frame = _row(1, 32, 8, 128, 4097, 1e-5).assign(device=edited.name)
        split_s = (score.predicted_seconds(frame, "decode_attention", edited, "realistic", None)[0]
                   - score.predicted_seconds(frame, "decode_attention", edited, "realistic",
                                             attention_fit.constants_with(NO_SPLIT))[0])
        assert split_s == pytest.approx((4360 + 221 * 20.0) / 1.83e9, rel=0.01)


def test_a_short_context_decode_takes_what_it_takes_at_the_cap(devices):
    """decode_split.py by hand: below the ramp's cap a split decode takes at least what the same kernel takes at the
    cap's bandwidth. A100 (108 cores, 1.41 GHz, 2.039 TB/s: 13.39 B per core cycle) at 257 cached tokens streams so
    little that the cap's ramp outweighs its saving: the reduction is charged (4,360 + 221 x 20) / 1.41 GHz plus the
    stream time the cap's bandwidth (20 x 108 x 1.41 GHz = 3.05 TB/s) would save, not (4,360 + 221 x 13.39) / 1.41 GHz."""
    from engine.estimators.decode_split import split_seconds
    from engine.estimators.fused_attention import AttentionOverheads, FusedRates
    a100 = devices["A100-80GB-SXM"]
    rates = FusedRates(macs_per_s_per_core=None, cores=108, clock_hz=1.41e9, vector_flops_per_s=1.0,
                       bandwidth=2.039e12, matrix_fraction=1.0, memory_fraction=1.0)
    overheads = AttentionOverheads(decode_split_cycles=4360.0, decode_split_ramp_cycles=221.0)
    assert a100.num_cores == 108 and a100.memory_bandwidth_bytes_per_s == 2.039e12
    stream = 2 * 8 * 257 * 128 * 2.0        # bytes: K and V, 8 KV heads, 257 tokens, head dim 128, bf16
    cap_bandwidth = 20.0 * 108 * 1.41e9
    own = (4360 + 221 * 2.039e12 / (108 * 1.41e9)) / 1.41e9
    at_cap = (4360 + 221 * 20.0) / 1.41e9
    expected = own + (stream / cap_bandwidth + at_cap) - (stream / 2.039e12 + own)   # the pair term cancels: 0 here
    assert expected > own       # this stream is small enough for the cap to bind
    assert split_seconds(rates, overheads, True, stream, 0.0, 0.0) == pytest.approx(expected, rel=1e-12)
    # a long stream: the device's own reduction (the cap's bandwidth saves more than its ramp costs)
    long_stream = 1000 * stream
    assert split_seconds(rates, overheads, True, long_stream, 0.0, 0.0) == pytest.approx(own, rel=1e-12)
    assert split_seconds(rates, overheads, False, stream, 0.0, 0.0) == 0.0


@pytest.mark.parametrize("name", ["A100-80GB-SXM", "H100-SXM", "H200-SXM"])
@pytest.mark.parametrize("context", [257, 300, 1024, 4097, 32769])
def test_the_fused_decode_kernel_never_slower_over_a_bandwidth_grid(devices, name, context):
    """The defect decode_split.py fixed: before it, the fused decode kernel of an A100 decode of 257 cached tokens
    (Llama-3.1-8B's shape) took longer at twice the bandwidth. Its time (fused_times' t3: stream, pair, split, CTAs)
    on a fine grid of bandwidths (0.5-4x the device's, past the ramp's cap) never rises from one step to the next."""
    from dataclasses import replace
    from engine.calibration.silicon.attention_fit import DeviceAttention
    from engine.estimators.fused_attention import fused_times
    from engine.estimators.realistic import DEFAULT_CONSTANTS
    hardware = devices[name]
    kernel = DeviceAttention(_row(1, 32, 8, 128, context, 1e-5).assign(device=name), hardware, "decode_attention")
    bandwidth = kernel.inputs.rates.bandwidth
    times = [float(fused_times(kernel.inputs.shapes, replace(kernel.inputs.rates, bandwidth=bandwidth * scale),
                               DEFAULT_CONSTANTS.attention_overheads)["t3"][0])
             for scale in [0.5 + 0.05 * i for i in range(71)]]
    assert all(later <= earlier * (1 + 1e-12) for earlier, later in zip(times, times[1:]))
    assert times[-1] < times[0]
