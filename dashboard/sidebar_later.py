"""The sidebar's inputs on a session's first visit: drawn by a second run that starts once the first chart is drawn.

On a first visit the browser builds every element it is sent, in order, sharing two cores with the server: the
sidebar's forty inputs (ten element kinds, each kind's code fetched, evaluated and styled on first use) cost about
1.0 s of Chromium CPU before the first chart, the largest part of the page after Streamlit's own
(docs/responsiveness.md, the first chart's ladder). Sent after the page in the same run, they still arrive while the
chart is being drawn and are built before it. So on a session's first run (`wanted`) the sidebar holds only its
title and this small element (`wait_for_first_chart`): once the page's first chart has drawn its SVG (or the run
has ended with no chart on the page, or 5 s have passed), it asks for a rerun, and that run draws the inputs
(app.py), with the same keys and the values the first run used (session.load_widgets put them into session state;
the view keeps them between the runs). Nothing the user set can be lost: before the inputs are drawn there is
nothing to set in them. The second run often comes before the browser has loaded the code of the page's own inputs
(the chart picker): session.resend_unreported sends their values again (the share-link race of session 14).

While it waits, the element marks the page as busy (`PENDING_ID`): the browser tests' and benchmarks' "the app has
settled" (tests/browser/waits.py) waits for the inputs too.
Without a browser (Streamlit's AppTest: no request headers) the inputs are drawn in the first run, as before.
"""

from __future__ import annotations

import streamlit as st

PENDING_ID = "llm-sidebar-pending"
WAIT_LIMIT_MS = 5000          # the most the inputs wait for a chart (one that failed to draw, a slow machine)
NAME = "llm_roofline_sidebar_later"

SCRIPT = """
export default function ({ parentElement, setTriggerValue }) {
  const mark = document.createElement('span');
  mark.id = %r;
  parentElement.appendChild(mark);
  const started = performance.now();
  const chartDrawn = () => document.querySelector('.js-plotly-plot .main-svg') !== null;
  const noChart = () => {      // the run has ended and the page holds no chart to wait for
    const app = document.querySelector('[data-testid="stApp"]');
    return app !== null && app.getAttribute('data-test-script-state') === 'notRunning'
      && document.querySelector('.llm-plot, [data-testid="stPlotlyChart"]') === null;
  };
  let timer = setInterval(() => {
    if (chartDrawn() || noChart() || performance.now() - started > %d) {
      clearInterval(timer);
      timer = null;
      setTriggerValue('drawn', true);
    }
  }, 50);
  return () => { if (timer !== null) clearInterval(timer); mark.remove(); };
}
""" % (PENDING_ID, WAIT_LIMIT_MS)

_mount = st.components.v2.component(NAME, js=SCRIPT, isolate_styles=False)


def wanted(first_run: bool) -> bool:
    """Whether this run leaves the sidebar's inputs to the next one: a session's first run, with a browser."""
    return first_run and bool(st.context.headers.get("User-Agent"))


def _rerun() -> None:
    """The element's callback: the rerun it asks for draws the inputs (nothing to do here)."""


def wait_for_first_chart() -> None:
    """The element that asks for the rerun drawing the sidebar's inputs once the first chart is drawn."""
    _mount(key="sidebar-later", on_drawn_change=_rerun)
