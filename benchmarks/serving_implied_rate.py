"""The matrix throughput each measured serving run implies (engine/serving/validation_rate.py), per series.

    python benchmarks/serving_implied_rate.py [--above 0.66] [--top 8]

Needs the `calibration` extra (aiconfigurator-core). For every aggregated run that validation_express expresses:
C / (TTFT + (OSL - 1) x TPOT) requests per second x (ISL + OSL) tokens x 2 x the linear weights a token uses, per
device, as a share of the device's matrix peak in the run's compute dtype (a lower bound: attention, norms and the
decode steps' memory streaming come on top). Prints how many series (system, model, backend, version, quantization) have
a run whose share exceeds --above (default 0.66: Llama-3.1-8B's four GEMM shapes at m 8192 together reach 1.30 of
H200's 1.98 PFLOP/s fp8 peak in aiconfigurator's vLLM table) and the --top series by largest share, with their median
share and the runs above it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.calibration.silicon.package import resolve_root  # noqa: E402
from engine.calibration.silicon.serving import read_serving_runs  # noqa: E402
from engine.hardware.specs import load_specs  # noqa: E402
from engine.serving.validation_express import ModelSource, concurrency_of, express  # noqa: E402
from engine.serving.validation_rate import implied_peak_share  # noqa: E402


def shares(runs: pd.DataFrame, devices: dict, root) -> pd.DataFrame:
    models, rows = ModelSource(root), []
    for run in runs.itertuples(index=False):
        expressed = express(run, devices, models)
        if isinstance(expressed, str):
            continue
        hardware, model, fields = expressed
        share = implied_peak_share(model, hardware, fields["activation_dtype"], concurrency=concurrency_of(run),
                                   input_length=run.input_length, output_length=run.output_length,
                                   ttft_s=run.ttft_s, tpot_s=run.tpot_s,
                                   devices=fields["tp"] * fields["pp"] * fields["dp"])
        rows.append(dict(system=run.system, model=run.model_path, backend=run.backend,
                         version=str(run.backend_version), quant=str(run.gemm_quant_mode), share=share))
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--above", type=float, default=0.66)
    parser.add_argument("--top", type=int, default=8, help="series to print, largest share first")
    args = parser.parse_args(argv)
    root = resolve_root()
    runs = read_serving_runs(root)
    frame = shares(runs[runs["mode"] == "agg"], load_specs(), root)
    keys = ["system", "model", "backend", "version", "quant"]
    table = frame.groupby(keys).agg(runs=("share", "size"), median_share=("share", "median"),
                                    largest_share=("share", "max"),
                                    runs_above=("share", lambda s: int((s > args.above).sum())))
    print(f"{len(frame)} expressed runs; implied matrix rate per device as a share of its peak (lower bound)")
    print(f"all runs: median {frame['share'].median():.3f}, p90 {frame['share'].quantile(0.9):.3f}")
    top = table.sort_values("largest_share", ascending=False).head(args.top)
    print(f"\nthe {args.top} series with the largest share ({int(table['runs_above'].gt(0).sum())} with a run above "
          f"{args.above:.2f})")
    print(top.to_string(float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
