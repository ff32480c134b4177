"""Time the same GEMMs two ways, to tell a measurement method's effect from the model's error.

    python3 calibration/measure_gemm_methods.py --shapes calibration/measured/H100-SXM-2026-11-27.csv \
        --hardware H100-SXM --out calibration/measured/methods/H100-SXM-gemm-methods-2026-11-27.csv

For every GEMM row (m, n, k, dtype) of a ground-truth file written by measure_gpu.py, two timings:
- `flushed`: this project's method (measure_timing.Timer): the L2 cache flushed before each single call, CUDA
  events around the call, median of the timed calls. The weight comes from HBM, as inside a real model whose
  consecutive layers have different weights.
- `graph_copies`: the method of aiconfigurator-core's published GEMM tables (its collector's collect_gemm.py
  and helper.benchmark_with_power, Apache-2.0, read for the method only): `copies = max(1, min(5, ceil(L2 /
  weight bytes)))` weight copies, one call per copy captured back to back in a CUDA graph, 3 warm-up replays,
  6 timed replays between two events, mean per call. Small weights stay resident in L2 and kernels run back to
  back, so small GEMMs come out faster than `flushed`.
For fp8 rows a third timing, `graph_copies_quantized`: as `graph_copies` but the bf16 activation is quantized
to e4m3 inside each call (as TensorRT-LLM's fp8 Linear does), so its cost is counted.

Needs PyTorch only (the GPU machine has none of the project's dependencies).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure_timing import Timer, environment  # noqa: E402

COLUMNS = ("hardware", "m", "n", "k", "dtype", "method", "copies", "ms")


def shapes(path: Path) -> list[tuple[int, int, int, str]]:
    with open(path, encoding="utf-8") as handle:
        rows = csv.DictReader(line for line in handle if not line.startswith("#"))
        found = {(int(float(r["m"])), int(float(r["n"])), int(float(r["k"])), r["dtype"])
                 for r in rows if r["kind"] == "gemm"}
    return sorted(found, key=lambda s: (s[3], s[1] * s[2], s[0]))


def graph_mean_ms(calls, warmups: int = 3, replays: int = 6) -> float:
    """Mean milliseconds of one replay of `calls` captured back to back in a CUDA graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            for call in calls:
                call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for call in calls:
            call()
    for _ in range(warmups):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / replays


def gemm_calls(m, n, k, dtype, copies, quantize_input=False):
    x = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
    if dtype == "bf16":
        weights = [torch.randn((n, k), device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        return [(lambda w=w: F.linear(x, w)) for w in weights]
    one = torch.ones((), device="cuda", dtype=torch.float32)
    weights = [torch.randn((n, k), device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn) for _ in range(copies)]
    x8 = x.to(torch.float8_e4m3fn)
    if quantize_input:
        return [(lambda w=w: torch._scaled_mm((x * one).to(torch.float8_e4m3fn), w.t(), scale_a=one, scale_b=one,
                                               out_dtype=torch.bfloat16)) for w in weights]
    return [(lambda w=w: torch._scaled_mm(x8, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
            for w in weights]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", required=True, help="a measure_gpu.py CSV whose gemm rows give the shapes")
    parser.add_argument("--hardware", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget-s", type=float, default=300.0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    l2 = torch.cuda.get_device_properties("cuda").L2_cache_size
    timer = Timer("cuda", repeats=20, warmup=5)
    todo = shapes(Path(args.shapes))
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        handle.write("# llm-roofline GEMM timing-method comparison, written by calibration/measure_gemm_methods.py\n")
        for key, value in {**environment("cuda"), "flushed": timer.method,
                           "graph_copies": "aiconfigurator-core collector method: ceil(L2/weight) copies (1..5), "
                                           "CUDA graph of one call per copy, 3 warm-up + 6 timed replays, mean per call"
                           }.items():
            handle.write(f"# {key}: {value}\n")
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for done, (m, n, k, dtype) in enumerate(todo):
            if time.perf_counter() - started > args.budget_s:
                print(f"budget reached after {done} of {len(todo)} shapes", file=sys.stderr)
                break
            weight_bytes = n * k * (2 if dtype == "bf16" else 1)
            copies = max(1, min(5, math.ceil(l2 / weight_bytes)))
            try:
                single = gemm_calls(m, n, k, dtype, 1)[0]
                writer.writerow([args.hardware, m, n, k, dtype, "flushed", 1, f"{timer(single).median_ms:.6g}"])
                calls = gemm_calls(m, n, k, dtype, copies)
                writer.writerow([args.hardware, m, n, k, dtype, "graph_copies", copies,
                                 f"{graph_mean_ms(calls) / copies:.6g}"])
                if dtype == "fp8":
                    calls = gemm_calls(m, n, k, dtype, copies, quantize_input=True)
                    writer.writerow([args.hardware, m, n, k, dtype, "graph_copies_quantized", copies,
                                     f"{graph_mean_ms(calls) / copies:.6g}"])
            except (RuntimeError, torch.cuda.OutOfMemoryError) as error:
                print(f"skipped {(m, n, k, dtype)}: {str(error)[:160]}", file=sys.stderr)
            handle.flush()
            torch.cuda.empty_cache()
    print(f"{len(todo)} shapes -> {args.out} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
