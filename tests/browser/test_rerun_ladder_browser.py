"""The rerun ladder (benchmarks/rerun_ladder_app.py, served as load_sessions.py --ladder-step serves it) and the HTML
floor page (benchmarks/html_floor.py): each serves its view, shows the TPOT the engine computes for it, follows a
Batch change as load_sessions.py makes it (Enter, then the URL and the idle page), and shows the parts its step adds.
"""

from __future__ import annotations

import pytest

from benchmarks.html_floor import serve
from benchmarks.rerun_ladder_app import STEPS
from benchmarks.load_sessions import LADDER_APP, SHOWN
from tests.browser.waits import TIMEOUT_MS, free_port, start_dashboard, wait_idle, wait_settled

pytestmark = pytest.mark.browser

# What each step adds, as the page shows it (a selector that must be there from that step on, absent before)
ADDED = {
    "sidebar": '[data-testid="stSidebar"] h1',                        # the sidebar's title and inputs
    "headline": '[data-testid="stMetricLabel"]:has-text("TTFT")',      # the other headline cards
    "plot": '.js-plotly-plot .main-svg',                               # the roofline chart
    "chart": '[data-testid="stDownloadButton"]',                       # the chart area's deck and image buttons
    "app": '[data-testid="stMain"] [data-testid="stExpander"]',        # the closed Energy and Kernels sections
}


def engine_tpot(device: str, batch: int) -> str:
    """The TPOT card's text for the default view with `device` and `batch`, from the engine in this process."""
    import engine
    from dashboard.state import ViewState
    from dashboard.units import duration
    from engine.workload.scenario import Scenario
    state = ViewState(devices=(device,), batch=batch)
    result = engine.estimate(engine.load_hardware(device), engine.load_model(state.model),
                             Scenario(**state.scenario_fields), method=state.method)
    return duration(result.tpot_s)


def tpot_after_change(browser, url: str, settled_first: str) -> tuple[str, str, object]:
    """Open H200-SXM at batch 7, then set Batch to 33 as load_sessions.py does: (TPOT before, TPOT after, page)."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(f"{url}/?hw=H200-SXM&batch=7")
    page.wait_for_selector(settled_first, timeout=TIMEOUT_MS)
    wait_idle(page)
    first = _tpot(page)
    field = page.get_by_label("Batch", exact=True)
    field.fill("33")
    field.press("Enter")
    wait_settled(page, "batch", "33")
    return first, _tpot(page), page


def _tpot(page) -> str:
    """The TPOT card's text, read as load_sessions.py reads it (its SHOWN script)."""
    cards = page.evaluate(SHOWN)
    return dict(zip(cards["labels"], cards["values"]))["TPOT"]


@pytest.mark.parametrize("step", STEPS)
def test_each_ladder_step_shows_the_engines_tpot_and_its_parts(browser, step, monkeypatch):
    monkeypatch.setenv("RERUN_LADDER_STEP", str(STEPS.index(step)))
    port = free_port()
    process = start_dashboard(port, app=str(LADDER_APP))
    try:
        url = f"http://127.0.0.1:{port}"
        first, after, page = tpot_after_change(browser, url, '[data-testid="stMetricLabel"]')
        assert first == engine_tpot("H200-SXM", 7)
        assert after == engine_tpot("H200-SXM", 33)
        assert first != after
        if STEPS.index(step) >= STEPS.index("plot"):
            page.wait_for_selector(ADDED["plot"], timeout=TIMEOUT_MS)
        for name, selector in ADDED.items():
            present = page.locator(selector).count() > 0
            assert present == (STEPS.index(step) >= STEPS.index(name)), (step, name)
        page.context.close()
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_the_html_floor_page_shows_the_engines_tpot(browser):
    with serve(free_port()) as (url, _):
        first, after, page = tpot_after_change(browser, url, '[data-testid="stMetricLabel"]')
        assert (first, after) == (engine_tpot("H200-SXM", 7), engine_tpot("H200-SXM", 33))
        assert page.url.endswith("hw=H200-SXM&batch=33")
        page.context.close()
