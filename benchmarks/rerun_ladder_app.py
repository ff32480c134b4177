"""The rerun ladder's app (benchmarks/load_sessions.py --ladder-step N): the overview's Batch rerun built up from
the thinnest Streamlit page that still answers the benchmark to the dashboard itself, one visible part a step.

Served by the dashboard's own launcher (dashboard/serve.py: warmed, the page's head preloading the Plotly bundle and
holding the still-style rules), with the repository's .streamlit/config.toml (postScriptGC off), the same Streamlit
and browser. The step is read from the environment variable RERUN_LADDER_STEP (a server serves one step; default:
the app). Every step has the Batch input (label "Batch", key w_batch, the app's limits) in the sidebar, a TPOT
card whose text is the app's for the view (dashboard/data.estimate, dashboard/units.duration, the page's default
method) and the view's `hw` and `batch` in the URL, so load_sessions.py times and checks it as it does the app:

  0 bare      st.set_page_config as the app's, the Batch input in the sidebar and one st.metric "TPOT": a Batch change
              reruns this whole (tiny) script, one run per change; the URL holds hw and batch only
  1 sidebar   + the app's run around the page: the preload element first (dashboard/preload.py), the view read from
              the URL and resolved (session, resolve), the sidebar's title and every input (dashboard/sidebar.py,
              the Batch input's place left for the body), the body as the app's fragment (key OVERVIEW_BODY) drawing
              the Batch input into that place, then the one TPOT card; the whole view written to the URL
  2 headline  + the scenario caption and the headline cards as the overview draws them (overview.headline, with
              the estimate beside) instead of the one card
  3 plot      + the roofline chart alone below the cards, drawn as the chart area draws it (the same figure, cached
              per view, its subtitle, toolbar config and element key; dashboard/plotly_view.py) but without the
              chart area's fragment, picker, deck button, title and download buttons
  4 chart     the overview's chart area instead (overview.chart_area: its own fragment, the picker, the deck button,
              the title, the chosen chart and its PNG/SVG/PDF buttons)
  5 app       dashboard/app.py itself, unchanged (adds the closed Energy and Kernels expanders, the URL warnings)
"""

from __future__ import annotations

import os
import runpy
import sys
from dataclasses import replace
from pathlib import Path

import streamlit as st

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from dashboard.session import OVERVIEW_BODY  # noqa: E402

STEPS = ("bare", "sidebar", "headline", "plot", "chart", "app")
STEP_VARIABLE = "RERUN_LADDER_STEP"


CONTAIN = "+contain"      # a step's name with this suffix: the chart's element isolated from the page's invalidation
CONTAIN_STYLE = "<style>.llm-plot { contain: layout paint style; will-change: transform; }</style>"


def step_from_environment() -> int:
    """The step this server serves (RERUN_LADDER_STEP, a number or a name, `+contain` after it for the chart in
    its own layout, paint and compositing scope: an experiment; default: the app)."""
    value = os.environ.get(STEP_VARIABLE, str(len(STEPS) - 1)).strip().removesuffix(CONTAIN)
    if value in STEPS:
        return STEPS.index(value)
    if value.isdigit() and int(value) < len(STEPS):
        return int(value)
    raise SystemExit(f"{STEP_VARIABLE}={value!r}: expected 0-{len(STEPS) - 1} or one of {', '.join(STEPS)}")


def tpot_card(result) -> None:
    from dashboard.units import duration
    st.metric("TPOT", duration(result.tpot_s))


def bare() -> None:
    """Step 0: the Batch input, one card, the URL's hw and batch."""
    from dashboard import data
    from dashboard.resolve import resolve_scenario
    from dashboard.state import ViewState
    if "ladder_device" not in st.session_state:          # a session's first run: its view from the URL
        query = st.query_params.to_dict()
        st.session_state["ladder_device"] = query.get("hw", ViewState().devices[0])
        st.session_state["w_batch"] = int(query.get("batch", ViewState().batch))
    device = st.session_state["ladder_device"]
    batch = st.sidebar.number_input("Batch", min_value=1, max_value=1_000_000, step=1, key="w_batch")
    state = ViewState(devices=(device,), batch=batch)
    scenario, _ = resolve_scenario(state)
    tpot_card(data.estimate(data.bundled_specs()[device], data.offline_model(state.model), scenario, state.method))
    query = {"hw": device, "batch": str(batch)}
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)


def built_up(step: int) -> None:
    """Steps 1-4: the app's run on the overview (share box closed, sidebar drawn before the page), its body holding
    one card (1), the headline (2), then the roofline alone (3) or the chart area (4) too."""
    from dashboard.preload import preload_plotly
    preload_plotly()
    st.set_page_config(page_title="llm-roofline", layout="wide", initial_sidebar_state=400)
    from benchmarks.ladder_view import resolved_view
    from dashboard import session, sidebar
    from dashboard.context import PageContext
    state, devices, model, models, scenario = resolved_view()
    session.resend_unreported()
    state = session.from_widgets(session.view())
    session.set_view(state)
    if os.environ.get(STEP_VARIABLE, "").endswith(CONTAIN):
        st.html(CONTAIN_STYLE)
    controls = sidebar.begin()
    place = sidebar.draw(controls, devices, model, batch_in_body=True)
    body(PageContext(state, devices, model, scenario, models=models), lambda: sidebar.batch_input(place), step)
    session.write_url(session.from_widgets(session.view()))


@st.fragment(key=OVERVIEW_BODY)
def body(ctx, sidebar_part, step: int) -> None:
    """overview.body (the same fragment key) with the page below the Batch input cut to the step's parts."""
    from dashboard import session
    from dashboard.resolve import resolve_scenario
    from dashboard.views import overview
    session.resend_unreported()
    sidebar_part()
    state = session.from_widgets(session.view())
    if state != ctx.state:
        session.set_view(state)
        scenario, _ = resolve_scenario(state)
        ctx = replace(ctx, state=state, scenario=scenario, errors=[])
    results = ctx.estimates()
    device = ctx.state.devices[0]
    primary = {device: results[device]}
    if step < STEPS.index("headline"):
        tpot_card(primary[device])
    else:
        st.caption(ctx.summary())
        overview.headline(primary[device], hint=lambda: overview.fewest_devices_hint(ctx, device),
                          other=overview.beside_estimate(ctx, device), method=ctx.state.method)
    if step == STEPS.index("plot"):
        plot_alone(ctx, primary, results)
    if step >= STEPS.index("chart"):
        overview.chart_area(ctx, primary, results, bool(st.session_state.get(overview.OPEN_ENERGY)))
    session.write_url(session.from_widgets(session.view()))


def plot_alone(ctx, primary: dict, results: dict) -> None:
    """The chart area's default chart (the roofline) as dashboard/widgets.chart draws it, without its buttons."""
    from dashboard import export, plotly_view
    from dashboard.figure_cache import browser_json
    from dashboard.views import overview
    from dashboard.widgets import file_name, scenario_subtitle
    title, figure = overview.one_figure(ctx, "roofline", primary, results)
    scenario_subtitle(figure, ctx.summary())
    config = export.toolbar_config(file_name(title, ctx.summary(), "x")[:-2])
    plotly_view.plot(browser_json(figure), config, key="chart-overview-roofline")


def page(step: int) -> None:
    if step >= STEPS.index("app"):
        runpy.run_path(str(REPO / "dashboard" / "app.py"), run_name="__main__")
    elif step == STEPS.index("bare"):
        st.set_page_config(page_title="llm-roofline", layout="wide", initial_sidebar_state=400)
        bare()
    else:
        built_up(step)


page(step_from_environment())
