"""Charts drawn in place: a Streamlit component that keeps its Plotly chart across reruns and updates it.

Streamlit's st.plotly_chart names its element by a hash of the figure's JSON, so every changed figure is a new
element: the browser unmounts the old chart and draws the new one from scratch (Plotly.newPlot), then redraws it
once more while re-theming it. This component (`st.components.v2`, drawn in the page, not in an iframe) has a
fixed identity, the chart's key: a rerun that changes the figure sends the new figure to the same element, whose
script calls `Plotly.react` on the chart already on screen, so Plotly recomputes only what changed (the figure
carries a `layout.datarevision`, dashboard/browser_spec.py).

Plotly itself is the cartesian bundle of plotly.js (dashboard/vendor/plotly: bar, heatmap, scatter and the rest of
the 2-D types, 1.5 MB against the 4.7 MB chunk Streamlit loads with every trace type), served from the dashboard's
folder as a Streamlit component's files and loaded once per page (`LOADER`, also started by dashboard/preload.py
with the page's first element). A figure holding a trace type the bundle lacks (`scattergl` on the accuracy page)
is drawn by st.plotly_chart as before (`drawable`).

Kept from st.plotly_chart with theme=None: the figure as sent (no theme), the width of the column and the
figure's own height (450 px when it has none), the toolbar config (PNG at 2x with the file name stem, no lasso or
box select, no logo), hover, legend and a full-screen button (the browser's full screen, not Streamlit's).
"""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

VENDOR = Path(__file__).resolve().parent / "vendor" / "plotly"
BUNDLE = "plotly-cartesian.min.js"
BUNDLE_VERSION = "4.1.1"
ASSETS = "plotly_assets"                 # the component (v1) whose files are the vendored folder
ASSETS_NAME = f"{__name__}.{ASSETS}"     # what Streamlit names it: the declaring module's name first
BUNDLE_URL = f"component/{ASSETS_NAME}/{BUNDLE}"         # relative to the app's base URL
# the trace types plotly.js-cartesian-dist holds (its README)
TRACE_TYPES = frozenset({"bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour",
                         "image", "pie", "scatter", "scatterternary", "violin"})
HEIGHT = 450                             # st.plotly_chart's height for a figure without one
MIN_WIDTH = 150                          # ... and its narrowest

# Loads the bundle once per page (a classic script: it sets window.Plotly), into window.__llmPlotly, a promise of
# that Plotly. The app's base URL is read from the page's main script (/<base>/static/js/index.*.js).
LOADER = """function loadPlotly() {
  if (!window.__llmPlotly) {
    window.__llmPlotly = new Promise((resolve, reject) => {
      const main = document.querySelector('script[type="module"][src*="/static/js/index."]');
      const base = main ? new URL('../../', main.src) : new URL(document.baseURI);
      const script = document.createElement('script');
      script.src = new URL(%s, base).href;
      script.dataset.llmPlotly = %s;
      script.onload = () => window.Plotly ? resolve(window.Plotly) : reject(new Error('no Plotly in ' + script.src));
      script.onerror = () => { window.__llmPlotly = undefined; reject(new Error('could not load ' + script.src)); };
      document.head.appendChild(script);
    });
  }
  return window.__llmPlotly;
}""" % (json.dumps(BUNDLE_URL), json.dumps(BUNDLE_VERSION))

# The page's own request for the bundle (dashboard/index_page.py puts it into Streamlit's index.html): fetched beside
# Streamlit's scripts from the first moment of a visit, evaluated only when the loader above adds its script (the
# browser then takes the preloaded file: one fetch). Relative to the page, as Streamlit's own tags are.
EARLY_TAG = '<link rel="preload" href="%s" as="script">' % BUNDLE_URL

