"""While a script runs for more than 0.5 s, Streamlit shows its status widget (issue 13): a running man whose pose
React swaps every 200 ms (each swap restyled, painted and composited: about 0.011 s of Chromium CPU per second of a
wait here) and a Stop button, faded in and out over 200 ms. The page's style (dashboard/preload.py, STILL_STYLE, in
the page's head) hides Streamlit's icon, shows the same man still in its place (drawn by the widget's row, which
does not change while the run lasts) and drops the fades. Checked on the dashboard's own page, with elements shaped
as Streamlit 1.67's (its fade set on the widget itself, the icon a div holding one svg), so the rules' reach is what
the browser computes."""

from __future__ import annotations

import pytest

from dashboard.preload import RUNNING_MAN
from tests.browser.waits import TIMEOUT_MS, charts_drawn, wait_idle

pytestmark = pytest.mark.browser

# Streamlit 1.67's status widget while a run is under way: the fade on the widget (CSSTransition's enter class),
# then a flex row with the running icon (a div holding the pose's svg) and the Stop button. `icon`: false for the
# widget's other states (connecting, "File change."), which show no running man.
WIDGET = """(icon) => {
    const widget = document.createElement('div');
    widget.setAttribute('data-testid', 'stStatusWidget');
    widget.style.transition = 'opacity 200ms ease-out';
    widget.innerHTML = `<div style="display: flex; align-items: center">${icon ?
        '<div data-testid="stStatusWidgetRunningIcon" style="width: 1.6rem; height: 1.6rem; display: flex">' +
        '<svg viewBox="0 0 24 24"><path d="M0 0h24v24H0z"/></svg></div>' : '<label>File change.</label>'}
        <span><button>Stop</button></span></div>`;
    document.body.appendChild(widget);
    const row = widget.firstElementChild, before = getComputedStyle(row, '::before');
    const iconElement = widget.querySelector('[data-testid="stStatusWidgetRunningIcon"]');
    const shown = {fade: getComputedStyle(widget).transitionDuration,
                   icon: iconElement && getComputedStyle(iconElement).display,
                   content: before.content, picture: before.backgroundImage, width: before.width,
                   height: before.height, animation: before.animationName};
    widget.remove();
    return shown;
}"""


def test_the_running_man_stands_still_in_a_row_that_does_not_change_and_nothing_fades(page, server_url):
    page.goto(server_url)
    page.wait_for_function(charts_drawn(1), timeout=TIMEOUT_MS)
    wait_idle(page)
    rem = page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)")
    running = page.evaluate(WIDGET, True)
    assert running["icon"] == "none"                           # Streamlit's swapping icon is not drawn
    assert running["content"] == '""' and running["animation"] == "none"      # the row draws the man, still
    assert running["picture"] == f'url("{RUNNING_MAN}")'
    for side in ("width", "height"):                           # the size of Streamlit's icon (to layout's 1/64 px)
        assert float(running[side].removesuffix("px")) == pytest.approx(1.6 * rem, abs=1 / 32)
    assert running["fade"] == "0s"                             # the widget appears and goes in one step
    other = page.evaluate(WIDGET, False)
    assert other["content"] == "none"                          # no running man where no run is shown
