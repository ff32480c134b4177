"""Collectives: the timing model of engine/estimators/collectives.py against aiconfigurator's measured NCCL tables.

Prints, per device and op (all-reduce, all-gather, reduce-scatter, all-to-all): median |pred/meas - 1|,
p90 and bias (median signed error; negative = predicts too fast)
  - before: the previous model (ring link_bytes / scale-up bandwidth + ring hops x 1 us),
  - after, in-sample: the shipped constants (engine.estimators.collectives.FITTED),
  - leave-one-device-out: constants fitted without device X, scored on X (the headline; target median <= 15%),
then the calibrated model per message-size bucket and group size; against the frameworks' custom
all-reduce tables (TRT-LLM, vLLM and SGLang under CUDA graphs): NCCL alone, the engine's min(NCCL, custom),
leave-one-device-out; and the constants refitted on all devices.

Folds train on package.TRAINING_DEVICES (the seven NVLink/HBM GPUs) without the device scored; the PCIe cards
(L40S, RTX-PRO-6000-Server: NCCL over PCIe; the Arc-Pro-B60's oneCCL tables are not read) are scored with constants
fitted on all seven. Training on them too made the seven worse (h/newdev, 2026-11-28: A100 7.4 -> 17.0%, B200
8.9 -> 19.5%, H100 7.9 -> 17.9%), so it is not the default (--train-devices all).

Run: .venv/bin/python benchmarks/collectives_accuracy.py [--root SYSTEMS_DIR] [--train-devices all|A,B] [--write]
(--write records the leave-one-device-out scores in calibration/results/kernel_collectives.csv)
Needs the `calibration` extra (aiconfigurator-core); --root reads another copy (tests/data/aiconfigurator/systems).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from engine.estimators.collectives import FITTED
from engine.calibration.silicon import installed_version
from engine.calibration.silicon.package import TRAINING_DEVICES
from engine.calibration.silicon.results import write_results
from engine.calibration.silicon.collectives_fit import (CUSTOM_GRAPHED, describe, fit_constants, fit_custom_all_reduce,
                                            leave_one_device_out, leave_one_device_out_custom, measured_collectives,
                                            predict, previous_model_seconds, scores)

TARGET_MEDIAN = 0.15


def _print(title: str, table: pd.DataFrame) -> None:
    print(f"\n== {title}")
    shown = table.copy()
    for column in ("median", "p90", "bias"):
        shown[column] = (100 * shown[column]).map(lambda v: f"{v:+.1f}%" if column == "bias" else f"{v:.1f}%")
    print(shown.to_string())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=None, help="a systems/ folder (default: the installed package)")
    parser.add_argument("--train-devices", default=",".join(TRAINING_DEVICES),
                        help="comma-separated devices the folds train on, or 'all' (default: the seven HBM GPUs)")
    parser.add_argument("--write", action="store_true", help="record the scores in calibration/results/")
    args = parser.parse_args(argv)
    train = None if args.train_devices == "all" else tuple(d.strip() for d in args.train_devices.split(","))
    started = time.perf_counter()
    nccl = measured_collectives(args.root)
    print(f"{len(nccl)} NCCL rows, devices {', '.join(sorted(nccl['device'].unique()))}, "
          f"groups {sorted(nccl['group_size'].unique())}, {nccl['message_bytes'].min():.0f}-"
          f"{nccl['message_bytes'].max():.0f} B; folds train on {', '.join(train) if train else 'every device'}")
    before, after = previous_model_seconds(nccl), predict(nccl, FITTED)
    _print("before (previous model) per device", scores(nccl, before, ("device",)))
    _print("before per device x op", scores(nccl, before))
    _print("after, shipped constants, per device", scores(nccl, after, ("device",)))
    _print("after per device x op", scores(nccl, after))
    per_device, per_op = leave_one_device_out(nccl, train)
    _print("leave-one-device-out per device (headline)", per_device)
    _print("leave-one-device-out per device x op", per_op)
    if args.write:
        rows = pd.DataFrame({"scope": "kernel", "family": "collective (nccl)", "subject": per_device.index,
                             "variant": "realistic, fitted", "split": "leave-one-device-out",
                             "count": per_device["rows"].to_numpy(), "median_abs_error": per_device["median"].to_numpy(),
                             "p90_abs_error": per_device["p90"].to_numpy(), "bias": per_device["bias"].to_numpy()})
        path = write_results(rows, "kernel_collectives", "benchmarks/collectives_accuracy.py",
                             installed_version() if args.root is None else None)
        print(f"recorded in {path}")
    overall = float(np.median(per_device["median"]))
    print(f"\nleave-one-device-out: median over devices of the per-device median {100 * overall:.1f}% "
          f"(target <= {100 * TARGET_MEDIAN:.0f}%); devices over target: "
          f"{', '.join(per_device.index[per_device['median'] > TARGET_MEDIAN]) or 'none'}")
    _print("after, shipped constants, per message size x op", scores(nccl, after, ("bucket", "op")))
    _print("after, shipped constants, per group size x op", scores(nccl, after, ("group_size", "op")))
    custom = measured_collectives(args.root, implementations=CUSTOM_GRAPHED)
    custom = custom[custom["group_size"] <= custom["per_node"]]
    refit = fit_constants(nccl if train is None else nccl[nccl["device"].isin(train)])
    if len(custom):
        _print("custom all-reduce (CUDA graphs): NCCL model alone", scores(custom, predict(custom, FITTED),
                                                                              ("device",)))
        engine_choice = predict(custom, FITTED, custom_all_reduce=True)
        _print("custom all-reduce: the engine's min(NCCL, custom), per device", scores(custom, engine_choice,
                                                                                           ("device",)))
        _print("custom all-reduce: per framework x message size", scores(custom, engine_choice,
                                                                          ("implementation", "bucket")))
        _print("custom all-reduce: leave-one-device-out (a_custom, e_custom)",
               leave_one_device_out_custom(custom, FITTED, train))
        refit = fit_custom_all_reduce(custom if train is None else custom[custom["device"].isin(train)], refit)
    print("\n== constants refitted on every training device (shipped: engine.estimators.collectives.FITTED)")
    print(describe(refit))
    print(f"\n({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
