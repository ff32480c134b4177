"""Charts drawn in place (dashboard/plotly_view.py): a rerun that changes the figure updates the chart already on
screen with Plotly.react (no new plot, the same SVG), and the toolbar keeps what st.plotly_chart's had: the camera
saves a 2x PNG named for the chart and the current scenario, and a full-screen button."""

from __future__ import annotations

import struct

import pytest

from tests.browser.waits import TIMEOUT_MS, charts_drawn, url_param_is, wait_idle

pytestmark = pytest.mark.browser

COUNT_CALLS = """() => { const P = window.Plotly; window.__calls = {newPlot: 0, react: 0};
  for (const name of ['newPlot', 'react']) { const f = P[name];
    P[name] = function (...args) { window.__calls[name]++; return f.apply(this, args); }; }
  window.__svg = document.querySelector('.js-plotly-plot .main-svg');
  window.__data = document.querySelector('.js-plotly-plot').data; }"""


def test_a_new_batch_updates_the_chart_in_place_and_the_toolbar_saves_it_under_the_new_name(page, server_url):
    page.goto(server_url)
    page.wait_for_function(charts_drawn(1), timeout=TIMEOUT_MS)
    wait_idle(page)
    page.evaluate(COUNT_CALLS)
    box = page.get_by_label("Batch", exact=True)
    box.fill("12")
    box.press("Enter")
    page.wait_for_function(url_param_is("batch", "12"), timeout=TIMEOUT_MS)
    wait_idle(page)
    page.wait_for_function("() => document.querySelector('.js-plotly-plot').data !== window.__data",
                           timeout=TIMEOUT_MS)
    calls, same_svg, subtitle = page.evaluate("""() => { const plot = document.querySelector('.js-plotly-plot');
        return [window.__calls, window.__svg === plot.querySelector('.main-svg'),
                plot._fullLayout.title.subtitle.text]; }""")
    assert calls["newPlot"] == 0 and calls["react"] >= 1 and same_svg      # updated, not drawn anew
    assert "batch 12" in subtitle
    plot = page.locator(".js-plotly-plot").first
    plot.hover()
    with page.expect_download(timeout=TIMEOUT_MS) as download:
        plot.locator('.modebar-btn[data-title="Download plot as a PNG"]').click()
    name = download.value.suggested_filename
    assert name.startswith("roofline-") and "batch-12" in name and name.endswith(".png")
    header = open(download.value.path(), "rb").read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", header[16:24]) == (2560, 1440)   # 2x slide
    plot.hover()
    plot.locator('.modebar-btn[data-title="Fullscreen"]').click()
    page.wait_for_function("() => document.fullscreenElement === document.querySelector('.js-plotly-plot')",
                           timeout=TIMEOUT_MS)
    page.wait_for_function("() => document.querySelector('.js-plotly-plot')._fullLayout.height === innerHeight",
                           timeout=TIMEOUT_MS)
    page.evaluate("document.exitFullscreen()")
    page.wait_for_function("() => !document.fullscreenElement && "
                           "document.querySelector('.js-plotly-plot')._fullLayout.height < innerHeight",
                           timeout=TIMEOUT_MS)
    assert page.console_errors == []
