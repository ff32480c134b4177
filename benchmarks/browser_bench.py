"""What the browser benchmarks share (rerun_ab.py, rerun_cpu.py, rerun_deltas.py, first_chart_cpu.py, load_sessions.py,
...): the dashboard they measure (started here from a checkout unless a URL is given, stopped at the end), the load
average printed before and after (on a shared machine it says how far the figures can be trusted), and the CPU seconds
of the server and of the Chromium processes Playwright launched (/proc, through psutil).
"""

from __future__ import annotations

import collections
import contextlib
import os
from pathlib import Path
from typing import Iterator

import psutil

from tests.browser.waits import charts_drawn, free_port, REPO, start_dashboard, TIMEOUT_MS, wait_idle

# the sidebar's number inputs a rerun benchmark may change, by URL parameter: their labels
INPUTS = {"batch": "Batch", "in": "Input tokens", "out": "Output tokens"}


def page_cpu_arguments(parser, repeats: int):
    """The arguments the page-CPU benchmarks share (first_chart_cpu, rerun_cpu, rerun_trace): --repeats, --path,
    --url; returns `parser` for the benchmark's own."""
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--path", default="/", help="the view to open (default: the default view)")
    parser.add_argument("--url", help="a dashboard already running (its server CPU is then not measured)")
    return parser


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as printed by the benchmarks."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextlib.contextmanager
def load_printed() -> Iterator[None]:
    """Prints the load average before the block and after it (also when it fails)."""
    print(f"load average before: {load_average()}")
    try:
        yield
    finally:
        print(f"load average after:  {load_average()}")


@contextlib.contextmanager
def dashboard(url: str | None = None, env: tuple[str, ...] | list[str] = (), repo: Path = REPO,
              app: Path | None = None) -> Iterator[tuple[str, psutil.Process | None]]:
    """(url, server process) of the dashboard to measure: `url` as given (its server is not ours: None), or one
    started on a free loopback port from the checkout `repo` with `env` (NAME=VALUE items) added to this process's
    environment, terminated when the block ends. `app`: another script served the same way (the rerun ladder's)."""
    if url is not None:
        yield url.rstrip("/"), None
        return
    saved = dict(os.environ)
    os.environ.update(item.split("=", 1) for item in env)
    try:
        port = free_port()
        process = start_dashboard(port, repo=Path(repo).resolve(), app=None if app is None else str(app))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        yield f"http://127.0.0.1:{port}", psutil.Process(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=20)


def cpu_seconds(process: psutil.Process) -> float:
    """User + system CPU seconds of `process`."""
    times = process.cpu_times()
    return times.user + times.system


def process_kind(process: psutil.Process) -> str:
    """A Chromium process's kind: its --type= (renderer, gpu-process, utility, ...), or "browser" without one."""
    return next((arg.split("=", 1)[1] for arg in process.cmdline() if arg.startswith("--type=")), "browser")


def chromium_cpu(root: psutil.Process) -> collections.Counter:
    """CPU seconds of each kind of Chromium process under `root` (browser, renderer, gpu-process, utility, ...)."""
    seconds = collections.Counter()
    for each in [root] + root.children(recursive=True):
        try:
            seconds[process_kind(each)] += cpu_seconds(each)
        except psutil.NoSuchProcess:
            pass
    return seconds


def browser_roots(known: set[int] = frozenset()) -> list[psutil.Process]:
    """The Chromium browser processes Playwright launched from this process, less those in `known` (pids)."""
    roots = []
    for child in psutil.Process().children(recursive=True):
        try:
            name, command = child.name().lower(), " ".join(child.cmdline())
        except psutil.NoSuchProcess:
            continue
        if "chrom" in name and "crashpad" not in name and "--type=" not in command and child.pid not in known:
            roots.append(child)
    return roots


def chromium_root() -> psutil.Process:
    """The (first) Chromium browser process Playwright launched from this process."""
    roots = browser_roots()
    if not roots:
        raise RuntimeError("no Chromium browser process under this one")
    return roots[0]


def open_pages(browser, url: str, sessions: int, css: str | None = None) -> list:
    """`sessions` contexts on `url` at 1440 x 900, each settled (its first chart drawn, idle), the style sheet file
    `css` injected when given (rerun_cpu.py, rerun_trace.py)."""
    pages = [browser.new_context(viewport={"width": 1440, "height": 900}).new_page() for _ in range(sessions)]
    for page in pages:
        page.goto(url, wait_until="commit")
    for page in pages:
        page.wait_for_function(charts_drawn(1), polling=50, timeout=TIMEOUT_MS)
        wait_idle(page, TIMEOUT_MS)
        if css:
            page.add_style_tag(content=Path(css).read_text())
    return pages
