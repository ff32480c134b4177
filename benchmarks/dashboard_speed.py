"""Dashboard re-render time after changing one input on the default scenario (server time).

Target (issue 3): at most 300 ms. Cases: a new Batch value (new estimates and figures), Batch back and forth
(everything cached: shared figures, this session's estimates), and a rerun that changes nothing. Uses Streamlit's
AppTest, which runs the script in-process as the server does for a rerun (no browser, no network), with two
differences from the server made up for: AppTest compiles the script afresh on every run, while the server compiles
it once (its ScriptCache), so the runs here share one ScriptCache; and the server collects garbage (a full
gc.collect) after every run while `runner.postScriptGC` is on (Streamlit's default), which AppTest skips, so each
timed run here includes it when the config asks for it. Prints medians; --profile prints where a rerun's time goes
(cProfile of the script thread, each case).
Run: .venv/bin/python benchmarks/dashboard_speed.py [--repeats N] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import threading
import time
from pathlib import Path

from streamlit import config
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import app_test, local_script_runner, AppTest

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "app.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--profile", action="store_true", help="print the 25 costliest functions of each case")
    args = parser.parse_args()
    share_script_cache()
    app = AppTest.from_file(APP, default_timeout=120)
    start = time.perf_counter()
    app.run()
    print(f"first render (cold caches): {(time.perf_counter() - start) * 1e3:.0f} ms")
    assert not app.exception, app.exception
    cases = {
        "batch (new value each time)": lambda i: batch_input(app).set_value(2 + i),
        "batch (back and forth, cached)": lambda i: batch_input(app).set_value(1 + i % 2),
        "rerun, nothing changed": lambda i: None,
    }
    time_reruns(app, cases, args.repeats, target_s=0.300, profile=args.profile)


def batch_input(app: AppTest):
    """The sidebar's Batch input. A Batch change on the overview reruns the body alone (a fragment), whose tree holds
    no sidebar: then one full run, untimed (it happens before the change), brings the input back."""
    if not any(widget.key == "w_batch" for widget in app.number_input):
        app.run()
    return app.number_input(key="w_batch")


def share_script_cache() -> None:
    """One ScriptCache for every AppTest run, as the server keeps one for all reruns (AppTest makes a new one per
    run, so each run would parse, rewrite and compile the script again: time no server rerun spends)."""
    shared = ScriptCache()
    app_test.ScriptCache = local_script_runner.ScriptCache = lambda: shared


def time_reruns(app: AppTest, cases: dict, repeats: int, target_s: float, profile: bool = False) -> None:
    """For each case: `repeats` times change one input, rerun, and print the median server time."""
    for label, change in cases.items():
        samples = []
        profiler = cProfile.Profile() if profile else None
        for i in range(repeats):
            change(i)
            start = time.perf_counter()
            with profiled_threads(profiler):
                app.run()
            if config.get_option("runner.postScriptGC"):     # what the server does after every run
                gc.collect(2)
            samples.append(time.perf_counter() - start)
            assert not app.exception, app.exception
        median = statistics.median(samples)
        verdict = "meets" if median <= target_s else "MISSES"
        print(f"{label:<38} median {median * 1e3:7.1f} ms  min {min(samples) * 1e3:7.1f} ms  "
              f"({repeats} runs) -> {verdict} {target_s * 1e3:.0f} ms")
        if profiler is not None:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


class profiled_threads:
    """Within the block, threads started (AppTest's script thread) run under `profiler` (None: nothing)."""

    def __init__(self, profiler):
        self.profiler, self.run = profiler, threading.Thread.run

    def __enter__(self):
        if self.profiler is not None:
            profiler, run = self.profiler, self.run

            def profiled(thread):
                profiler.enable()
                try:
                    run(thread)
                finally:
                    profiler.disable()
            threading.Thread.run = profiled

    def __exit__(self, *exc):
        threading.Thread.run = self.run

if __name__ == "__main__":
    main()
