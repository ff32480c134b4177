"""Two dashboards' Batch reruns, interleaved rerun by rerun (issue 13: is a change's Chromium CPU per rerun real?).

On a shared machine the CPU one rerun costs moves by a factor of two or three within minutes as other work comes and
goes, so two variants measured one after the other (rerun_cpu.py twice) compare two loads as much as two codes. Here
each variant has its own server and its own Chromium (its CPU read from /proc under that browser's own processes),
both open the same view, and the reruns alternate A, B, A, B, ...: each pair ran within a second or two of each other.
It prints per variant the median Chromium CPU per rerun (all of Chromium and the renderer), the server's CPU (a server
this script started) and the wall time, and the median of the paired differences B - A with how many pairs B was
cheaper in: the figure to read under load.

A variant is either a server this script starts from this tree with extra environment (--env-a / --env-b, e.g.
"SOME_SWITCH=1") or one already running (--url-a / --url-b: another worktree's server; its CPU is then not read).
Run: PYTHONPATH=. .venv/bin/python benchmarks/rerun_ab.py [--pairs 12] [--url-a URL] [--env-b NAME=VALUE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from benchmarks.first_chart_cpu import chromium_cpu, cpu_seconds  # noqa: E402
from tests.browser.waits import (CHROMIUM, CHROMIUM_ARGS, charts_drawn, free_port, POLL_MS, start_dashboard,  # noqa: E402
                                 TIMEOUT_MS, url_param_is, wait_idle)


def start(env: list[str]):
    """A dashboard started with `env` (NAME=VALUE items) added to this process's environment; (process, url)."""
    saved = dict(os.environ)
    os.environ.update(item.split("=", 1) for item in env)
    try:
        port = free_port()
        return start_dashboard(port), f"http://127.0.0.1:{port}"
    finally:
        os.environ.clear()
        os.environ.update(saved)


def browser_roots(known: set[int]) -> list[psutil.Process]:
    """Chromium browser processes under this one that are not in `known` (pids)."""
    roots = []
    for child in psutil.Process().children(recursive=True):
        try:
            name, command = child.name().lower(), " ".join(child.cmdline())
        except psutil.NoSuchProcess:
            continue
        if "chrom" in name and "crashpad" not in name and "--type=" not in command and child.pid not in known:
            roots.append(child)
    return roots


class Variant:
    def __init__(self, name: str, playwright, url: str, server: psutil.Process | None, path: str):
        known = {p.pid for p in browser_roots(set())}
        self.name, self.server = name, server
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self.root = browser_roots(known)[0]
        self.page = self.browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
        self.page.goto(url.rstrip("/") + path, wait_until="commit")
        self.records: list[dict] = []

    def settle_first(self) -> None:
        self.page.wait_for_function(charts_drawn(1), polling=50, timeout=TIMEOUT_MS)
        wait_idle(self.page, TIMEOUT_MS)

    def read(self) -> tuple:
        return chromium_cpu(self.root), cpu_seconds(self.server) if self.server else 0.0

    def rerun(self, batch: int, tail: float, keep: bool = True) -> None:
        field = self.page.get_by_label("Batch", exact=True)
        field.fill(str(batch))
        before, started = self.read(), time.perf_counter()
        field.press("Enter")
        self.page.wait_for_function(url_param_is("batch", str(batch)), polling=POLL_MS, timeout=TIMEOUT_MS)
        wait_idle(self.page, TIMEOUT_MS)
        wall = time.perf_counter() - started
        time.sleep(tail)
        after = self.read()
        if keep:
            self.records.append({"wall": wall, "chromium": sum(after[0].values()) - sum(before[0].values()),
                                 "renderer": after[0]["renderer"] - before[0]["renderer"],
                                 "server": after[1] - before[1]})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--path", default="/", help="the view both open (default: the default view)")
    parser.add_argument("--url-a", help="variant A: a dashboard already running")
    parser.add_argument("--url-b", help="variant B: a dashboard already running")
    parser.add_argument("--env-a", nargs="*", default=[], help="variant A started here with NAME=VALUE set")
    parser.add_argument("--env-b", nargs="*", default=[], help="variant B started here with NAME=VALUE set")
    parser.add_argument("--tail", type=float, default=1.0, help="seconds counted after each rerun has settled")
    parser.add_argument("--first-batch", type=int, default=40, help="the first new Batch value (then +1 each)")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    started = []
    servers = {}
    for name, url, env in (("A", args.url_a, args.env_a), ("B", args.url_b, args.env_b)):
        if url is None:
            process, url = start(env)
            started.append(process)
            servers[name] = (url, psutil.Process(process.pid))
        else:
            servers[name] = (url, None)
    try:
        with sync_playwright() as playwright:
            variants = [Variant(name, playwright, url, server, args.path) for name, (url, server) in servers.items()]
            for variant in variants:
                variant.settle_first()
                variant.rerun(args.first_batch + 1000, 0.5, keep=False)    # the first rerun loads late code
            for pair in range(args.pairs):
                order = variants if pair % 2 == 0 else variants[::-1]      # who goes first alternates too
                for variant in order:
                    variant.rerun(args.first_batch + pair, args.tail)
            for variant in variants:
                variant.browser.close()
    finally:
        for process in started:
            process.terminate()
            process.wait(timeout=20)
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    a, b = variants
    print(f"A: {args.url_a or 'this tree ' + ' '.join(args.env_a)}\nB: {args.url_b or 'this tree ' + ' '.join(args.env_b)}")
    for key in ("chromium", "renderer", "server", "wall"):
        first = [r[key] for r in a.records]
        second = [r[key] for r in b.records]
        differences = [y - x for x, y in zip(first, second)]
        cheaper = sum(d < 0 for d in differences)
        print(f"{key:<9} A median {statistics.median(first):6.3f} s  B median {statistics.median(second):6.3f} s  "
              f"B - A median {statistics.median(differences):+6.3f} s (B lower in {cheaper} of {len(differences)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
