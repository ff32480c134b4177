"""Kernel-level accuracy on public silicon measurements (NVIDIA AIConfigurator's tables, engine/calibration/silicon).

For every system whose GPU the workbook has, scores `roofline` and `realistic` (engine/calibration/silicon/score.py)
on GEMMs per dtype, prefill (context) attention, decode (generation) attention, MLA (context and generation,
DeepSeek-V3's attention core), MoE and collectives, and
prints per device x family x precision (dtypes; collectives: op and implementation): count, median and
p90 of |predicted / measured - 1|, and bias (median signed error; negative = predicts too fast). Then the
same per family x precision and per family over all devices.

GEMMs are scored under the tables' timing condition ("warm": weight copies back to back in one CUDA graph, fp8 with the
framework's activation-quantize kernel; engine/calibration/silicon/conditions.py), not the "model" condition
`estimate` uses. Last, the realistic GEMM constants per dtype (engine/calibration/silicon/fit.py) leave-one-device-out:
for each device, fitted on the others and scored on it, against the uncalibrated model and the shipped values.

--residuals adds the fit's held-out signed errors by shape regime (m, k, n, measured time; framework x m),
engine/calibration/silicon/gemm_residuals.py. The fit samples --rows-per-group GEMMs per device x dtype x framework
(default 1,500; docs/accuracy.md's GEMM tables since h/gemm9 use 600). After the table, one line per device x dtype
against issue 12's target (leave-one-device-out median <= 8%): met, or missed by how many points; --write records
the leave-one-device-out scores in calibration/results/kernel_gemm.csv for the Accuracy page.

The leave-one-device-out fit scores every workbook device with tables and trains each fold on package.TRAINING_DEVICES
(the seven HBM GPUs) without the device scored; a device outside them (the L40S, the RTX PRO 6000 Server and the Arc
Pro B60: PCIe cards known only from the workbook, h/newdev) is fitted on all seven. --train-devices all trains on
every device with tables (attention and collectives got worse on the seven that way, so none of the benchmarks does
it by default; docs/accuracy.md); --train-devices A,B,... and --score-devices A,B,... pick the devices.

Run: .venv/bin/python benchmarks/silicon_accuracy.py [--framework trtllm|vllm|sglang] [--root SYSTEMS_DIR] [--no-fit]
     [--residuals] [--rows-per-group N] [--train-devices A,B] [--score-devices A,B] [--write]
Needs the `calibration` extra (aiconfigurator-core), or --root tests/data/aiconfigurator/systems (a few rows).
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from engine.calibration.silicon import SYSTEM_DEVICES, fit, gemm_residuals, installed_version, score
from engine.calibration.silicon.package import TRAINING_DEVICES
from engine.calibration.silicon.results import write_results
from engine.hardware.specs import load_specs

TARGET_MEDIAN = 0.08   # issue 12: GEMM median |error| <= 8% per device, leave-one-device-out


def score_all(root, framework: str, devices: dict) -> tuple[pd.DataFrame, list[str]]:
    parts, missing = [], set()
    for family in score.FAMILIES:
        frame = score.measured_kernels(family, root, framework)
        missing |= set(score.devices_missing(frame, devices))
        started = time.perf_counter()
        tidy = score.score_family(frame, family, devices=devices)
        print(f"{family}: {len(frame):,} measurements scored in {time.perf_counter() - started:.1f} s")
        parts.append(tidy)
    return pd.concat(parts, ignore_index=True), sorted(missing)


def wide(summary: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One line per group, roofline and realistic side by side, errors in percent."""
    table = summary.pivot_table(index=keys, columns="method", values=["count", "median_abs_error", "p90_abs_error",
                                                                      "bias"], aggfunc="first")
    out = pd.DataFrame(index=table.index)
    out["count"] = table[("count", "realistic")].astype(int)
    for method in ("roofline", "realistic"):
        out[f"{method} median"] = (100 * table[("median_abs_error", method)]).map("{:.1f}%".format)
        out[f"{method} p90"] = (100 * table[("p90_abs_error", method)]).map("{:.1f}%".format)
        out[f"{method} bias"] = (100 * table[("bias", method)]).map("{:+.1f}%".format)
    return out.reset_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", default="trtllm", help="framework whose tables are scored (default trtllm)")
    parser.add_argument("--root", default=None,
                        help="an aiconfigurator systems folder (default: the installed package)")
    parser.add_argument("--no-fit", action="store_true", help="skip the leave-one-device-out GEMM fit (~40 s)")
    parser.add_argument("--fit-only", action="store_true", help="skip the per-family scoring, run the fit only")
    parser.add_argument("--residuals", action="store_true",
                        help="after the fit, its held-out signed errors by shape regime (m, k, n, time; per framework)")
    parser.add_argument("--rows-per-group", type=int, default=1500,
                        help="GEMMs sampled per device x dtype x framework for the fit (seed 0; default 1500)")
    parser.add_argument("--train-devices", type=device_list, default=list(TRAINING_DEVICES),
                        help="comma-separated workbook devices the folds train on, or 'all' (every device with "
                             "tables); default: the seven HBM GPUs, package.TRAINING_DEVICES")
    parser.add_argument("--score-devices", type=device_list, default=None,
                        help="comma-separated workbook devices to score (default: every device with tables)")
    parser.add_argument("--write", action="store_true",
                        help="record the leave-one-device-out scores in calibration/results/kernel_gemm.csv")
    args = parser.parse_args()
    started = time.perf_counter()
    devices = load_specs()
    print(f"# Kernel accuracy on aiconfigurator-core {installed_version() if args.root is None else args.root} "
          f"tables, framework {args.framework}")
    if not args.fit_only:
        print_scores(args.root, args.framework, devices)
    if not args.no_fit:
        table = print_leave_one_device_out(args.root, devices, args.residuals, args.rows_per_group,
                                           args.train_devices, args.score_devices)
        print("\n## Against the target (GEMM leave-one-device-out median <= 8% per device and dtype)\n")
        print("\n".join(target_lines(table)))
        if args.write:
            path = write_results(result_rows(table, args.rows_per_group, args.train_devices), "kernel_gemm",
                                 "benchmarks/silicon_accuracy.py", installed_version() if args.root is None else None)
            print(f"recorded in {path}")
    print(f"\nTotal {time.perf_counter() - started:.1f} s")


