"""llm-roofline dashboard: what-if analysis of LLM inference on accelerators, shareable by URL.

Run: bash scripts/dashboard.sh   (or: streamlit run dashboard/app.py)
The page is thin: the engine does the math, dashboard.charts draws, dashboard.state keeps the
view in the URL.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import streamlit as st

if __package__ in (None, ""):  # `streamlit run dashboard/app.py` runs this file as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dashboard.preload import preload_plotly  # noqa: E402

preload_plotly()    # first, before the imports below (a new server's first run spends seconds on them)

from dashboard import carry, data, session, sidebar, sidebar_later  # noqa: E402
from dashboard.context import PageContext  # noqa: E402
from dashboard.views import accuracy, compare, compare_models, explore, hardware, overview, serving, sweeps  # noqa: E402
from dashboard.resolve import (  # noqa: E402
    resolve_devices, resolve_lengths, resolve_model, resolve_models, resolve_scenario,
)


SIDEBAR_WIDTH_PX = 400


def main() -> None:
    # default favicon: no CDN fetch offline; a 400 px sidebar shows whole model names and every input's value
    st.set_page_config(page_title="llm-roofline", layout="wide", initial_sidebar_state=SIDEBAR_WIDTH_PX)
    workbook = sidebar.workbook_specs()   # before the view is read: a bad upload may put the previous one back
    state, first_run = session.start()
    carry_warnings = read_carried(state) if first_run else []
    base_devices = carry.with_carried(workbook, st.session_state["carried_devices"],
                                      uploaded="specs_upload" in st.session_state)
    devices, state, device_warnings = resolve_devices(state, base_devices)
    model, state, model_warnings = resolve_model(state, data.offline_model, st.session_state["uploaded_models"])
    models, state, models_warnings = resolve_models(state, data.offline_model, st.session_state["uploaded_models"])
    length_warnings = []
    if first_run:          # a shared link's lengths against its model (later edits: the pages say what fails)
        state, length_warnings = resolve_lengths(state, model)
    scenario, scenario_warnings = resolve_scenario(state)
    if first_run:
        st.session_state["url_warnings"] += carry_warnings + device_warnings + model_warnings + models_warnings + length_warnings + scenario_warnings
    session.set_view(carry_uploads(state, base_devices))
    session.load_widgets(state)  # corrections (dropped devices, fallback model) reach the widgets
    session.resend_unreported()  # values the browser does not hold yet (an input whose code was still loading)
    state = session.from_widgets(session.view())   # the widgets' values: in session state before they are drawn
    session.set_view(state)
    controls = sidebar.begin()   # the sidebar's title now (the page's width is final), its inputs after the page
    # (on the overview, but for a first visit's first run, before it: see below)
    later = sidebar_later.wanted(first_run)      # a first visit: the inputs once the first chart is drawn
    context = PageContext(state, devices, model, scenario, models=models)
    if not later and sidebar.body_draws_batch(state.page):
        # the overview's body draws the Batch input into the place the sidebar leaves for it, so the sidebar first
        batch_place = sidebar.draw(controls, devices, model, batch_in_body=True)
        render_page(context, base_devices, lambda: sidebar.batch_input(batch_place))
    else:
        try:
            render_page(context, base_devices)
        finally:     # also when the page stops early: the inputs stay on screen and keep their values
            if later:
                with controls:
                    sidebar_later.wait_for_first_chart()
            else:
                sidebar.draw(controls, devices, model)
    session.write_url(session.from_widgets(session.view()))
    data.freeze_startup_heap()


def render_page(context: PageContext, base_devices: dict, sidebar_part=None) -> None:
    """The URL warnings and the chosen page. Drawn before the sidebar's inputs, whose elements the browser then
    receives after the page's (Chromium CPU to the first chart 3.19 -> 2.88 s, docs/responsiveness.md, issue 14),
    except on the overview with the sidebar drawn (not a first visit's first run), where the body draws the Batch
    input (`sidebar_part`) into its place in the sidebar, drawn before."""
    for warning in st.session_state["url_warnings"]:
        st.warning(warning, icon=":material/link_off:")
    state, devices = context.state, context.devices
    if state.page == "hardware":
        hardware.render(context, base_devices)
    elif state.page == "compare":
        compare.render(context)
    elif state.page == "compare_models":
        compare_models.render(context)
    elif state.page == "sweeps":
        sweeps.render(context)
    elif state.page == "explore":
        explore.render(context)
    elif state.page == "serving":
        serving.render(context)
    elif state.page == "accuracy":
        accuracy.render(state.method, devices)
    else:
        overview.body(context, sidebar_part)   # a fragment: an input only the body reads reruns it alone


def read_carried(state) -> list[str]:
    """A shared link's carried devices and config.json, registered as this session's uploads."""
    st.session_state["carried_devices"], warnings = carry.devices_from_state(state)
    carried, config_warnings = carry.config_from_state(state, sidebar.model_from_config)
    if carried:
        st.session_state["uploaded_models"][state.model] = carried[1]
        st.session_state.setdefault("uploaded_configs", {})[state.model] = carried[0]
    return warnings + config_warnings


def carry_uploads(state, base_devices):
    """The state with the uploaded devices and config.json it uses packed in, so its link reproduces it."""
    config = st.session_state.get("uploaded_configs", {}).get(state.model)
    return replace(state, carried_config=carry.pack(config) if config is not None else "",
                   carried_devices=carry.carried_devices(carry.used_device_names(state), base_devices,
                                                         data.bundled_specs()))


main()
