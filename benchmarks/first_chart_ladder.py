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
# --timeline: milestones of each visit, ms after navigation started (performance.now()), recorded in the page
TIMELINE = """(() => {
  const marks = window.__marks = {};
  const mark = (name) => { if (!(name in marks)) marks[name] = performance.now(); };
  let plotly;
  Object.defineProperty(window, 'Plotly', { configurable: true,
    get: () => plotly, set: (value) => { plotly = value; mark('plotly evaluated'); } });
  const seen = { 'app shell': '[data-testid="stApp"]', 'sidebar widget': '[data-testid="stSidebar"] .stElementContainer',
    'chart element': '.llm-plot',
    'chart drawn': '.js-plotly-plot .main-svg' };
  new MutationObserver(() => {
    for (const [name, selector] of Object.entries(seen))
      if (!(name in marks) && document.querySelector(selector)) mark(name);
  }).observe(document, { subtree: true, childList: true });
})()"""
MILESTONES = ("html", "main script", "plotly fetched", "app shell", "sidebar widget", "chart element",
              "plotly evaluated", "chart drawn")
READ_TIMELINE = """() => {
  const marks = Object.assign({}, window.__marks);
  const nav = performance.getEntriesByType('navigation')[0];
  if (nav) marks['html'] = nav.responseEnd;
  for (const entry of performance.getEntriesByType('resource')) {
    if (entry.name.includes('/static/js/index.')) marks['main script'] = entry.responseEnd;
    if (entry.name.includes('plotly-cartesian')) marks['plotly fetched'] = entry.responseEnd;
  }
  return marks;
}"""
SHOWN = ("wall", "chromium", "chromium renderer", "chromium gpu-process", "chromium browser", "chromium utility",
         "server", "TaskDuration", "ScriptDuration")     # the last two: the page's main thread (first_chart_cpu.py)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--timeline", action="store_true", help="also the milestones of each visit (ms)")
    parser.add_argument("--steps", default=",".join(STEPS), help="comma-separated steps (default: all)")
    parser.add_argument("--against", type=Path,
                        help="another checkout (e.g. main before a change): its own dashboard is served too and "
                             "visited in turn with the steps, as 'app @ base'")
    args = parser.parse_args(argv)
    steps = [name.strip() for name in args.steps.split(",")]
    unknown = [name for name in steps if name not in STEPS]
    if unknown:
        parser.error(f"--steps: unknown {', '.join(unknown)}; expected some of {', '.join(STEPS)}")
    from playwright.sync_api import sync_playwright
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ports = [free_port()]
    processes = [start_dashboard(ports[0], app=str(APP))]
    variants = [(name, f"http://127.0.0.1:{ports[0]}/", processes[0], STEPS.index(name)) for name in steps]
    if args.against is not None:
        ports.append(free_port())
        processes.append(start_dashboard(ports[1], repo=args.against.resolve()))
        variants.append(("app @ base", f"http://127.0.0.1:{ports[1]}/", processes[1], None))
    records: dict[str, list[dict]] = {variant[0]: [] for variant in variants}
    unused = collections.Counter()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)

            def visit(variant, measured: bool) -> dict:
                _, url, process, step = variant

                def prepare(context):
                    if step is not None:
                        context.add_cookies([{"name": "ladder_step", "value": str(step), "url": url}])
                    if args.timeline:
                        context.add_init_script(TIMELINE)

                def collect(page) -> dict:
                    marks = page.evaluate(READ_TIMELINE) if args.timeline else {}
                    return {f"at {milestone}": value / 1e3 for milestone, value in marks.items()}
                server = psutil.Process(process.pid) if measured else None
                return one_visit(browser, url, server, False, unused, unused, prepare=prepare, collect=collect)
            for variant in variants:
                visit(variant, False)
            for round_ in range(args.rounds):
                for variant in variants if round_ % 2 == 0 else variants[::-1]:
                    records[variant[0]].append(visit(variant, True))
            browser.close()
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=20)
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"medians of {args.rounds} visits per step (seconds; CPU seconds for chromium and server)")
    print(f"{'step':<12}" + "".join(f"{column.replace('chromium ', '').replace('Duration', ' main'):>12}"
                                    for column in SHOWN))
    steps = list(records)
    for name in steps:
        row = [statistics.median(r.get(column, 0.0) for r in records[name]) for column in SHOWN]
        print(f"{name:<12}" + "".join(f"{value:12.2f}" for value in row))
    if args.timeline:
        print("timeline: median seconds after navigation started at which each milestone was reached")
        print(f"{'milestone':<18}" + "".join(f"{name[:11]:>12}" for name in steps))
        for milestone in MILESTONES:
            cells = []
            for name in steps:
                values = [r[f"at {milestone}"] for r in records[name] if f"at {milestone}" in r]
                cells.append(f"{statistics.median(values):12.2f}" if values else f"{'-':>12}")
            print(f"{milestone:<18}" + "".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
