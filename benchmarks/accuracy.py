"""Accuracy: every method against measured kernel times, and the realistic method's generalisation.

Prints, per method, device and op kind (and per family: GEMM vs element-wise): median absolute
relative error, p90 absolute error and bias (median signed error; negative = predicts too fast).
Then refits the realistic method's free parameters (engine.calibration.fit) three ways and prints
  - in-sample: fitted on both devices (these are the values shipped in specs.xlsx / realistic.py),
  - cross-device: fitted on A100 rows only and scored on H100, and the reverse,
and seed 000's measured 191 us (fused MLP on A100 40GB PCIe, a device the fit never saw),
the GPU ground truth recorded in the repo (calibration/measured/*.csv, written by
calibration/measure_gpu.py: GEMMs, element-wise, attention and whole decode steps), with its provenance,
and last issue 12's leave-one-device-out (kernel tables) and leave-one-system-out (serving) scores against NVIDIA's
public measurements as the silicon benchmarks recorded them (calibration/results/; silicon_accuracy.py,
attention_accuracy.py, collectives_accuracy.py, moe_accuracy.py, weight_only_accuracy.py, serving_accuracy.py
refit and rescore in minutes to an hour), each against its target: met, or missed by how many points.

Run: .venv/bin/python benchmarks/accuracy.py [--measurements PATH] [--ground-truth PATH ...]
Data: ../shared/calibration/vidur_llama2_ops.csv when present, else engine/data's stratified sample.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

import engine
from engine.calibration import measurements as calibration
from engine.calibration.fit import fit_realistic
from engine.estimators.realistic import DEFAULT_CONSTANTS

TARGETS = {"gemm": (0.10, 0.25), "elementwise": (0.15, None)}   # median, p90 of |error|


def show(title: str, frame: pd.DataFrame) -> None:
    print(f"\n## {title}\n")
    table = frame.copy()
    for column in ("median_abs_error", "p90_abs_error", "bias"):
        table[column] = (100 * table[column]).map(lambda v: f"{v:+.1f}%" if column == "bias" else f"{v:.1f}%")
    print(table.to_string(index=False))


def target_lines(frame: pd.DataFrame, label: str) -> list[str]:
    lines = []
    for row in frame.itertuples(index=False):
        median_target, p90_target = TARGETS[row.family]
        ok = row.median_abs_error <= median_target and (p90_target is None or row.p90_abs_error <= p90_target)
        limit = f"median <= {median_target:.0%}" + (f", p90 <= {p90_target:.0%}" if p90_target else "")
        lines.append(f"{label:<28} {row.device:<14} {row.family:<12} {limit:<26} "
                     f"{'meets' if ok else 'MISSES'} (median {row.median_abs_error:.1%}, p90 {row.p90_abs_error:.1%})")
    return lines


def constants_table(fit, label: str) -> pd.DataFrame:
    rows = [(label, name, f.matrix_fraction, f.memory_fraction, f.kernel_latency_s * 1e6) for name, f in fit.devices.items()]
    return pd.DataFrame(rows, columns=["fit", "device", "achievable_matrix_fraction",
                                       "achievable_memory_bandwidth_fraction", "kernel_latency_us"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--measurements", help="CSV in the vidur_llama2_ops.csv layout (the fit's data)")
    parser.add_argument("--ground-truth", nargs="*", help="GPU ground-truth CSVs (default: calibration/measured/)")
    args = parser.parse_args()
    path = args.measurements or calibration.default_measurements_path()
    measurements = calibration.load_measurements(path)
    devices = engine.load_specs()
    print(f"# Accuracy against {path} ({len(measurements)} measured kernels)")

    started = time.perf_counter()
    shipped = calibration.predict(measurements, devices)
    show("Every method, shipped specs.xlsx, per device and op kind",
         calibration.summary(shipped, by=("method", "device", "kind")))
    by_family = calibration.summary(shipped, by=("method", "device", "family"))
    show("Every method, per device and family", by_family)

    fit = fit_realistic(measurements, devices)
    refit = {name: fit.apply(devices[name]) for name in fit.devices}
    in_sample = calibration.predict(measurements, {**devices, **refit}, ("realistic",), fit.constants)
    crosses = []
    for train, test in (("A100-80GB-SXM", "H100-SXM"), ("H100-SXM", "A100-80GB-SXM")):
        cross_fit = fit_realistic(measurements, devices, train_devices=[train])
        hardware = {test: cross_fit.apply(devices[test], from_device=train)}
        rows = measurements[measurements["device"] == test]
        scored = calibration.predict(rows, {**devices, **hardware}, ("realistic",), cross_fit.constants)
        crosses.append((train, test, cross_fit, scored.assign(method=f"realistic fit on {train}")))

    print("\n## Fitted realistic constants (device values; specs.xlsx ships the in-sample fit)\n")
    fitted = pd.concat([constants_table(fit, "in-sample (both devices)")]
                       + [constants_table(c, f"{train} only") for train, _, c, _ in crosses])
    print(fitted.to_string(index=False))
    print("\nkernel classes (bandwidth efficiency relative to the GEMM memory fraction / latency us / floor us / "
          "row bytes per cycle):")
    for label, constants in [("shipped", DEFAULT_CONSTANTS), ("in-sample fit", fit.constants)] + [
            (f"{train} only", c.constants) for train, _, c, _ in crosses]:
        classes = ", ".join(f"{name} {k.bandwidth_efficiency:.2f}/{k.latency_s * 1e6:.3g}/{k.floor_s * 1e6:.3g}/"
                            f"{k.row_bytes_per_cycle or '-'}" for name, k in constants.kernel_classes.items())
        print(f"  {label:<22} {classes}")
    for name, device_fit in fit.devices.items():
        hw = devices[name]
        shipped_values = (hw.achievable_matrix_fraction, hw.achievable_memory_bandwidth_fraction,
                          hw.kernel_latency_s and round(hw.kernel_latency_s * 1e6, 3))
        refitted = (device_fit.matrix_fraction, device_fit.memory_fraction, round(device_fit.kernel_latency_s * 1e6, 3))
        state = "same as shipped" if shipped_values == refitted else f"DIFFERS from shipped {shipped_values}"
        print(f"  {name}: refit {refitted} {state}")
    same = fit.constants.kernel_classes == DEFAULT_CONSTANTS.kernel_classes
    print(f"  kernel classes: refit {'same as shipped' if same else 'DIFFER from shipped'}")

    show("Realistic, in-sample (fitted on both devices)", calibration.summary(in_sample, by=("device", "kind")))
    cross = pd.concat([scored for *_, scored in crosses])
    show("Realistic, cross-device (fitted on the other device only)",
         calibration.summary(cross, by=("method", "device", "kind")))
    show("Realistic, cross-device per family", calibration.summary(cross, by=("method", "device", "family")))

    print("\n## Seed 000: fused MLP on A100-40GB-PCIe (batch 32, 4096 -> 8192 -> 4096, bf16), measured 191 us\n")
    a100_pcie = devices["A100-40GB-PCIe"]
    for method in ("roofline", "hierarchical", "seed", "realistic", "realistic-graph"):
        seconds = calibration.seed_000_prediction(a100_pcie, method)
        print(f"  {method:<16} {seconds * 1e6:7.1f} us   error {seconds / calibration.SEED_000['measured_s'] - 1:+.1%}")

    ground_truth(args.ground_truth if args.ground_truth is not None else calibration.measured_paths(), devices)

    print("\n## Targets (realistic: GEMM median <= 10% and p90 <= 25%, element-wise median <= 15%)\n")
    realistic = by_family[by_family["method"] == "realistic"]
    lines = target_lines(realistic, "shipped (in-sample)")
    lines += target_lines(calibration.summary(cross, by=("device", "family")), "cross-device")
    print("\n".join(lines))
    recorded_silicon_scores()
    print(f"\n({time.perf_counter() - started:.1f} s)")


def recorded_silicon_scores() -> None:
    """Issue 12's cross-validated scores as the silicon benchmarks recorded them, each judged against its target."""
    print("\n## Public silicon measurements (aiconfigurator-core), as recorded in calibration/results/\n")
    judged = engine.results_with_verdicts(engine.read_results())
    judged = judged[judged["target"] != ""]
    if judged.empty:
        print("  none recorded: run the silicon benchmarks with --write (calibration extra)")
        return
    table = pd.DataFrame({"family": judged["family"], "subject": judged["subject"], "split": judged["split"],
                          "median": (100 * judged["median_abs_error"]).map("{:.2f}%".format),
                          "p90": (100 * judged["p90_abs_error"]).map("{:.1f}%".format),
                          "target": judged["target"], "verdict": judged["verdict"],
                          "recorded": judged["recorded"] + " " + judged["benchmark"]})
    print(table.to_string(index=False))
    missed = judged["verdict"].str.startswith("missed")
    print(f"\n{int(missed.sum())} of {len(judged)} recorded scores miss their target (why: docs/accuracy.md, "
          "\"Targets: met or missed, and why\")")


def ground_truth(paths, devices) -> None:
    """Score every method on each recorded ground-truth file (devices and kernels the fit may never have seen)."""
    print("\n## GPU ground truth recorded in the repo (calibration/measured/)\n")
    if not paths:
        print("  none recorded yet: run `python3 calibration/measure_gpu.py` on a GPU (calibration/README.md)")
        return
    for path in map(Path, paths):
        metadata = calibration.read_metadata(path)
        print(f"{path}: " + "; ".join(f"{key} {metadata.get(key, '?')}" for key in
                                       ("gpu", "driver", "cuda", "torch", "date", "timing")))
        # bare GEMMs (fp8 on pre-quantized inputs): no activation-quantize kernel (engine/estimators/gemm_condition.py)
        bare = replace(DEFAULT_CONSTANTS, gemm_quantize_latency_s={})
        tidy = calibration.predict(calibration.load_measurements(path), devices, calibration.GROUND_TRUTH_METHODS, bare)
        show(f"{path.name}: every method per device and kind",
             calibration.summary(tidy, by=("method", "device", "kind")))


if __name__ == "__main__":
    main()
