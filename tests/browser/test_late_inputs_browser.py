"""The share link holds the view's own values (issue 14, the share-link race): inputs whose code the browser loads
late keep their values, and the chart area's inputs reach an open share box.

Streamlit sends an input's value with its element only in the run where the script set it; a later run sends the
element with the input's default. An input still waiting for its code (a lazily loaded chunk) when a later run
arrives mounts with that later element, so before the fix it took its default and sent it with the next rerun: the
chart picker and Stack by came back empty (the share link without `chart=` and `stack=`, the chart area failing on
chart None). Here the browser holds back the code of the segmented controls and of the number inputs (Playwright
routes) until two reruns have come and gone: a body-only input (Overlap communication) and opening the energy
section (the whole page); then the code loads, and the share link, the inputs and the page must still hold the
view's values.
"""

from __future__ import annotations

import pytest

from tests.browser.test_dashboard_browser import open_shared_link, open_view
from tests.browser.waits import TIMEOUT_MS, url_param_is, wait_idle

pytestmark = pytest.mark.browser
HELD = ("**/ButtonGroup.*.js", "**/NumberInput.*.js")     # the picker and Stack by; Batch, Input tokens, ...
RUN_ENDED = """() => { const app = document.querySelector('[data-testid="stApp"]');
    const ended = app !== null && app.getAttribute('data-test-script-state') === 'notRunning';
    window.__endedPolls = ended ? (window.__endedPolls || 0) + 1 : 0;
    return window.__endedPolls >= 2; }"""


def run_ended(page) -> None:
    """Until no script run is under way (on two polls in a row). Not waits.wait_idle: it also waits for every
    element's code, which is held back here."""
    page.evaluate("window.__endedPolls = 0")
    page.wait_for_function(RUN_ENDED, polling=100, timeout=TIMEOUT_MS)


def hold_code(page, patterns: tuple[str, ...]) -> list:
    """The browser's requests for these scripts, held (unanswered) until `release_code`."""
    held = []
    for pattern in patterns:
        page.route(pattern, lambda route: held.append(route))
    return held


def release_code(page, held: list, patterns: tuple[str, ...]) -> None:
    for route in held:
        route.continue_()
    for pattern in patterns:
        page.unroute(pattern)
    wait_idle(page)


def share_box_opened(page) -> None:
    """Until the sidebar's inputs are drawn (on a first visit: by the second run, dashboard/sidebar_later.py) and the
    run that drew them has ended."""
    page.locator('[data-testid="stSidebar"] [data-testid="stExpander"] summary',
                 has_text="Share this view").wait_for(timeout=TIMEOUT_MS)
    run_ended(page)


def test_the_chart_picker_drawn_before_its_code_loaded_keeps_the_links_values(browser, page, server_url):
    """The CI failure of session 14: the first visit's second run (the sidebar's inputs) came before the browser had
    the segmented controls' code; the share link then lacked chart= and stack=."""
    held = hold_code(page, HELD[:1])
    page.goto(f"{server_url}/?hw=A100-80GB-SXM&model=Qwen/Qwen2.5-7B&phase=decode&batch=16&ctx=4096&chart=kernels")
    share_box_opened(page)
    assert held                                   # the browser asked for the picker's code and is still waiting
    release_code(page, held, HELD[:1])
    fresh = open_shared_link(browser, page, server_url, 1, ("batch=16", "Qwen", "chart=kernels", "stack=name"))
    assert page.locator('[data-testid="stException"]').count() == 0
    assert fresh.locator('[data-testid="stException"]').count() == 0
    assert page.console_errors == []


def test_inputs_drawn_before_their_code_loaded_keep_the_views_values(browser, page, server_url):
    held = hold_code(page, HELD)            # answered once a body-only and a whole-page rerun have passed
    page.goto(f"{server_url}/?chart=kernels&stack=family&batch=16&in=2048")
    share_box_opened(page)
    assert {"NumberInput", "ButtonGroup"} <= {route.request.url.split("/")[-1].split(".")[0] for route in held}
    # a rerun of the overview's body alone (Batch's code is held: the Overlap toggle is another body-only input)
    page.get_by_text("Overlap communication with compute", exact=True).click()
    page.wait_for_function(url_param_is("ovl", "1"), timeout=TIMEOUT_MS)
    run_ended(page)
    page.locator('[data-testid="stExpander"] summary', has_text="Energy and power").click()   # the whole page
    page.locator('[data-testid="stExpander"] [data-testid="stHeadingWithActionElements"]',
                 has_text="Energy and power").wait_for(timeout=TIMEOUT_MS)
    run_ended(page)
    release_code(page, held, HELD)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.get_by_label("Batch", exact=True).input_value() == "16"
    assert page.get_by_label("Input tokens", exact=True).input_value() == "2048"
    fresh = open_shared_link(browser, page, server_url, 1,
                             ("chart=kernels", "stack=family", "batch=16", "in=2048", "ovl=1"))
    assert fresh.locator('[data-testid="stException"]').count() == 0
    assert page.console_errors == []


def test_a_chart_area_input_changed_while_the_share_box_is_open_reaches_its_link(page, server_url):
    """The chart picker and Stack by rerun the chart area alone (a fragment), which writes the address but does not
    draw the sidebar: with the share box open the whole page reruns, so its link has the new values (before, the
    link kept the values of the run that opened the box). Streamlit's AppTest reruns the whole page on any input,
    so only a browser shows this."""
    open_view(page, f"{server_url}/", 1)
    code = page.locator('[data-testid="stSidebar"] [data-testid="stCode"] code')
    page.locator('[data-testid="stSidebar"] [data-testid="stExpander"] summary', has_text="Share this view").click()
    code.first.wait_for(timeout=TIMEOUT_MS)
    wait_idle(page)
    assert "chart=" not in code.first.inner_text()
    page.get_by_role("radio", name="Kernel time", exact=True).click()
    page.wait_for_function(url_param_is("chart", "kernels"), timeout=TIMEOUT_MS)
    wait_idle(page)
    page.get_by_role("radio", name="kernel group", exact=True).click()
    page.wait_for_function(url_param_is("stack", "family"), timeout=TIMEOUT_MS)
    wait_idle(page)
    link = code.first.inner_text().strip()
    assert link.split("?", 1)[1] == page.evaluate("window.location.search.slice(1)")
    assert page.console_errors == []
