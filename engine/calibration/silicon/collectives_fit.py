"""Fit and score engine.estimators.collectives' timing model on aiconfigurator's measured NCCL / custom all-reduce tables.

    frame = measured_collectives()                      # NCCL rows of every device the workbook has
    constants = fit_constants(frame)                    # CollectiveConstants (engine/estimators/collectives.py)
    scores(frame, predict(frame, constants))            # median / p90 |pred/meas - 1| and bias per group
    leave_one_device_out(frame)                         # fit without device X, score X

Every prediction reads only the workbook's link fields (engine.estimators.collectives.LinkFields) and the
constants, never a device name. `previous_model_seconds` is the model before calibration
(link_bytes / B + ring hops x 1 us) for the before/after table. Needs scipy (the `calibration` extra).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from engine.estimators.collectives import FITTED_KINDS, CollectiveConstants, LinkFields, collective_seconds
from engine.calibration.silicon.tables import collective_table
from engine.hardware.specs import load_specs

MESSAGE_BUCKETS = (0, 2 ** 13, 2 ** 17, 2 ** 21, 2 ** 25, np.inf)
BUCKET_LABELS = ("<=8K", "8K-128K", "128K-2M", "2M-32M", ">32M")
STARTING_POINT = CollectiveConstants((5e-6,) * 4, 1e-6, (0.8,) * 4, 0.5, 0.5)
# a_kind (us at 1 GHz), hop (us at 1 GHz), e_kind, c, r, latency LLC share (engine.estimators.collectives)
LOWER = np.array([0.0] * 4 + [0.0] + [0.05] * 4 + [0.0, 0.0] + [0.0])
UPPER = np.array([50.0] * 4 + [10.0] + [1.0] * 4 + [0.99, 10.0] + [10.0])   # c < 1: more devices never faster
# the latency is cycles at the device clock (not fitted: a free exponent fits 1.5 and loses A100 left out), spread
# over the device's cores (not fitted: the aggregate core cycles A100 left out is predicted from at 7% median, where
# the clock alone gave 17%)
LATENCY_CLOCK_EXPONENT = 1.0
LATENCY_CORES_EXPONENT = 1.0


def measured_collectives(root=None, systems=None, implementations=("nccl",), specs=None) -> pd.DataFrame:
    """Measured collectives of the devices the workbook has, with their link fields as columns
    (up_bandwidth, up_latency, per_node, net_bandwidth, net_latency; NaN where blank)."""
    frame = collective_table(root, systems)
    frame = frame[frame["device"].notna()]
    if implementations is not None:
        frame = frame[frame["implementation"].isin(implementations)]
    specs = specs or load_specs()
    missing = sorted(set(frame["device"]) - set(specs))
    if missing:
        raise KeyError(f"measured collectives name device(s) {missing} that the workbook lacks")
    rows = {name: _fields_row(specs[name]) for name in set(frame["device"])}
    fields = pd.DataFrame([rows[name] for name in frame["device"]], index=frame.index)
    out = pd.concat([frame, fields], axis=1)
    out["bucket"] = pd.cut(out["message_bytes"], MESSAGE_BUCKETS, labels=BUCKET_LABELS, right=True)
    return out.reset_index(drop=True)


def _fields_row(hardware) -> dict:
    def value(v):
        return np.nan if v is None else float(v)
    up = value(hardware.link_bandwidth_bytes_per_s) * value(hardware.num_links)
    return {"up_bandwidth": up, "up_latency": value(hardware.link_latency_s),
            "per_node": value(hardware.devices_per_node),
            "net_bandwidth": min(value(hardware.inter_node_bandwidth_bytes_per_s), up),
            "net_latency": value(hardware.inter_node_latency_s), "clock_hz": value(hardware.clock_hz),
            "llc_mib": value(hardware.llc_capacity_bytes) / 2 ** 20, "cores": value(hardware.num_cores)}


def predict(frame: pd.DataFrame, constants: CollectiveConstants, custom_all_reduce: bool = False) -> np.ndarray:
    """Seconds the calibrated model gives every row (vectorized per collective kind); NCCL alone, or with
    custom_all_reduce the faster of NCCL and the frameworks' custom all-reduce (the engine's choice)."""
    out = np.full(len(frame), np.nan)
    for kind in FITTED_KINDS:
        mine = (frame["op"] == kind).to_numpy()
        if mine.any():
            part = frame[mine]
            fields = LinkFields(*(part[c].to_numpy(dtype=float) for c in
                                  ("up_bandwidth", "up_latency", "per_node", "net_bandwidth", "net_latency",
                                   "clock_hz", "llc_mib", "cores")))
            out[mine] = collective_seconds(kind, part["message_bytes"].to_numpy(float),
                                           part["group_size"].to_numpy(float), fields, "ring", constants,
                                           custom_all_reduce)
    return out


PREVIOUS_HOP_S = 1e-6       # the model before calibration: 1 us per NVLink hop, all-to-all n - 1 hops


def previous_model_seconds(frame: pd.DataFrame) -> np.ndarray:
    """The model before calibration: ring link_bytes / scale-up bandwidth + ring hops x 1 us
    (every measured group fits in one node)."""
    n = frame["group_size"].to_numpy(float)
    op = frame["op"].to_numpy()
    factor = np.where(op == "all_reduce", 2 * (n - 1) / n, (n - 1) / n)
    steps = np.where(op == "all_reduce", 2 * (n - 1), n - 1)
    return factor * frame["message_bytes"].to_numpy(float) / frame["up_bandwidth"].to_numpy(float) \
        + steps * PREVIOUS_HOP_S


def scores(frame: pd.DataFrame, predicted, by=("device", "op")) -> pd.DataFrame:
    """Median and p90 of |pred/meas - 1|, the median signed error (bias) and the row count per group."""
    ratio = pd.Series(np.asarray(predicted) / frame["time_s"].to_numpy(float) - 1, index=frame.index)
    groups = ratio.groupby([frame[c] for c in by], observed=True)
    return pd.DataFrame({"median": groups.apply(lambda r: np.median(np.abs(r))),
                         "p90": groups.apply(lambda r: np.percentile(np.abs(r), 90)),
                         "bias": groups.median(), "rows": groups.size()})


def _pack(c: CollectiveConstants) -> np.ndarray:
    return np.array([*np.array(c.base_latency_s) * 1e6, c.hop_latency_s * 1e6, *c.bandwidth_fraction,
                     c.small_group_loss, c.pipeline_cross, c.latency_llc_share])


def _unpack(p) -> CollectiveConstants:
    p = [float(x) for x in p]
    return CollectiveConstants(tuple(x * 1e-6 for x in p[0:4]), p[4] * 1e-6, tuple(p[5:9]), p[9], p[10],
                               latency_clock_exponent=LATENCY_CLOCK_EXPONENT, latency_llc_share=p[11],
                               latency_cores_exponent=LATENCY_CORES_EXPONENT)


def fit_constants(frame: pd.DataFrame, start: CollectiveConstants = STARTING_POINT) -> CollectiveConstants:
    """Least squares on log(pred / meas), each device weighted alike (1 / sqrt(its rows))."""
    from scipy.optimize import least_squares
    if frame.empty:
        raise ValueError("no measured collectives to fit")
    rows = frame["device"].map(frame["device"].value_counts()).to_numpy(float)
    weight, measured = 1 / np.sqrt(rows), frame["time_s"].to_numpy(float)

    def residuals(p):
        return np.log(predict(frame, _unpack(p)) / measured) * weight
    solution = least_squares(residuals, np.clip(_pack(start), LOWER, UPPER), bounds=(LOWER, UPPER))
    return _unpack(solution.x)


CUSTOM_GRAPHED = ("trtllm", "vllm_graph", "sglang_graph")   # custom all-reduce under CUDA graphs (serving)


def fit_custom_all_reduce(frame: pd.DataFrame, constants: CollectiveConstants) -> CollectiveConstants:
    """Fit a_custom and e_custom on custom all-reduce rows (NCCL constants kept): least squares on
    log(min(NCCL, custom) / meas), each device weighted alike."""
    from scipy.optimize import least_squares
    rows = frame["device"].map(frame["device"].value_counts()).to_numpy(float)
    weight, measured = 1 / np.sqrt(rows), frame["time_s"].to_numpy(float)

    def with_custom(p):
        return dataclasses.replace(constants, custom_latency_s=p[0] * 1e-6, custom_fraction=p[1])

    def residuals(p):
        return np.log(predict(frame, with_custom(p), custom_all_reduce=True) / measured) * weight
    start = [constants.custom_latency_s * 1e6, constants.custom_fraction]
    return with_custom(least_squares(residuals, start, bounds=([0.0, 0.05], [50.0, 2.0])).x)


def leave_one_device_out_custom(frame: pd.DataFrame, constants: CollectiveConstants,
                                training=None) -> pd.DataFrame:
    """Custom all-reduce rows: a_custom, e_custom fitted without device X (on the devices of `training`, default
    every one), scored on X."""
    predicted = np.full(len(frame), np.nan)
    trains = frame["device"].isin(list(training)).to_numpy() if training is not None else np.ones(len(frame), bool)
    for device in sorted(frame["device"].unique()):
        held = (frame["device"] == device).to_numpy()
        fitted = fit_custom_all_reduce(frame[~held & trains], constants)
        predicted[held] = predict(frame[held], fitted, custom_all_reduce=True)
    return scores(frame, predicted, ("device",))


def leave_one_device_out(frame: pd.DataFrame, training=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fit without each device (on the devices of `training`, default every one), score it: (per device, per
    device x op) tables of median/p90/bias."""
    predicted = np.full(len(frame), np.nan)
    trains = frame["device"].isin(list(training)).to_numpy() if training is not None else np.ones(len(frame), bool)
    for device in sorted(frame["device"].unique()):
        held = (frame["device"] == device).to_numpy()
        predicted[held] = predict(frame[held], fit_constants(frame[~held & trains]))
    return scores(frame, predicted, ("device",)), scores(frame, predicted, ("device", "op"))


