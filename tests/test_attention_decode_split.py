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
    # the reduction at the H200's clock: 3,380 + 302 x 4.8 TB/s / (132 x 1.83 GHz) cycles ~ 9,381 cycles ~ 5.13 us
    # (h/dattn7's refit; was 3,530 + 317 x ... ~ 5.38 us)
    assert split_s == pytest.approx(5.126e-6 if splits else 0.0, rel=0.02, abs=1e-9)


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
    # beyond the cap; the reduction is charged at the cap at both: (3,380 + 302 x 20) / 1.83 GHz = 5.15 us, not
    # (3,380 + 302 x 416) / 1.83 GHz = 70 us
    from engine.estimators.fused_attention import DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE
    from engine.hardware.what_if import apply_edits
    assert DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE == 20.0
    for scale in (30.0, 100.0):
        edited = apply_edits(devices["H100-SXM"], {"memory_bandwidth": 3350.0 * scale})
        frame = _row(1, 32, 8, 128, 4097, 1e-5).assign(device=edited.name)
        split_s = (score.predicted_seconds(frame, "decode_attention", edited, "realistic", None)[0]
                   - score.predicted_seconds(frame, "decode_attention", edited, "realistic",
                                             attention_fit.constants_with(NO_SPLIT))[0])
        assert split_s == pytest.approx((3380 + 302 * 20.0) / 1.83e9, rel=0.01)
