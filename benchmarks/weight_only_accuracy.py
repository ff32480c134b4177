"""Weight-only quantized GEMMs (int4_wo, int8_wo) on aiconfigurator-core's tables: realistic before / after the fitted
weight-only term (engine/calibration/silicon/weight_only_fit.py), issue 12, h/wogemv.

Tables: A100-SXM TensorRT-LLM 1.0.0 (int4_wo, int8_wo), H100-SXM SGLang 0.5.6.post2 (int8_wo); rows with n, k >= 128.
Also printed: the constants `realistic` ships (engine/estimators/weight_only.SHIPPED) on every table.
`before` is realistic under the tables' condition (score.score_family: warm, the framework's constants), `after`
max(before, the weight-only term). Printed per device x dtype, on the GEMV rows (m <= 16) and on all m:
  in-sample   constants fitted on that device's rows of that dtype (int4_wo has one device: in-sample only)
  LODO        int8_wo: fitted on the other device's rows (one device per fold, and another framework), scored here
The fit uses the rows with m <= --fit-max-m (default 0: all m, as the shipped constants were fitted; 16: the GEMV
regime alone). Median / p90 of |predicted / measured - 1| and bias (median signed error; negative = predicted too
fast). Also model-free: the HBM fraction the weight stream reaches at m = 1 on weights >= 32 MB, and the latency
floor (m = 1, n x k <= 65,536).

--write records, on the GEMV rows (m <= 16) and on all m, in calibration/results/kernel_weight_only.csv for the
Accuracy page: realistic without the term (before); realistic as shipped (SHIPPED: in-sample on A100, whose
TensorRT-LLM tables fitted both formats' constants; leave-one-device-out on H100, whose SGLang table they never saw);
and int8_wo's leave-one-device-out folds fitted with --fit-max-m. Leave-one-device-out rows are held to GEMM's 8%.

Run: .venv/bin/python benchmarks/weight_only_accuracy.py [--fit-max-m 0] [--write]   (`calibration` extra; ~5 s)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from engine.calibration.silicon import installed_version, score, tables
from engine.calibration.silicon import weight_only_fit as wo
from engine.calibration.silicon.results import write_results
from engine.estimators.weight_only import SHIPPED, SHIPPED_SOURCE
from engine.hardware.specs import load_specs

TABLES = (("a100_sxm", "trtllm", "1.0.0"), ("h100_sxm", "sglang", "0.5.6.post2"))
SHIPPED_DEVICE = "A100-80GB-SXM"     # the device of SHIPPED_SOURCE's tables (both formats' shipped constants)


def measured_rows(devices: dict) -> pd.DataFrame:
    """The weight-only rows of TABLES (n, k >= 128) with base_s, realistic under the tables' condition."""
    parts = []
    for system, framework, version in TABLES:
        frame = tables.gemm_table(None, [system], [framework])
        parts.append(frame[(frame["version"] == version) & frame["file_dtype"].isin(wo.WEIGHT_ONLY_DTYPES)])
    frame = pd.concat(parts, ignore_index=True)
    frame = frame[(frame["n"] >= 128) & (frame["k"] >= 128)].reset_index(drop=True)
    tidy = score.score_family(frame, "gemm", methods=("realistic",), devices=devices)
    return tidy.rename(columns={"predicted_s": "base_s"}).reset_index(drop=True)


def line(label: str, error) -> str:
    s = wo.summarize(error)
    return f"{label:<34} {s['count']:>6} {100 * s['median']:>7.1f}% {100 * s['p90']:>7.1f}% {100 * s['bias']:>+7.1f}%"


