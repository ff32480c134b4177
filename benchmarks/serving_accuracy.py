"""Serving accuracy: `serve` against the measured aggregated runs of aiconfigurator-core (silicon_sample.csv).

    python benchmarks/serving_accuracy.py [--method realistic] [--limit N] [--out scored.csv]

Needs the `calibration` extra (aiconfigurator-core). Prints, for TTFT and TPOT: median and p90 of
|predicted / measured - 1| and the median signed error (bias), per system, model family, backend and
concurrency bucket; the serving terms fitted on all runs (arrival jitter, iteration and request overhead, graph
latency overlap; engine/serving/backends.py holds them); and the headline, leave-one-system-out (the terms fitted
without the scored system, per backend). Every run is simulated once per arrival jitter of JITTERS (the one
scheduling term, which changes the schedule); the host-side terms and the prefill time scale (fitted
per fold from validation.PREFILL_SCALE_GRID, --prefill-scales) are re-timed without simulating again.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.serving import validation, validation_express  # noqa: E402
from engine.serving.validation_windows import conflicting_measurements  # noqa: E402
from engine.calibration.silicon.package import installed_version, resolve_root  # noqa: E402
from engine.calibration.silicon.results import write_results  # noqa: E402
from engine.calibration.silicon.serving import read_serving_runs  # noqa: E402
from engine.hardware.specs import load_specs  # noqa: E402

JITTERS = (0, 2, 4, 8)
TARGETS = {"tpot_median": 0.12, "tpot_p90": 0.35, "ttft_median": 0.30, "ttft_p90": 0.80}


def show(title: str, frame: pd.DataFrame) -> None:
    print(f"\n{title}")
    print(frame.to_string(float_format=lambda v: f"{v:.3f}"))


def read_scored(path) -> dict:
    """{arrival jitter: scored runs} from a CSV written by --out."""
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    frame["reason"] = frame["reason"].fillna("")
    return {int(jitter): group.drop(columns="arrival_jitter").reset_index(drop=True)
            for jitter, group in frame.groupby("arrival_jitter")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="realistic")
    parser.add_argument("--limit", type=int, default=None, help="score every k-th run only, k = runs / limit")
    parser.add_argument("--out", help="write the scored runs as CSV")
    parser.add_argument("--scored", help="read the scored runs from a CSV an earlier --out wrote (same package and "
                        "engine: the simulations are not run again; every fit and score below is)")
    parser.add_argument("--tail-weights", default=None, metavar="TPOT,TTFT",
                        help="weights of the p90 beside the median in the serving-term fits' loss (default: "
                        "engine/serving/validation.py TAIL_WEIGHT; 0,0 fits on the median alone, as before 2026-11-26)")
    parser.add_argument("--prefill-scales", default=None, metavar="K1,K2,...",
                        help="candidates of the prefill time scale fitted per fold beside the other serving terms "
                        "(default: engine/serving/validation.py PREFILL_SCALE_GRID, 1 alone: not fitted)")
    parser.add_argument("--mtp-by-date", action="store_true",
                        help="also read the dated MTP series (validation_express.MTP_SERIES_BY_DATE: TensorRT-LLM "
                        "1.1.0rc2.post2 of 2026-01-14) with MTP speculative decoding, beside MTP_SERIES (simulations "
                        "only: --scored takes the CSV as it was scored)")
    parser.add_argument("--checkpoint-modules", action="store_true",
                        help="keep the modules each run's checkpoint leaves unquantized in bf16 (validation_express."
                        "UNQUANTIZED_MODULES; off by default: docs/serving.md)")
    parser.add_argument("--no-squared-tp", dest="squared_tp", action="store_false",
                        help="read tp = moe_tp x moe_ep (moe_tp = moe_ep, attention_dp 1) beyond the device's scale-up "
                        "domain as written, not as moe_ep devices (validation_express.SQUARED_TP_READING, on by "
                        "default: docs/serving.md)")
    parser.add_argument("--tensor-parallel-moe", default=None, metavar="BACKEND,...",
                        help="the backends whose runs with experts recorded tensor-parallel over tp (moe_tp = tp, moe_ep 1, "
                        "no attention DP) are read without an all-to-all (validation_express.TENSOR_PARALLEL_MOE_BACKENDS; "
                        "'none' for no backend; simulations only)")
    parser.add_argument("--length-spread", type=float, default=None, metavar="S",
                        help="request lengths drawn from [L(1 - S), L(1 + S)] around each run's ISL and OSL "
                        "(validation_express.BENCHMARK_LENGTH_SPREAD, 0 by default: the recorded lengths exactly; "
                        "simulations only)")
    parser.add_argument("--attention-dp-gate", action="store_true",
                        help="read TensorRT-LLM's DeepSeek attention-DP runs behind the attention-DP balance gate "
                        "(validation_express.ATTENTION_DP_GATE_READING, off by default: docs/serving.md; "
                        "simulations only)")
    parser.add_argument("--write", action="store_true",
                        help="record the summaries in calibration/results/serving.csv: leave-one-system-out overall and by "
                        "system, backend, model family and concurrency bucket, in-sample by backend (docs and the Accuracy "
                        "page read it)")
    args = parser.parse_args(argv)
    validation_express.CHECKPOINT_MODULES = args.checkpoint_modules
    validation_express.SQUARED_TP_READING = args.squared_tp
    validation_express.ATTENTION_DP_GATE_READING = args.attention_dp_gate
    if args.tensor_parallel_moe is not None:
        validation_express.TENSOR_PARALLEL_MOE_BACKENDS = tuple(
            name for name in args.tensor_parallel_moe.split(",") if name and name != "none")
    if args.length_spread is not None:
        validation_express.BENCHMARK_LENGTH_SPREAD = args.length_spread
    if args.tail_weights:
        tpot_weight, ttft_weight = (float(value) for value in args.tail_weights.split(","))
        validation.TAIL_WEIGHT.update(tpot=tpot_weight, ttft=ttft_weight)
    if args.mtp_by_date:
        validation_express.MTP_SERIES = validation_express.MTP_SERIES + validation_express.MTP_SERIES_BY_DATE
    if args.prefill_scales:
        validation.PREFILL_SCALE_GRID = sorted(float(value) for value in args.prefill_scales.split(","))
    root = resolve_root()
    runs = read_serving_runs(root)
    agg = runs[runs["mode"] == "agg"]
    if args.limit and len(agg) > args.limit:
        agg = agg.iloc[:: max(1, len(agg) // args.limit)]
    print(f"aiconfigurator-core {installed_version()} ({root}): {len(runs)} runs, {len(agg)} aggregated scored "
          f"with method {args.method}")
    started = time.perf_counter()
    if args.scored:
        alternatives = read_scored(args.scored)
    else:
        devices = load_specs()
        alternatives = {jitter: validation.score_runs(agg, devices, root, method=args.method, arrival_jitter=jitter)
                        for jitter in JITTERS}
    elapsed = (time.perf_counter() - started) / len(JITTERS)
    print(f"serving-term fits minimise median + w x p90 of |log error|, w: {validation.TAIL_WEIGHT}")
    scored = alternatives[JITTERS[0]]
    expressed = scored[scored["reason"] == ""]
    print(f"{len(expressed)} runs expressed, {len(scored) - len(expressed)} not, in {elapsed:.1f} s "
          f"({elapsed / max(len(scored), 1) * 1e3:.1f} ms per run)")
    show("not expressed (reason: runs)", scored.loc[scored["reason"] != "", "reason"].value_counts().head(12).to_frame())
    if args.out:
        pd.concat([frame.assign(arrival_jitter=jitter) for jitter, frame in alternatives.items()]).to_csv(
            args.out, index=False)

    errors = validation.errors(validation.shipped(alternatives))
    show("in-sample, with the backends' shipped serving terms", validation.summary(errors))
    for by in (["system"], ["family"], ["backend"], ["concurrency_bucket"], ["system", "family", "backend"]):
        show(f"by {' x '.join(by)}", validation.summary(errors, by))

    print("\nserving terms fitted on all runs (arrival jitter iterations, iteration ms, request ms, graph latency overlap, "
          "us per decoding request and iteration, arrival wait share, prefill time scale, request us per routed "
          "expert-layer):")
    every = expressed["reason"] == ""
    for backend in [*sorted(expressed["backend"].unique()), "generic"]:
        rows = every & (expressed["backend"] == backend) if backend != "generic" else every
        jitter, iteration, request, overlap, per_request, share, scale, per_expert = validation.fit_serving_terms(
            alternatives, rows, **validation.backend_grids(backend, {}))
        print(f"  {backend:<8} {jitter:3d} {iteration * 1e3:6.2f} {request * 1e3:7.1f} {overlap:5.2f} "
              f"{per_request * 1e6:5.1f} {share:5.2f} {scale:5.2f} {per_expert * 1e6:5.1f}")

    held_out = validation.leave_one_system_out(alternatives)
    show("leave-one-system-out: arrival jitter chosen per system and backend (runs)",
         held_out.groupby(["system", "backend", "arrival_jitter"]).size().unstack(fill_value=0))
    held_out = validation.errors(held_out)
    show("HEADLINE leave-one-system-out (serving terms fitted without the scored system, per backend)",
         validation.summary(held_out))
    show("leave-one-system-out by system", validation.summary(held_out, ["system"]))
    show("leave-one-system-out by backend", validation.summary(held_out, ["backend"]))
    show("leave-one-system-out by model family", validation.summary(held_out, ["family"]))
    show("leave-one-system-out by concurrency bucket", validation.summary(held_out, ["concurrency_bucket"]))
    without = validation.errors(validation.leave_one_system_out(alternatives, per_request_grid=[0.0],
                                                                wait_share_grid=[0.0]))
    show("for comparison, leave-one-system-out without the per-request iteration overhead and the arrival wait",
         validation.summary(without))
    show("  by system", validation.summary(without, ["system"]))
    conflicting = conflicting_measurements(held_out)
    show(f"leave-one-system-out without the {int(conflicting.sum())} runs whose configuration was measured again with a "
         "TPOT over 1.5x apart (not the headline; validation_windows.conflicting_measurements)",
         validation.summary(held_out[~conflicting]))
    above = held_out["concurrency"].astype(float) > held_out["max_batch"].astype(float)
    show(f"leave-one-system-out, the {int(above.sum())} runs whose concurrency exceeds their batch size (the batch "
         "per attention-DP rank; validation_express.attention_dp_reading) and the rest", validation.summary(held_out.assign(
             concurrency_above_batch=above), ["concurrency_above_batch"]))
    headline = validation.summary(held_out).iloc[0]
    if args.write:
        rows = pd.concat([validation.result_rows(held_out, "leave-one-system-out", by)
                          for by in (None, "system", "backend", "family", "concurrency_bucket")]
                         + [validation.result_rows(errors, "in-sample", "backend")], ignore_index=True)
        path = write_results(rows, "serving", "benchmarks/serving_accuracy.py", installed_version())
        print(f"recorded in {path}")
    print("\ntargets: " + ", ".join(f"{name} {headline[name]:.3f} (target <= {limit:.2f}: "
                                    f"{'met' if headline[name] <= limit else 'missed by ' + format(headline[name] - limit, '.3f')})"
                                    for name, limit in TARGETS.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
