"""The split-KV reduction of a decode attention kernel on devices without fp4 matrix units (fused_attention's decode).

A decode context of more than DECODE_SPLIT_VALUES cached values per head (tokens x head dim) is split over several
CTAs per (sequence, KV head) (flash-decoding / paged attention v2) and pays a reduction: decode_split_cycles +
decode_split_ramp_cycles x the HBM bytes per core cycle (bandwidth / (cores x clock), held at
DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE beyond the fitted devices) (AttentionOverheads, fitted by
engine/calibration/silicon/attention_fit.py). The ramp is what separates H200 from H100 in the measured tables.

That ramp grows with bandwidth. Where the KV stream is small its saving is smaller than the ramp's growth, and a
decode got slower with more bandwidth (A100, Llama-3.1-8B, 257 cached tokens, bandwidth doubled: 16.9 -> 17.5 us).
The kernel's time is therefore the least non-increasing time above that form: a split decode on a device below the
cap takes at least what the same kernel takes at the cap's bandwidth (its stream at that bandwidth, its ramp at the
cap). In the form max(bound, stream_bytes / b + pair) + ramp(b), convex in b below the cap and falling beyond it,
that is max(time at b, time at the cap) for b below the cap: more bandwidth is never slower. It lengthens only small
streams, where the tables time H100 and H200 alike (1-10 MB of KV, docs/accuracy.md "Decode attention, eighth step").
"""

from __future__ import annotations

from engine.common.float_or_array import maximum, where

# a decode context of more than this many cached values per head (tokens x head dim) is split over several CTAs per
# (sequence, KV head); on older tensor cores it pays a reduction (AttentionOverheads.decode_split_cycles). The Hopper
# tables step up ~5 us past 512 tokens at head dim 64, 256 at 128, 128 at 256, bf16 and fp8 alike (h/dattn6)
DECODE_SPLIT_VALUES = 32768
# the split-KV reduction's ramp (AttentionOverheads.decode_split_ramp_cycles) grows with the HBM bytes per core cycle,
# fitted on A100, H100 and H200 (13.4-19.9 B per core cycle); held at this beyond them, so a device or edit with more
# bandwidth per core (TPU-v5e's one core: 546) never pays a reduction the data never showed
DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE = 20.0


def split_seconds(rates, overheads, split, stream_bytes, pair_s, bound_s):
    """The split-KV reduction's seconds where `split` (0 elsewhere): (decode_split_cycles + decode_split_ramp_cycles
    x min(bandwidth / (cores x clock), the cap)) / clock, plus, on a device below the cap, what the kernel would take
    more at the cap's bandwidth: max(0, time at the cap - time at the device's bandwidth), each time being
    max(bound_s, stream_bytes / bandwidth + pair_s) + the reduction there.
    stream_bytes: the decode's bytes over its stream efficiency (its stream's seconds x bandwidth); pair_s: the
    per-(sequence, KV head) stream time added to it; bound_s: the kernel's bound that does not fall with bandwidth
    (its compute, the 8-bit conversion)."""
    core_hz = rates.cores * rates.clock_hz
    cap = DECODE_SPLIT_RAMP_MAX_BYTES_PER_CORE_CYCLE
    own_s = (overheads.decode_split_cycles
             + overheads.decode_split_ramp_cycles * min(rates.bandwidth / core_hz, cap)) / rates.clock_hz
    if rates.bandwidth >= cap * core_hz or overheads.decode_split_ramp_cycles <= 0.0:
        return where(split, own_s, 0.0)
    at_cap_s = (overheads.decode_split_cycles + overheads.decode_split_ramp_cycles * cap) / rates.clock_hz
    own = maximum(bound_s, stream_bytes / rates.bandwidth + pair_s) + own_s
    at_cap = maximum(bound_s, stream_bytes / (cap * core_hz) + pair_s) + at_cap_s
    return where(split, own_s + maximum(at_cap - own, 0.0), 0.0)
