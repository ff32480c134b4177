"""Where one Batch rerun's Chromium CPU goes, by thread and by trace event (issue 13: twenty sessions' reruns at
once share two cores, and each session's Chromium pays most of a rerun's CPU).

One context (or --sessions K at once) opens the default view (or --path), reruns once to warm up, then --repeats Batch
reruns (a new value each, waited for as load_sessions.py waits, then --tail seconds). Printed per rerun and page
(medians over the reruns):
- the CPU seconds of every Chromium thread by process kind and thread name (/proc/<pid>/task/*/stat: the renderer's
  main thread, its compositor, its raster and V8 worker threads, the browser's IO thread, ...), the --tail apart;
- with --profile, the first page renderer's sampled profile, inclusive by script file (a file's own code and the
  native work it calls: Plotly, React, emotion, the chart component) and self time by function;
- with --trace, a DevTools trace over all the reruns: self time of the renderer main thread's events by name
  (script, style, layout, paint, commit, garbage collection, message handling) and how many of each.
Load average printed before and after: on a shared machine CPU seconds are steadier than wall times.
Run: PYTHONPATH=. .venv/bin/python benchmarks/rerun_trace.py [--repeats 8] [--trace] [--url URL]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from benchmarks.browser_bench import (  # noqa: E402
    chromium_root, cpu_seconds, dashboard, load_printed, open_pages, page_cpu_arguments, process_kind,
)
from tests.browser.waits import CHROMIUM, CHROMIUM_ARGS, wait_settled  # noqa: E402

TIMEOUT_MS = 180_000
TICKS = os.sysconf("SC_CLK_TCK")
CATEGORIES = ",".join(["devtools.timeline", "disabled-by-default-devtools.timeline", "toplevel", "v8", "blink",
                       "disabled-by-default-devtools.timeline.frame", "cc", "gpu", "loading"])


def thread_cpu(root: psutil.Process) -> collections.Counter:
    """CPU seconds of every thread of the Chromium processes under `root`, keyed (process kind, thread name)."""
    seconds = collections.Counter()
    for each in [root] + root.children(recursive=True):
        try:
            kind = process_kind(each)
            for task in Path(f"/proc/{each.pid}/task").iterdir():
                stat = (task / "stat").read_text()
                name = stat[stat.index("(") + 1:stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2:].split()
                seconds[(kind, name)] += (int(fields[11]) + int(fields[12])) / TICKS
        except (psutil.NoSuchProcess, FileNotFoundError, ProcessLookupError):
            pass
    return seconds


def rerun(pages: list, batch: int, root: psutil.Process, server, tail: float) -> tuple[collections.Counter, float]:
    """Every page's Batch set to `batch` at once; CPU per page by thread (the tail apart) and the server's."""
    fields = [page.get_by_label("Batch", exact=True) for page in pages]
    for field in fields:
        field.fill(str(batch))
    before, server_before = thread_cpu(root), cpu_seconds(server) if server else 0.0
    for field in fields:
        field.press("Enter")
    for page in pages:
        wait_settled(page, "batch", str(batch), TIMEOUT_MS)
    settled = thread_cpu(root)
    time.sleep(tail)
    after = thread_cpu(root)
    after.subtract(settled)
    settled.subtract(before)
    for (kind, name), seconds in after.items():      # the tail apart: work the page does once it looks settled
        settled[(kind, "tail " + name)] = seconds
    for key in settled:
        settled[key] /= len(pages)
    return settled, ((cpu_seconds(server) if server else 0.0) - server_before) / len(pages)


def main_thread_self_times(events: list[dict]) -> collections.Counter:
    """Self time (s) of each event name on the renderer main threads (CrRendererMain) of the trace."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    mains = {key for key, name in names.items() if name == "CrRendererMain"}
    spans = collections.defaultdict(list)
    stacks = collections.defaultdict(list)
    for e in events:
        key = (e.get("pid"), e.get("tid"))
        if key not in mains:
            continue
        if e.get("ph") == "X" and "dur" in e:
            spans[key].append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif e.get("ph") == "B":
            stacks[key].append((e["ts"], e["name"]))
        elif e.get("ph") == "E" and stacks[key]:
            start, name = stacks[key].pop()
            spans[key].append((start, e["ts"], name))
    self_times = collections.Counter()
    for key, items in spans.items():
        items.sort(key=lambda s: (s[0], -s[1]))
        open_spans: list[list] = []          # [end, name, child time]
        for start, end, name in items:
            while open_spans and open_spans[-1][0] <= start:
                done = open_spans.pop()
                self_times[done[1]] += done[3] - done[2]
            if open_spans:
                open_spans[-1][2] += end - start
            open_spans.append([end, name, 0.0, end - start])
        for done in open_spans:
            self_times[done[1]] += done[3] - done[2]
    return collections.Counter({name: us / 1e6 for name, us in self_times.items()})


