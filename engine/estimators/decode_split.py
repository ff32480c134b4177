"""The split-KV reduction of a decode attention kernel on devices without fp4 matrix units (fused_attention's decode).

A decode context of more than DECODE_SPLIT_VALUES cached values per head (tokens x head dim) is split over several
CTAs per (sequence, KV head) (flash-decoding / paged attention v2) and pays a reduction: decode_split_cycles +
decode_split_ramp_cycles x the HBM bytes per core cycle the split is sized for (AttentionOverheads, fitted by
engine/calibration/silicon/attention_fit.py). The ramp is what separates H200 from H100 in the measured tables (its
larger intercept at the same cores and clock).

A ramp that grew with the device's bandwidth alone made a decode slower with more bandwidth wherever the stream's
saving was smaller than the ramp's growth (A100, Llama-3.1-8B, 257 cached tokens, bandwidth doubled: 16.9 -> 17.5 us).
So the split is sized for the bandwidth only while more bandwidth still pays for it: the ramp's bandwidth is the
least of the device's, the one where the stream's saving per byte/s (stream_bytes / b^2) falls to the ramp's cost per
byte/s (sqrt(stream_bytes / ramp cost)), and the one where the stream stops bounding the kernel (stream_bytes /
(bound - pair time)). Below that bandwidth the kernel's time falls with b as stream_bytes / b + ramp cost x b (its
derivative <= 0); above it the ramp is held and only the stream falls: more bandwidth is never slower.
"""

from __future__ import annotations

from engine.common.float_or_array import maximum, minimum, power, where

# a decode context of more than this many cached values per head (tokens x head dim) is split over several CTAs per
# (sequence, KV head); on older tensor cores it pays a reduction (AttentionOverheads.decode_split_cycles). The Hopper
# tables step up ~5 us past 512 tokens at head dim 64, 256 at 128, 128 at 256, bf16 and fp8 alike (h/dattn6)
DECODE_SPLIT_VALUES = 32768
# the split-KV reduction's ramp (AttentionOverheads.decode_split_ramp_cycles) grows with the HBM bytes per core cycle,
# fitted on A100, H100 and H200 (13.4-19.9 B per core cycle); held at this beyond them, so a device or edit with more
# bandwidth per core (TPU-v5e's one core: 546) never pays a reduction the data never showed
DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE = 20.0


def ramp_bandwidth(rates, overheads, stream_bytes, pair_s, bound_s):
    """The bandwidth (B/s) the split-KV reduction's ramp is sized for, per group: the least of the device's, the one
    where the stream's saving per byte/s stops paying for the ramp (sqrt(stream_bytes / ramp seconds per byte/s)) and
    the one where the stream stops bounding the kernel (stream_bytes / (bound_s - pair_s), where bound_s > pair_s).
    stream_bytes: the decode's bytes over its stream efficiency (the stream's seconds x the device's bandwidth);
    pair_s: the per-(sequence, KV head) stream time added to it; bound_s: the kernel's bound that does not fall with
    bandwidth (its compute, the 8-bit conversion)."""
    bandwidth = rates.bandwidth
    if overheads.decode_split_ramp_cycles <= 0.0:
        return bandwidth
    seconds_per_bandwidth = overheads.decode_split_ramp_cycles / (rates.cores * rates.clock_hz * rates.clock_hz)
    pays = power(stream_bytes / seconds_per_bandwidth, 0.5)
    # where bound_s - pair_s <= stream_bytes / bandwidth the stream bounds the kernel at any bandwidth up to the
    # device's: the device's bandwidth (no division by a headroom of 0)
    bounded = stream_bytes / maximum(maximum(bound_s - pair_s, stream_bytes / bandwidth), 1e-300)
    return minimum(minimum(pays, bounded), bandwidth)


def split_seconds(rates, overheads, split, stream_bytes, pair_s, bound_s):
    """The split-KV reduction's seconds where `split` (0 elsewhere): decode_split_cycles + decode_split_ramp_cycles x
    ramp_bandwidth / (cores x clock) (at most DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE), at the clock."""
    bytes_per_core_cycle = minimum(ramp_bandwidth(rates, overheads, stream_bytes, pair_s, bound_s)
                                   / (rates.cores * rates.clock_hz), DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE)
    cycles = overheads.decode_split_cycles + overheads.decode_split_ramp_cycles * bytes_per_core_cycle
    return where(split, cycles / rates.clock_hz, 0.0)
