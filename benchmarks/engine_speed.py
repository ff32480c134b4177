"""Engine speed: a full `request` estimate of Llama-3.1-70B (1024 in, 1024 out) per method.

Targets: at most 20 ms of engine time for `roofline` (issue 2); `realistic` at most twice `roofline`.
Prints medians over repeated runs.
Run: .venv/bin/python benchmarks/engine_speed.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import engine


def time_call(function, repeats: int) -> list[float]:
    function()  # warm caches (workbook, catalog, imports)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    hardware = engine.load_hardware("H100-SXM")
    model = engine.load_model("meta-llama/Llama-3.1-70B")
    scenario = engine.Scenario(phase="request", batch=1, input_length=1024, output_length=1024)
    results = {}
    for method in engine.METHODS:
        samples = time_call(lambda: engine.estimate(hardware, model, scenario, method=method), args.repeats)
        results[method] = statistics.median(samples)
        print(f"{method:<16} median {results[method] * 1e3:8.2f} ms   min {min(samples) * 1e3:8.2f} ms   "
              f"({args.repeats} runs, Llama-3.1-70B request 1024 in / 1024 out on H100-SXM)")
    verdict = "meets" if results["roofline"] <= 0.020 else "MISSES"
    print(f"roofline target 20 ms: {verdict} ({results['roofline'] * 1e3:.2f} ms)")
    ratio = results["realistic"] / results["roofline"]
    verdict = "meets" if ratio <= 2.0 else "MISSES"
    print(f"realistic / roofline target <= 2x: {verdict} ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
