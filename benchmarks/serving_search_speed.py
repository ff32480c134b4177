"""Serving design-space search speed (engine.serving_search): >= 1,000 configurations on one device in <= 2 s.

The search: Llama-3.1-8B on 8 x H200-SXM, every layout of 8 devices (10), 18 concurrencies from 1 to 512
and 6 token budgets from 512 to 16384 = 1,080 configurations, method realistic, SLA TTFT <= 300 ms,
TPOT <= 10 ms. Timed three ways (median of --repeats, a fresh search each time, one process):
- screen: every configuration estimated in closed form (engine/serving/search_screen.py), no refinement;
- search: the screen, then the front, the best and near misses simulated exactly (what serving_search does);
- exact (--exact): every configuration simulated as serve() does (slow; off by default).
Also prints the screen's error against serve() over the configurations refined (exact) in the search.
Speculative decoding (--no-speculative skips it): Llama-3.1-70B with a Llama-3.1-8B draft (k = 3, acceptance
0.7) on 2 x H200-SXM, every layout of 2 devices (2), the 9 default concurrencies 1..256 x 2 token budgets,
SLA TTFT <= 1 s, TPOT <= 30 ms: the search the dashboard ran in 89 s when speculation fell back to serve()
point by point; printed beside the same search with serve() at every configuration (the old fallback).
Run: .venv/bin/python benchmarks/serving_search_speed.py [--repeats N] [--exact]
On a shared machine the wall seconds are an upper bound: say how loaded it was when quoting them; the CPU
seconds (this process's, numpy runs single-threaded here) are closer to an idle core's wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):   # one core, as the target says
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import engine  # noqa: E402
from engine.serving import SLA  # noqa: E402
from engine.serving import search_refine  # noqa: E402

TARGET_CONFIGS, TARGET_S = 1000, 2.0
CONCURRENCIES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
BUDGETS = (512, 1024, 2048, 4096, 8192, 16384)


def run(hardware, model, exact: bool, refine: bool):
    original = search_refine.MAX_ROUNDS
    search_refine.MAX_ROUNDS = original if refine else 0
    try:
        start, cpu = time.perf_counter(), time.process_time()
        result = engine.serving_search(hardware, model, devices=8, concurrencies=CONCURRENCIES, token_budgets=BUDGETS,
                                       sla=SLA(ttft_max_s=0.3, tpot_max_s=0.01), exact=exact)
        return (time.perf_counter() - start, time.process_time() - cpu), result
    finally:
        search_refine.MAX_ROUNDS = original


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--exact", action="store_true", help="also time the all-exact search (minutes)")
    parser.add_argument("--no-speculative", action="store_true", help="skip the speculative-decoding search")
    args = parser.parse_args(argv)
    hardware, model = engine.load_hardware("H200-SXM"), engine.load_model("meta-llama/Llama-3.1-8B")
    run(hardware, model, False, False)      # warm imports and the workbook
    kinds = [("screen", False, False), ("search", False, True)] + ([("exact", True, True)] if args.exact else [])
    results = {}
    for label, exact, refine in kinds:
        times, cpu_times, result = [], [], None
        for _ in range(args.repeats if label != "exact" else 1):
            (seconds, cpu), result = run(hardware, model, exact, refine)
            times.append(seconds)
            cpu_times.append(cpu)
        results[label] = result
        configs = result.configs
        n, median, cpu = int(configs["fits"].sum()), statistics.median(times), statistics.median(cpu_times)
        per_target = (median / n * TARGET_CONFIGS) / TARGET_S
        print(f"{label:7s} {len(configs)} configurations ({n} run), median {median:.2f} s wall ({cpu:.2f} s CPU), "
              f"{n / median:.0f} configs/s, {int(configs['exact'].sum())} simulated exactly; time per "
              f"{TARGET_CONFIGS} configs / {TARGET_S:g} s target = {per_target:.2f} wall, "
              f"{cpu / n * TARGET_CONFIGS / TARGET_S:.2f} CPU")
        if label == "search":
            print(f"        front {int(configs['on_front'].sum())} points; {result.messages[0]}")
            screen = run(hardware, model, False, False)[1].configs.set_index(["layout", "concurrency", "token_budget"])
            exact_rows = configs[configs["exact"]].set_index(["layout", "concurrency", "token_budget"])
            for metric in ("ttft_s", "tpot_s", "tokens_per_s"):
                error = np.abs(screen.loc[exact_rows.index, metric] / exact_rows[metric] - 1)
                print(f"        screen vs serve on the {len(error)} exact rows, {metric}: median {error.median():.1%}, "
                      f"max {error.max():.1%}")
    if not args.no_speculative:
        speculative(args.repeats)
    if args.exact:      # does screening then simulating the few find what simulating everything finds?
        key = ["layout", "concurrency", "token_budget"]
        searched, exact = results["search"], results["exact"]
        same_best = searched.best[key].to_dict("records") == exact.best[key].to_dict("records")
        exact_front = {tuple(r) for r in exact.front[key].itertuples(index=False)}
        found = {tuple(r) for r in searched.front[key].itertuples(index=False)} & exact_front
        cols = ["tokens_per_s_per_user", "tokens_per_s_per_device"]
        ours = searched.front[cols].to_numpy(float)
        missed = exact.front[[tuple(r) not in found for r in exact.front[key].itertuples(index=False)]]
        # how much better than a missed exact front point the search's best front point is in the worse of the two
        gaps = [min(max(x / sx, y / sy) for sx, sy in ours) - 1 for x, y in missed[cols].to_numpy(float)]
        print(f"        search vs exact: same best {same_best}; {len(found)} of the {len(exact_front)} exact front "
              f"points on the search's front; the others within {max(gaps, default=0):.2%} of it")
    return 0


def speculative(repeats: int) -> None:
    """The speculative search of the module docstring, against the same search with serve() at every point."""
    from engine.serving import search_run
    from engine.serving.speculative import SpeculativeDecoding
    hardware, model = engine.load_hardware("H200-SXM"), engine.load_model("meta-llama/Llama-3.1-70B")
    spec = SpeculativeDecoding(draft_model=engine.load_model("meta-llama/Llama-3.1-8B"), draft_tokens=3,
                               acceptance_rate=0.7)

    def search():
        return engine.serving_search(hardware, model, devices=2, input_length=1024, output_length=256,
                                     concurrencies=(1, 2, 4, 8, 16, 32, 64, 128, 256), token_budgets=(2048, 8192),
                                     sla=SLA(ttft_max_s=1.0, tpot_max_s=0.03), speculative=spec)
    times, cpu_times = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        result = search()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu)
    configs = result.configs
    n = int(configs["fits"].sum())
    # the same search with every configuration run by serve() itself, as before speculation was shared
    original = search_run.needs_serve
    search_run.needs_serve = lambda options: True
    try:
        start, cpu = time.perf_counter(), time.process_time()
        fallback = search()
        serve_s, serve_cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        search_run.needs_serve = original
    wall, cpu = statistics.median(times), statistics.median(cpu_times)
    same = fallback.best[["layout", "concurrency", "token_budget"]].equals(result.best[["layout", "concurrency",
                                                                                        "token_budget"]])
    print(f"speculative {len(configs)} configurations ({n} run), median {wall:.2f} s wall ({cpu:.2f} s CPU), "
          f"{int(configs['exact'].sum())} simulated exactly; serve() at every configuration: {serve_s:.2f} s wall "
          f"({serve_cpu:.2f} s CPU): {serve_cpu / cpu:.1f}x the CPU; same best {same}")
    print(f"        {result.messages[0]}")


if __name__ == "__main__":
    raise SystemExit(main())
