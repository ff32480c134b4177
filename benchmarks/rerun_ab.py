"""Two dashboards' reruns of one input, interleaved one by one (issue 13: is a change's Chromium CPU per rerun real?).

On a shared machine the CPU one rerun costs moves by a factor of two or three within minutes as other work comes and
goes, so two variants measured one after the other (rerun_cpu.py twice) compare two loads as much as two codes. Here
each variant has its own server and its own Chromium (its CPU read from /proc under that browser's own processes),
both open the same view, and the reruns alternate A, B, A, B, ...: each pair ran within a second or two of each other.
It prints per variant the median Chromium CPU per rerun (all of Chromium and the renderer), the server's CPU (a server
this script started) and the wall time, and the median of the paired differences B - A with how many pairs B was
cheaper in: the figure to read under load.

A variant is either a server this script starts, from this tree or another checkout (--repo-a / --repo-b: e.g.
`git archive main | tar -x -C /tmp/base`), with extra environment (--env-a / --env-b, e.g. "SOME_SWITCH=1"), or one
already running (--url-a / --url-b: its CPU is then not read). Each rerun changes Batch, or with --input the Input or
Output tokens (by their URL parameter: in, out), to a value no earlier rerun used. With --sessions K each variant has
K pages (one browser) that rerun at once, each to its own new value, CPU counted per page and wall the slowest page's:
load_sessions.py's all-at-once mode, paired (the variants take turns: one variant's K pages run at a time).
Run: PYTHONPATH=. .venv/bin/python benchmarks/rerun_ab.py [--pairs 12] [--repo-a /tmp/base] [--url-a URL]
     [--env-b NAME=VALUE] [--input in]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from benchmarks.browser_bench import (browser_roots, chromium_cpu, cpu_seconds, dashboard, INPUTS,  # noqa: E402
                                      load_printed)
from tests.browser.waits import (CHROMIUM, CHROMIUM_ARGS, charts_drawn, TIMEOUT_MS, wait_idle,  # noqa: E402
                                 wait_settled)

class Variant:
    def __init__(self, name: str, playwright, url: str, server: psutil.Process | None, path: str, param: str,
                 sessions: int = 1):
        known = {p.pid for p in browser_roots(set())}
        self.name, self.server, self.param = name, server, param
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self.root = browser_roots(known)[0]
        self.pages = [self.browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
                      for _ in range(sessions)]
        for page in self.pages:
            page.goto(url + path, wait_until="commit")
        self.records: list[dict] = []

    def settle_first(self) -> None:
        for page in self.pages:
            page.wait_for_function(charts_drawn(1), polling=50, timeout=TIMEOUT_MS)
            wait_idle(page, TIMEOUT_MS)

    def read(self) -> tuple:
        return chromium_cpu(self.root), cpu_seconds(self.server) if self.server else 0.0

    def rerun(self, value: int, tail: float, keep: bool = True) -> None:
        """The input set to `value` in every page (Enter pressed in each in turn), each waited for until settled,
        and `tail` seconds more; CPU per page and the slowest page's wall kept. Each page gets its own value
        (value * 100 + its index), so the server computes every page's view, as twenty users' would be."""
        values = [str(value * 100 + index if len(self.pages) > 1 else value) for index in range(len(self.pages))]
        fields = [page.get_by_label(INPUTS[self.param], exact=True) for page in self.pages]
        for field, text in zip(fields, values):
            field.fill(text)
        before, started = self.read(), time.perf_counter()
        for field in fields:
            field.press("Enter")
        for page, text in zip(self.pages, values):
            wait_settled(page, self.param, text, TIMEOUT_MS)
        wall = time.perf_counter() - started
        time.sleep(tail)
        after = self.read()
        if keep:
            pages = len(self.pages)
            self.records.append({"wall": wall, "chromium": (sum(after[0].values()) - sum(before[0].values())) / pages,
                                 "renderer": (after[0]["renderer"] - before[0]["renderer"]) / pages,
                                 "server": (after[1] - before[1]) / pages})


def run_pairs(servers: dict, args) -> list[Variant]:
    """Both variants' pages opened and settled, one unmeasured rerun each, then args.pairs pairs of reruns."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        variants = [Variant(name, playwright, url, server, args.path, args.input, args.sessions)
                    for name, (url, server) in servers.items()]
        for variant in variants:
            variant.settle_first()
            variant.rerun(args.first_value + 1000, 0.5, keep=False)    # the first rerun loads late code
        for pair in range(args.pairs):
            order = variants if pair % 2 == 0 else variants[::-1]      # who goes first alternates too
            for variant in order:
                variant.rerun(args.first_value + pair, args.tail)
        for variant in variants:
            variant.browser.close()
    return variants


def describe(url: str | None, env: list[str], repo: Path) -> str:
    if url:
        return url
    return ("this tree" if repo.resolve() == REPO else str(repo)) + "".join(f" {item}" for item in env)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--path", default="/", help="the view both open (default: the default view)")
    parser.add_argument("--url-a", help="variant A: a dashboard already running")
    parser.add_argument("--url-b", help="variant B: a dashboard already running")
    parser.add_argument("--env-a", nargs="*", default=[], help="variant A started here with NAME=VALUE set")
    parser.add_argument("--env-b", nargs="*", default=[], help="variant B started here with NAME=VALUE set")
    parser.add_argument("--repo-a", type=Path, default=REPO, help="variant A started from this checkout")
    parser.add_argument("--repo-b", type=Path, default=REPO, help="variant B started from this checkout")
    parser.add_argument("--input", choices=tuple(INPUTS), default="batch",
                        help="the sidebar input each rerun changes, by its URL parameter (batch, in, out)")
    parser.add_argument("--tail", type=float, default=1.0, help="seconds counted after each rerun has settled")
    parser.add_argument("--first-value", type=int, default=40, help="the input's first new value (then +1 each)")
    parser.add_argument("--sessions", type=int, default=1,
                        help="pages per variant rerunning at once (CPU per page, wall the slowest page's): their "
                             "reruns wait for each other, as load_sessions.py's all-at-once mode")
    args = parser.parse_args(argv)
    with load_printed(), contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(dashboard(url, env, repo))
                   for name, url, env, repo in (("A", args.url_a, args.env_a, args.repo_a),
                                                ("B", args.url_b, args.env_b, args.repo_b))}
        variants = run_pairs(servers, args)
    a, b = variants
    print(f"A: {describe(args.url_a, args.env_a, args.repo_a)}\nB: {describe(args.url_b, args.env_b, args.repo_b)}")
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
