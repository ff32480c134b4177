"""Fit the realistic method's fused-attention constants on the measured attention tables, leave-one-device-out.

The realistic fused attention (engine/estimators/fused_attention.py, realistic.fused_group_kernel_s) adds to
the flash kernel's tiled MACs and streamed bytes a few software constants, the same on every device
(RealisticConstants' attention block), whose seconds follow the workbook's fields:

    prefill   matrix rate       peak x achievable_matrix_fraction x attention_matrix_efficiency
              fixed work        (key-tile iterations x prefill_tile_cycles + CTAs x prefill_cta_cycles)
                                / (cores x clock)
              latency           attention_prefill_latency_s (fixed seconds)
    decode    KV stream         bandwidth x achievable_memory_bandwidth_fraction x decode_bandwidth_efficiency,
                                at most decode_stream_cap x bandwidth
              fixed work        (sequences x KV heads) x decode_cta_cycles / (cores x clock)
              latency           attention_decode_latency_s (fixed seconds)
              and the kernel-generation form (fused_attention._decode_terms: wide-KV, pair, split, generic MAC and
              8-bit kernel cycles, the wide groups' fragment share, the floors in cycles)

They are fitted by robust least squares on log(predicted / measured) (scipy.optimize.least_squares, soft-L1)
over the training devices' rows pooled; `leave_one_device_out` fits without device X and scores X. The model
is evaluated without rebuilding kernel tables: each device's fused-group inputs are extracted once.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from engine.estimators.fused_attention import AttentionOverheads, attention_groups
from engine.estimators.realistic import (DEFAULT_CONSTANTS, DeviceRates, fused_group_inputs,
                                         fused_group_kernel_s, per_core_matrix_rates,
                                         with_attention_matrix_efficiency)
from engine.estimators.roofline import estimate_roofline
from engine.estimators.row_groups import RowGroups
from engine.calibration.silicon.score import attention_kernels, measured_kernels, mla_kernels

FAMILIES = ("prefill_attention", "decode_attention", "prefill_mla", "decode_mla")
PHASE_OF = {"prefill_attention": "prefill_attention", "prefill_mla": "prefill_attention",
            "decode_attention": "decode_attention", "decode_mla": "decode_attention"}   # which constants time it
# per family: (constant name, lower bound, upper bound, start)
PARAMETERS = {
    "prefill_attention": (("attention_matrix_efficiency", 0.3, 2.0, 0.85), ("prefill_tile_cycles", 0.0, 5000.0, 100.0),
                          ("prefill_cta_cycles", 0.0, 50000.0, 1000.0),
                          ("attention_prefill_latency_s", 0.0, 50e-6, 6e-6), ("prefill_cta_rows_exponent", 0.0, 1.0, 0.3),
                          ("prefill_score_vector_flops", 0.0, 200.0, 5.0), ("prefill_cta_softmax_share", 0.0, 1.0, 0.3)),
    "decode_attention": (("decode_bandwidth_efficiency", 0.3, 2.0, 1.0), ("decode_cta_cycles", 0.0, 50000.0, 500.0),
                         ("attention_decode_latency_s", 0.0, 50e-6, 6e-6),
                         ("decode_wide_kv_cta_cycles", 0.0, 50000.0, 1000.0),
                         ("attention_decode_latency_cycles", 0.0, 100000.0, 15000.0),
                         ("decode_pair_bytes_per_core_cycle", 0.0, 100.0, 4.0),
                         ("decode_split_cycles", 0.0, 100000.0, 5000.0),
                         ("decode_generic_mac_cycles", 0.0, 1.0, 0.03),
                         ("decode_fragment_share", 0.0, 2.0, 0.2), ("decode_stream_cap", 0.5, 1.0, 0.93),
                         ("decode_fp8_cta_cycles", 0.0, 50000.0, 1800.0),
                         ("attention_decode_fp8_latency_cycles", 0.0, 100000.0, 11000.0),
                         ("decode_fp8_value_cycles", 0.0, 2.0, 0.09), ("decode_split_ramp_cycles", 0.0, 100000.0, 1000.0),
                         ("decode_fp8_fragment_share", 0.0, 2.0, 0.25)),
}
SCALE = {"attention_prefill_latency_s": 1e-6, "attention_decode_latency_s": 1e-6,
         "attention_decode_latency_cycles": 1e3, "decode_split_cycles": 1e3,
         "attention_decode_fp8_latency_cycles": 1e3}   # fit in microseconds


def constants_with(values: dict, base=DEFAULT_CONSTANTS):
    """`base` with the named attention constants replaced (AttentionOverheads fields or RealisticConstants)."""
    overhead_fields = AttentionOverheads.__dataclass_fields__
    overheads = replace(base.attention_overheads, **{k: v for k, v in values.items() if k in overhead_fields})
    return replace(base, attention_overheads=overheads, **{k: v for k, v in values.items() if k not in overhead_fields})


def shipped_values(family: str, constants=DEFAULT_CONSTANTS) -> dict:
    """The family's constants as `constants` holds them."""
    family = PHASE_OF[family]
    def value(name):
        return getattr(constants.attention_overheads, name) if hasattr(constants.attention_overheads, name) \
            else getattr(constants, name)
    return {name: value(name) for name, *_ in PARAMETERS[family]}


