"""Engine speed (issue 15): one `engine.estimate` of Llama-3.1-70B on H100-SXM, batch 1, medians.

Targets, each printed with measured / target (<= 1 meets it):
  one phase (a decode step at 1024 tokens of context, or a 1024-token prefill)  roofline <= 0.5 ms, realistic <= 1 ms
  a full request (1024 in / 1024 out)                                           <= 5 ms
  realistic / roofline on that request                                          <= 2x
  `import engine` in a fresh interpreter                                        <= 0.4 s
Times are the estimate alone (results' DataFrames are built lazily, on first use; `--frames` adds building
`result.kernels` and `result.phases` to each timed call). An estimate of equal (method, hardware, model,
scenario) is kept between calls (engine/results/estimate_cache.py), as a dashboard rerun finds it; `--cold`
empties that cache before every call and moves the case's length by one token per call (context_length 1024, 1025,
... for the decode step, input_length for the prefill and the request; each method continues where the one before
it stopped), as a user's sweep does: no call repeats a scenario of an earlier one, so only what the engine keeps
per model, layout and device (structure, not results: engine/decomposition/pass_template.py) is reused.
Other methods are printed for reference.
`--clock cpu` compares this process's CPU time instead of wall time with the targets: on a machine shared
with other work, wall time also counts the time other processes hold the CPU (both are printed).
Run: PYTHONPATH=. .venv/bin/python benchmarks/engine_speed.py [--repeats N] [--frames] [--cold] [--clock cpu]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def median_time(function, repeats: int) -> tuple[float, float]:
    """(median wall time, median CPU time of this process) of `function()`."""
    function()  # warm caches (workbook, catalog, imports)
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


FIRST_ESTIMATE = ("import engine; engine.estimate(engine.load_hardware('H100-SXM'), "
                  "engine.load_model('meta-llama/Llama-3.1-70B'), engine.Scenario(phase='decode'))")


def import_time(repeats: int, code: str = "import engine") -> float:
    """Median wall time of `code` in a fresh interpreter (interpreter start-up not counted)."""
    def run():
        timed = f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
        out = subprocess.run([sys.executable, "-c", timed], cwd=REPO, capture_output=True, text=True, check=True)
        return float(out.stdout)
    return statistics.median(run() for _ in range(repeats))


SWEPT_FIELD = {"decode": "context_length", "prefill": "input_length", "request": "input_length"}


def swept(scenario, cold: bool, repeats: int, case: int):
    """The scenarios the `case`-th method's timed case calls: `scenario` every time, or (cold) its length one token
    longer per call, the methods one after the other (built before the timing), so that no cold call repeats a
    scenario any earlier call of any method ran."""
    if not cold:
        return itertools.repeat(scenario)
    from engine.results.run import updated_scenario
    field = SWEPT_FIELD[scenario.phase]
    start = getattr(scenario, field) + case * (repeats + 1)
    return iter([updated_scenario(scenario, **{field: start + step}) for step in range(repeats + 1)])


def report(label: str, value: float, target: float, unit: str, scale: float) -> None:
    ratio = value / target
    verdict = "meets" if ratio <= 1.0 else "MISSES"
    print(f"{label:<50} {value * scale:9.3f} {unit:<3} target {target * scale:7.3f} {unit:<3} "
          f"ratio {ratio:6.2f}  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--frames", action="store_true", help="also build result.kernels and result.phases")
    parser.add_argument("--cold", action="store_true", help="empty the estimate cache before every call")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="the time compared with targets")
    args = parser.parse_args()
    seconds_import = import_time(max(3, args.repeats // 10))
    seconds_first = import_time(3, FIRST_ESTIMATE)
    import engine
    hardware = engine.load_hardware("H100-SXM")
    model = engine.load_model("meta-llama/Llama-3.1-70B")
    scenarios = {
        "decode step (1024 context)": engine.Scenario(phase="decode", batch=1, context_length=1024),
        "prefill (1024 tokens)": engine.Scenario(phase="prefill", batch=1, input_length=1024),
        "request (1024 in / 1024 out)": engine.Scenario(phase="request", batch=1, input_length=1024,
                                                        output_length=1024),
    }

    from engine.results import estimate_cache

    def call(scenarios, method):
        if args.cold:
            estimate_cache.clear()
        result = engine.estimate(hardware, model, next(scenarios), method=method)
        if args.frames:
            result.kernels, result.phases   # noqa: B018  (built on first access)

    both = {(label, method): median_time(lambda s=swept(scenario, args.cold, args.repeats, case), m=method: call(s, m),
                                         args.repeats)
            for label, scenario in scenarios.items() for case, method in enumerate(engine.METHODS)}
    print(f"Llama-3.1-70B on H100-SXM, batch 1, median of {args.repeats} runs"
          f"{' (frames built)' if args.frames else ''}"
          f"{' (cold: computed every call)' if args.cold else ' (warm: the kept estimate copied; --cold computes)'}"
          f"; targets compared with {args.clock} time")
    for (label, method), (wall, cpu) in both.items():
        print(f"  {label:<30} {method:<16} wall {wall * 1e3:8.3f} ms   cpu {cpu * 1e3:8.3f} ms")
    print()
    times = {key: value[0 if args.clock == "wall" else 1] for key, value in both.items()}
    for label in ("decode step (1024 context)", "prefill (1024 tokens)"):
        report(f"one phase, {label}, roofline", times[(label, "roofline")], 0.5e-3, "ms", 1e3)
        report(f"one phase, {label}, realistic", times[(label, "realistic")], 1e-3, "ms", 1e3)
    request = "request (1024 in / 1024 out)"
    report("request 1024/1024, roofline", times[(request, "roofline")], 5e-3, "ms", 1e3)
    report("request 1024/1024, realistic", times[(request, "realistic")], 5e-3, "ms", 1e3)
    ratio = times[(request, "realistic")] / times[(request, "roofline")]
    report("request realistic / roofline", ratio, 2.0, "x", 1.0)
    report("import engine (fresh interpreter)", seconds_import * 1e3, 400.0, "ms", 1.0)
    print(f"(for reference: import, workbook, catalog model and a first decode estimate in a fresh interpreter "
          f"{seconds_first:.2f} s)")


if __name__ == "__main__":
    main()
