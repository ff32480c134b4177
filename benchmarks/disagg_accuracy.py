"""Disaggregated serving accuracy: `serve_disaggregated` against the measured disagg runs of aiconfigurator-core.

    python benchmarks/disagg_accuracy.py [--method realistic] [--requests-per-client 8] [--out scored.csv] [--write]

Needs the `calibration` extra (aiconfigurator-core). Prints how many disagg runs of silicon_sample.csv can be
expressed and why the others cannot; for TTFT and TPOT the median and p90 of |predicted / measured - 1| and
the median signed error (bias), overall, per system, backend and input length; which pool limits the
predicted throughput. Nothing is fitted on these runs: the host-side times are the backends' (fitted on the
aggregated runs), so every score is out of sample for disaggregated serving.
`--write` records the summary in calibration/results/serving_disagg.csv.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.serving import validation  # noqa: E402
from engine.serving.disagg_validation import score_disaggregated_runs  # noqa: E402
from engine.calibration.silicon.package import installed_version, resolve_root  # noqa: E402
from engine.calibration.silicon.results import write_results  # noqa: E402
from engine.calibration.silicon.serving import read_serving_runs  # noqa: E402
from engine.hardware.specs import load_specs  # noqa: E402

VARIANT = "disaggregated (host-side times of the aggregated fit)"


def show(title: str, frame: pd.DataFrame) -> None:
    print(f"\n{title}")
    print(frame.to_string(float_format=lambda v: f"{v:.3f}"))


def summary_rows(errors: pd.DataFrame, by: str | None) -> pd.DataFrame:
    rows = validation.result_rows(errors, "in-sample", by)
    rows["scope"] = "serving-disaggregated"
    rows["variant"] = VARIANT
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="realistic")
    parser.add_argument("--requests-per-client", type=int, default=None,
                        help="rounds per client in the simulation (default: ServingOptions' 8)")
    parser.add_argument("--out", help="write the scored runs as CSV")
    parser.add_argument("--write", action="store_true", help="record the summary in calibration/results/serving_disagg.csv")
    args = parser.parse_args(argv)
    root = resolve_root()
    runs = read_serving_runs(root)
    disagg = runs[runs["mode"] == "disagg"]
    print(f"aiconfigurator-core {installed_version()} ({root}): {len(runs)} runs, {len(disagg)} disaggregated, "
          f"method {args.method}")
    extra = {} if args.requests_per_client is None else {"requests_per_client": args.requests_per_client}
    started = time.perf_counter()
    scored = score_disaggregated_runs(disagg, load_specs(), root, method=args.method, **extra)
    elapsed = time.perf_counter() - started
    expressed = scored[scored["reason"] == ""]
    print(f"{len(expressed)} runs expressed, {len(scored) - len(expressed)} not, in {elapsed:.1f} s "
          f"({elapsed / max(len(expressed), 1) * 1e3:.0f} ms per expressed run)")
    reasons = scored.loc[scored["reason"] != "", "reason"].str.slice(0, 110).value_counts()
    show("not expressed (reason: runs)", reasons.to_frame())
    if args.out:
        scored.to_csv(args.out, index=False)
    if expressed.empty:
        print("no run expressed: nothing to score")
        return 1
    errors = validation.errors(scored)
    errors["input_bucket"] = pd.cut(errors["input_length"].astype(float), [0, 2048, 1e9], labels=["<=2k", ">2k"])
    show("ALL expressed runs (nothing fitted on them)", validation.summary(errors))
    for by in (["system"], ["backend"], ["family"], ["input_bucket"], ["concurrency_bucket"], ["bound"]):
        show(f"by {' x '.join(by)}", validation.summary(errors, by))
    if args.write:
        rows = pd.concat([summary_rows(errors, None), summary_rows(errors, "system"),
                          summary_rows(errors, "backend")], ignore_index=True)
        path = write_results(rows, "serving_disagg", "benchmarks/disagg_accuracy.py", installed_version())
        print(f"recorded in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