def model_free(frame: pd.DataFrame, devices: dict) -> None:
    print("\n# model-free, m = 1: HBM fraction the weight stream reaches (weights >= 32 MB); floor (n x k <= 65,536)")
    one = frame[frame["m"] == 1]
    for (device, dtype), rows in one.groupby(["device", "file_dtype"]):
        nbytes = wo.gemm_bytes(rows["m"], rows["n"], rows["k"], rows["weight_dtype"].iloc[0])
        fraction = nbytes / rows["time_s"] / devices[device].memory_bandwidth_bytes_per_s
        big = nbytes >= 32e6
        floor = rows.loc[rows["n"] * rows["k"] <= 65536, "time_s"] * 1e6
        print(f"{device} {dtype}: stream {np.median(fraction[big]):.2f} of HBM (p10 {np.quantile(fraction[big], .1):.2f},"
              f" p90 {np.quantile(fraction[big], .9):.2f}), floor {floor.median():.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit-max-m", type=int, default=0,
                        help="fit on rows with m <= this (0, the default: all m, as the shipped constants were fitted)")
    parser.add_argument("--write", action="store_true",
                        help="record the shipped constants' scores (and before, and the int8_wo folds) in "
                        "calibration/results/kernel_weight_only.csv")
    args = parser.parse_args()
    started = time.process_time()
    devices = load_specs()
    frame = measured_rows(devices)
    model_free(frame, devices)
    fitted = frame if args.fit_max_m <= 0 else frame[frame["m"] <= args.fit_max_m]
    fit_text = f"m <= {args.fit_max_m}" if args.fit_max_m > 0 else "all m"
    print(f"\n# realistic on the weight-only rows, before / after (fit on {fit_text})")
    print(f"{'device / dtype / rows / constants':<34} {'count':>6} {'median':>8} {'p90':>8} {'bias':>8}")
    recorded = []
    for (device, dtype), rows in frame.groupby(["device", "file_dtype"]):
        train = fitted[(fitted["device"] == device) & (fitted["file_dtype"] == dtype)]
        constants = wo.fit(train, train["base_s"], train["time_s"], devices)
        after = wo.errors(rows, rows["base_s"], rows["time_s"], devices, constants)
        before = (rows["base_s"] / rows["time_s"] - 1.0).to_numpy()
        print(f"{device} {dtype}: {constants}")
        for label, mask in regimes(rows):
            print(line(f"  {label} before", before[mask]))
            print(line(f"  {label} after, in-sample", after[mask]))
            recorded.append(score_row(dtype, label, device, "realistic without the weight-only term", "in-sample",
                                      before[mask]))
    recorded += shipped_scores(frame, devices)
    print("\n# int8_wo leave-one-device-out (each fold trains on the other device alone, another framework)")
    lodo = wo.leave_one_device_out(fitted[fitted["file_dtype"] == "int8_wo"], devices)
    for fold in lodo.itertuples():
        rows = frame[(frame["device"] == fold.held_out) & (frame["file_dtype"] == fold.file_dtype)]
        after = wo.errors(rows, rows["base_s"], rows["time_s"], devices, fold.constants)
        print(f"{fold.held_out} held out, trained on {fold.trained_on}: {fold.constants}")
        for label, mask in regimes(rows):
            print(line(f"  {label} after, held out", after[mask]))
            recorded.append(score_row(fold.file_dtype, label, fold.held_out, f"realistic + weight-only term fitted on "
                                      f"{fold.trained_on} ({fit_text})", "leave-one-device-out", after[mask]))
    if args.write:
        path = write_results(pd.DataFrame(recorded), "kernel_weight_only", "benchmarks/weight_only_accuracy.py",
                             installed_version())
        print(f"recorded in {path}")
    print(f"\n{time.process_time() - started:.1f} s CPU")


def regimes(rows: pd.DataFrame):
    """(label, mask) of the GEMV rows (m <= 16) and of all rows."""
    return (("m <= 16", (rows["m"] <= 16).to_numpy()), ("all m", np.ones(len(rows), bool)))


def shipped_scores(frame: pd.DataFrame, devices: dict) -> list[dict]:
    """Print and return the rows of realistic as shipped (engine/estimators/weight_only.SHIPPED) on every table:
    in-sample on the device whose table fitted them, leave-one-device-out on the others (they never saw those)."""
    print(f"\n# shipped in realistic (engine/estimators/weight_only.SHIPPED, {SHIPPED_SOURCE}, fitted on all m, rounded)")
    if SHIPPED_DEVICE not in set(frame["device"]):
        raise ValueError(f"SHIPPED_DEVICE {SHIPPED_DEVICE!r} has no weight-only rows (devices: "
                         f"{', '.join(sorted(set(frame['device'])))})")
    variant = f"realistic as shipped (weight-only term fitted on {SHIPPED_DEVICE}, all m)"
    recorded = []
    for (device, dtype), rows in frame.groupby(["device", "file_dtype"]):
        constants = SHIPPED[dtype.split("_")[0]]
        after = wo.errors(rows, rows["base_s"], rows["time_s"], devices, constants)
        split = "in-sample" if device == SHIPPED_DEVICE else "leave-one-device-out"
        print(f"{device} {dtype} ({split}): {constants}")
        for label, mask in regimes(rows):
            print(line(f"  {label} after, shipped", after[mask]))
            recorded.append(score_row(dtype, label, device, variant, split, after[mask]))
    return recorded


def score_row(dtype: str, rows: str, device: str, variant: str, split: str, error) -> dict:
    """One calibration/results row for the `rows` ("m <= 16" or "all m") of a device x weight-only dtype."""
    error = np.asarray(error, dtype=float)
    return {"scope": "kernel", "family": f"gemm {dtype} ({rows})", "subject": device, "variant": variant,
            "split": split, "count": error.size, "median_abs_error": float(np.median(np.abs(error))),
            "p90_abs_error": float(np.quantile(np.abs(error), 0.9)), "bias": float(np.median(error))}


if __name__ == "__main__":
    main()
