"""Realistic fused attention calibrated on NVIDIA AIConfigurator's measured attention tables."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.calibration.silicon import attention_fit, score
from engine.hardware.specs import load_specs

SUBSET = Path(__file__).parent / "data" / "aiconfigurator" / "systems"
INSTALLED = find_spec("aiconfigurator_core") is not None


@pytest.fixture(scope="module")
def devices():
    return load_specs()


def _median_error(groups: dict, values: dict) -> float:
    error = np.concatenate([g.predicted(values) / g.measured - 1.0 for g in groups.values()])
    return float(np.median(np.abs(error)))


@pytest.mark.parametrize("family, before, after", [("prefill_attention", 0.45, 0.13), ("decode_attention", 0.30, 0.13)])
def test_shipped_attention_matches_the_measured_subset(devices, family, before, after):
    """The shipped subset's 25 H100-SXM and 25 B200 measurements per family (trtllm 1.3.0rc20): the model before
    the fit was 59% (prefill) / 42% (decode) too fast at the median; the shipped constants are ~12% / ~15% off.
    Decode with the kernel-generation form shipped: 33.5% before (uncalibrated: none of its terms either), 11.6%
    shipped (floor 0.16 -> 0.13)."""
    groups = attention_fit.device_groups(attention_fit.fit_rows(family, devices, SUBSET), devices, family)
    assert sorted(groups) == ["B200", "H100-SXM"]
    assert _median_error(groups, attention_fit.uncalibrated(family)) > before
    assert _median_error(groups, attention_fit.shipped_values(family)) < after


def test_a_short_decode_sits_on_the_measured_latency_floor(devices):
    """B200 decode of 8 sequences over 256 cached tokens (8 KV heads x 64, fp8 cache: 1 MB) takes ~11 us in the
    table, almost all of it the kernel's fixed latency: the prediction is within 15% of each such row (up to 32
    query heads; the subset's 128-head row at 64 tokens measures 20 us, slower than its 256-token twin's 13 us)."""
    frame = attention_fit.fit_rows("decode_attention", devices, SUBSET)
    short = frame[(frame["device"] == "B200") & (frame["context_length"] <= 256) & (frame["batch"] <= 32)
                  & (frame["heads"] <= 32)]
    assert len(short) >= 2 and (short["time_s"] < 20e-6).all()
    tidy = score.score_family(short, "decode_attention", methods=("realistic",), devices=devices)
    assert (tidy["error"].abs() < 0.15).all()


@pytest.mark.skipif(not INSTALLED, reason="needs the calibration extra (aiconfigurator-core)")
@pytest.mark.parametrize("family, floor, fragile", [
    ("prefill_attention", 0.11, ("attention_prefill_latency_s",)),
    ("decode_attention", 0.075, ("attention_decode_latency_s", "decode_bandwidth_efficiency")),
])
def test_cross_validated_floor_breaks_when_a_fitted_constant_moves_15_percent(devices, family, floor, fragile):
    """Fitted on H100-SXM, H200-SXM, GB200 (decode: and B300; 400 measurements each), scored on B200 (left out): within the
    floor (measured 10.8% prefill with h/kern6's softmax terms, 10.7% before / 7.0% decode), and 15% more or less of
    the latency (decode: 15% less KV stream efficiency too) breaks it (prefill 11.6-13.7%; decode 12.4-14.3% latency,
    9.9% stream). B300 joined the
    decode training devices with the kernel-generation form, whose floor is seconds only on devices with fp4 matrix
    units (cycles at the clock on older ones): with GB200 the only such training device, B200 scores 8.4%."""
    names = ("H100-SXM", "H200-SXM", "B200", "GB200") + (("B300",) if family == "decode_attention" else ())
    chosen = {name: devices[name] for name in names}
    groups = attention_fit.device_groups(attention_fit.fit_rows(family, chosen, None, 400), chosen, family)
    fitted = attention_fit.fit_family([g for d, g in groups.items() if d != "B200"], family)
    held_out = {"B200": groups["B200"]}
    assert _median_error(held_out, fitted) <= floor
    assert _median_error(held_out, attention_fit.uncalibrated(family)) > 3 * floor
    for name in fragile:
        for factor in ((0.85, 1.15) if name.endswith("latency_s") else (0.85,)):
            assert _median_error(held_out, dict(fitted, **{name: fitted[name] * factor})) > floor, (name, factor)


def _attention_frame(device: str, decode: bool, batch, length) -> pd.DataFrame:
    batch, length = np.broadcast_arrays(np.asarray(batch, dtype=float), np.asarray(length, dtype=float))
    frame = pd.DataFrame({"device": device, "batch": batch, "heads": 32, "kv_heads": 8, "head_dim": 128,
                          "dtype": "bf16", "kv_dtype": "bf16", "window_size": 0, "time_s": 1.0})
    if decode:
        return frame.assign(input_length=1.0, prior_tokens=length - 1, context_length=length)
    return frame.assign(input_length=length)


@pytest.mark.parametrize("device", ["H100-SXM", "B200", "TPU-v5e"])
@pytest.mark.parametrize("family", ["prefill_attention", "decode_attention"])
def test_attention_time_grows_with_length_and_batch(devices, device, family):
    decode = family == "decode_attention"
    lengths = np.unique(np.round(np.geomspace(1, 32768, 60)))
    batches = np.arange(1, 65)
    for frame in (_attention_frame(device, decode, 4, lengths), _attention_frame(device, decode, batches, 1024)):
        seconds = score.predicted_seconds(frame, family, devices[device], "realistic")
        assert np.all(np.diff(seconds) >= -1e-15 * seconds[1:])


def test_mla_is_scored_on_the_measured_subset(devices):
    """DeepSeek-V3 MLA (the subset's 10 H100-SXM + 10 B200 rows per phase), timed with the attention-fitted
    constants: decode (absorbed, streaming the shared latent) within 25% at the median, prefill within 40%;
    roofline is 70-75% too fast on both."""
    for family, bound in (("decode_mla", 0.25), ("prefill_mla", 0.40)):
        frame = score.measured_kernels(family, SUBSET)
        tidy = score.score_family(frame, family, devices=devices)
        medians = tidy.groupby("method")["error"].apply(lambda e: float(np.median(np.abs(e))))
        assert len(frame) == 20 and medians["realistic"] < bound < medians["roofline"]


def test_mla_decode_is_nearly_flat_in_query_heads(devices):
    """Absorbed MLA decode streams one shared 576-value latent per token whatever the query heads: at 8192
    cached tokens and 32 sequences (302 MB of bf16 latent) 8x the heads (16 -> 128) costs far less than 8x."""
    frame = pd.DataFrame({"device": "B200", "batch": 32.0, "heads": [16, 128], "dtype": "bf16", "kv_dtype": "bf16",
                          "input_length": 1.0, "prior_tokens": 8191.0, "context_length": 8192.0, "time_s": 1.0})
    seconds = score.predicted_seconds(frame, "decode_mla", devices["B200"], "realistic")
    assert seconds[0] >= 32 * 8192 * 576 * 2 / 8e12          # at least the latent stream at 8 TB/s
    assert 1.0 < seconds[1] / seconds[0] < 3.0


@pytest.mark.parametrize("device, measured_s", [("H100-SXM", 334e-6), ("B200", 353e-6), ("A100-80GB-SXM", 669e-6)])
def test_the_generic_decode_kernel_runs_at_its_measured_mac_rate(devices, device, measured_s):
    """64 query heads over 1 KV head (the generic masked-MHA kernel), 8 sequences x 8,192 cached tokens, bf16: the
    tables measure 334 us (H100), 353 us (B200), 669 us (A100), ~13.5 MACs per core cycle on all three. At the
    vector units' peak (2 FLOPs per MAC, the form before decode_generic_mac_cycles) the model said 54 / 47 / 138 us
    (-80 to -87%); with the cycles per MAC it is within 25% on each."""
    frame = pd.DataFrame({"device": [device], "batch": [8.0], "heads": 64, "kv_heads": 1, "head_dim": 128,
                          "dtype": "bf16", "kv_dtype": "bf16", "window_size": 0, "time_s": measured_s,
                          "input_length": 1.0, "prior_tokens": [8191.0], "context_length": [8192.0]})
    predicted = score.predicted_seconds(frame, "decode_attention", devices[device], "realistic")[0]
    assert abs(predicted / measured_s - 1.0) < 0.25


def _decode_row(device, batch, heads, kv_heads, kv_dtype, context, measured_s):
    return pd.DataFrame({"device": [device], "batch": [float(batch)], "heads": heads, "kv_heads": kv_heads,
                         "head_dim": 128, "dtype": "bf16", "kv_dtype": kv_dtype, "window_size": 0, "time_s": measured_s,
                         "input_length": 1.0, "prior_tokens": [context - 1.0], "context_length": [float(context)]})


def test_a_group_wider_than_16_heads_pays_its_extra_fragment(devices):
    """H100, bf16 cache, 64 sequences x 4 KV heads x 2,048 cached tokens: 16 query heads per KV head take 109.2 us,
    32 take 123.0 us (the tables: 1.13-1.26x at equal KV on every device). With decode_fragment_share the model is
    within 15% of each and its ratio 1.1-1.3 (without it the ratio is 1.0: the KV bytes are the same)."""
    seconds = {}
    for heads, measured_s in ((64, 109.168e-6), (128, 122.981e-6)):
        frame = _decode_row("H100-SXM", 64, heads, 4, "bf16", 2048, measured_s)
        seconds[heads] = score.predicted_seconds(frame, "decode_attention", devices["H100-SXM"], "realistic")[0]
        assert abs(seconds[heads] / measured_s - 1.0) < 0.15, heads
    assert 1.1 < seconds[128] / seconds[64] < 1.3


@pytest.mark.parametrize("device, batch, measured_s, expected_kernel", [
    ("H100-SXM", 1, 5.648e-6, True), ("H100-SXM", 64, 9.707e-6, True), ("A100-80GB-SXM", 1, None, False),
    ("B200", 1, None, False)])
def test_hoppers_8_bit_grouped_decode_runs_its_own_kernel(devices, device, batch, measured_s, expected_kernel):
    """32 query heads over 8 KV heads, fp8 cache, 4 cached tokens: H100 measures 5.6 us (batch 1) and 9.7 us (batch
    64), below its 16-bit floor (~8.5 us): the 8-bit matrix kernel (matrix units with fp8, without fp4) has its own
    floor and CTA cycles; the model is within 15% (with the 16-bit floor it was +45% / +31%). A100 (no fp8 units)
    and B200 (fp4 units) do not take it."""
    from engine.estimators.fused_attention import FusedRates, FusedShapes, fp8_matrix_decode
    from engine.estimators.realistic import DeviceRates
    rates = DeviceRates.of(devices[device])
    shapes = FusedShapes(decode=np.array([True] * 4), m=np.array([4.0, 1.0, 32.0, 4.0]), k=np.full(4, 128.0),
                         n=np.full(4, 4.0), batch=np.full(4, 8.0), matrix_macs=np.ones(4), vector_flops=np.ones(4),
                         nbytes=np.ones(4), kv_value_bytes=np.array([1.0, 1.0, 1.0, 2.0]))
    fused = FusedRates(macs_per_s_per_core=np.ones(4), cores=rates.cores, clock_hz=rates.clock_hz,
                       vector_flops_per_s=1.0, bandwidth=1.0, matrix_fraction=1.0, memory_fraction=1.0,
                       matrix_fp4=rates.matrix_fp4, matrix_fp8=rates.matrix_fp8)
    # group 4 over an 8-bit cache only: not MHA, not a group of 32 (the kernel takes up to 16), not a 16-bit cache
    assert fp8_matrix_decode(shapes, fused).tolist() == [expected_kernel, False, False, False]
    if measured_s is not None:
        frame = _decode_row(device, batch, 32, 8, "fp8", 4, measured_s)
        predicted = score.predicted_seconds(frame, "decode_attention", devices[device], "realistic")[0]
        assert abs(predicted / measured_s - 1.0) < 0.15


def test_a_long_decode_streams_at_the_capped_fraction_of_the_peak(devices):
    """H100, 64 sequences x 8 KV heads (MHA) x 16,384 cached tokens, bf16: 4.29 GB of KV in 1,401 us, 0.91 of the
    3.35 TB/s peak (the tables' maxima are 0.90-0.95 on every device). The stream is capped at decode_stream_cap
    (0.973 since h/dattn5, which adds each (sequence, KV head)'s own stream time to it; was 0.933 as the only bound)
    of the peak: within 5% (predicted 1,343 us, -4.2%; uncapped, at the peak, it was -7%)."""
    frame = _decode_row("H100-SXM", 64, 8, 8, "bf16", 16384, 1401.008e-6)
    predicted = score.predicted_seconds(frame, "decode_attention", devices["H100-SXM"], "realistic")[0]
    assert predicted >= 64 * 8 * 16384 * 128 * 2 * 2 / (0.973 * 3.35e12)
    assert abs(predicted / 1401.008e-6 - 1.0) < 0.05
