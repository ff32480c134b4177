"""MoE grouped GEMMs and weight-only GEMMs: the realistic method against AIConfigurator's measured tables.

Fits the realistic method's grouped-GEMM and weight-only constants (engine/silicon/moe_fit.py) leave-one-device-
out over H100-SXM, H200-SXM and B200 (trtllm moe_perf, balanced routing, a fixed sample per device x dtype) and
prints per device x dtype x tokens-per-expert bucket the median / p90 |predicted / measured - 1| and the bias
(median signed error; negative = predicts too fast): `before` (the constants at 1 / 0) and `lodo` (fitted on the
other devices). Then the pooled figures, the values fitted on all three devices (against the shipped ones), and
the weight-only dense GEMMs of A100-80GB-SXM (int8 / int4 weights x bf16; no MoE data: a held-out device) before
and after the weight-only efficiency.

Run: .venv/bin/python benchmarks/moe_accuracy.py [--rows N] [--root SYSTEMS_DIR]   (~1-2 min; needs the
`calibration` extra or --root tests/data/aiconfigurator/systems)
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import pandas as pd

from engine.estimators.realistic import DEFAULT_CONSTANTS
from engine.silicon import moe_fit, score
from engine.specs import load_specs


def percent(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for column in out.columns:
        if column.startswith(("median", "p90", "bias")):
            out[column] = (100 * out[column]).map("{:+.1f}%".format if column.startswith("bias") else "{:.1f}%".format)
    return out


def shipped_values() -> dict:
    return {name: getattr(DEFAULT_CONSTANTS, name) for name in moe_fit.NAMES}


def weight_only_gemms(root, devices: dict) -> pd.DataFrame | None:
    """Dense weight-only GEMMs (weights narrower than bf16 activations), before / after, per device x dtype."""
    frame = score.measured_kernels("gemm", root)
    frame = frame[(frame["weight_dtype"] != frame["activation_dtype"]) & (frame["activation_dtype"] == "bf16")
                  & (frame["n"] >= 128) & (frame["k"] >= 128)]
    if frame.empty:
        return None
    lines = []
    for label, constants in (("before", replace(DEFAULT_CONSTANTS, weight_only_efficiency=1.0)),
                             ("shipped", DEFAULT_CONSTANTS)):
        tidy = score.score_family(frame, "gemm", methods=("realistic",), devices=devices, constants=constants)
        lines.append(score.summary(tidy).assign(constants=label))
    return pd.concat(lines, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400, help="rows sampled per device x dtype (default 400)")
    parser.add_argument("--root", default=None, help="an aiconfigurator systems folder (default: the installed one)")
    args = parser.parse_args()
    started = time.perf_counter()
    devices = load_specs()
    rows = moe_fit.fit_rows(root=args.root, rows_per_group=args.rows)
    table, fitted = moe_fit.leave_one_device_out(rows, devices)
    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 500)
    print(f"MoE (trtllm moe_perf, balanced routing): {len(rows):,} rows; leave-one-device-out per device x dtype x "
          "tokens per expert\n")
    print(percent(table[["device", "precision", "bucket", "count", "median before", "median lodo", "p90 before",
                         "p90 lodo", "bias before", "bias lodo"]]).to_string(index=False))
    print("\nfitted without the device:")
    for device, values in fitted.items():
        print(f"  {device:10s} " + ", ".join(f"{k} {v:.3g}" for k, v in values.items()))
    groups = moe_fit.device_moes(rows, devices)
    print("\npooled over devices (|error| median / p90, bias):")
    for label, values_of in (("before", lambda d: moe_fit.UNCALIBRATED), ("lodo", lambda d: fitted[d]),
                             ("shipped", lambda d: shipped_values())):
        result = moe_fit.overall(rows, groups, values_of)
        print(f"  {label:8s} median {100 * result['median']:.1f}%  p90 {100 * result['p90']:.1f}%  "
              f"bias {100 * result['bias']:+.1f}%")
    everything = moe_fit.fit(list(groups.values()))
    print("\nfitted on all devices: " + ", ".join(f"{k} {v:.3g}" for k, v in everything.items()))
    print("shipped (RealisticConstants): " + ", ".join(f"{k} {v:.3g}" for k, v in shipped_values().items()))
    dense = weight_only_gemms(args.root, devices)
    if dense is not None:
        print("\ndense weight-only GEMMs (n, k >= 128; no device here was in the MoE fit):")
        print(percent(dense[["constants", "device", "precision", "count", "median_abs_error", "p90_abs_error",
                             "bias"]]).to_string(index=False))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
