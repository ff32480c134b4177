"""Fit the realistic method's MoE constants on the measured MoE tables, leave-one-device-out.

engine/calibration/silicon/score.py times one MoE measurement as the routed experts engine/decomposition/moe.py builds
(the routing MoE_topk, grouped GEMMs Expert_up [, Expert_gate], Expert_down over the active experts, the activation,
the combine), routed as the collector routes balanced rows (moe_routing.py). Software constants, the same on every
device (RealisticConstants), each a count of core cycles or a fraction of a workbook rate:

    weight stream     bandwidth x min(1, achievable_memory_bandwidth_fraction x moe_bandwidth_efficiency)
    grouped launch    + moe_group_cycles x experts held / clock, per Expert_* row
                      (block-scaled fp8: moe_group_format_cycles["fp8_g128"] instead)
    routing           MoE_topk: + topk x log2(E) x moe_topk_step_cycles / clock
    layer             MoE_combine: + moe_layer_latency_s (the unlisted permute / finalize launches); the gate GEMM
                      shares Expert_up's launch (moe_fused_gate_launch)
    permutation       MoE_combine: + (2 x pairs x hidden x moe_combine_flop_cycles
                                      + tokens x hidden x moe_combine_token_cycles) / (cores x clock)
    quantization      fused into the permutation (moe_fused_quantize): no quantize kernel per grouped GEMM, but its
                      bytes (moe_fused_quantize_bytes: pairs x (hidden + inner) x 3 B at the achievable bandwidth)
    grouped latency   moe_gemm_latency_s per Expert_* row (the tables' condition: conditions.moe_table_constants;
                      estimate and serve keep the device's kernel_latency)
    power             moe_power_capped: the dense GEMMs' board-power cap on grouped GEMMs or not (POWER_GRID)
    block-scaled      matrix rate x moe_block_scaled_efficiency (fp8_g128 experts on devices without an fp4 rate)

The engine is evaluated once per device, bandwidth efficiency (BANDWIDTH_GRID) and power cap with the cycle terms and
the grouped latency at 0; the
cycle terms are added per measurement as the engine adds them (`terms`: latency and stream parts that add to the
kernel's time), so the grid of CYCLE_GRID points costs no re-evaluation. A fit picks the point minimising median
|error| + P90_WEIGHT x p90 |error| (moe_objective) over the training devices' rows pooled; the held-out
device is then scored by the engine itself at that point (`leave_one_device_out`).
"""

from __future__ import annotations

from dataclasses import replace
import itertools

import numpy as np
import pandas as pd

from engine.calibration.silicon.conditions import moe_table_constants
from engine.calibration.silicon.moe_routing import balanced_routing
from engine.calibration.silicon.score import measured_kernels, predicted_seconds
from engine.estimators.realistic import DEFAULT_CONSTANTS, device_rates
from engine.hardware.dtypes import gemm_dtype

FIT_DTYPES = ("bf16", "fp8", "fp8_g128")        # weights = activations; the 4-bit tables are scored, not fitted
BANDWIDTH_GRID = (0.95, 1.0)
POWER_GRID = (True, False)          # grouped GEMMs under the board-power cap or not (moe_power_capped)
# block-scaled grouped GEMMs' matrix rate on devices without a microscaled format (moe_block_scaled_efficiency)
BLOCK_EFFICIENCY_GRID = (0.4, 0.5, 0.6, 1.0)
# (combine cycles per vector FLOP, per token x hidden, group cycles per expert held (block-scaled fp8: group_block),
# top-k cycles per reduction step)
# and the MoE layer's fixed time on MoE_combine (layer, seconds)
CYCLE_GRID = {"combine": (0.25, 0.3), "token": (0.3, 0.4), "group": (25.0, 50.0), "group_block": (150.0, 200.0),
              "topk": (75.0, 100.0), "layer": (4e-6, 5e-6, 6e-6, 7e-6, 8e-6)}
