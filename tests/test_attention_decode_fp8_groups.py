"""Hopper's 8-bit decode kernel takes grouped-query decodes of up to 16 query heads per KV head, in fragments of 8
heads (h/dattn7; it took groups of 2-8, and groups of 12-16 over an fp8 cache ran the 16-bit kernel's ~8.5 us floor).

Measured (aiconfigurator-core 0.12.0, trtllm generation attention, H100-SXM, bf16 queries, fp8 cache, head dim 128,
8 KV heads, 16 cached tokens): 128 query heads (groups of 16) take 6.85 us at batch 1 and 12.70 us at batch 64; 64
query heads (groups of 8) take 6.03 and 10.92 us. Under the old rule the groups of 16 were predicted +25% / +21% slow.
"""

from __future__ import annotations

import pandas as pd
import pytest

from engine.calibration.silicon import attention_fit, score
from engine.estimators.realistic_constants import DEFAULT_CONSTANTS
from engine.hardware.specs import load_specs


@pytest.fixture(scope="module")
def devices():
    return load_specs()


def _row(device, batch, heads, kv_dtype="fp8", context=16, measured_s=1e-5):
    return pd.DataFrame({"device": [device], "batch": [float(batch)], "heads": heads, "kv_heads": 8, "head_dim": 128,
                         "dtype": "bf16", "kv_dtype": kv_dtype, "window_size": 0, "time_s": measured_s,
                         "input_length": 1.0, "prior_tokens": [context - 1.0], "context_length": [float(context)]})


def _predicted(devices, device, batch, heads, kv_dtype="fp8", context=16):
    frame = _row(device, batch, heads, kv_dtype, context)
    return score.predicted_seconds(frame, "decode_attention", devices[device], "realistic")[0]


@pytest.mark.parametrize("batch, measured_s", [(1, 6.853e-6), (64, 12.699e-6)])
def test_hoppers_8_bit_kernel_takes_groups_of_16(devices, batch, measured_s):
    # predicted +7.2% and +14.9%; +15.1% at batch 64 since session 21's monotone fused offset (fused_offset.py)
    predicted = _predicted(devices, "H100-SXM", batch, 128)
    assert abs(predicted / measured_s - 1.0) < 0.16


def _with_and_without_fragments(devices, device, kv_dtype):
    """Per (heads, context) of 64-128 query heads over 8 KV heads, 16-4,096 tokens, 16 sequences: the predicted time with
    the shipped constants over that with decode_fp8_fragment_share = 0."""
    keys = [(heads, context) for heads in (64, 96, 128) for context in (16, 1024, 4096)]
    rows = pd.concat([_row(device, 16, heads, kv_dtype, context) for heads, context in keys], ignore_index=True)
    groups = attention_fit.DeviceAttention(rows, devices[device], "decode_attention")
    shipped = attention_fit.shipped_values("decode_attention")
    ratio = groups.predicted(shipped) / groups.predicted({**shipped, "decode_fp8_fragment_share": 0.0})
    return {keys[row]: value for row, value in zip(groups.measurement, ratio)}


def test_a_group_over_8_heads_takes_one_more_fragment(devices):
    """On H100 over an fp8 cache, groups of 12 and 16 query heads per KV head take ceil(heads / 8) - 1 = 1 extra
    fragment: the kernel's time (floor and stream) x (1 + decode_fp8_fragment_share); only the rows' own ideal times
    beyond the fused kernel's roofline are not scaled (under 10% of the kernel here). Groups of 8: one fragment, x 1."""
    share = DEFAULT_CONSTANTS.attention_overheads.decode_fp8_fragment_share
    assert share > 0.05
    for (heads, context), ratio in _with_and_without_fragments(devices, "H100-SXM", "fp8").items():
        if heads == 64:
            assert ratio == pytest.approx(1.0, abs=1e-12), context
        else:
            assert 1.0 + 0.9 * share <= ratio <= 1.0 + share + 1e-12, (heads, context)


@pytest.mark.parametrize("device, kv_dtype", [("B200", "fp8"), ("A100-80GB-SXM", "fp8"), ("H100-SXM", "bf16")])
def test_the_8_bit_fragments_are_charged_only_on_hoppers_8_bit_kernel(devices, device, kv_dtype):
    """B200 (fp4 units: a newer kernel), A100 (no fp8 units) and a 16-bit cache do not take the 8-bit kernel: the
    share changes nothing there."""
    for key, ratio in _with_and_without_fragments(devices, device, kv_dtype).items():
        assert ratio == pytest.approx(1.0, abs=1e-12), key
