"""The Serving page's link warnings in a real browser: the page reruns once the URL is rewritten, and a warning
about the link must still be on screen after it (issue 12's audit)."""

from __future__ import annotations

import pytest

from tests.browser.test_dashboard_browser import open_view
from tests.browser.waits import wait_idle

pytestmark = pytest.mark.browser


def test_unknown_prefill_device_warning_stays_after_the_page_settles(page, server_url):
    open_view(page, f"{server_url}/?page=serving&sv.c=4&sv.cmax=8&sv.ds=1&sv.dis=1&sv.pd=NoSuch", 2)
    page.wait_for_timeout(1500)      # the rerun after the URL is rewritten
    wait_idle(page)
    alerts = page.locator('[data-testid="stAlert"]').all_inner_texts()
    assert any("sv.pd" in text and "'NoSuch' is not a known device" in text for text in alerts), alerts
    assert "sv.pd" not in page.evaluate("window.location.search")      # the link no longer carries it
    assert page.locator('[data-testid="stException"]').count() == 0
