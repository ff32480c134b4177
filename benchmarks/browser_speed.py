"""How fast the dashboard answers in a real browser: Debian's Chromium driven by Playwright against a started server.

Targets (issue 14), each printed as a median over --repeats samples with its ratio to target (<= 1 meets it):
- first chart visible after navigation on the default view (a fresh browser context each time): <= 2 s
- an input change answered (Batch set to a value not used before, until the URL has it, the app is idle and the
  chart has been drawn again with new data): <= 1 s
- a model switch (the catalog picker, until the URL names the model, the app is idle, the chart drawn again): <= 1.5 s
- a chart download ready (the first chart's PNG, SVG and PDF buttons, each clicked until the browser has the file): <= 1 s
- the slide deck built (Download deck (PPTX) clicked until the browser has the file): <= 3 s
Times include the browser's own work (drawing, layout), so they depend on the machine: say which and how loaded.
The default view is the overview with its default chart (the roofline; the overview draws one chart at a time,
`chart=` in the link); `--chart all` measures the overview drawing all five charts at once, as it did before.
The page settled (navigation until every chart and sidebar input is drawn and the app idle) is printed beside them.
`--against DIR` starts another checkout's dashboard too and visits the two in turn (paired A/B on a shared machine).
Run: PYTHONPATH=. .venv/bin/python benchmarks/browser_speed.py [--repeats 5] [--url http://127.0.0.1:8501]
     [--against /path/to/main-before]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dashboard.state import OVERVIEW_CHARTS  # noqa: E402
from tests.browser.waits import (CHROMIUM, CHROMIUM_ARGS, charts_drawn, free_port, start_dashboard,  # noqa: E402
                                 url_param_is, wait_idle)

TARGETS_S = {"first chart visible": 2.0, "input change answered": 1.0, "model switch": 1.5,
             "download ready (PNG)": 1.0, "download ready (SVG)": 1.0, "download ready (PDF)": 1.0,
             "deck built (PPTX)": 3.0}
MODELS = ("Qwen/Qwen2.5-7B", "mistralai/Mistral-7B-v0.1", "Qwen/Qwen3-8B", "google/gemma-2-9b")   # none the default
SETTLED = "page settled"      # printed, no target: navigation until every chart and input is drawn and the app idle
CHART_COUNTS = {"all": 5}     # charts the overview draws for `chart=`; any single chart: one
TIMEOUT_MS = 120_000


# the first chart's data as it is before a change (Plotly.react replaces gd.data with a new array when it redraws)
REMEMBER = "() => { window.__before = document.querySelector('.js-plotly-plot')?.data; }"
REDRAWN = """() => { const plot = document.querySelector('.js-plotly-plot');
    return plot !== null && plot.querySelector('.main-svg') !== null && plot.data !== window.__before; }"""


def open_default(browser, url: str, chart: str):
    """A fresh context on the default view (with `chart=` unless it is the default chart); (page, seconds until
    the first chart's SVG is drawn, seconds until the page has settled: every chart drawn, the sidebar's inputs
    too, the app idle)."""
    context = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    page = context.new_page()
    started = time.perf_counter()
    page.goto(f"{url}/" + ("" if chart == "roofline" else f"?chart={chart}"), wait_until="commit")
    page.wait_for_function(charts_drawn(1), polling=50, timeout=TIMEOUT_MS)
    first = time.perf_counter() - started
    page.wait_for_function(charts_drawn(CHART_COUNTS.get(chart, 1)), timeout=TIMEOUT_MS)
    wait_idle(page, TIMEOUT_MS)
    return page, first, time.perf_counter() - started


def settled(page, condition: str, charts: int) -> None:
    """After a change: the URL shows it, the run has finished, the first chart holds new data, all are drawn."""
    page.wait_for_function(condition, timeout=TIMEOUT_MS)
    wait_idle(page, TIMEOUT_MS)
    page.wait_for_function(REDRAWN, timeout=TIMEOUT_MS)
    page.wait_for_function(charts_drawn(charts), timeout=TIMEOUT_MS)


def change_batch(page, value: int, charts: int) -> float:
    field = page.get_by_label("Batch", exact=True)
    field.fill(str(value))
    page.evaluate(REMEMBER)
    started = time.perf_counter()
    field.press("Enter")
    settled(page, url_param_is("batch", str(value)), charts)
    return time.perf_counter() - started


def switch_model(page, model_id: str, charts: int) -> float:
    picker = page.get_by_label("Model (catalog grouped by family)")
    picker.click()
    page.keyboard.type(model_id.split("/")[-1])
    page.evaluate(REMEMBER)
    started = time.perf_counter()
    page.keyboard.press("Enter")
    settled(page, url_param_is("model", model_id), charts)
    return time.perf_counter() - started


def download(page, button: str) -> float:
    started = time.perf_counter()
    with page.expect_download(timeout=TIMEOUT_MS) as event:
        page.get_by_role("button", name=button).first.click()
    event.value.path()          # the whole file has arrived
    return time.perf_counter() - started


def one_round(browser, url: str, repeat: int, chart: str, samples: dict[str, list[float]]) -> None:
    """One fresh context through the measured steps (TARGETS_S), each sample appended to `samples`."""
    charts = CHART_COUNTS.get(chart, 1)
    page, first, settled_s = open_default(browser, url, chart)
    samples["first chart visible"].append(first)
    samples[SETTLED].append(settled_s)
    samples["input change answered"].append(change_batch(page, 2 + repeat, charts))   # never cached
    samples["model switch"].append(switch_model(page, MODELS[repeat % len(MODELS)], charts))
    for fmt in ("PNG", "SVG", "PDF"):       # the first chart's buttons (dashboard/widgets.chart)
        samples[f"download ready ({fmt})"].append(download(page, fmt))
    samples["deck built (PPTX)"].append(download(page, "Download deck (PPTX)"))
    page.context.close()


def measure(urls: dict[str, str], repeats: int, chart: str = "roofline") -> dict[str, dict[str, list[float]]]:
    """{variant: {figure: samples}}: the variants' servers visited in turn within each repeat (forward, then
    backward in the next), so a shared machine's load falls on them alike."""
    from playwright.sync_api import sync_playwright
    samples = {variant: {name: [] for name in (*TARGETS_S, SETTLED)} for variant in urls}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            order = list(urls)
            for repeat in range(repeats):
                for variant in order if repeat % 2 == 0 else order[::-1]:
                    one_round(browser, urls[variant], repeat, chart, samples[variant])
        finally:
            browser.close()
    return samples


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--url", help="a dashboard already running (default: start one on a free port)")
    parser.add_argument("--chart", default="roofline", choices=OVERVIEW_CHARTS,
                        help="the overview's chart (chart= in the link; default: the default view's roofline)")
    parser.add_argument("--against", type=Path,
                        help="another checkout (e.g. main before a change): its own dashboard is started too and "
                             "visited in turn with this one's, each figure printed for both")
    args = parser.parse_args(argv)
    servers = []
    urls = {"this": args.url}
    if args.url is None:
        port = free_port()
        servers.append(start_dashboard(port))
        urls["this"] = f"http://127.0.0.1:{port}"
    if args.against is not None:
        port = free_port()
        servers.append(start_dashboard(port, repo=args.against.resolve()))
        urls["against"] = f"http://127.0.0.1:{port}"
    try:
        samples = measure({name: url.rstrip("/") for name, url in urls.items()}, args.repeats, args.chart)
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=20)
    for variant, figures in samples.items():
        if len(samples) > 1:
            print(f"{variant}: {urls[variant]}" + (f" ({args.against})" if variant == "against" else ""))
        report(figures, args.chart)
    return 0


def report(samples: dict[str, list[float]], chart: str) -> None:
    missed = 0
    for name in (*TARGETS_S, SETTLED):
        median = statistics.median(samples[name])
        spread = f"(min {min(samples[name]):5.2f}, max {max(samples[name]):5.2f}, {len(samples[name])} samples)"
        if name not in TARGETS_S:
            print(f"{name:<24} median {median:6.2f} s  {spread}")
            continue
        target = TARGETS_S[name]
        ratio = median / target
        missed += ratio > 1
        print(f"{name:<24} median {median:6.2f} s  {spread}  target {target:.1f} s  ratio {ratio:4.2f} "
              f"-> {'meets' if ratio <= 1 else 'MISSES'}")
    print(f"{len(TARGETS_S) - missed} of {len(TARGETS_S)} targets met on the overview with chart={chart} (medians; the first chart includes the server's "
          "first run of a new session, the downloads the server building the file)")


if __name__ == "__main__":
    sys.exit(main())
