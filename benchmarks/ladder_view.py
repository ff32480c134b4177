"""The view the dashboard's first steps resolve, for the ladder apps (benchmarks/ladder_app.py, rerun_ladder_app.py).

dashboard/app.py's main without its warnings: the workbook, the view read from the URL, devices, model(s) and scenario
resolved, the view set and its widgets loaded. A module of its own: the ladder apps run their page when imported.
"""

from __future__ import annotations

import streamlit as st


def resolved_view():
    """(state, devices, model, models, scenario) of the view in the URL, set, its widgets loaded."""
    from dashboard import carry, data, session, sidebar
    from dashboard.resolve import resolve_devices, resolve_model, resolve_models, resolve_scenario
    workbook = sidebar.workbook_specs()
    state, _ = session.start()
    base = carry.with_carried(workbook, st.session_state.setdefault("carried_devices", {}), uploaded=False)
    devices, state, _ = resolve_devices(state, base)
    model, state, _ = resolve_model(state, data.offline_model, st.session_state["uploaded_models"])
    models, state, _ = resolve_models(state, data.offline_model, st.session_state["uploaded_models"])
    scenario, _ = resolve_scenario(state)
    session.set_view(state)
    session.load_widgets(state)
    return state, devices, model, models, scenario
