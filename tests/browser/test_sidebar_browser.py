"""At 1440x900 nothing the user set is clipped in the sidebar: every input shows its whole value."""

from __future__ import annotations

import pytest

from tests.browser.conftest import ARTIFACTS
from tests.browser.test_dashboard_browser import open_view
from tests.browser.waits import TIMEOUT_MS, wait_idle

pytestmark = pytest.mark.browser

# Each input's value against its visible width; a clipped value scrolls inside its box (scrollWidth > clientWidth).
CLIPPED = """() => [...document.querySelectorAll('[data-testid="stSidebar"] input:not([type=file]):not([type=radio])'
                                       + ':not([type=checkbox]):not([type=password])')]
    .filter(input => input.offsetParent !== null && input.value)
    .map(input => ({label: input.getAttribute('aria-label'), value: input.value,
                    scroll: input.scrollWidth, client: input.clientWidth}))"""

EXPECTED = ("TP", "PP", "DP", "EP", "Weights", "Activations", "KV cache", "Batch", "Collectives")
VIEWS = {
    "default": "",
    "long-values": "model=mistralai/Mixtral-8x7B-v0.1&wdt=int4_g128&adt=fp8_e4m3&kvdt=fp8_e4m3&batch=1000000"
                   "&in=16384&out=16384&tp=16&pp=16&dp=1024&ep=8&mb=1000&skew=2.5&coll=tree&method=realistic-graph",
    "mla": "model=deepseek-ai/DeepSeek-V3&tp=16&mla=naive&phase=decode&ctx=163000",
}


@pytest.mark.parametrize("name", VIEWS)
def test_sidebar_inputs_show_their_whole_value_at_1440(browser, server_url, name):
    page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    open_view(page, f"{server_url}/?{VIEWS[name]}", 0)
    for label in EXPECTED:                       # the sidebar fully drawn (the first run may still be under way)
        page.wait_for_selector(f'[data-testid="stSidebar"] input[aria-label="{label}"]', timeout=TIMEOUT_MS)
    wait_idle(page)
    inputs = page.evaluate(CLIPPED)
    page.screenshot(path=str(ARTIFACTS / f"sidebar-1440-{name}.png"))
    labels = {item["label"] for item in inputs}
    assert set(EXPECTED) <= labels
    if name == "long-values":
        assert {"MoE routing skew", "Micro-batches", "Collectives"} <= labels
        shown = {item["label"]: item["value"] for item in inputs}
        assert (shown["DP"], shown["Weights"], shown["Batch"]) == ("1024", "int4_g128", "1000000")
    clipped = [item for item in inputs if item["scroll"] > item["client"]]
    page.set_viewport_size({"width": 1440, "height": 2600})      # the whole sidebar in one picture
    page.screenshot(path=str(ARTIFACTS / f"sidebar-1440-{name}-full.png"))
    assert clipped == []
    page.context.close()