# The component's module: called with each new figure (the same element, the same parentElement); the chart div
# is made on the first call and updated in place after. A later figure wins over an earlier one still waiting for
# Plotly to load (`turn`). The returned clean-up runs when the element leaves the page.
SCRIPT = LOADER + """
const FULLSCREEN = {                 // the toolbar's full-screen button (st.plotly_chart had one): the chart alone
  name: 'fullscreen', title: 'Fullscreen',
  icon: { width: 24, height: 24, path: 'M3 3h6v2H5v4H3zm12 0h6v6h-2V5h-4zM3 15h2v4h4v2H3zm16 0h2v6h-6v-2h4z' },
  click: (plot) => (document.fullscreenElement === plot ? document.exitFullscreen() : plot.requestFullscreen()),
};

function fitScreen(Plotly, plot) {   // on entering or leaving full screen: the plot takes the screen, or its height
  const full = document.fullscreenElement === plot;
  plot.style.height = full ? '100vh' : plot.__height + 'px';
  plot.style.background = full ? 'white' : '';
  Plotly.relayout(plot, { width: Math.max(plot.clientWidth, %d), height: full ? plot.clientHeight : plot.__height });
}

export default function ({ data, parentElement }) {
  const payload = typeof data === 'string' ? JSON.parse(data) : data;
  let plot = parentElement.querySelector(':scope > .llm-plot');
  if (!plot) {
    plot = document.createElement('div');
    plot.className = 'llm-plot';
    parentElement.appendChild(plot);
  }
  const figure = payload.figure, layout = Object.assign({}, figure.layout);
  layout.height = plot.__height = layout.height >= 10 ? layout.height : %d;
  if (document.fullscreenElement === plot) layout.height = plot.clientHeight;
  else plot.style.height = layout.height + 'px';
  const config = Object.assign({}, payload.config, { modeBarButtonsToAdd: [FULLSCREEN] });
  const fixedWidth = layout.width !== undefined, turn = plot.__turn = (plot.__turn || 0) + 1;
  loadPlotly().then((Plotly) => {
    if (turn !== plot.__turn || !plot.isConnected) return;
    if (!fixedWidth) layout.width = Math.max(plot.clientWidth, %d);
    // Plotly.react draws the plot anew (newPlot, then react again) when any config value differs from the plot's:
    // the toolbar's file name (the scenario's words) changes on most reruns, so it is changed on the plot first
    const saving = plot._context && plot._context.toImageButtonOptions, wanted = config.toImageButtonOptions;
    if (saving && wanted) saving.filename = wanted.filename;
    return Plotly.react(plot, figure.data, layout, config).then(() => {
      if (!plot.__fullscreen) {
        plot.__fullscreen = () => fitScreen(Plotly, plot);
        plot.addEventListener('fullscreenchange', plot.__fullscreen);
      }
      if (plot.__resize || fixedWidth) return;
      plot.__resize = new ResizeObserver(() => {
        const width = Math.max(plot.clientWidth, %d);
        if (plot._fullLayout && plot._fullLayout.width !== width) Plotly.relayout(plot, { width });
      });
      plot.__resize.observe(plot);
    });
  }).catch((error) => console.error('llm-roofline chart:', error));
  return () => {
    if (plot.__resize) plot.__resize.disconnect();
    if (window.__llmPlotly) window.__llmPlotly.then((Plotly) => Plotly.purge(plot)).catch(() => null);
  };
}
""" % (MIN_WIDTH, HEIGHT, MIN_WIDTH, MIN_WIDTH)

NAME = "llm_roofline_plot"               # the component's name (its elements' proto.component_name)
_mount = st.components.v2.component(NAME, js=SCRIPT, isolate_styles=False)


def drawable(spec: dict) -> bool:
    """Whether every trace of the figure dict is of a type the vendored bundle draws."""
    return all(trace.get("type", "scatter") in TRACE_TYPES for trace in spec.get("data", ()))


def serve_bundle() -> None:
    """Have the running server serve the vendored folder (a v1 component's files: /component/<ASSETS_NAME>/...).
    Registered as `declare_component` registers one, but also outside a script run (dashboard/index_page.py asks
    for the bundle from the page's HTML, before the first session's script has run)."""
    from streamlit.runtime import Runtime
    if not Runtime.exists():
        return
    registry = Runtime.instance().component_registry
    if registry.get_component_path(ASSETS_NAME) is None:
        from streamlit.components.v1.custom_component import CustomComponent
        registry.register_component(CustomComponent(name=ASSETS_NAME, path=str(VENDOR), url=None,
                                                    module_name=__name__))


def plot(figure_json: str, config: dict, key: str) -> None:
    """The figure (its browser dict as JSON) in the element `key`, updated in place when a rerun changes it."""
    serve_bundle()
    _mount(key=key, data='{"figure":%s,"config":%s}' % (figure_json, json.dumps(config)), height="content")
