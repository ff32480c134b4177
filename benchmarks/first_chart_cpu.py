"""What the first chart of the default view costs in CPU: Chromium's and the server's, from navigation to the first
Plotly chart drawn (issue 14's first target, measured as work rather than wall time, so that a loaded machine
inflates it less).

For each of --repeats fresh browser contexts (no HTTP or code cache, as a first visit) on one server (its first
session first, a cold server, unless --warm-server), it prints (with --returning: for the second visit of each
context to the same view, its HTTP cache and V8 code cache filled by the first, which is not measured):
- wall: navigation until the first chart's SVG (what browser_speed.py times);
- the page's main-thread task time (DevTools `Performance.getMetrics`: TaskDuration, of it ScriptDuration,
  LayoutDuration, RecalcStyleDuration; wall time inside tasks, so a descheduled thread still counts);
- chromium: CPU seconds of every Chromium process over the same span (/proc), and by kind (renderer: all its
  threads, compositing and raster included; gpu-process; utility: network; browser);
- server: CPU seconds of the Streamlit process over the same span (the first script run, sending);
- with --profile: a sampled CPU profile of the renderer (DevTools `Profiler`), self time by script file and by
  function, summed over the repeats.
Load average printed before and after: on a shared machine CPU seconds are steadier than wall times, not immune
(caches, frequency).
`--against DIR`: another checkout's dashboard too, both warmed, visited in turn (paired A/B on a shared machine).
Run: PYTHONPATH=. .venv/bin/python benchmarks/first_chart_cpu.py [--repeats 5] [--profile] [--path '/?chart=all']
     [--returning] [--against /path/to/main]
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
    chromium_cpu, chromium_root, cpu_seconds, dashboard, load_printed, page_cpu_arguments,
)
from tests.browser.waits import CHROMIUM, CHROMIUM_ARGS, charts_drawn, wait_idle  # noqa: E402

TIMEOUT_MS = 180_000
METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")


def one_visit(browser, url: str, server: psutil.Process | None, profile: bool, by_file: collections.Counter,
              by_function: collections.Counter, returning: bool = False, prepare=None, collect=None) -> dict:
    """One fresh context's visit; `prepare(context)` before it (cookies, init scripts), `collect(page)` -> more
    figures for the record, read once the first chart is drawn (benchmarks/first_chart_ladder.py)."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    if prepare is not None:
        prepare(context)
    page = context.new_page()
    if returning:                 # a first visit, not measured: the context's HTTP cache and V8 code cache fill
        page.goto(url, wait_until="commit")
        page.wait_for_function(charts_drawn(1), polling=50, timeout=TIMEOUT_MS)
        wait_idle(page, TIMEOUT_MS)
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    if profile:
        cdp.send("Profiler.enable")
        cdp.send("Profiler.setSamplingInterval", {"interval": 500})
        cdp.send("Profiler.start")
    root = chromium_root()
    before = cdp.send("Performance.getMetrics")["metrics"]
    chromium0, server0 = chromium_cpu(root), cpu_seconds(server) if server else 0.0
    started = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.wait_for_function(charts_drawn(1), polling=50, timeout=TIMEOUT_MS)
    wall = time.perf_counter() - started
    chromium1, server1 = chromium_cpu(root), cpu_seconds(server) if server else 0.0
    after = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    before = {m["name"]: m["value"] for m in before}
    chromium1.subtract(chromium0)
    record = {"wall": wall, "chromium": sum(chromium1.values()), "server": server1 - server0}
    record.update({f"chromium {kind}": seconds for kind, seconds in chromium1.items()})
    record.update({name: after.get(name, 0.0) - before.get(name, 0.0) for name in METRICS})
    if collect is not None:
        record.update(collect(page))
    if profile:
        add_profile(cdp.send("Profiler.stop")["profile"], by_file, by_function)
    wait_idle(page, TIMEOUT_MS)
    context.close()
    return record


def add_profile(profile: dict, by_file: collections.Counter, by_function: collections.Counter) -> None:
    """Self time (seconds) of each sampled node, summed by script file and by function name."""
    nodes = {node["id"]: node for node in profile["nodes"]}
    deltas = profile.get("timeDeltas", [])
    for sample, delta in zip(profile.get("samples", []), deltas[1:] + [0]):
        frame = nodes[sample]["callFrame"]
        source = frame.get("url", "").rsplit("/", 1)[-1] or f"({frame.get('functionName') or 'native'})"
        by_file[source] += delta / 1e6
        by_function[f"{frame.get('functionName') or '(anonymous)'} [{source}]"] += delta / 1e6


