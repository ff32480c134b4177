"""MLA attention's own constants, fitted on the measured MLA tables, leave-one-device-out; shipped in realistic.

The MLA families (DeepSeek-V3's attention core, engine/calibration/silicon/score.py's mla_kernels) are timed by the
realistic fused attention (attention_fit.DeviceAttention); attention_fit scores them with the constants fitted on
the MHA / GQA tables. Here the same model takes MLA values of a few of those constants, fitted on MLA rows on top
of the fold's attention constants, plus three MLA terms the shared model lacks (the tables, model-free: latent
decode reaches 0.92 of the peak bandwidth on Hopper and 0.71 on Blackwell over a 16-bit cache; its floor is
~13 us on Hopper and ~9 us on Blackwell; Hopper's 8-bit latent cache streams at ~3 TB/s on H100 and H200 alike):

    prefill  attention_matrix_efficiency, prefill_cta_cycles, prefill_tile_cycles, attention_prefill_latency_s,
             prefill_score_vector_flops (the MLA fits leave ~0: no softmax work beyond the matrix rate), and
             mla_prefill_fp8_matrix_efficiency, mla_prefill_fp8_cta_cycles   the same two for an 8-bit cache on a
                                           device whose matrix units take fp8 (the tables: slower than the 16-bit
                                           kernel up to ~8k tokens on Hopper and Blackwell, faster beyond on Blackwell)
             mla_prefill_largest_cta_share  beyond one wave of query-tile CTAs, the share of the largest CTA added to
                                           the cores' mean work (CTAs of unequal causal spans listed over the cores:
                                           flash_prefill.prefill_work; the tables: 2-4 waves were -12% fast)
    decode   decode_bandwidth_efficiency, decode_stream_cap, decode_pair_bytes_per_core_cycle, decode_cta_cycles
             (the shared model's terms: the latent stream, a per-sequence share, per-sequence cycles), and
             mla_decode_latency_s          the floor on a device whose matrix units take fp4 (fifth generation)
             mla_decode_latency_cycles     the floor at the clock elsewhere
             mla_decode_fp8_value_cycles   core cycles per latent value of an 8-bit cache on a device whose matrix
                                           units take fp8 and not fp4 (the conversion), a bound beside the stream
    time = floor + max(the shared model's time without its latency, latent values x fp8 cycles / (cores x clock))

A device whose cores cannot hold the split-context kernels' tiles (mla_attention.split_decode: the workbook's
sram_per_core below 221,184 B; A100, L40S, RTX PRO 6000) runs another MLA decode kernel (the tables: time flat in
query heads up to 64 and in the batch from 1 to ~32 sequences, proportional to the context, ~120 ns per cached token
per sequence on A100: no split over the context, one CTA per sequence per core; an 8-bit cache as slow as a 16-bit
one). Decode folds train the split constants on the other devices only (mla_decode_trains) and the one-core
constants (decode_mla_one_core: value_cycles, cta_share, bandwidth_efficiency, floor_cycles) on the devices that run
it. A100 is the only training device that runs it, so its leave-one-device-out fit cannot learn it (scored with the
split constants, and it misses); the shipped one-core constants are fitted on A100's rows (in-sample there), and L40S
and the RTX PRO 6000, not training devices, are scored with them as devices known only from the workbook.

The model lives in the engine (engine/estimators/mla_attention.py, through realistic_fused.fused_group_kernel_s):
predicted_s times the tables' rows with it, so what is scored here is what realistic and serve run; the constants
fitted on every device are shipped there (SHIPPED_MLA; FITTED_MLA below is the same values by name).
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from engine.calibration.silicon.attention_fit import DeviceAttention
from engine.estimators.mla_attention import (SHIPPED_MLA, MlaAttention, MlaDecode, MlaOneCoreDecode, MlaPrefill,
                                             decode_floor_s, split_decode)
from engine.calibration.silicon.score import MLA_DIMS

LATENT = MLA_DIMS["kv_lora_rank"] + MLA_DIMS["qk_rope_head_dim"]     # latent channels cached per token (576)
# per family: (constant, lower bound, upper bound, start); "mla_" constants are this module's, the others the
# shared model's (RealisticConstants / AttentionOverheads) taking MLA values
MLA_PARAMETERS = {
    "prefill_mla": (("attention_matrix_efficiency", 0.3, 2.0, 0.8), ("prefill_cta_cycles", 0.0, 50000.0, 10000.0),
                    ("prefill_tile_cycles", 0.0, 5000.0, 10.0), ("attention_prefill_latency_s", 0.0, 50e-6, 15e-6),
                    ("prefill_score_vector_flops", 0.0, 200.0, 5.0), ("mla_prefill_fp8_matrix_efficiency", 0.2, 2.0, 0.6),
                    ("mla_prefill_fp8_cta_cycles", 0.0, 100000.0, 20000.0),
                    ("mla_prefill_largest_cta_share", 0.0, 2.0, 0.5)),
    "decode_mla": (("decode_bandwidth_efficiency", 0.3, 2.0, 1.0), ("decode_stream_cap", 0.5, 1.0, 0.9),
                   ("decode_pair_bytes_per_core_cycle", 0.0, 100.0, 14.0), ("decode_cta_cycles", 0.0, 50000.0, 2000.0),
                   ("mla_decode_latency_s", 0.0, 50e-6, 9e-6), ("mla_decode_latency_cycles", 0.0, 100000.0, 20000.0),
                   ("mla_decode_fp8_value_cycles", 0.0, 2.0, 0.1)),
    # the one-core kernel of a device whose cores cannot hold the split-context kernels' tiles (mla_attention.py)
    "decode_mla_one_core": (("value_cycles", 0.01, 2.0, 0.3), ("cta_share", 0.05, 4.0, 0.7),
                            ("bandwidth_efficiency", 0.1, 1.0, 0.8), ("floor_cycles", 0.0, 100000.0, 10000.0)),
}
# shipped in realistic and serve (engine/estimators/mla_attention.SHIPPED_MLA: fitted on every device's rows, 2,000
# per device, attention_fit.fit_rows; decode: devices with an fp8 matrix rate, over the shipped attention constants)
FITTED_MLA = {"decode_mla": asdict(SHIPPED_MLA.decode), "prefill_mla": asdict(SHIPPED_MLA.prefill),
              "decode_mla_one_core": asdict(SHIPPED_MLA.one_core_decode)}
SCALE = {"floor_cycles": 1e3,
         "attention_prefill_latency_s": 1e-6, "mla_decode_latency_s": 1e-6, "mla_decode_latency_cycles": 1e3,
         "prefill_cta_cycles": 1e3, "decode_cta_cycles": 1e3, "mla_prefill_fp8_cta_cycles": 1e3}


def mla_decode_trains(group: DeviceAttention) -> bool:
    """Whether a device's MLA decode rows train the (split-context) MLA decode constants: its cores hold the split
    kernels' tiles (mla_attention.split_decode: Hopper and data-center Blackwell; the others run the one-core kernel,
    decode_mla_one_core)."""
    return split_decode(group.rates)


def mla_decode_floor_s(values: dict, rates) -> float:
    """The MLA decode kernel's fixed time on a device: seconds where the matrix units take fp4, else cycles at the clock."""
    return decode_floor_s(MlaDecode(**values), rates)


