"""Serving simulation speed (engine/serving): one concurrency point, and a concurrency sweep (the curve).

Target (issue 12): one concurrency point in at most 50 ms, so a concurrency sweep is interactive.
Each point is cold (a different input length every call: no cache can help). Prints the median over
repeats of the wall time and of the process's CPU time (what the point costs whatever else loads the machine:
on a shared machine the wall time is inflated by waiting for a core), the iterations simulated and the ratio of
the wall time to the target.
Run: .venv/bin/python benchmarks/serve_speed.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.serving import doubling_concurrencies, schedule, serve, serving_curve  # noqa: E402

TARGET_S = 0.050
POINTS = (  # (label, model, serve fields)
    ("Llama-3.1-8B, 1 client, 1024/1024", "meta-llama/Llama-3.1-8B", dict(concurrency=1)),
    ("Llama-3.1-8B, 32 clients, 1024/1024", "meta-llama/Llama-3.1-8B", dict(concurrency=32)),
    ("Llama-3.1-8B, 128 clients, 1024/1024", "meta-llama/Llama-3.1-8B", dict(concurrency=128)),
    ("Llama-3.1-70B tp4 fp8, 32 clients, 1024/1024", "meta-llama/Llama-3.1-70B",
     dict(concurrency=32, tp=4, weight_dtype="fp8", activation_dtype="fp8", kv_dtype="fp8")),
    ("Llama-3.1-70B tp4 fp8, 128 clients, 8192/1024", "meta-llama/Llama-3.1-70B",
     dict(concurrency=128, tp=4, weight_dtype="fp8", activation_dtype="fp8", kv_dtype="fp8", input_length=8192)),
    ("Llama-3.1-8B, 128 clients, vLLM profile (clients drift 0-8 iterations)", "meta-llama/Llama-3.1-8B",
     dict(concurrency=128, backend="vllm")),
    ("Llama-3.1-8B, 64 clients, staggered steady state", "meta-llama/Llama-3.1-8B",
     dict(concurrency=64, stagger_start=True, warmup_requests=1)),
    ("DeepSeek-V3 tp8 ep8 fp8, 64 clients, 1024/1024", "deepseek-ai/DeepSeek-V3",
     dict(concurrency=64, tp=8, ep=8, weight_dtype="fp8", activation_dtype="fp8", kv_dtype="fp8")),
    ("Llama-3.1-8B int4_g128 weights (W4A16), 32 clients", "meta-llama/Llama-3.1-8B",     # the weight-only term
     dict(concurrency=32, weight_dtype="int4_g128", activation_dtype="bf16")),
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    hardware = {name: engine.load_hardware(name) for name in ("H100-SXM", "H200-SXM")}
    print(f"one concurrency point (median of {args.repeats}, cold; target {TARGET_S * 1e3:.0f} ms):")
    for method in ("roofline", "realistic"):
        for label, model_id, fields in POINTS:
            model = engine.load_model(model_id)
            device = hardware["H200-SXM" if "DeepSeek" in model_id else "H100-SXM"]
            times, cpu_times = [], []
            for repeat in range(args.repeats):
                lengths = dict(input_length=fields.get("input_length", 1024) + repeat, output_length=1024)
                start, cpu_start = time.perf_counter(), time.process_time()
                result = serve(device, model, method=method, **{**fields, **lengths})
                times.append(time.perf_counter() - start)
                cpu_times.append(time.process_time() - cpu_start)
            median = statistics.median(times)
            print(f"  {method:<9} {label:<52} {median * 1e3:7.1f} ms  (CPU {statistics.median(cpu_times) * 1e3:.1f} "
                  f"ms; {len(result.iterations)} iterations, {median / TARGET_S:.2f} x target)")
    scheduler_loops(args.repeats)
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    concurrencies = doubling_concurrencies(256)
    times = []
    for repeat in range(3):
        start = time.perf_counter()
        serving_curve(hardware["H100-SXM"], model, concurrencies, input_length=1024 + repeat, output_length=1024)
        times.append(time.perf_counter() - start)
    print(f"concurrency sweep 1..256 ({len(concurrencies)} points, realistic, Llama-3.1-8B on H100-SXM): "
          f"{statistics.median(times):.2f} s median of 3")
    return 0


def scheduler_loops(repeats: int) -> None:
    """The scheduler alone on the heaviest point's shape: its scalar loop (the default, engine/serving/schedule_fast.py)
    against the plain one (step_by_step), CPU medians, alternating, and whether they give the same schedule."""
    clients, requests = 128, 1024
    args = (np.full(requests, 8192), np.full(requests, 1024), clients, 8192, clients, 1e18, np.ones(requests))
    cpu, plans = {False: [], True: []}, {}
    for _ in range(repeats):
        for step_by_step in (False, True):
            start = time.process_time()
            plans[step_by_step] = schedule(*args, step_by_step=step_by_step)
            cpu[step_by_step].append(time.process_time() - start)
    fast, plain = plans[False], plans[True]
    same = fast.iterations == plain.iterations and len(fast.mixed) == len(plain.mixed) and all(
        a.index == b.index and np.array_equal(a.decode_priors, b.decode_priors)
        and np.array_equal(a.chunk_tokens, b.chunk_tokens) for a, b in zip(fast.mixed, plain.mixed)) and all(
        np.array_equal(values, plain.requests[name]) for name, values in fast.requests.items())
    scalar, stepped = statistics.median(cpu[False]), statistics.median(cpu[True])
    print(f"scheduler alone ({clients} clients x {requests // clients} requests of 8192/1024, budget 8192: "
          f"{len(fast.mixed)} iterations with prompt chunks): scalar loop {scalar * 1e3:.1f} ms, plain loop "
          f"{stepped * 1e3:.1f} ms CPU (median of {repeats}), {stepped / scalar:.1f}x; same schedule: {same}")


if __name__ == "__main__":
    sys.exit(main())