# the grouped GEMM's fixed time in the tables' condition (moe_gemm_latency_s, conditions.MOE_TABLE_GEMM_LATENCY_S)
LATENCY_GRID = (5.5e-6, 6.0e-6, 6.375e-6, 7.25e-6)
BLOCK_SCALED = "fp8_g128"          # the format with its own group cycles (RealisticConstants.moe_group_format_cycles)
TOKEN_BUCKETS = (0, 1, 4, 16, 64, 256, np.inf)     # (token, expert) pairs per active expert
TOKEN_LABELS = ("<=1", "1-4", "4-16", "16-64", "64-256", ">256")
P90_WEIGHT = 0.1        # engine.calibration.fit.objective weighs the p90 0.5: here it picked floors that cost medians
BEFORE = dict(bandwidth=1.0, power=True, block_efficiency=1.0, latency=None, combine=0.0, token=0.0, group=0.0,
              group_block=0.0, topk=0.0, layer=0.0)


def fit_rows(devices: dict, root=None, rows_per_device: int = 1000, seed: int = 0) -> pd.DataFrame:
    """A fixed random sample of the trtllm MoE measurements (balanced routing, FIT_DTYPES) per workbook device."""
    frame = measured_kernels("moe", root, "trtllm")
    frame = frame[frame["device"].isin(list(devices)) & frame["weight_dtype"].isin(FIT_DTYPES)
                  & (frame["weight_dtype"] == frame["activation_dtype"])]
    parts = [rows.sample(n=min(rows_per_device, len(rows)), random_state=seed) for _, rows in frame.groupby("device")]
    frame = pd.concat(parts, ignore_index=True) if parts else frame
    pairs, active, _ = balanced_routing(frame["tokens"], frame["experts"], frame["topk"], frame["moe_ep"])
    per_expert = pairs / np.maximum(active, 1.0)
    return frame.assign(tokens_per_expert=per_expert,
                        tokens_bucket=pd.cut(per_expert, TOKEN_BUCKETS, labels=TOKEN_LABELS))


def constants_with(point: dict, base=DEFAULT_CONSTANTS):
    """RealisticConstants with `point`'s MoE values (keys of BEFORE); fused quantization and additive cycles on."""
    latency = point["latency"]
    return replace(base, moe_bandwidth_efficiency=float(point["bandwidth"]), moe_power_capped=bool(point["power"]),
                   moe_block_scaled_efficiency=float(point["block_efficiency"]),
                   moe_gemm_latency_s=None if latency is None else float(latency),
                   moe_combine_flop_cycles=float(point["combine"]), moe_combine_token_cycles=float(point["token"]),
                   moe_group_cycles=float(point["group"]), moe_topk_step_cycles=float(point["topk"]),
                   moe_group_format_cycles={BLOCK_SCALED: float(point["group_block"])},
                   moe_layer_latency_s=float(point["layer"]), moe_fused_gate_launch=True,
                   moe_combine_cycles_add=True, moe_fused_quantize=True)


def plain_constants(base=DEFAULT_CONSTANTS):
    """No MoE constants: grouped GEMMs timed as plain GEMMs (each with its quantize kernel), a plain combine."""
    return replace(constants_with(BEFORE, base), moe_fused_quantize=False, moe_combine_cycles_add=False,
                   moe_fused_quantize_bytes=False, moe_fused_gate_launch=False)


def shipped_point(constants=None) -> dict:
    constants = moe_table_constants(constants)
    return dict(bandwidth=constants.moe_bandwidth_efficiency, power=constants.moe_power_capped,
                block_efficiency=constants.moe_block_scaled_efficiency,
                latency=constants.moe_gemm_latency_s, combine=constants.moe_combine_flop_cycles,
                token=constants.moe_combine_token_cycles, group=constants.moe_group_cycles,
                group_block=constants.moe_group_format_cycles.get(BLOCK_SCALED, constants.moe_group_cycles),
                topk=constants.moe_topk_step_cycles, layer=constants.moe_layer_latency_s)


def terms(part: pd.DataFrame, hardware) -> dict:
    """Per measurement, the seconds each cycle constant adds per unit (the engine's formulas, score.py's rows)."""
    gated = ~part["kernel_source"].astype(str).str.endswith("nongated").to_numpy()
    tokens, hidden, topk, experts, ep = (part[c].to_numpy(dtype=float) for c in ("tokens", "hidden", "topk",
                                                                                  "experts", "moe_ep"))
    pairs, _, _ = balanced_routing(tokens, experts, topk, ep)
    cores_clock = hardware.num_cores * hardware.clock_hz
    block = np.array([gemm_dtype(w, a) == BLOCK_SCALED for w, a in zip(part["weight_dtype"], part["activation_dtype"])],
                     dtype=bool)
    held = experts / ep * np.where(gated, 3.0, 2.0) / hardware.clock_hz
    return {"latency": np.full(len(part), 2.0), "layer": np.ones(len(part)),    # up (+ gate, one launch), down
            "combine": 2.0 * pairs * hidden / cores_clock, "token": tokens * hidden / cores_clock,
            "group": np.where(block, 0.0, held), "group_block": np.where(block, held, 0.0),
            "topk": topk * np.log2(experts) / hardware.clock_hz}


