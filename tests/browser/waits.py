"""Condition waits on a Streamlit page and its server, shared by the browser tests and the browser benchmarks
(benchmarks/load_sessions.py, benchmarks/browser_speed.py): one definition of "the app has settled".

Streamlit's app root says whether a script run is under way (data-test-script-state: initial before the first
run, running, rerunRequested, notRunning); elements a run has not yet redrawn carry data-stale="true". Idle must
hold on two polls in a row, so that the hand-over between two runs (st.rerun) does not count. An element whose
code the browser is still loading shows a placeholder (data-testid="stSkeleton", React Suspense): a page with one
has not settled either (metric cards read from a page with placeholders come back incomplete). Nor has a first
visit whose sidebar inputs are still to come (dashboard/sidebar_later.py: its element `#llm-sidebar-pending`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("LLM_ROOFLINE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
POLL_MS = 100          # idle on two polls in a row: 100-200 ms without a run (covers the hand-over between runs)
# The most a browser test waits for one condition (not a pause: every wait returns as soon as its condition holds).
# A page's first run takes 40-65 s on a 2-core machine shared by several test runs, so 60 s was too tight there.
TIMEOUT_MS = int(os.environ.get("LLM_ROOFLINE_BROWSER_TIMEOUT_MS", "180000"))

# The app has finished: no run under way, connected, no status widget, nothing stale, no placeholder, no pending sidebar
# (an expression over `app`, Streamlit's app root).
IDLE_NOW = """app !== null && app.getAttribute('data-test-script-state') === 'notRunning'
        && app.getAttribute('data-test-connection-state') === 'CONNECTED'
        && !document.querySelector('[data-testid="stStatusWidget"]') && !document.querySelector('[data-stale="true"]')
        && !document.querySelector('[data-testid="stSkeleton"]')
        && !document.querySelector('#llm-sidebar-pending')"""
IDLE = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const idle = %s;
    window.__idlePolls = idle ? (window.__idlePolls || 0) + 1 : 0;
    return window.__idlePolls >= 2;
}""" % IDLE_NOW
RESET = "window.__idlePolls = 0"


def charts_drawn(count: int) -> str:
    """JS condition: at least `count` Plotly charts have drawn their SVG."""
    return f"() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= {count}"


def url_param_is(key: str, value: str) -> str:
    """JS condition: the page's URL has `key=value` (the rerun after an input change has written it)."""
    return f"() => new URL(location.href).searchParams.get({key!r}) === {value!r}"


def settled_with(key: str, value: str) -> str:
    """JS condition: the URL has `key=value` and the app is idle on two polls in a row, counted from the first poll
    that sees the value: url_param_is and then wait_idle as one wait (the benchmarks' end of a rerun). The same
    moment as the two waits in turn, less the round trip between them (the second wait's start and its counter's
    reset), with one poll loop in the page instead of two. Playwright evaluates the expression once a wait: each
    wait's count starts at zero."""
    return """(() => {
    let polls = 0;
    return () => {
        const app = document.querySelector('[data-testid="stApp"]');
        const idle = new URL(location.href).searchParams.get(%r) === %r && %s;
        polls = idle ? polls + 1 : 0;
        return polls >= 2;
    };
})()""" % (key, value, IDLE_NOW)


def wait_settled(page, key: str, value: str, timeout_ms: int = TIMEOUT_MS) -> None:
    """Until the rerun that writes `key=value` into the page's URL has finished (settled_with; sync Playwright)."""
    page.wait_for_function(settled_with(key, value), polling=POLL_MS, timeout=timeout_ms)


async def wait_settled_async(page, key: str, value: str, timeout_ms: int = TIMEOUT_MS) -> None:
    """wait_settled for Playwright's async API."""
    await page.wait_for_function(settled_with(key, value), polling=POLL_MS, timeout=timeout_ms)


def wait_idle(page, timeout_ms: int = TIMEOUT_MS) -> None:
    """Until Streamlit has finished the current run: no run under way and nothing stale (sync Playwright)."""
    page.evaluate(RESET)
    page.wait_for_function(IDLE, polling=POLL_MS, timeout=timeout_ms)


async def wait_idle_async(page, timeout_ms: int = TIMEOUT_MS) -> None:
    """wait_idle for Playwright's async API."""
    await page.evaluate(RESET)
    await page.wait_for_function(IDLE, polling=POLL_MS, timeout=timeout_ms)


def start_dashboard(port: int, log=subprocess.DEVNULL, timeout_s: float = 120.0, app: str | None = None,
                    repo: Path = REPO) -> subprocess.Popen:
    """The dashboard on 127.0.0.1:`port` (offline), started as scripts/dashboard.sh starts it (`python -m
    dashboard.serve`: warmed, then `streamlit run dashboard/app.py`), returned once its health check answers.
    `app`: another script served the same way; `repo`: another checkout's dashboard (benchmarks/first_chart_ladder.py)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    if repo != REPO:
        env["PYTHONPATH"] = str(repo)
    launcher = ["-m", "dashboard.serve"] if app is None else \
        ["-c", "import sys; from dashboard import serve; sys.exit(serve.main(sys.argv[1:], app=%r))" % str(app)]
    process = subprocess.Popen(
        [sys.executable, *launcher, "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT if log is not subprocess.DEVNULL else log)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with status {process.returncode} before answering on port {port}")
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).status == 200:
                return process
        except OSError:
            time.sleep(0.2)      # the health endpoint is polled: this is the poll interval, not a fixed wait
    process.kill()
    raise RuntimeError(f"streamlit did not answer on port {port} within {timeout_s:.0f} s")


def free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
