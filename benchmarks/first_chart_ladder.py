"""The first chart's floor, and what each part of the page adds to it: a throwaway app (benchmarks/ladder_app.py)
served as the dashboard is (dashboard/serve.py: warmed, the Plotly bundle preloaded from the page's head), built up
from one chart through the chart component alone to the whole default view, one step at a time.

Each visit is a fresh browser context (no HTTP or code cache) on the default view's URL, its step named by a cookie;
the steps alternate within each round (forward, then backward in the next), so a machine shared with other work
loads them alike. Before the rounds, one unmeasured visit per step fills the server's caches. For each step it prints
medians of: wall (navigation to the first chart's SVG), Chromium's CPU over that span (all processes, and by kind)
and the server's CPU (benchmarks/first_chart_cpu.py measures the same way). Load average before and after: on a
shared machine compare the CPU seconds.
Run: PYTHONPATH=. .venv/bin/python benchmarks/first_chart_ladder.py [--rounds 4] [--steps chart,app]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from benchmarks.first_chart_cpu import one_visit  # noqa: E402
from tests.browser.waits import CHROMIUM, CHROMIUM_ARGS, free_port, start_dashboard  # noqa: E402

APP = REPO / "benchmarks" / "ladder_app.py"
STEPS = ("chart", "preload", "sidebar", "headline", "chart area", "sections", "app")   # ladder_app.STEPS
SHOWN = ("wall", "chromium", "chromium renderer", "chromium gpu-process", "chromium browser", "chromium utility",
         "server")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", default=",".join(STEPS), help="comma-separated steps (default: all)")
    args = parser.parse_args(argv)
    steps = [name.strip() for name in args.steps.split(",")]
    unknown = [name for name in steps if name not in STEPS]
    if unknown:
        parser.error(f"--steps: unknown {', '.join(unknown)}; expected some of {', '.join(STEPS)}")
    from playwright.sync_api import sync_playwright
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    port = free_port()
    process = start_dashboard(port, app=str(APP))
    url = f"http://127.0.0.1:{port}/"
    server = psutil.Process(process.pid)
    records: dict[str, list[dict]] = {name: [] for name in steps}
    unused = collections.Counter()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)

            def visit(name: str, measured: dict | None) -> dict:
                cookie = [{"name": "ladder_step", "value": str(STEPS.index(name)), "url": url}]
                return one_visit(browser, url, measured, False, unused, unused, cookies=cookie)
            for name in steps:
                visit(name, None)
            for round_ in range(args.rounds):
                for name in steps if round_ % 2 == 0 else steps[::-1]:
                    records[name].append(visit(name, server))
            browser.close()
    finally:
        process.terminate()
        process.wait(timeout=20)
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"medians of {args.rounds} visits per step (seconds; CPU seconds for chromium and server)")
    print(f"{'step':<12}" + "".join(f"{column.replace('chromium ', ''):>12}" for column in SHOWN))
    for name in steps:
        row = [statistics.median(r.get(column, 0.0) for r in records[name]) for column in SHOWN]
        print(f"{name:<12}" + "".join(f"{value:12.2f}" for value in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
