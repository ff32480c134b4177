"""Explore page: server time to answer a 10,000-point heatmap (100 x 100), and to re-render after one
input changes.

Target (issue 7): at most 1 s. Uses Streamlit's AppTest, which runs the script in-process exactly
as the server does for a rerun (no browser, no network). Prints medians.
Run: .venv/bin/python benchmarks/explore_speed.py [--repeats N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard_speed import time_reruns

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "app.py")
HEATMAP = {"page": "explore", "ex.view": "heatmap", "ex.metric": "tpot_s",
           "ex.x": "memory_bandwidth", "ex.xv": "log:1000:10000:100",
           "ex.y": "matrix_tflops", "ex.yv": "log:100:5000:100"}
TARGET_S = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    app = AppTest.from_file(APP, default_timeout=120)
    for key, value in HEATMAP.items():
        app.query_params[key] = value
    start = time.perf_counter()
    app.run()
    print(f"first render of the 100 x 100 heatmap (cold caches): {(time.perf_counter() - start) * 1e3:.0f} ms")
    assert not app.exception, app.exception
    metrics = ("tpot_s", "ttft_s", "tokens_per_s", "energy_per_token_j")
    cases = {
        "batch (new sweep of 10,000 points)": lambda i: app.number_input(key="w_batch").set_value(2 + i),
        "metric (sweep cached, new figure)": lambda i: app.selectbox(key="w_ex_metric").set_value(
            metrics[i % len(metrics)]),
        "batch back and forth (all cached)": lambda i: app.number_input(key="w_batch").set_value(1 + i % 2),
    }
    time_reruns(app, cases, args.repeats, TARGET_S)

if __name__ == "__main__":
    main()
