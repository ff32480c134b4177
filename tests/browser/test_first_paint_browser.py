"""Before the first chart (issue 14): the page's head preloads the charts' Plotly bundle, the page's first element
evaluates it early (once: the chart component's loader finds the same promise), its element takes no room, the
loading placeholders do not animate, and the running man in the top bar stands still while a script runs (no repaint
every 200 ms)."""

from __future__ import annotations

import pytest

from dashboard import plotly_view
from tests.browser.waits import TIMEOUT_MS, charts_drawn, wait_idle

pytestmark = pytest.mark.browser


def test_plotly_is_loaded_once_early_and_the_preload_takes_no_room(page, server_url):
    bundles, chunks, order = [], [], []
    page.on("request", lambda request: plotly_view.BUNDLE in request.url and bundles.append(request.url))
    page.on("request", lambda request: order.append(request.url.rsplit("/", 1)[-1]))
    page.on("request", lambda request: "/PlotlyChart." in request.url and chunks.append(request.url))
    page.goto(server_url)
    page.wait_for_function(charts_drawn(1), timeout=TIMEOUT_MS)
    wait_idle(page)
    version = page.evaluate("window.__llmPlotly.then(plotly => plotly.version)")
    assert version == plotly_view.BUNDLE_VERSION                 # the preload's promise: the vendored bundle
    assert len(bundles) == 1 and chunks == []                    # fetched once; Streamlit's 4.7 MB chunk never
    # asked for by the page's head (dashboard/index_page.py): before the app has even started (its first calls to
    # the server), let alone received an element
    assert page.locator(f'link[rel="preload"][as="script"][href$="{plotly_view.BUNDLE}"]').count() == 1
    started = next(index for index, name in enumerate(order) if name in ("health", "host-config"))
    assert order.index(plotly_view.BUNDLE) < started
    box = page.locator("#plotly-preload").evaluate(
        "e => { const c = e.closest('.stElementContainer'); return [getComputedStyle(c).display, c.offsetHeight]; }")
    assert box == ["none", 0]
    # loading placeholders, the elements' and the page's own (before its first element), are still (no animation
    # repainting the page), by a style in the page's head, there from the first frame (dashboard/index_page.py)
    still = page.evaluate("""() => ['stSkeleton', 'stSkeletonElement', 'stAppSkeleton'].map(testid => {
        const s = document.createElement('div'); s.setAttribute('data-testid', testid);
        const inner = document.createElement('div'); s.appendChild(inner);
        for (const e of [s, inner]) e.style.animation = 'llm-shimmer 1.5s infinite';
        document.body.appendChild(s); const names = [s, inner].map(e => getComputedStyle(e).animationName);
        s.remove(); return names.join(); })""")
    assert still == ["none,none"] * 3
    assert page.evaluate("""() => [...document.head.querySelectorAll('style')].some(
        style => style.textContent.includes('[data-testid="stAppSkeleton"]'))""")
    # the running man stands still: his pose-swapping icon is not drawn, one pose is, as a picture of his size, by the
    # status widget's row that holds the icon (tests/browser/test_running_signal_browser.py checks the rest)
    running = page.evaluate("""() => { const widget = document.createElement('div');
        widget.setAttribute('data-testid', 'stStatusWidget');
        widget.innerHTML = '<div style="display: flex">'
            + '<div data-testid="stStatusWidgetRunningIcon"><svg></svg></div></div>';
        document.body.appendChild(widget); const row = widget.firstChild, before = getComputedStyle(row, '::before');
        const shown = [getComputedStyle(row.firstChild).display,
                       before.backgroundImage.startsWith('url("data:image/svg+xml'),
                       Math.round(parseFloat(before.width)), Math.round(parseFloat(before.height))];
        widget.remove(); return shown; }""")
    assert running == ["none", True, 26, 26]
    assert page.console_errors == []


# recorded in the page from its first moment: how many sidebar inputs exist when the first chart's SVG appears
INPUTS_AT_FIRST_CHART = """(() => {
  new MutationObserver((_, observer) => {
    if (document.querySelector('.js-plotly-plot .main-svg') === null) return;
    window.__inputsAtChart = document.querySelectorAll('[data-testid="stSidebar"] input').length;
    observer.disconnect();
  }).observe(document, { subtree: true, childList: true });
})()"""


def test_a_first_visit_draws_the_chart_before_the_sidebar_inputs_which_keep_the_links_values(page, server_url):
    """dashboard/sidebar_later.py: on a session's first run the sidebar holds its title only; its inputs come in the
    run the drawn chart asks for, holding the values of the link (nothing reset), the link unchanged."""
    page.context.add_init_script(INPUTS_AT_FIRST_CHART)
    page.goto(f"{server_url}/?tp=4&batch=8&method=roofline")
    page.wait_for_function(charts_drawn(1), timeout=TIMEOUT_MS)
    wait_idle(page)        # includes the inputs' run (waits.IDLE: no #llm-sidebar-pending left)
    assert page.evaluate("window.__inputsAtChart") == 0
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert sidebar.get_by_role("heading", name="llm-roofline").count() == 1
    assert sidebar.get_by_label("Batch", exact=True).input_value() == "8"
    assert sidebar.locator('input[aria-label="TP"]').input_value() == "4"
    assert page.locator("#llm-sidebar-pending").count() == 0
    query = page.evaluate("Object.fromEntries(new URL(location.href).searchParams)")
    assert (query["tp"], query["batch"], query["method"]) == ("4", "8", "roofline")
    assert page.console_errors == []
