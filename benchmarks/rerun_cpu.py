"""What one Batch rerun costs Chromium in CPU on the default view (issue 13: twenty sessions' reruns share the server's
two cores, and each session's Chromium pays far more per rerun than the server does).

One browser context opens the default view (or --path) and waits until the page has settled; then --repeats times:
type a new Batch value (one no earlier rerun used), press Enter, wait as load_sessions.py does (the URL has the
value, Streamlit reports no run and nothing stale on two polls in a row), and print, per rerun:
- wall: Enter until settled;
- chromium: CPU seconds of every Chromium process over that span (/proc), by kind (renderer, gpu-process,
  utility (network), browser), and the CPU of the --tail seconds after it (work the page does once it looks settled:
  transitions ending, late layout);
- the page's main-thread task time (DevTools `Performance.getMetrics`, the first page's);
With --sessions K, K contexts rerun at once (each wall is then the slowest page's, CPU the total divided by K).
- server: CPU seconds of the Streamlit process;
- idle: before the reruns, the CPU of --idle seconds with nothing happening (what an open page costs at rest).
With --profile: the renderer's sampled CPU profile over the reruns, self time by script file and by function.
Load average printed before and after: on a shared machine CPU seconds are steadier than wall times.
Run: PYTHONPATH=. .venv/bin/python benchmarks/rerun_cpu.py [--repeats 8] [--profile] [--path '/?chart=all']
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from benchmarks.browser_bench import (  # noqa: E402
    chromium_cpu, chromium_root, cpu_seconds, dashboard, load_printed, open_pages, page_cpu_arguments,
)
from benchmarks.first_chart_cpu import add_profile, METRICS, print_profile  # noqa: E402
from tests.browser.waits import CHROMIUM, CHROMIUM_ARGS, wait_settled  # noqa: E402

TIMEOUT_MS = 180_000


class Counters:
    """CPU seconds of Chromium (by kind) and the server, and the page's DevTools metrics, read together."""

    def __init__(self, cdp, server: psutil.Process | None):
        self.cdp, self.server, self.root = cdp, server, chromium_root()

    def read(self) -> tuple:
        metrics = {m["name"]: m["value"] for m in self.cdp.send("Performance.getMetrics")["metrics"]}
        return chromium_cpu(self.root), cpu_seconds(self.server) if self.server else 0.0, metrics

    @staticmethod
    def difference(before: tuple, after: tuple, prefix: str = "") -> dict:
        chromium = after[0].copy()
        chromium.subtract(before[0])
        record = {f"{prefix}chromium": sum(chromium.values()), f"{prefix}server": after[1] - before[1]}
        record.update({f"{prefix}chromium {kind}": seconds for kind, seconds in chromium.items()})
        record.update({f"{prefix}{name}": after[2].get(name, 0.0) - before[2].get(name, 0.0) for name in METRICS})
        return record


def one_rerun(pages: list, counters: Counters, batch: int, tail: float) -> dict:
    """Every page's Batch set to `batch` at once (Enter pressed in each in turn), then each waited for; CPU and
    task time are per rerun (totals divided by the pages), wall the slowest page's."""
    fields = [page.get_by_label("Batch", exact=True) for page in pages]
    for field in fields:
        field.fill(str(batch))
    before = counters.read()
    started = time.perf_counter()
    for field in fields:
        field.press("Enter")
    for page in pages:
        wait_settled(page, "batch", str(batch), TIMEOUT_MS)
    wall = time.perf_counter() - started
    settled = counters.read()
    time.sleep(tail)
    after = counters.read()
    per_page = {**Counters.difference(before, settled), **Counters.difference(settled, after, "tail ")}
    return {"wall": wall, **{name: value / len(pages) if "chromium" in name or "server" in name else value
                             for name, value in per_page.items()}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    page_cpu_arguments(parser, repeats=8)
    parser.add_argument("--tail", type=float, default=1.0, help="seconds measured after each rerun has settled")
    parser.add_argument("--idle", type=float, default=3.0, help="seconds of an idle page measured before the reruns")
    parser.add_argument("--first-batch", type=int, default=40, help="the first new Batch value (then +1 each)")
    parser.add_argument("--sessions", type=int, default=1,
                        help="contexts rerunning at once (their reruns then compete for the CPU, as under load)")
    parser.add_argument("--css", help="a style sheet injected into every page before the reruns (to try a change)")
    parser.add_argument("--profile", action="store_true", help="sample the renderer's CPU profile over the reruns")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright
    by_file, by_function = collections.Counter(), collections.Counter()
    records, idle = [], {}
    with load_printed(), dashboard(args.url) as (url, server), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pages = open_pages(browser, url + args.path, args.sessions, args.css)
        cdp = pages[0].context.new_cdp_session(pages[0])
        cdp.send("Performance.enable")
        counters = Counters(cdp, server)
        one_rerun(pages, counters, args.first_batch + 1000, 0.5)      # warm: the first rerun loads late code
        before = counters.read()
        time.sleep(args.idle)
        idle = Counters.difference(before, counters.read())
        if args.profile:
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 500})
            cdp.send("Profiler.start")
        for repeat in range(args.repeats):
            records.append(one_rerun(pages, counters, args.first_batch + repeat, args.tail))
        if args.profile:
            add_profile(cdp.send("Profiler.stop")["profile"], by_file, by_function)
        browser.close()
    print(f"idle page, {args.idle:g} s: chromium {idle.get('chromium', 0):.3f} s CPU "
          f"({', '.join(f'{k[9:]} {v:.3f}' for k, v in idle.items() if k.startswith('chromium '))})")
    names = sorted({name for r in records for name in r}, key=lambda n: (n.startswith("tail "), n))
    for name in ["wall"] + [n for n in names if n != "wall"]:
        values = [r.get(name, 0.0) for r in records]
        print(f"{name:<26} median {statistics.median(values):6.3f} s  min {min(values):6.3f}  max {max(values):6.3f}")
    if args.profile:
        print_profile(by_file, by_function, len(records), "per rerun (settle + tail)", functions=25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
