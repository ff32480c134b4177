"""Start loading Plotly's script as soon as a page's first element reaches the browser.

Streamlit loads its Plotly chart code (one 4.7 MB chunk, plotly.js inside) only when the first chart element
arrives, after the sidebar and the headline: the browser then parses and evaluates it (over a second of CPU here)
while the user waits for the chart. `preload_plotly` sends, as the page's first element, a small script that
imports the same chunk right away, so the browser does that work while the server is still running the script
(the module is fetched and evaluated once; Streamlit's own import of it later finds it ready). Its element is
hidden, so the page looks the same with or without it.

The same element stills the shimmer of Streamlit's loading placeholders (stSkeleton: grey boxes while an element's
code loads): animated, they make the browser paint a new frame continuously for the seconds before the first chart,
CPU taken from the page's own work on a two-core machine (docs/responsiveness.md). They stay as still grey boxes.
"""

from __future__ import annotations

import functools
from pathlib import Path

import streamlit as st

# the chunk's URL is taken from the page's own main script (so a base URL path works), the file name from the
# installed Streamlit; an import that fails is ignored (Streamlit's own import reports it when a chart needs it)
SCRIPT = """<style>.stElementContainer:has(#plotly-preload){display:none}
[data-testid="stSkeleton"],[data-testid="stSkeleton"] *{animation:none!important}</style><span id="plotly-preload"></span>
<script>(() => {
  if (window.__plotlyPreload) return;
  const main = document.querySelector('script[type="module"][src*="/static/js/index."]');
  const url = new URL(%r, main ? main.src : new URL('static/js/', document.baseURI)).href;
  window.__plotlyPreload = import(url).catch(() => null);
})();</script>"""


@functools.cache
def plotly_chunk() -> str | None:
    """The file name of Streamlit's Plotly chart chunk (e.g. PlotlyChart.D9Z0_fxz.js), None when not found."""
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    found = sorted(path.name for path in folder.glob("PlotlyChart.*.js"))
    return found[0] if len(found) == 1 else None


def preload_plotly() -> None:
    """The hidden element whose script starts loading Plotly's chunk (nothing when the chunk is not found)."""
    name = plotly_chunk()
    if name is not None:
        st.html(SCRIPT % name, unsafe_allow_javascript=True)
