"""Dashboard re-render time after changing one input on the default scenario (server time).

Target (issue 3): at most 300 ms. Cases: a new Batch value (new estimates and figures), Batch back and forth
(everything cached: shared figures, this session's estimates), and a rerun that changes nothing. Uses Streamlit's AppTest, which runs the script in-process
exactly as the server does for a rerun (no browser, no network). Prints medians.
Run: .venv/bin/python benchmarks/dashboard_speed.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "app.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    app = AppTest.from_file(APP, default_timeout=120)
    start = time.perf_counter()
    app.run()
    print(f"first render (cold caches): {(time.perf_counter() - start) * 1e3:.0f} ms")
    assert not app.exception, app.exception
    cases = {
        "batch (new value each time)": lambda i: app.number_input(key="w_batch").set_value(2 + i),
        "batch (back and forth, cached)": lambda i: app.number_input(key="w_batch").set_value(1 + i % 2),
        "rerun, nothing changed": lambda i: None,
    }
    time_reruns(app, cases, args.repeats, target_s=0.300)


def time_reruns(app: AppTest, cases: dict, repeats: int, target_s: float) -> None:
    """For each case: `repeats` times change one input, rerun, and print the median server time."""
    for label, change in cases.items():
        samples = []
        for i in range(repeats):
            change(i)
            start = time.perf_counter()
            app.run()
            samples.append(time.perf_counter() - start)
            assert not app.exception, app.exception
        median = statistics.median(samples)
        verdict = "meets" if median <= target_s else "MISSES"
        print(f"{label:<38} median {median * 1e3:7.1f} ms  min {min(samples) * 1e3:7.1f} ms  "
              f"({repeats} runs) -> {verdict} {target_s * 1e3:.0f} ms")

if __name__ == "__main__":
    main()