def grid_predictions(rows: pd.DataFrame, devices: dict) -> dict:
    """{device: ({(bandwidth, power): the engine's seconds with the cycle terms and the grouped GEMM latency at 0},
    terms, measured seconds, the device's kernel latency)}."""
    out = {}
    for device, part in rows.groupby("device", sort=True):
        part = part.reset_index(drop=True)
        microscaled = "fp4" in devices[device].matrix_dtypes     # the block-scaled factor does not apply
        base = {}
        for b, p, e in itertools.product(BANDWIDTH_GRID, POWER_GRID, BLOCK_EFFICIENCY_GRID):
            same = (b, p, BLOCK_EFFICIENCY_GRID[0])
            base[(b, p, e)] = base[same] if microscaled and same in base else predicted_seconds(
                part, "moe", devices[device], "realistic",
                constants_with({**BEFORE, "bandwidth": b, "power": p, "block_efficiency": 1.0 if microscaled else e,
                                "latency": 0.0}))
        out[device] = (base, terms(part, devices[device]), part["time_s"].to_numpy(dtype=float),
                       device_rates(devices[device]).kernel_latency_s)
    return out


def _surrogate(entry, point: dict) -> np.ndarray:
    base, unit, _, kernel_latency = entry
    latency = kernel_latency if point["latency"] is None else point["latency"]
    return (base[(point["bandwidth"], point["power"], point["block_efficiency"])] + latency * unit["latency"]
            + sum(point[name] * unit[name] for name in CYCLE_GRID))


def best_point(predictions: dict, training: list) -> dict:
    """The grid point minimising the pooled objective over `training` devices."""
    names = list(CYCLE_GRID)
    truth = np.concatenate([predictions[d][2] for d in training])
    points = [dict(zip(["bandwidth", "power", "block_efficiency", "latency"] + names, values))
              for values in itertools.product(BANDWIDTH_GRID, POWER_GRID, BLOCK_EFFICIENCY_GRID, LATENCY_GRID,
                                              *(CYCLE_GRID[n] for n in names))]
    return min(points, key=lambda p: moe_objective(np.concatenate([_surrogate(predictions[d], p) for d in training]),
                                                   truth))


def moe_objective(predicted: np.ndarray, measured: np.ndarray) -> float:
    """Median |error| + p90 |error| x P90_WEIGHT (the target is the median; the tail only breaks ties)."""
    error = np.abs(predicted / measured - 1.0)
    return float(np.median(error) + P90_WEIGHT * np.quantile(error, 0.9))


def leave_one_device_out(rows: pd.DataFrame, devices: dict, predictions: dict | None = None,
                         training=None) -> tuple[pd.DataFrame, dict]:
    """Tidy errors per measurement under `before` (plain_constants: grouped GEMMs as plain GEMMs), `lodo` (the
    point fitted without the device, on the devices of `training`, default every one, timed by the engine) and
    `shipped` (DEFAULT_CONSTANTS, the engine); and {device: the lodo point}."""
    predictions = predictions or grid_predictions(rows, devices)
    parts, fitted = [], {}
    for device, part in rows.groupby("device", sort=True):
        part = part.reset_index(drop=True)
        fitted[device] = best_point(predictions, [d for d in predictions
                                                  if d != device and (training is None or d in training)])
        measured = predictions[device][2]
        for label, constants in (("before", plain_constants()), ("lodo", constants_with(fitted[device])),
                                 ("shipped", moe_table_constants(DEFAULT_CONSTANTS))):
            seconds = predicted_seconds(part, "moe", devices[device], "realistic", constants)
            parts.append(part.assign(model=label, predicted_s=seconds, error=seconds / measured - 1.0))
    return pd.concat(parts, ignore_index=True), fitted


def fit_all(rows: pd.DataFrame, devices: dict, predictions: dict | None = None) -> dict:
    """The point fitted on every device (the values to ship)."""
    predictions = predictions or grid_predictions(rows, devices)
    return best_point(predictions, list(predictions))
