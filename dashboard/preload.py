"""Start loading Plotly's script as soon as a page's first element reaches the browser.

The charts' Plotly (dashboard/plotly_view.py: the vendored cartesian bundle, 1.5 MB) would otherwise be fetched
only when the first chart element arrives, after the sidebar and the headline: the browser then parses and
evaluates it while the user waits for the chart. `preload_plotly` sends, as the page's first element, a small
script that starts loading it right away (the same loader the chart component uses, so the bundle is fetched and
evaluated once a page), and the browser does that work while the server is still running the script. Its element
is hidden, so the page looks the same with or without it.

The same element stills the shimmer of Streamlit's loading placeholders (stSkeleton: grey boxes while an element's
code loads, and the page's own skeleton, stAppSkeleton, before its first element): animated, they make the browser
paint a new frame continuously for the seconds before the first chart, CPU taken from the page's own work on a
two-core machine (docs/responsiveness.md). They stay as still grey boxes. The same rules (`STILL_STYLE`) are in the
page's head (dashboard/index_page.py), so they hold from a visit's first frame; here they cover a page served without
that head (`streamlit run dashboard/app.py`).

It also stills the running man in the top bar while a script runs: Streamlit swaps his pose every 200 ms, and each
swap is restyled, painted, rasterised and composited, about 0.01-0.02 s of Chromium CPU per second of a run here (a
rerun that waits 8 s for a busy server paid 0.16 s for it). Streamlit's icon is hidden (its swaps then change nothing
drawn) and the widget's row, which stays the same while the run lasts, draws him still in his first pose, in the
icon's place beside the Stop button. The widget appears and goes in one step, without its 200 ms fades.

And the dimming of what a run is redrawing (`STALE_STYLE`): Streamlit fades each stale element (opacity) and each
expander (its border colours and its summary's opacity) over 1 s after 0.5 s: some 60 frames of style, paint and
software compositing, which a rerun pays whenever it waits more than half a second (under load: every rerun of
twenty sessions at once). A rerun that waited 3 s for the server cost 0.17 s of Chromium CPU more with the fade
(docs/responsiveness.md). The same dimming now comes at the same moment in one step.
"""

from __future__ import annotations

import streamlit as st

from dashboard import plotly_view

RUNNING_MAN = ("data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 24 24' "
               "fill='rgba(26,26,26,0.6)'%3E%3Cpath d='M13.49 5.48c1.1 0 2-.9 2-2s-.9-2-2-2-2 .9-2 2 .9 2 2 2zm-3.6 "
               "13.9l1-4.4 2.1 2v6h2v-7.5l-2.1-2 .6-3c1.3 1.5 3.3 2.5 5.5 2.5v-2c-1.9 0-3.5-1-4.3-2.4l-1-1.6c-.4-.6-1-1"
               "-1.7-1-.3 0-.5.1-.8.1l-5.2 2.2v4.7h2v-3.4l1.8-.7-1.6 8.1-4.9-1-.4 2 7 1.4z'/%3E%3C/svg%3E")
# Still, not hidden: loading placeholders (an element's, `stSkeleton`, and the page's own before its first element,
# `stAppSkeleton`, shown after 0.5 s) keep their grey boxes without the shimmer; the running man keeps his first pose
# (drawn by the status widget's row while it holds Streamlit's running icon, which is hidden), the widget no fades.
# Also in the page's head (dashboard/index_page.py), so that it holds from the first frame of a visit.
STILL_STYLE = ("""[data-testid="stSkeleton"],[data-testid="stSkeleton"] *,[data-testid="stSkeletonElement"],"""
               """[data-testid="stSkeletonElement"] *,[data-testid="stAppSkeleton"],[data-testid="stAppSkeleton"] *"""
               """{animation:none!important}
[data-testid="stStatusWidgetRunningIcon"]{display:none!important}
[data-testid="stStatusWidget"]>div:has(>[data-testid="stStatusWidgetRunningIcon"])::before{content:"";flex:none;"""
               """width:1.6rem;height:1.6rem;margin-right:-0.5rem;background:url("%s") center/contain no-repeat}
[data-testid="stStatusWidget"]{transition:none!important}"""
               % RUNNING_MAN)
# Streamlit's stale elements (data-stale="true") and, while a script runs, its expanders fade to their dimmed look
# over 1 s after a 0.5 s delay: the same look, reached at the same 0.5 s in one step. An expander shows no stale mark
# of its own, so its rule holds only while a run is under way (its hover and open transitions are left as they are).
STALE_STYLE = ("""[data-stale="true"],[data-test-script-state="running"] [data-testid="stExpander"] :is(details,summary)"""
               """{transition-duration:0s!important}""")
STILL_STYLE += "\n" + STALE_STYLE
STILL_TAG = "<style>%s</style>" % STILL_STYLE
SCRIPT = """<style>.stElementContainer:has(#plotly-preload){display:none}
%s
</style><span id="plotly-preload"></span>
<script>(() => {
  %s
  loadPlotly().catch(() => null);  // a bundle that fails to load is ignored here (the chart reports it when drawn)
})();</script>"""


def preload_plotly() -> None:
    """The hidden element whose script starts loading the charts' Plotly bundle (dashboard/plotly_view.py)."""
    plotly_view.serve_bundle()
    st.html(SCRIPT % (STILL_STYLE, plotly_view.LOADER), unsafe_allow_javascript=True)