def describe(constants: CollectiveConstants) -> str:
    """One line per constant with its meaning (for the benchmark and the docs)."""
    kinds = ", ".join(f"{k} {a * 1e6:.2f}" for k, a in zip(FITTED_KINDS, constants.base_latency_s))
    fractions = ", ".join(f"{k} {e:.3f}" for k, e in zip(FITTED_KINDS, constants.bandwidth_fraction))
    return (f"a (launch + sync, us): {kinds}\n"
            f"hop latency (one scale-up step, us): {constants.hop_latency_s * 1e6:.3f}\n"
            f"e (share of link bandwidth, large groups): {fractions}\n"
            f"c (small-group loss, fraction = e (1 - c/n)): {constants.small_group_loss:.3f}\n"
            f"r (pipelining cross term): {constants.pipeline_cross:.3f}\n"
            f"custom all-reduce: a_custom {constants.custom_latency_s * 1e6:.2f} us, "
            f"e_custom {constants.custom_fraction:.3f}\n"
            f"latency scale (1 GHz / clock) ** {constants.latency_clock_exponent:g} x (100 / cores) ** "
            f"{constants.latency_cores_exponent:g} x (1 + "
            f"{constants.latency_llc_share:.3f} x LLC MiB / 100)")


__all__ = ["BUCKET_LABELS", "describe", "fit_constants", "leave_one_device_out",
           "measured_collectives", "predict", "previous_model_seconds", "scores"]
