"""The benchmarks' end of a rerun (tests/browser/waits.py, `settled_with`): the page's URL has the new value and the
app is idle on two polls in a row, counted from the first poll that sees the value, as `url_param_is` followed by
`wait_idle` counts it. Checked poll by poll on a page shaped as Streamlit's app root (no server, no timing): the
condition is called by hand and the page changed between calls."""

from __future__ import annotations

import pytest

from tests.browser.waits import settled_with

pytestmark = pytest.mark.browser

ORIGIN = "http://waits.test"
APP = """<div data-testid="stApp" data-test-script-state="running" data-test-connection-state="CONNECTED">
<div data-testid="stStatusWidget"></div><div class="stElementContainer" data-stale="true"></div></div>"""

# polls(steps): the condition evaluated once as Playwright does for a wait, then called once after each step
POLLS = """([expression, steps]) => {
    const poll = globalThis.eval(expression);
    const app = document.querySelector('[data-testid="stApp"]');
    const act = {
        url: value => history.replaceState(null, '', '?batch=' + value),
        run: () => app.setAttribute('data-test-script-state', 'running'),
        done: () => { app.setAttribute('data-test-script-state', 'notRunning');
                      app.querySelectorAll('[data-testid="stStatusWidget"]').forEach(e => e.remove());
                      app.querySelectorAll('[data-stale]').forEach(e => e.setAttribute('data-stale', 'false')); },
        stale: () => app.querySelector('[data-stale]').setAttribute('data-stale', 'true'),
        fresh: () => app.querySelector('[data-stale]').setAttribute('data-stale', 'false'),
        none: () => null,
    };
    return steps.map(([name, value]) => { act[name](value); return poll(); });
}"""


@pytest.fixture
def app_page(page):
    page.route(f"{ORIGIN}/**", lambda route: route.fulfill(body=APP, content_type="text/html"))
    page.goto(f"{ORIGIN}/?batch=1")
    return page


def polls(page, steps: list) -> list[bool]:
    return page.evaluate(POLLS, [settled_with("batch", "7"), steps])


def test_settled_on_the_second_idle_poll_that_sees_the_value(app_page):
    # idle with the old value: never settled; the value while still running: not yet; then two idle polls
    assert polls(app_page, [("done", None), ("none", None), ("url", 7), ("run", None), ("none", None),
                            ("done", None), ("none", None)]) == [False, False, False, False, False, False, True]


def test_a_poll_that_is_not_idle_starts_the_count_again(app_page):
    assert polls(app_page, [("url", 7), ("done", None), ("stale", None), ("fresh", None), ("none", None)]) \
        == [False, False, False, False, True]
    # the value already there and the app idle when the wait starts: still two polls (a fresh count each wait)
    assert polls(app_page, [("none", None), ("none", None)]) == [False, True]
    assert polls(app_page, [("url", 8), ("none", None)]) == [False, False]
