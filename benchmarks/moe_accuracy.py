"""MoE grouped GEMMs: the realistic method against aiconfigurator's measured MoE tables, leave-one-device-out.

Samples --rows-per-device balanced-routing trtllm MoE measurements (bf16, fp8, fp8 block-scaled) per workbook
device, evaluates the realistic routed-expert time (engine/calibration/silicon/score.py) on the grid of
engine/calibration/silicon/moe_fit.py (weight-stream efficiency, power cap, block-scaled efficiency, the grouped GEMM's
latency in the tables' condition; grouped-launch, top-k and permutation cycles), fits it
without each device and scores the device with the engine. Prints |error| median / p90, bias per device, per
tokens-per-expert bucket and per dtype under: before (grouped GEMMs as plain GEMMs), lodo (fitted without the device),
shipped (RealisticConstants).

Folds train on package.TRAINING_DEVICES (the seven HBM GPUs) without the device scored, by default; the PCIe cards
with trtllm MoE tables (L40S, RTX-PRO-6000-Server) are scored with the point fitted on all seven (--train-devices all:
every device trains; docs/accuracy.md compares the two).

Then the 4-bit formats (nvfp4, w4a8_mxfp4_mxfp8, w4a16_mxfp4, int4_wo; engine/calibration/silicon/moe_4bit_fit.py), per
framework on its own tables (--four-bit-frameworks, default trtllm, vllm, sglang): per device and format, before (the
tables' condition without 4-bit constants) and fitted (leave-one-device-out where another device has the class, else
in-sample), with the GEMM target's verdict (engine/calibration/silicon/targets.py), and the classes fitted on all
devices (engine/estimators/moe_4bit.FRAMEWORK_FORMATS).

Run: .venv/bin/python benchmarks/moe_accuracy.py [--rows-per-device 1000] [--root SYSTEMS_DIR]
    [--train-devices all|A,B] [--write]
    [--four-bit-only [--model-free]] [--four-bit-rows 400] [--four-bit-frameworks trtllm,vllm,sglang]
(--write records the per-device scores in calibration/results/kernel_moe.csv, and the 4-bit ones in
kernel_moe_4bit.csv, for the Accuracy page)
Needs the `calibration` extra (aiconfigurator-core).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from attention_accuracy import wide   # benchmarks/attention_accuracy.py: median / p90, bias per model
from engine.calibration.silicon import installed_version, moe_4bit_fit, moe_fit
from engine.calibration.silicon.package import TRAINING_DEVICES
from engine.calibration.silicon.results import write_results
from engine.hardware.specs import load_specs

TARGET_MEDIAN = 0.08


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=None, help="an aiconfigurator systems folder (default: the installed package)")
    parser.add_argument("--rows-per-device", type=int, default=1000, help="measurements per device (fixed seed)")
    parser.add_argument("--train-devices", default=",".join(TRAINING_DEVICES),
                        help="comma-separated devices the folds train on, or 'all' (default: the seven HBM GPUs)")
    parser.add_argument("--write", action="store_true", help="record the scores in calibration/results/")
    parser.add_argument("--four-bit-rows", type=int, default=400, help="4-bit measurements per device and format")
    parser.add_argument("--four-bit-only", action="store_true", help="only the 4-bit formats")
    parser.add_argument("--four-bit-frameworks", default=",".join(moe_4bit_fit.FRAMEWORKS),
                        help="comma-separated frameworks whose 4-bit tables are fitted, each on its own")
    parser.add_argument("--model-free", action="store_true", help="with --four-bit-only: first the measurements alone "
                        "per framework, device and format (moe_4bit_fit.model_free)")
    args = parser.parse_args()
    train = None if args.train_devices == "all" else tuple(d.strip() for d in args.train_devices.split(","))
    started = time.perf_counter()
    devices = load_specs()
    if args.four_bit_only:
        if args.model_free:
            print("## Model-free: stream = packed weight bytes / time / bandwidth (<= 4 pairs per expert, >= 32 experts "
                  "reached); rate = FLOP/s / peak of the compute format (>= 256 pairs per expert)\n")
            print(moe_4bit_fit.model_free(devices, args.root).round(2).to_string(index=False), flush=True)
        four_bits = four_bit_frameworks(devices, args.root, args.four_bit_rows, args.four_bit_frameworks, train)
        if args.write:
            write_four_bit(four_bits, args.root)
        print(f"\nTotal {time.perf_counter() - started:.1f} s")
        return
    rows = moe_fit.fit_rows(devices, args.root, args.rows_per_device)
    print(f"{len(rows):,} MoE measurements on {rows['device'].nunique()} devices; grid "
          f"{len(moe_fit.BANDWIDTH_GRID)} x {' x '.join(str(len(v)) for v in moe_fit.CYCLE_GRID.values())}",
          flush=True)
    predictions = moe_fit.grid_predictions(rows, devices)
    print(f"grid evaluated in {time.perf_counter() - started:.0f} s", flush=True)
    tidy, fitted = moe_fit.leave_one_device_out(rows, devices, predictions, train)
    print(f"folds train on {', '.join(train) if train else 'every device'} (without the device scored)")
    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 500)
    print("\n|error| median / p90, bias. before: grouped GEMMs as plain GEMMs; lodo: fitted without the device; "
          "shipped: RealisticConstants (all devices)\n")
    print("## Per device\n")
    print(wide(tidy, ["device"]).to_string(index=False))
    print("\n## Per device x tokens per expert (tokens x topk / experts)\n")
    print(wide(tidy, ["device", "tokens_bucket"]).to_string(index=False))
    print("\n## All devices, per dtype and per tokens per expert\n")
    print(wide(tidy, ["weight_dtype"]).to_string(index=False))
    gated = tidy.assign(kernel=np.where(tidy["kernel_source"].astype(str).str.endswith("nongated"), "non-gated",
                                        "gated"))
    print(wide(gated, ["kernel"]).to_string(index=False))
    print(wide(tidy, ["tokens_bucket"]).to_string(index=False))
    print(wide(tidy.assign(all="moe"), ["all"]).to_string(index=False))
    print("\n## MoE constants fitted without each device (moe_fit.BEFORE's keys)\n")
    for device, point in fitted.items():
        print(f"{device}: {point}")
    print(f"all devices: {moe_fit.fit_all(rows, devices, predictions)}")
    lodo = tidy[tidy["model"] == "lodo"].groupby("device")["error"].apply(lambda e: np.median(np.abs(e)))
    print(f"\nleave-one-device-out median per device: {', '.join(f'{d} {100 * v:.1f}%' for d, v in lodo.items())}"
          f" (GEMM target <= {100 * TARGET_MEDIAN:.0f}%)")
    if train is not None:       # the alternative: every device trains (the PCIe cards too), from the same grid
        every, _ = moe_fit.leave_one_device_out(rows, devices, predictions)
        every = every[every["model"] == "lodo"].groupby("device")["error"].apply(lambda e: np.median(np.abs(e)))
        print(f"with every device training instead: {', '.join(f'{d} {100 * v:.1f}%' for d, v in every.items())}")
    if args.write:
        path = write_results(result_rows(tidy), "kernel_moe", "benchmarks/moe_accuracy.py",
                             installed_version() if args.root is None else None)
        print(f"recorded in {path}")
    four_bits = four_bit_frameworks(devices, args.root, args.four_bit_rows, args.four_bit_frameworks, train)
    if args.write:
        write_four_bit(four_bits, args.root)
    print(f"\nTotal {time.perf_counter() - started:.1f} s")


def four_bit_frameworks(devices: dict, root, rows_per_device: int, frameworks: str, train=None) -> pd.DataFrame:
    """four_bit per framework (folds training on `train`, None: every device); their scored rows in one frame (a
    `framework` column added)."""
    names = [name.strip() for name in frameworks.split(",") if name.strip()]
    return pd.concat([four_bit(devices, root, rows_per_device, name, train).assign(framework=name) for name in names],
                     ignore_index=True)


def four_bit(devices: dict, root, rows_per_device: int, framework: str = "trtllm", train=None) -> pd.DataFrame:
    """The 4-bit formats of `framework`'s tables: fitted per class, scored per device and table format before /
    fitted, with the verdict; returns the scored rows (moe_4bit_fit.leave_one_device_out's frame)."""
    rows = moe_4bit_fit.fit_rows(devices, root, rows_per_device, framework=framework)
    print(f"\n## 4-bit formats, {framework}: {len(rows):,} measurements, classes "
          f"{', '.join(sorted(rows['format_key'].unique()))}\n", flush=True)
    predictions = moe_4bit_fit.grid_predictions(rows, devices)
    tidy, fitted = moe_4bit_fit.leave_one_device_out(rows, devices, predictions, train)
    print("|error| median / p90, bias. before: the tables' condition without 4-bit constants; fitted: the class's "
          "constants fitted without the device (split says where only the device itself has the class)\n")
    lines = []
    for (fmt, device, split), part in tidy.groupby(["file_dtype", "device", "split"]):
        cells = {"format": fmt, "device": device, "split": split}
        for model in ("before", "fitted"):
            error = part.loc[part["model"] == model, "error"].to_numpy()
            cells[model] = (f"{100 * np.median(np.abs(error)):.1f}% / {100 * np.quantile(np.abs(error), 0.9):.1f}%, "
                            f"{100 * np.median(error):+.1f}%")
        median = float(np.median(np.abs(part.loc[part["model"] == "fitted", "error"])))
        cells["verdict"] = ("met" if round(100 * median, 2) <= 100 * TARGET_MEDIAN else
                            f"missed by {round(100 * median, 2) - 100 * TARGET_MEDIAN:.2f} points")
        cells["verdict"] += "" if split == "leave-one-device-out" else " (in-sample: no target)"
        lines.append(cells)
    print(pd.DataFrame(lines).to_string(index=False))
    print(f"\n## 4-bit, {framework}, per format x tokens per expert (fitted)\n")
    print(wide(tidy, ["file_dtype", "tokens_bucket"]).to_string(index=False))
    print(f"\n## 4-bit constants, {framework} (stream, matrix, latency s) fitted without each device\n")
    for (device, key), (point, split) in fitted.items():
        print(f"{device} {key}: {point} ({split})")
    print(f"all devices ({framework}; engine/estimators/moe_4bit.FRAMEWORK_FORMATS): "
          f"{moe_4bit_fit.fit_all(predictions, train)}")
    return tidy


def four_bit_result_rows(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per framework, table format and device, the fitted 4-bit scores for write_results: family "moe <format>
    (<framework>)", split as scored (leave-one-device-out, or in-sample where only the device has the class)."""
    lines = []
    fitted = tidy[tidy["model"] == "fitted"]
    for (framework, fmt, device, split), part in fitted.groupby(["framework", "file_dtype", "device", "split"]):
        error = part["error"].to_numpy()
        lines.append({"scope": "kernel", "family": f"moe {fmt} ({framework})", "subject": device,
                      "variant": "realistic, 4-bit class fitted (tables' condition; not in estimate / serve)",
                      "split": split, "count": error.size, "median_abs_error": float(np.median(np.abs(error))),
                      "p90_abs_error": float(np.quantile(np.abs(error), 0.9)), "bias": float(np.median(error))})
    return pd.DataFrame(lines)


def write_four_bit(tidy: pd.DataFrame, root) -> None:
    path = write_results(four_bit_result_rows(tidy), "kernel_moe_4bit", "benchmarks/moe_accuracy.py",
                         installed_version() if root is None else None)
    print(f"recorded in {path}")


def result_rows(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per device and over all devices: `before` (in-sample: nothing fitted) and `lodo` rows for write_results."""
    lines = []
    for (model, device), part in pd.concat([tidy, tidy.assign(device="all")]).groupby(["model", "device"]):
        if model == "shipped":
            continue
        error = part["error"].to_numpy()
        lines.append({"scope": "kernel", "family": "moe", "subject": device,
                      "variant": "grouped GEMMs as plain GEMMs" if model == "before" else "realistic, fitted",
                      "split": "in-sample" if model == "before" else "leave-one-device-out", "count": error.size,
                      "median_abs_error": float(np.median(np.abs(error))),
                      "p90_abs_error": float(np.quantile(np.abs(error), 0.9)), "bias": float(np.median(error))})
    return pd.DataFrame(lines)


if __name__ == "__main__":
    main()
