"""Serving accuracy on the measured aggregated runs that the validation newly expresses (h/express):
Kimi-K2.5 and MiniMax-M2.5 (new hand models), runs named for checkpoints read through an alias config
(nvidia/DeepSeek-R1-NVFP4, nvidia/Qwen3-32B-NVFP4), layout fields written as 0, and runs whose MoE group is
wider than tp with no attention_dp written (attention DP inferred).

    python benchmarks/serving_accuracy_new_rows.py [--out scored.csv]

Each run takes its backend's shipped host-side times (engine/serving/backends.py), fitted on the runs expressed
before, so these rows are out of sample for those times. Prints TTFT and TPOT median / p90 of
|predicted / measured - 1| and the median signed error (bias) per model, per system x model, and overall.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.serving import validation  # noqa: E402
from engine.calibration.silicon.package import installed_version, resolve_root  # noqa: E402
from engine.calibration.silicon.serving import read_serving_runs  # noqa: E402
from engine.hardware.specs import load_specs  # noqa: E402

NEW_MODELS = {"MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5", *validation.CONFIG_ALIASES}


def newly_expressed(agg: pd.DataFrame) -> pd.DataFrame:
    """Runs the validation refused before this change: new models, aliases, 0 layout fields, inferred DP."""
    moe_group = agg["moe_tp"].fillna(1).clip(lower=1) * agg["moe_ep"].fillna(1).clip(lower=1)
    inferred_dp = agg["attention_dp"].isna() & (moe_group > agg["tp"])
    zero = (agg["attention_dp"] == 0).fillna(False)
    return agg[agg["model_path"].isin(NEW_MODELS) | inferred_dp | zero]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the scored runs as CSV")
    args = parser.parse_args(argv)
    root = resolve_root()
    runs = read_serving_runs(root)
    rows = newly_expressed(runs[runs["mode"] == "agg"])
    print(f"aiconfigurator-core {installed_version()}: {len(rows)} newly expressible aggregated runs")
    started = time.perf_counter()
    scored = validation.score_runs(rows, load_specs(), root)
    elapsed = time.perf_counter() - started
    ok = scored[scored["reason"] == ""]
    print(f"{len(ok)} scored, {len(scored) - len(ok)} refused by serve(), in {elapsed:.1f} s")
    refused = scored.loc[scored["reason"] != ""].groupby(["model_path", "reason"]).size()
    if len(refused):
        print(refused.to_string())
    if args.out:
        scored.to_csv(args.out, index=False)
    errors = validation.errors(scored)
    fmt = dict(float_format=lambda v: f"{v:.3f}")
    print("\nby model\n" + validation.summary(errors, ["model_path"]).to_string(**fmt))
    print("\nby system x model x backend\n"
          + validation.summary(errors, ["system", "model_path", "backend"]).to_string(**fmt))
    print("\nall newly expressed\n" + validation.summary(errors).to_string(**fmt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
