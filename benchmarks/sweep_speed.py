"""Sweep speed (engine/explore/grid.py, engine/explore/dask_cluster.py): one scenario, 100,000-point and 10,000-point grids.

Targets (issue 7):
  (a) one scenario through sweep_grid (a Llama-3.1-70B decode step on H100-SXM), cold: a different batch
      every call so no cache can help -- at most 2 ms median;
  (b) a 102,400-point sweep of that decode step over batch x context_length x memory_bandwidth x
      compute_scale (10 x 10 x 32 x 32) -- at most 5 s in one process; plus a skewed grid with many more
      distinct scenarios (100 batch x 100 context x 10 bandwidth), for honesty;
  (c) a 10,000-point grid (memory_bandwidth x matrix_tflops), the engine part of the Explore page -- at most 1 s;
  (d) the 102,400-point grid through sweep_grid_dask on a LocalCluster of 2 worker processes, checked equal
      to (b) (informational: no target).
Prints medians over repeated runs.
Run: .venv/bin/python benchmarks/sweep_speed.py [--repeats N] [--no-dask]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import pandas as pd

import engine
from engine.explore.grid import sweep_grid

MODEL_ID = "meta-llama/Llama-3.1-70B"


def timed(function) -> tuple[float, object]:
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def verdict(seconds: float, target: float) -> str:
    return "meets" if seconds <= target else "MISSES"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each big sweep (median reported)")
    parser.add_argument("--single", type=int, default=200, help="cold single-scenario calls")
    parser.add_argument("--no-dask", action="store_true", help="skip (d)")
    args = parser.parse_args()
    hardware = engine.load_hardware("H100-SXM")
    model = engine.load_model(MODEL_ID)
    decode = engine.Scenario(phase="decode", batch=1, input_length=1024)
    print(f"{os.cpu_count()} CPU(s); numpy {np.__version__}, pandas {pd.__version__}; {MODEL_ID} decode step on "
          f"{hardware.name}")

    # (a) one scenario, cold: every call a batch never seen before
    sweep_grid(model, decode, {"batch": [100_000]}, hardware=hardware)           # imports, workbook, catalog
    samples = [timed(lambda b=b: sweep_grid(model, decode, {"batch": [b]}, hardware=hardware))[0]
               for b in range(1, args.single + 1)]
    single = statistics.median(samples)
    estimate = statistics.median(timed(lambda b=b: engine.estimate(hardware, model, decode.model_copy(
        update={"batch": b})))[0] for b in range(1, args.single + 1))
    print(f"(a) one scenario via sweep_grid, cold: median {single * 1e3:.3f} ms, min {min(samples) * 1e3:.3f} ms "
          f"({args.single} calls; engine.estimate of the same step: {estimate * 1e3:.3f} ms) -- "
          f"target 2 ms: {verdict(single, 0.002)}")

    # (b) 102,400 points, and a skewed grid of 100,000 points with 10,000 distinct scenarios
    big = {"batch": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
           "context_length": [128 * 2 ** i for i in range(10)],
           "memory_bandwidth": [float(v) for v in np.linspace(1000, 8000, 32)],
           "compute_scale": [float(v) for v in np.geomspace(0.25, 4, 32)]}
    skewed = {"batch": list(range(1, 101)), "context_length": [int(v) for v in np.linspace(128, 100_000, 100)],
              "memory_bandwidth": [float(v) for v in np.linspace(1000, 8000, 10)]}
    results = {}
    for name, grid in (("102,400-point grid (10 batch x 10 context x 32 bandwidth x 32 compute)", big),
                       ("skewed 100,000-point grid (100 batch x 100 context x 10 bandwidth)", skewed)):
        runs = [timed(lambda grid=grid: sweep_grid(model, decode, grid, hardware=hardware))
                for _ in range(args.repeats)]
        seconds = statistics.median(r[0] for r in runs)
        frame = runs[-1][1]
        results[name] = (seconds, frame)
        errors = int((frame["error"] != "").sum())
        print(f"(b) {name}: median {seconds:.3f} s over {args.repeats} runs, {len(frame) / seconds:,.0f} points/s, "
              f"{errors} points with errors -- target 5 s: {verdict(seconds, 5.0)}")

    # (c) 10,000 points: bandwidth x matrix peak at one scenario (the Explore page's engine work)
    explore = {"memory_bandwidth": [float(v) for v in np.linspace(500, 10_000, 100)],
               "matrix_tflops": [float(v) for v in np.linspace(100, 5000, 100)]}
    runs = [timed(lambda: sweep_grid(model, decode, explore, hardware=hardware))[0]
            for _ in range(max(args.repeats, 5))]
    seconds = statistics.median(runs)
    print(f"(c) 10,000-point grid (100 bandwidth x 100 matrix_tflops): median {seconds * 1e3:.1f} ms over {len(runs)} "
          f"runs, {10_000 / seconds:,.0f} points/s -- target 1 s: {verdict(seconds, 1.0)}")

    if args.no_dask:
        return
    # (d) the 102,400-point grid on a LocalCluster of two worker processes
    from dask.distributed import Client, LocalCluster

    from engine.explore.dask_cluster import sweep_grid_dask
    expected = results[next(iter(results))][1]
    started = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client:
        startup = time.perf_counter() - started
        sweep_grid_dask(model, decode, {"batch": [1, 2]}, hardware=hardware, client=client)   # workers import engine
        for chunk in (10_000, 25_600):
            runs = [timed(lambda chunk=chunk: sweep_grid_dask(model, decode, big, hardware=hardware, client=client,
                                                              chunk_points=chunk)) for _ in range(args.repeats)]
            seconds = statistics.median(r[0] for r in runs)
            same = all(r[1].equals(expected) for r in runs)
            print(f"(d) 102,400-point grid on Dask (LocalCluster, 2 worker processes, chunks of {chunk:,}): median "
                  f"{seconds:.3f} s over {args.repeats} runs (cluster start {startup:.1f} s, not included); "
                  f"identical to one process: {same}")


if __name__ == "__main__":
    main()