def print_profile(by_file: collections.Counter, by_function: collections.Counter, samples: int, per: str,
                  functions: int) -> None:
    """The renderer's sampled self time per sample (`per`: "per visit", "per rerun ..."): top files and functions."""
    total = sum(by_file.values())
    print(f"renderer profile, {total / samples:.3f} s sampled {per}; self time by file:")
    for source, seconds in by_file.most_common(12):
        print(f"  {seconds / samples:6.3f} s  {100 * seconds / total:4.1f}%  {source}")
    print("by function:")
    for name, seconds in by_function.most_common(functions):
        print(f"  {seconds / samples:6.3f} s  {100 * seconds / total:4.1f}%  {name}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    page_cpu_arguments(parser, repeats=5)
    parser.add_argument("--warm-server", action="store_true", help="one visit before the timed ones")
    parser.add_argument("--profile", action="store_true", help="sample the renderer's CPU profile")
    parser.add_argument("--returning", action="store_true",
                        help="measure a returning visit: each context opens the view once, then again (measured)")
    parser.add_argument("--against", type=Path,
                        help="another checkout (e.g. main): its dashboard is started too, warmed with one visit "
                             "like this one, and the two are visited in turn (A B, B A, ...): paired medians")
    args = parser.parse_args(argv)
    if args.against is not None:
        return paired(args)
    from playwright.sync_api import sync_playwright
    by_file, by_function = collections.Counter(), collections.Counter()
    records = []
    with load_printed(), dashboard(args.url) as (url, server), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        if args.warm_server:
            one_visit(browser, url + args.path, None, False, by_file, by_function)
        for _ in range(args.repeats):
            records.append(one_visit(browser, url + args.path, server, args.profile, by_file, by_function,
                                     args.returning))
        browser.close()
    kinds = sorted({name for r in records for name in r if name.startswith("chromium ")})
    for name in ("wall", "chromium", *kinds, *METRICS, "server"):
        values = [r.get(name, 0.0) for r in records]
        print(f"{name:<20} median {statistics.median(values):6.2f} s  first {values[0]:6.2f}  "
              f"min {min(values):6.2f}  max {max(values):6.2f}")
    if args.profile:
        print_profile(by_file, by_function, len(records), "per visit", functions=20)
    return 0


def paired(args) -> int:
    """--against: this checkout (A) and another (B), each its own server warmed by one visit, visited in turn;
    per figure the two medians, and the median of the pairs' differences B - A with how often B was cheaper."""
    from playwright.sync_api import sync_playwright
    unused = collections.Counter()
    records = {"A": [], "B": []}
    with load_printed(), dashboard() as (url_a, server_a), dashboard(repo=args.against) as (url_b, server_b), \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        sides = {"A": (url_a + args.path, server_a), "B": (url_b + args.path, server_b)}
        for url, _ in sides.values():
            one_visit(browser, url, None, False, unused, unused)
        for pair in range(args.repeats):
            for side in ("A", "B") if pair % 2 == 0 else ("B", "A"):
                url, server = sides[side]
                records[side].append(one_visit(browser, url, server, False, unused, unused, args.returning))
        browser.close()
    print(f"A: this checkout ({REPO}), B: {args.against}; {args.repeats} pairs, medians (seconds; CPU seconds "
          "for chromium and server)")
    kinds = sorted({name for r in records["A"] + records["B"] for name in r if name.startswith("chromium ")})
    print(f"{'':<20}{'A':>8}{'B':>8}{'B - A':>8}  B cheaper")
    for name in ("wall", "chromium", *kinds, *METRICS, "server"):
        a = [r.get(name, 0.0) for r in records["A"]]
        b = [r.get(name, 0.0) for r in records["B"]]
        differences = [y - x for x, y in zip(a, b)]
        print(f"{name:<20}{statistics.median(a):8.2f}{statistics.median(b):8.2f}"
              f"{statistics.median(differences):+8.2f}  {sum(d < 0 for d in differences)} of {len(differences)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
