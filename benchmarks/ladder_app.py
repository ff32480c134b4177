"""The first-chart ladder's app (benchmarks/first_chart_ladder.py): the default view's page built up step by step.

Served by the dashboard's own launcher (dashboard/serve.py: warmed, the page's head preloading the Plotly bundle),
same Streamlit, same browser. The step is read from the `ladder_step` cookie (the URL stays the default view's, so
the full app sees no unknown parameter). Each step adds one part of the page to the one before it:

  0 chart      the page config and one chart: the default view's roofline through dashboard/plotly_view.py (its
               JSON and toolbar config made once per server, so a visit costs the server almost nothing)
  1 preload    + the preload element first (dashboard/preload.py)
  2 sidebar    + the view read from the URL, resolved, and the whole sidebar (the chart still the cached one)
  3 headline   + the scenario caption and the headline cards (two estimates)
  4 chart area + the overview's chart area as the page has it (picker, deck button, the chart built for this view,
               its PNG/SVG/PDF buttons) instead of the cached chart
  5 sections   + the energy and kernel expanders (closed): overview.render as the page calls it
  6 app        dashboard/app.py itself, unchanged
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import streamlit as st

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

STEPS = ("chart", "preload", "sidebar", "headline", "chart area", "sections", "app")


@st.cache_resource(show_spinner=False)
def default_chart() -> tuple[str, dict]:
    """The default view's roofline as the page sends it: (its browser JSON with the scenario subtitle, the toolbar
    config)."""
    from dashboard import data, export
    from dashboard.context import PageContext
    from dashboard.figure_cache import browser_json
    from dashboard.state import ViewState
    from dashboard.views import overview
    from dashboard.widgets import file_name, scenario_subtitle
    import engine

    state = ViewState()
    hardware = data.bundled_specs()[state.devices[0]]
    model = engine.load_model(state.model)
    ctx = PageContext(state, {hardware.name: hardware}, model, engine.Scenario(**state.scenario_fields))
    primary = ctx.estimates()
    _, figure = overview.one_figure(ctx, "roofline", primary, primary)
    scenario_subtitle(figure, ctx.summary())
    return browser_json(figure), export.toolbar_config(file_name("Roofline", ctx.summary(), "x")[:-2])


def bare_chart() -> None:
    from dashboard import plotly_view
    figure_json, config = default_chart()
    plotly_view.plot(figure_json, config, key="chart-overview-roofline")


def page(step: int) -> None:
    if step >= STEPS.index("app"):
        runpy.run_path(str(REPO / "dashboard" / "app.py"), run_name="__main__")
        return
    if step >= STEPS.index("preload"):
        from dashboard.preload import preload_plotly
        preload_plotly()
    st.set_page_config(page_title="llm-roofline", layout="wide", initial_sidebar_state=400)
    if step < STEPS.index("sidebar"):
        bare_chart()
        return
    from dashboard import session, sidebar
    from dashboard.context import PageContext
    from dashboard.views import overview
    from benchmarks.ladder_view import resolved_view
    state, devices, model, models, scenario = resolved_view()
    sidebar.draw(sidebar.begin(), devices, model)
    state = session.from_widgets(session.view())
    session.set_view(state)
    ctx = PageContext(state, devices, model, scenario, models=models)
    if step < STEPS.index("headline"):
        bare_chart()
        return
    results = ctx.estimates()
    device = state.devices[0]
    primary = {device: results[device]}
    st.caption(ctx.summary())
    overview.headline(primary[device], hint=lambda: "", other=overview.beside_estimate(ctx, device),
                      method=state.method)
    if step < STEPS.index("chart area"):
        bare_chart()
        return
    energy_open = bool(st.session_state.get(overview.OPEN_ENERGY))
    overview.chart_area(ctx, primary, results, energy_open)
    if step >= STEPS.index("sections"):
        overview.energy_section(ctx, primary[device], primary)
        overview.kernel_section(ctx, primary)
    session.write_url(session.from_widgets(session.view()))


page(int(st.context.cookies.get("ladder_step", len(STEPS) - 1)))

