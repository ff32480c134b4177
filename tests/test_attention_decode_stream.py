"""Hopper's 8-bit one-head-per-KV-head decode kernel converts every K/V value in core cycles (h/dattn5).

Measured (aiconfigurator-core 0.12.0, trtllm generation attention, H100-SXM and H200-SXM): fp8 caches with one
query head per KV head stream at 2.5 TB/s (H100) and 2.75 TB/s (H200) at long contexts, far below their HBM peaks
(3.35 / 4.8 TB/s) and nearly alike on both: a core-bound dequantisation, not the HBM. The model charges
decode_fp8_value_cycles (fitted 0.093) core cycles per K/V value on devices whose matrix units take fp8 but not fp4.
"""

from __future__ import annotations

import pandas as pd
import pytest

from engine.calibration.silicon import attention_fit, score
from engine.hardware.specs import load_specs


@pytest.fixture(scope="module")
def devices():
    return load_specs()


def _row(device, batch, heads, context, measured_s):
    return pd.DataFrame({"device": [device], "batch": [float(batch)], "heads": heads, "kv_heads": heads,
                         "head_dim": 128, "dtype": "bf16", "kv_dtype": "fp8", "window_size": 0, "time_s": measured_s,
                         "input_length": 1.0, "prior_tokens": [context - 1.0], "context_length": [float(context)]})


def _error(devices, frame, constants=None):
    device = frame["device"].iloc[0]
    predicted = score.predicted_seconds(frame, "decode_attention", devices[device], "realistic", constants)[0]
    return predicted / frame["time_s"].iloc[0] - 1.0


def test_hoppers_8_bit_mha_decode_is_bound_by_its_conversion(devices):
    """H100, 8 sequences x 32 heads (MHA) x 16,384 cached tokens over an fp8 cache: 1.07 GB in 421.8 us (2.5 TB/s,
    0.76 of the peak). Predicted within 10% (+2.2%); a 15% change of decode_fp8_value_cycles breaks it (+16.9% /
    -12.5%), and without the conversion the stream alone is 21% fast."""
    frame = _row("H100-SXM", 8, 32, 16384, 421.8e-6)
    assert abs(_error(devices, frame)) < 0.10
    shipped = attention_fit.shipped_values("decode_attention")["decode_fp8_value_cycles"]
    for factor in (0.85, 1.15):
        moved = attention_fit.constants_with({"decode_fp8_value_cycles": shipped * factor})
        assert abs(_error(devices, frame, moved)) > 0.10, factor
    assert _error(devices, frame, attention_fit.constants_with({"decode_fp8_value_cycles": 0.0})) < -0.15


def test_the_conversion_is_not_charged_on_fp4_devices_or_grouped_decodes(devices):
    """B200 (fp4 matrix units: a different kernel generation) and a grouped-query decode on H100 are timed as before:
    the conversion cost changes nothing there."""
    off = attention_fit.constants_with({"decode_fp8_value_cycles": 0.0})
    blackwell = _row("B200", 8, 32, 16384, 100e-6)
    assert _error(devices, blackwell) == pytest.approx(_error(devices, blackwell, off))
    grouped = _row("H100-SXM", 8, 32, 16384, 100e-6).assign(kv_heads=8)
    assert _error(devices, grouped) == pytest.approx(_error(devices, grouped, off))