def mla_constants(family: str, values: dict) -> MlaAttention:
    """The engine's MLA constants of `family` from `values` (its MLA_PARAMETERS' names)."""
    if family == "prefill_mla":
        return MlaAttention(prefill=MlaPrefill(**values))
    if family == "decode_mla_one_core":
        return MlaAttention(decode=SHIPPED_MLA.decode, one_core_decode=MlaOneCoreDecode(**values))
    return MlaAttention(decode=MlaDecode(**values))


def predicted_s(group: DeviceAttention, family: str, values: dict, base: dict) -> np.ndarray:
    """Per measurement of `group` (in its group order), the MLA time with `values` over the attention constants `base`,
    as realistic times it (engine/estimators/mla_attention.py, through realistic_fused.fused_group_kernel_s)."""
    return group.predicted(base, mla_constants(family, values))


def fit_mla(groups: list, family: str, base: dict, free=None, held: dict | None = None) -> dict:
    """The MLA constants minimising the pooled soft-L1 loss of log(predicted / measured) over `groups`; `free` (default
    all) names those fitted, the others kept at `held`'s values."""
    spec = [s for s in MLA_PARAMETERS[family] if free is None or s[0] in free]
    names = [s[0] for s in spec]
    scale = np.array([SCALE.get(name, 1.0) for name in names])

    def residuals(x):
        values = {**(held or {}), **dict(zip(names, x * scale))}
        return np.concatenate([np.log(predicted_s(g, family, values, base) / g.measured) for g in groups])
    start = np.array([s[3] for s in spec]) / scale
    bounds = (np.array([s[1] for s in spec]) / scale, np.array([s[2] for s in spec]) / scale)
    result = least_squares(residuals, start, bounds=bounds, loss="soft_l1", f_scale=0.1, x_scale="jac")
    return {**(held or {}), **dict(zip(names, [float(v) for v in result.x * scale]))}


def training_groups(groups: dict, family: str, left_out: str | None) -> list:
    """The devices that train `family`'s MLA constants without `left_out` (decode: mla_decode_trains only; the
    one-core decode: the others)."""
    if family == "decode_mla_one_core":
        return [g for d, g in groups.items() if d != left_out and not mla_decode_trains(g)]
    return [g for d, g in groups.items() if d != left_out and (family == "prefill_mla" or mla_decode_trains(g))]


def leave_one_device_out(groups: dict, family: str, bases: dict,
                         training: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """Tidy errors per measurement of every device of `groups` ({device: DeviceAttention} of `family`) under
    `lodo_mla` (MLA constants fitted on `training`, default `groups`, without the device, over `bases[device]`, the
    attention constants fitted without it); and {device: the lodo MLA constants}. A device that runs the one-core MLA
    decode kernel is scored with it, fitted on the other training devices that run it; where none does (A100 among
    the seven HBM GPUs), with the split kernels' constants: what a left-out fit can do."""
    training = groups if training is None else training
    parts, fitted = [], {}
    for device, held_out in groups.items():
        base = bases[device]
        kernel = family
        if family == "decode_mla" and not mla_decode_trains(held_out) and \
                training_groups(training, "decode_mla_one_core", device):
            kernel = "decode_mla_one_core"       # the one-core kernel, fitted on the other devices that run it
        fitted[device] = fit_mla(training_groups(training, kernel, device), kernel, base)
        predicted = predicted_s(held_out, kernel, fitted[device], base)
        rows = held_out.rows.iloc[held_out.measurement]
        parts.append(rows.assign(predicted_s=predicted, error=predicted / held_out.measured - 1.0, family=family,
                                 model="lodo_mla"))
    return pd.concat(parts, ignore_index=True), fitted


__all__ = ["FITTED_MLA", "LATENT", "MLA_PARAMETERS", "fit_mla", "leave_one_device_out", "mla_constants",
           "mla_decode_floor_s", "mla_decode_trains", "predicted_s", "training_groups"]
