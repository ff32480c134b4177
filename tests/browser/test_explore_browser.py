"""The Explore page in a real browser: the heatmap is drawn, a control moves the URL and the chart,
and a copied link reopens the same view."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.browser.conftest import ARTIFACTS
from tests.browser.test_dashboard_browser import open_shared_link, open_view
from tests.browser.waits import TIMEOUT_MS, wait_idle

pytestmark = pytest.mark.browser
HEATMAP = {"page": "explore", "ex.view": "heatmap", "ex.x": "memory_bandwidth", "ex.xv": "log:1000:10000:20",
           "ex.y": "matrix_tflops", "ex.yv": "log:100:5000:20", "ex.metric": "tpot_s", "batch": "16"}
VIEW_LABELS = {"line": "Line", "pareto": "Pareto fronts", "sensitivity": "Sensitivity", "inverse": "Inverse design"}


def query_value(page, key: str) -> str:
    return page.evaluate(f"new URLSearchParams(window.location.search).get({key!r})")


def first_chart(page) -> dict:
    return page.evaluate("""() => {
        const plot = document.querySelectorAll('.js-plotly-plot')[0];
        const trace = plot._fullData[0];            // typed arrays from the server decoded: rows of numbers
        return {type: trace.type, x: Array.from(trace.x), y: Array.from(trace.y),
                z: Array.from(trace.z).flatMap(row => Array.from(row)), title: plot.layout.title.text};
    }""")


def test_heatmap_link_draws_the_heatmap_and_a_control_moves_url_and_chart(page, server_url):
    open_view(page, f"{server_url}/?{urlencode(HEATMAP)}", 1)
    assert page.locator('[data-testid="stException"]').count() == 0
    before = first_chart(page)
    assert before["type"] == "heatmap" and len(before["x"]) == 20 and len(before["y"]) == 20
    assert len(before["z"]) == 20 * 20
    assert before["title"].startswith("TPOT over memory bandwidth")
    page.screenshot(path=str(ARTIFACTS / "page-explore-heatmap.png"), full_page=True)
    values = page.get_by_role("textbox", name="X values")
    values.fill("log:1000:10000:15")
    values.press("Enter")
    page.wait_for_function("new URLSearchParams(window.location.search).get('ex.xv') === 'log:1000:10000:15'",
                           timeout=TIMEOUT_MS)
    wait_idle(page)
    after = first_chart(page)
    assert len(after["x"]) == 15 and len(after["z"]) == 15 * 20
    assert after["y"] == before["y"]
    assert page.console_errors == []


def test_copied_explore_link_reproduces_the_view_in_a_fresh_browser(browser, page, server_url):
    open_view(page, f"{server_url}/?{urlencode({**HEATMAP, 'ex.metric': 'tokens_per_s', 'hw': 'MI300X'})}", 1)
    shown = first_chart(page)
    fresh = open_shared_link(browser, page, server_url, 1, ("ex.view=heatmap", "ex.metric=tokens_per_s"))
    assert first_chart(fresh) == shown
    assert query_value(fresh, "ex.xv") == HEATMAP["ex.xv"]
    fresh.context.close()


@pytest.mark.parametrize("view", list(VIEW_LABELS))
def test_each_view_is_one_click_away(page, server_url, view):
    # inverse: an explicit target of 6 ms. The automatic one (twice as good, 4.27 ms here) is out of reach by memory
    # bandwidth alone since decode attention streams each (sequence, KV head) at a bounded rate (4.31 ms at 1 PB/s):
    # the view then says so in a warning and draws no search chart
    target = {"ex.target": "6"} if view == "inverse" else {}
    open_view(page, f"{server_url}/?{urlencode({**HEATMAP, **target, 'hw': 'H100-SXM,MI300X'})}", 1)
    page.get_by_role("radio", name=VIEW_LABELS[view], exact=True).click()
    page.wait_for_function(f"new URLSearchParams(window.location.search).get('ex.view') === {view!r}",
                           timeout=TIMEOUT_MS)
    wait_idle(page)
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 1", timeout=TIMEOUT_MS)
    assert page.locator('[data-testid="stException"]').count() == 0
    page.screenshot(path=str(ARTIFACTS / f"page-explore-{view}.png"), full_page=True)
    assert page.console_errors == []
