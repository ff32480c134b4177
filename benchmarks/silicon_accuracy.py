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

Run: .venv/bin/python benchmarks/silicon_accuracy.py [--framework trtllm|vllm|sglang] [--root SYSTEMS_DIR] [--no-fit]
     [--residuals] [--rows-per-group N] [--write]
Needs the `calibration` extra (aiconfigurator-core), or --root tests/data/aiconfigurator/systems (a few rows).
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from engine.calibration.silicon import SYSTEM_DEVICES, fit, gemm_residuals, installed_version, score
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
    parser.add_argument("--residuals", action="store_true",
                        help="after the fit, its held-out signed errors by shape regime (m, k, n, time; per framework)")
    parser.add_argument("--rows-per-group", type=int, default=1500,
                        help="GEMMs sampled per device x dtype x framework for the fit (seed 0; default 1500)")
    parser.add_argument("--write", action="store_true",
                        help="record the leave-one-device-out scores in calibration/results/kernel_gemm.csv")
    args = parser.parse_args()
    started = time.perf_counter()
    devices = load_specs()
    print(f"# Kernel accuracy on aiconfigurator-core {installed_version() if args.root is None else args.root} "
          f"tables, framework {args.framework}")
    tidy, missing = score_all(args.root, args.framework, devices)
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
    if not args.no_fit:
        table = print_leave_one_device_out(args.root, devices, args.residuals, args.rows_per_group)
        print("\n## Against the target (GEMM leave-one-device-out median <= 8% per device and dtype)\n")
        print("\n".join(target_lines(table)))
        if args.write:
            path = write_results(result_rows(table, args.rows_per_group), "kernel_gemm",
                                 "benchmarks/silicon_accuracy.py", installed_version() if args.root is None else None)
            print(f"recorded in {path}")
    print(f"\nTotal {time.perf_counter() - started:.1f} s")


def print_leave_one_device_out(root, devices: dict, residuals: bool = False,
                               rows_per_group: int = 1500) -> pd.DataFrame:
    rows = fit.fit_rows(devices, root, rows_per_group=rows_per_group)
    parts = [] if residuals else None
    table = fit.leave_one_device_out(rows, devices, residuals=parts)
    print("\n## Realistic GEMM constants per dtype, leave-one-device-out (fit on the others, score the device)\n")
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


def result_rows(table: pd.DataFrame, rows_per_group: int) -> pd.DataFrame:
    """The leave-one-device-out scores per device x dtype as calibration/results rows (write_results' columns)."""
    return pd.DataFrame({"scope": "kernel", "family": "gemm " + table["dtype"], "subject": table["device"],
                         "variant": f"realistic, fitted ({rows_per_group} rows per device x dtype x framework)",
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