def print_scores(root, framework: str, devices: dict) -> None:
    """Roofline and realistic per device x family x precision, per family x precision and per family."""
    tidy, missing = score_all(root, framework, devices)
    summary = score.summary(tidy)
    pd.set_option("display.width", 250)
    print("\n## Per device x family x precision (GEMM weight/activation dtypes; attention dtype, kv dtype; "
          "collectives op (implementation))\n")
    print(wide(summary, ["device", "family", "precision"]).to_string(index=False))
    print("\n## All devices, per family x precision\n")
    per_precision = score.summary(tidy, by=("method", "family", "precision"))
    print(wide(per_precision, ["family", "precision"]).to_string(index=False))
    print("\n## All devices, per family\n")
    print(wide(score.summary(tidy, by=("method", "family")), ["family"]).to_string(index=False))
    if missing:
        print(f"\nNot scored (no device in this workbook): {', '.join(missing)}")
    unmapped = sorted(system for system, device in SYSTEM_DEVICES.items() if device is None)
    print(f"Systems the workbook has no device for: {', '.join(unmapped)}")


def device_list(text: str) -> list[str]:
    """A comma-separated list of workbook device names (argparse type); 'all': None (every device with tables)."""
    if text == "all":
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated workbook device names")
    return names


def held_out_table(rows: pd.DataFrame, devices: dict, parts: list | None, train=None, score=None) -> pd.DataFrame:
    """fit.leave_one_device_out over `rows`, each fold trained on the devices of `train` (default every device in the
    rows) other than the one scored; only the devices of `score` (default every one) are scored. A scored device
    outside `train` is fitted on all of `train`."""
    present = set(rows["device"])
    unknown = sorted((set(train or ()) | set(score or ())) - set(devices))
    if unknown:
        raise SystemExit(f"--train-devices/--score-devices: not in the workbook: {', '.join(unknown)}")
    train, score = set(train or present) & present, set(score or present) & present
    tables = []
    if score & train:
        tables.append(fit.leave_one_device_out(rows[rows["device"].isin(train)], devices, residuals=parts,
                                               held_out=score & train))
    for device in sorted(score - train):
        tables.append(fit.leave_one_device_out(rows[rows["device"].isin(train | {device})], devices, residuals=parts,
                                               held_out={device}))
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


