"""A real Streamlit server and a real Chromium (Playwright driving Debian's /usr/bin/chromium)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.waits import CHROMIUM, CHROMIUM_ARGS, free_port, start_dashboard
from tests.conftest import REPO

ARTIFACTS = REPO / "test-artifacts"
# one log per pytest-xdist worker (the browser tests run on one worker, but `-n` with another --dist may split them)
STREAMLIT_LOG = f"streamlit-{os.environ['PYTEST_XDIST_WORKER']}.log" if "PYTEST_XDIST_WORKER" in os.environ \
    else "streamlit.log"


@pytest.fixture(scope="session")
def server_url():
    ARTIFACTS.mkdir(exist_ok=True)
    log = open(ARTIFACTS / STREAMLIT_LOG, "w")
    port = free_port()
    try:
        process = start_dashboard(port, log)
    except RuntimeError as error:
        pytest.fail(f"{error}; see test-artifacts/{STREAMLIT_LOG}")
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=20)
    log.close()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: scripts/test.sh installs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(autouse=True)
def close_contexts_left_open(request):
    """After each test, close every browser context it opened and left open (a fresh context for a shared link,
    a 1440 px one), also when it failed before closing it: an open context keeps its page and its Streamlit
    session alive, and every later test on the shared server and browser would run beside it."""
    yield
    if "browser" in request.fixturenames:
        for context in list(request.getfixturevalue("browser").contexts):
            context.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda message: message.type == "error" and page.console_errors.append(message.text))
    page.on("pageerror", lambda error: page.console_errors.append(str(error)))
    yield page
    context.close()