def uncalibrated(family: str) -> dict:
    """The constants before this fit: efficiency 0.85 (prefill) / 1 (decode), no fixed work, no extra latency (decode:
    none of the kernel-generation terms; the generic kernel's MAC cycles are kept)."""
    family = PHASE_OF[family]
    return {"attention_matrix_efficiency": 0.85, "prefill_tile_cycles": 0.0, "prefill_cta_cycles": 0.0,
            "prefill_cta_rows_exponent": 0.0,
            "attention_prefill_latency_s": None, "decode_bandwidth_efficiency": 1.0, "decode_cta_cycles": 0.0,
            "attention_decode_latency_s": None} if family == "prefill_attention" else \
        {"decode_bandwidth_efficiency": 1.0, "decode_cta_cycles": 0.0, "attention_decode_latency_s": None,
         "decode_wide_kv_cta_cycles": 0.0, "decode_pair_bytes_per_core_cycle": 0.0, "decode_split_cycles": 0.0,
         "attention_decode_latency_cycles": None, "decode_fragment_share": 0.0, "decode_stream_cap": 1.0,
         "decode_fp8_cta_cycles": None, "attention_decode_fp8_latency_cycles": None, "decode_fp8_value_cycles": 0.0, "decode_split_ramp_cycles": 0.0,
         "decode_fp8_fragment_share": 0.0}


def fit_rows(family: str, devices: dict, root=None, rows_per_device: int = 4000, seed: int = 0) -> pd.DataFrame:
    """A fixed random sample of the family's trtllm measurements (full attention) per workbook device."""
    frame = measured_kernels(family, root, "trtllm")
    frame = frame[frame["device"].isin(list(devices))]
    parts = [rows.sample(n=min(rows_per_device, len(rows)), random_state=seed) for _, rows in frame.groupby("device")]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


class DeviceAttention:
    """One device's attention measurements: the fused groups' inputs, extracted once, and the measured times."""

    def __init__(self, rows: pd.DataFrame, hardware, family: str):
        self.rows = rows.reset_index(drop=True)
        kernels = mla_kernels if family.endswith("_mla") else attention_kernels
        columns, index = kernels(self.rows, decode=family.startswith("decode"))
        out = estimate_roofline(columns, hardware)
        self.rates = DeviceRates.of(hardware)
        row_groups = RowGroups(out)
        per_core = per_core_matrix_rates(out, row_groups, hardware, self.rates)
        self.inputs = fused_group_inputs(out, attention_groups(out, row_groups), row_groups, self.rates, per_core,
                                         DEFAULT_CONSTANTS)
        self.measurement = index[self.inputs.lead]       # the measurement of each fused group
        self.measured = self.rows["time_s"].to_numpy(dtype=float)[self.measurement]

    def predicted(self, values: dict, mla=None) -> np.ndarray:
        """The device times with the shared constants `values` (over DEFAULT_CONSTANTS) and MLA's constants `mla`
        (mla_attention.MlaAttention; None: MLA kernels timed with the shared ones), as realistic times them."""
        constants = replace(constants_with(values), mla_attention=mla)
        inputs = with_attention_matrix_efficiency(self.inputs, self.rates, constants.attention_matrix_efficiency)
        return fused_group_kernel_s(inputs, self.rates, constants)[1]

    def errors(self, values: dict, mla=None) -> pd.DataFrame:
        """The measurement rows (in group order) with predicted_s and error (`predicted`'s arguments)."""
        predicted = self.predicted(values, mla)
        return self.rows.iloc[self.measurement].assign(predicted_s=predicted, error=predicted / self.measured - 1.0)


def fit_family(groups: list, family: str) -> dict:
    """The family's constants (those of its phase, PHASE_OF) minimising the pooled soft-L1 loss of
    log(predicted / measured) over `groups` (DeviceAttention of any families of that phase)."""
    spec = PARAMETERS[PHASE_OF[family]]
    scale = np.array([SCALE.get(name, 1.0) for name, *_ in spec])
    def residuals(x):
        values = dict(zip([s[0] for s in spec], x * scale))
        return np.concatenate([np.log(g.predicted(values) / g.measured) for g in groups])
    start = np.array([s[3] for s in spec]) / scale
    bounds = (np.array([s[1] for s in spec]) / scale, np.array([s[2] for s in spec]) / scale)
    result = least_squares(residuals, start, bounds=bounds, loss="soft_l1", f_scale=0.1, x_scale="jac")
    return dict(zip([s[0] for s in spec], [float(v) for v in result.x * scale]))


def device_groups(rows: pd.DataFrame, devices: dict, family: str) -> dict:
    return {device: DeviceAttention(part, devices[device], family) for device, part in rows.groupby("device")}


def leave_one_device_out(groups: dict, family: str, training: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """Tidy errors per measurement of every device of `groups` ({device: DeviceAttention} of `family`) under
    `before` (uncalibrated), `lodo` (fitted on `training`, default `groups`, without the device: the MLA families
    are scored with the constants fitted on the attention tables of their phase) and `shipped`
    (DEFAULT_CONSTANTS, MLA's kernels with its shipped constants, in-sample); and {device: the lodo constants}."""
    training = groups if training is None else training
    parts, fitted = [], {}
    for device, held_out in groups.items():
        fitted[device] = fit_family([g for d, g in training.items() if d != device], family)
        for label, values, mla in (("before", uncalibrated(family), None), ("lodo", fitted[device], None),
                                   ("shipped", shipped_values(family), DEFAULT_CONSTANTS.mla_attention)):
            parts.append(held_out.errors(values, mla).assign(family=family, model=label))
    return pd.concat(parts, ignore_index=True), fitted