def print_leave_one_device_out(root, devices: dict, residuals: bool = False, rows_per_group: int = 1500,
                               train=None, score=None) -> pd.DataFrame:
    rows = fit.fit_rows(devices, root, rows_per_group=rows_per_group)
    parts = [] if residuals else None
    table = held_out_table(rows, devices, parts, train, score)
    print("\n## Realistic GEMM constants per dtype, leave-one-device-out (fit on the others, score the device)\n")
    print(f"trained on: {', '.join(train) if train else 'every device with tables'}; scored: "
          f"{', '.join(score) if score else 'every device with tables'}")
    print(f"{len(rows):,} GEMMs (n, k >= {fit.LEAST_N_K}; frameworks {', '.join(fit.FRAMEWORKS)} pooled; "
          f"without {sorted(fit.EXCLUDED)}). |error| median / p90, bias:")
    out = table[["device", "dtype", "count", "efficiency", "extra_latency_us", "latency_cycles",
                 "joules_per_tflop", "split_k_cycles", "overlap_loss", "k_step_cycles", "block_scale_flops",
                 "quantize_us", "large_m_tiles"]].copy()
    for label in ("before", "lodo", "shipped"):
        out[label] = [f"{100 * a:.1f}% / {100 * b:.1f}%, {100 * c:+.1f}%" for a, b, c in
                      zip(table[f"{label} median_abs_error"], table[f"{label} p90_abs_error"], table[f"{label} bias"])]
    print(out.to_string(index=False))
    print("All under the tables' timing condition (warm: weight copies back to back, engine/estimators/gemm_condition.py; "
          "fp8 tables with each framework's activation-quantize kernel, quantize_us: its latency and bytes per activation "
          "value; <framework>/promoted: refitted on the training devices without native block scales, "
          f"fit.QUANTIZE_BY_SCALE_UNITS={fit.QUANTIZE_BY_SCALE_UNITS!r}; large_m_tiles: the tiles each framework's "
          f"fp8 kernel ({', '.join(fit.LARGE_M_TILE_DTYPES)}) takes at m > 128 on those devices, chosen in the fold "
          f"(fp8_g128: with its promotion refitted, fit.RULE_REFITS_PROMOTION={fit.RULE_REFITS_PROMOTION}), "
          f"fit.FIT_LARGE_M_TILES={fit.FIT_LARGE_M_TILES}). before: efficiency 1, no extra "
          "latency, no quantize kernel; lodo: the constants shown, fitted without the device (clock-and-power form "
          f"{fit.CLOCK_DTYPES}: latency cycles / clock, a power cap in pJ per FLOP, split-K cycles, the overlap loss "
          "(max(c, m) + loss x min(c, m)), k-step cycles (per wave per k step), block_scale_flops (fp8_g128 on Hopper: the "
          "promotion's vector FLOPs per output value and scale group, per framework); others: efficiency / "
          "extra latency); shipped: RealisticConstants and conditions.TABLE_QUANTIZE_LATENCY_S (fitted on all devices)")
    if parts:
        print_residuals(gemm_residuals.with_errors(parts))
    return table


def target_lines(table: pd.DataFrame) -> list[str]:
    """One line per dtype x device: the leave-one-device-out median against TARGET_MEDIAN, met or missed by how
    many points (with p90 and bias, which say where to look: negative bias = predicted too fast)."""
    lines = []
    for row in table.sort_values(["dtype", "device"]).to_dict("records"):
        median, p90, bias = (100 * row[f"lodo {k}"] for k in ("median_abs_error", "p90_abs_error", "bias"))
        excess = median - 100 * TARGET_MEDIAN
        verdict = "met" if excess <= 0 else f"MISSED by {excess:.2f} points"
        lines.append(f"{row['dtype']:<9} {row['device']:<14} median {median:5.2f}% (p90 {p90:.1f}%, "
                     f"bias {bias:+.1f}%): {verdict}")
    missed = sum("MISSED" in line for line in lines)
    lines.append(f"{missed} of {len(lines)} device x dtype cells miss the target "
                 "(why: docs/accuracy.md, GEMM sections)")
    return lines


def result_rows(table: pd.DataFrame, rows_per_group: int, train=None) -> pd.DataFrame:
    """The leave-one-device-out scores per device x dtype as calibration/results rows (write_results' columns)."""
    on = ("; trained on every device with tables" if train is None
          else "" if tuple(train) == TRAINING_DEVICES else f"; trained on {', '.join(train)}")
    return pd.DataFrame({"scope": "kernel", "family": "gemm " + table["dtype"], "subject": table["device"],
                         "variant": f"realistic, fitted ({rows_per_group} rows per device x dtype x framework{on})",
                         "split": "leave-one-device-out", "count": table["count"].to_numpy(),
                         "median_abs_error": table["lodo median_abs_error"].to_numpy(),
                         "p90_abs_error": table["lodo p90_abs_error"].to_numpy(),
                         "bias": table["lodo bias"].to_numpy()})


def print_residuals(frame: pd.DataFrame) -> None:
    """The leave-one-device-out errors by shape regime (median signed error %, count; negative: too fast)."""
    print("\n## Leave-one-device-out GEMM residuals by shape regime (median signed error %, rows)\n")
    print(gemm_residuals.summary_table(frame).to_string())
    for regime in gemm_residuals.REGIMES:
        print(f"\nby {regime}:\n{gemm_residuals.regime_table(frame, regime).to_string()}")
    print(f"\nby framework x m:\n{gemm_residuals.regime_table(frame, 'm', by_framework=True).to_string()}")


if __name__ == "__main__":
    main()