def inclusive_by_file(profile: dict) -> tuple[collections.Counter, collections.Counter]:
    """Sampled time (s) of each script file counted inclusively (a sample counts once for every file on its
    stack: a file's own code and the native work it calls), and the self time of each (file, function)."""
    nodes = {node["id"]: node for node in profile["nodes"]}
    parent = {child: node["id"] for node in profile["nodes"] for child in node.get("children", ())}
    deltas = profile.get("timeDeltas", [])
    inclusive, functions = collections.Counter(), collections.Counter()
    for sample, delta in zip(profile.get("samples", []), deltas[1:] + [0]):
        node, files = sample, set()
        frame = nodes[sample]["callFrame"]
        functions[(frame.get("url", "").rsplit("/", 1)[-1] or "(native)", frame.get("functionName") or "?")] += delta
        while node is not None:
            frame = nodes[node]["callFrame"]
            files.add(frame.get("url", "").rsplit("/", 1)[-1] or f"({frame.get('functionName') or 'native'})")
            node = parent.get(node)
        for name in files:
            inclusive[name] += delta / 1e6
    return inclusive, collections.Counter({key: us / 1e6 for key, us in functions.items()})


def measure(args) -> tuple[list, list, str | None, dict | None]:
    """The reruns' CPU by thread and the server's, and the trace and profile asked for."""
    from playwright.sync_api import sync_playwright
    records, servers, cdp = [], [], None
    with dashboard(args.url) as (url, server), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pages = open_pages(browser, url + args.path, args.sessions)
        root = chromium_root()
        rerun(pages, args.first_batch + 1000, root, server, 0.5)      # warm: the first rerun loads late code
        if args.trace:
            browser.start_tracing(page=pages[0], categories=CATEGORIES.split(","))
        if args.profile:
            cdp = pages[0].context.new_cdp_session(pages[0])
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 250})
            cdp.send("Profiler.start")
        for repeat in range(args.repeats):
            record, server_s = rerun(pages, args.first_batch + repeat, root, server, args.tail)
            records.append(record)
            servers.append(server_s)
        trace = browser.stop_tracing() if args.trace else None
        profile = cdp.send("Profiler.stop")["profile"] if cdp is not None else None
        browser.close()
    return records, servers, trace, profile


def print_threads(records: list, servers: list, tail: float) -> None:
    keys = sorted({key for r in records for key in r}, key=lambda k: -statistics.median(r[k] for r in records))
    total = [sum(r.values()) for r in records]
    print(f"per rerun (+{tail:g} s tail), medians of {len(records)}: chromium {statistics.median(total):.3f} s, "
          f"server {statistics.median(servers):.3f} s")
    for kind, name in keys:
        values = [r[(kind, name)] for r in records]
        if max(values) > 0:
            print(f"  {kind:<12} {name:<22} median {statistics.median(values):.3f}  mean {statistics.mean(values):.3f}")


def print_profile(profile: dict, repeats: int, top: int) -> None:
    inclusive, functions = inclusive_by_file(profile)
    print("renderer profile per rerun, inclusive by file:")
    for name, seconds in inclusive.most_common(top):
        if name != "(root)":
            print(f"  {seconds / repeats:7.4f} s  {name}")
    print("self time by function:")
    for (name, function), seconds in functions.most_common(top):
        print(f"  {seconds / repeats:7.4f} s  {function} [{name}]")


def print_trace(trace: str, repeats: int, top: int) -> None:
    events = json.loads(trace)
    events = events["traceEvents"] if isinstance(events, dict) else events
    self_times = main_thread_self_times(events)
    print(f"renderer main thread, self time per rerun by trace event ({sum(self_times.values()) / repeats:.3f}"
          " s in events):")
    counts = collections.Counter(e["name"] for e in events if e.get("ph") in ("X", "B"))
    for name, seconds in self_times.most_common(top):
        print(f"  {seconds / repeats:7.4f} s  {name}  ({counts[name] / repeats:.0f} a rerun)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    page_cpu_arguments(parser, repeats=8)
    parser.add_argument("--tail", type=float, default=1.0, help="seconds counted after each rerun has settled")
    parser.add_argument("--first-batch", type=int, default=40)
    parser.add_argument("--sessions", type=int, default=1, help="contexts rerunning at once (CPU per page)")
    parser.add_argument("--trace", action="store_true", help="a DevTools trace: main-thread self time by event")
    parser.add_argument("--profile", action="store_true", help="the renderer's sampled profile, inclusive by file")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    with load_printed():
        records, servers, trace, profile = measure(args)
    print_threads(records, servers, args.tail)
    if profile is not None:
        print_profile(profile, args.repeats, args.top)
    if trace is not None:
        print_trace(trace, args.repeats, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
