"""What only a browser shows: charts drawn, inputs move charts, links reproduce views, downloads work."""

from __future__ import annotations

import io

import pytest
from pptx import Presentation

from tests.browser.conftest import ARTIFACTS
from tests.browser.waits import TIMEOUT_MS, charts_drawn, wait_idle

pytestmark = pytest.mark.browser
PAGES = ("overview", "compare", "compare_models", "sweeps", "serving", "hardware", "accuracy")
CHART_COUNTS = {"overview": 1, "compare": 5, "compare_models": 5, "sweeps": 1, "serving": 2, "hardware": 0,
                "accuracy": 1}


def open_view(page, url: str, expected_charts: int):
    page.goto(url)
    try:
        page.wait_for_selector('[data-testid="stSidebar"]', timeout=TIMEOUT_MS)
        if expected_charts:
            page.wait_for_function(charts_drawn(expected_charts), timeout=TIMEOUT_MS)
        wait_idle(page)
    except Exception as error:      # say what the page showed: charts drawn, exceptions, warnings, a screenshot
        shot = ARTIFACTS / f"failed-{abs(hash(url)) % 10**8}.png"
        page.screenshot(path=str(shot), full_page=True)
        drawn = page.locator(".js-plotly-plot .main-svg").count()
        exceptions = page.locator('[data-testid="stException"]').all_inner_texts()
        alerts = page.locator('[data-testid="stAlert"]').all_inner_texts()
        raise AssertionError(f"{url}: {drawn} of {expected_charts} charts drawn; exceptions {exceptions}; "
                             f"alerts {alerts}; screenshot {shot}") from error


def metrics(page) -> dict:
    labels = page.locator('[data-testid="stMetricLabel"]').all_inner_texts()
    values = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
    return dict(zip(labels, values))


def chart_data(page, index: int):
    return page.evaluate(f"JSON.stringify(document.querySelectorAll('.js-plotly-plot')[{index}].data)")


@pytest.mark.parametrize("name", PAGES)
def test_every_page_renders_with_its_charts(page, server_url, name):
    open_view(page, f"{server_url}/?page={name}&hw=H100-SXM,MI300X", CHART_COUNTS[name])
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator(".js-plotly-plot").count() >= CHART_COUNTS[name]
    page.screenshot(path=str(ARTIFACTS / f"page-{name}.png"), full_page=True)
    assert page.console_errors == []


def test_changing_an_input_changes_the_chart_and_the_url(page, server_url):
    open_view(page, f"{server_url}/?chart=gap", 1)
    before_metrics, before_bars = metrics(page), chart_data(page, 0)
    batch = page.get_by_label("Batch", exact=True)
    batch.fill("64")
    batch.press("Enter")
    page.wait_for_function("window.location.search.includes('batch=64')", timeout=TIMEOUT_MS)
    wait_idle(page)
    assert metrics(page)["TPOT"] != before_metrics["TPOT"]
    assert chart_data(page, 0) != before_bars
    assert page.console_errors == []


def test_the_chart_picker_draws_the_chart_chosen_and_puts_it_in_the_link(page, server_url):
    """The overview draws one chart (the roofline); All charts draws the five; the choice reaches the URL."""
    open_view(page, f"{server_url}/", 1)
    assert page.locator(".js-plotly-plot").count() == 1
    page.get_by_role("radio", name="All charts", exact=True).click()
    page.wait_for_function("window.location.search.includes('chart=all')", timeout=TIMEOUT_MS)
    page.wait_for_function(charts_drawn(5), timeout=TIMEOUT_MS)
    wait_idle(page)
    page.get_by_role("radio", name="Memory fit", exact=True).click()
    page.wait_for_function("window.location.search.includes('chart=memory')", timeout=TIMEOUT_MS)
    wait_idle(page)
    assert page.locator(".js-plotly-plot").count() == 1
    assert page.locator('[data-testid="stHeadingWithActionElements"]', has_text="Memory fit").count() == 1
    assert page.console_errors == []


def open_shared_link(browser, page, server_url: str, expected_charts: int, must_contain: tuple[str, ...]):
    """The link in the sidebar's "Share this view" box (opened first: it is made only while open), opened in a
    fresh browser context (its page)."""
    code = page.locator('[data-testid="stSidebar"] [data-testid="stCode"] code')
    if code.count() == 0:
        page.locator('[data-testid="stSidebar"] [data-testid="stExpander"] summary', has_text="Share this view").click()
        code.first.wait_for(timeout=TIMEOUT_MS)
        wait_idle(page)
    link = code.first.inner_text().strip()
    assert all(text in link for text in must_contain), link
    fresh = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    open_view(fresh, link.replace("http://localhost:8501", server_url), expected_charts)
    return fresh


def test_copied_link_reproduces_the_view_in_a_fresh_browser(browser, page, server_url):
    open_view(page, f"{server_url}/?hw=A100-80GB-SXM&model=Qwen/Qwen2.5-7B&phase=decode&batch=16&ctx=4096"
                    "&chart=kernels", 1)
    shown = metrics(page)
    fresh = open_shared_link(browser, page, server_url, 1, ("batch=16", "Qwen", "chart=kernels"))
    assert metrics(fresh) == shown
    assert chart_data(fresh, 0) == chart_data(page, 0)
    fresh.context.close()


def test_png_and_deck_downloads_are_valid_files(page, server_url):
    open_view(page, f"{server_url}/", 1)
    with page.expect_download(timeout=TIMEOUT_MS) as png_download:
        page.get_by_role("button", name="PNG").first.click()
    png = open(png_download.value.path(), "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    with page.expect_download(timeout=TIMEOUT_MS) as deck_download:
        page.get_by_role("button", name="Download deck (PPTX)").click()
    deck = Presentation(io.BytesIO(open(deck_download.value.path(), "rb").read()))
    assert page.locator(".js-plotly-plot").count() == 1          # the overview shows one chart ...
    assert len(deck.slides) == 1 + 5                            # ... the deck: a title slide, then all five
    assert page.console_errors == []


def test_bad_url_parameter_shows_a_warning_not_a_crash(page, server_url):
    open_view(page, f"{server_url}/?batch=lots&hw=Z9000,H100-SXM&zoom=3", 1)
    warnings = " ".join(page.locator('[data-testid="stAlert"]').all_inner_texts())
    assert "batch" in warnings and "Z9000" in warnings and "zoom" in warnings
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.console_errors == []


def test_stacking_set_on_the_kernel_chart_reaches_the_open_energy_section(page, server_url):
    """Stack by reruns only the chart's fragment; with the energy section open the whole page follows it."""
    open_view(page, f"{server_url}/?chart=kernels", 1)
    page.locator('[data-testid="stExpander"] summary', has_text="Energy and power").click()
    page.wait_for_function(charts_drawn(3), timeout=TIMEOUT_MS)
    wait_idle(page)
    page.get_by_role("radio", name="kernel group", exact=True).click()
    page.wait_for_function("window.location.search.includes('stack=family')", timeout=TIMEOUT_MS)
    wait_idle(page)
    names = page.evaluate("""Array.from(document.querySelectorAll('.js-plotly-plot')).map(
        plot => plot.data.map(trace => trace.name).sort().join('|'))""")
    assert names[0] == names[1]          # the kernel chart and the energy-by-kernel chart: the same kernel groups
    assert page.console_errors == []
