"""While a run redraws part of the page (issue 13), Streamlit dims what it is redrawing: stale elements and, while a
script runs, expanders. It fades them over 1 s after 0.5 s, 60 frames of work per page; the page's style
(dashboard/preload.py, STALE_STYLE, in the page's head) keeps the delay and the dimmed look and drops the fade. Checked
on the dashboard's own page, with elements shaped as Streamlit's (its stale rule sets the transition on the element
itself), so the rule's reach is what the browser computes."""

from __future__ import annotations

import pytest

from tests.browser.waits import TIMEOUT_MS, charts_drawn, wait_idle

pytestmark = pytest.mark.browser

# Streamlit 1.67's stale styles: an element container's opacity, an expander's border colours and summary opacity
FADE = "opacity 1s ease-in 0.5s"
BORDERS = "border-color 1s ease-in 0.5s"

TIMINGS = """([state, stale]) => {
    const app = document.createElement('div');
    app.setAttribute('data-test-script-state', state);
    app.innerHTML = `<div class="stElementContainer" data-stale="${stale}" style="transition: %s"></div>
        <div data-testid="stExpander"><details style="transition: %s"><summary style="transition: %s">x</summary>
        </details></div>`;
    document.body.appendChild(app);
    const shown = [...app.querySelectorAll('.stElementContainer, details, summary')].map(element => {
        const style = getComputedStyle(element);
        return [style.transitionDuration, style.transitionDelay];
    });
    app.remove();
    return shown;
}""" % (FADE, BORDERS, FADE)


def test_what_a_run_redraws_is_dimmed_at_the_same_moment_without_a_fade(page, server_url):
    page.goto(server_url)
    page.wait_for_function(charts_drawn(1), timeout=TIMEOUT_MS)
    wait_idle(page)
    # during a run: the stale element and the expander dim after the same 0.5 s, in one step
    assert page.evaluate(TIMINGS, ["running", "true"]) == [["0s", "0.5s"]] * 3
    # no run: an element that is not stale and an expander keep their own transitions (hover, opening)
    assert page.evaluate(TIMINGS, ["notRunning", "false"]) == [["1s", "0.5s"]] * 3
    # the page's own expanders, at rest: their summary's hover transitions are Streamlit's
    summary = page.locator('[data-testid="stExpander"] summary').first.evaluate(
        "element => getComputedStyle(element).transitionDuration")
    assert summary != "0s"
