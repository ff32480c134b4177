"""Glue between the URL, Streamlit's session state and the ViewState.

The first run of a session reads the URL (a shared link) into widget state; every run
rebuilds the ViewState from the widgets and writes it back to the URL.
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st
from streamlit.errors import StreamlitAPIException

from dashboard.carry import MAX_LINK_CHARS
from dashboard.state import UPLOAD_PREFIX, ViewState, parse_query, to_query

# the overview body's fragment key: a change of an input only the body depends on (Batch, lengths, dtypes, method,
# engine options) reruns that fragment alone on the overview (views/overview.py; sidebar.batch_input, body_rerun)
OVERVIEW_BODY = "overview_body"
# the session key of the sidebar's "Share this view" box (an expander, open or closed): while it is open its link
# shows every value, so inputs that would rerun only a part of the page rerun the whole page (sidebar.body_rerun,
# views/overview.whole_page_while_sharing)
OPEN_SHARE = "open_share"

# widget key -> ViewState attribute
WIDGET_ATTRIBUTES = {
    "w_page": "page", "w_devices": "devices", "w_model": "model", "w_models": "models", "w_phase": "phase", "w_batch": "batch", "w_input": "input_length",
    "w_output": "output_length", "w_context": "context_length", "w_chunk": "chunk_size",
    "w_weight_dtype": "weight_dtype", "w_act_dtype": "activation_dtype", "w_kv_dtype": "kv_dtype",
    "w_method": "method", "w_tp": "tp", "w_pp": "pp", "w_dp": "dp", "w_ep": "ep",
    "w_overlap": "overlap_communication", "w_chunked_prefill": "chunked_prefill", "w_stack": "stack_by", "w_percent": "percent", "w_sweep": "sweep_field",
    "w_ex_view": "explore_view", "w_ex_x": "explore_x", "w_ex_xv": "explore_x_values", "w_ex_y": "explore_y",
    "w_ex_yv": "explore_y_values", "w_ex_metric": "explore_metric", "w_ex_change": "explore_change",
    "w_ex_ifield": "explore_inverse_field", "w_ex_target": "explore_target",
    "w_sv_c": "serving_concurrency", "w_sv_cmax": "serving_max_concurrency", "w_sv_budget": "serving_token_budget",
    "w_sv_backend": "serving_backend", "w_sv_wl": "serving_workload", "w_sv_sd": "serving_speculative",
    "w_sv_dm": "serving_draft_model", "w_sv_k": "serving_draft_tokens", "w_sv_a": "serving_acceptance_rate",
    "w_sv_ds": "serving_design_space", "w_sv_ttft": "serving_ttft_max_ms", "w_sv_tpot": "serving_tpot_max_ms",
    "w_sv_n": "serving_devices", "w_sv_rps": "serving_requests_per_s", "w_sv_dis": "serving_disaggregated",
    "w_sv_pd": "serving_prefill_device", "w_sv_dd": "serving_decode_device",
    "w_coll": "collective_algorithm", "w_mb": "micro_batches",
    "w_skew": "routing_skew", "w_mla": "mla_decode", "w_ov_chart": "overview_chart",
}


def view() -> ViewState:
    return st.session_state["view"]


def set_view(state: ViewState) -> None:
    st.session_state["view"] = state


def start() -> tuple[ViewState, bool]:
    """The view as the widgets now hold it; on a session's first run, read from the URL."""
    first_run = "view" not in st.session_state
    if first_run:
        state, warnings = parse_query(st.query_params.to_dict())
        set_view(state)
        st.session_state["url_warnings"] = warnings
        st.session_state["uploaded_models"] = {}
    load_widgets(view(), only_missing=not first_run)
    return from_widgets(view()), first_run


def load_widgets(state: ViewState, only_missing: bool = False) -> None:
    """Put the state's values into the widgets' session keys (before the widgets are drawn).

    only_missing: refill keys Streamlit dropped because their widget was hidden last run. A key that already
    holds the value is left alone (a value set from the script is sent to the browser with its widget again).
    """
    for key, attribute in WIDGET_ATTRIBUTES.items():
        present = key in st.session_state
        if only_missing and present:
            continue
        value = getattr(state, attribute)
        value = list(value) if isinstance(value, tuple) else value
        if not present or type(st.session_state[key]) is not type(value) or st.session_state[key] != value:
            st.session_state[key] = value


def resend_unreported() -> None:
    """Set again, to the value it holds, every input key whose widget the browser did not report with this run's
    request, so that its widget carries the value when it is drawn in this run. Call before the inputs are drawn
    (app.py; and at the start of the overview's fragments, whose own reruns draw their inputs again).

    Streamlit sends a widget's value to the browser only in a run where the script set its key (or on a first
    draw); in later runs the element carries the widget's default, and the browser keeps the value it already holds.
    A widget whose code the browser was still loading when a later run sent it again (a rerun soon after the page
    arrived: a first visit's second run, which draws the sidebar's inputs, a body-only rerun, the share box opened)
    mounts with that default (an empty segmented control for the chart picker) and sends it with the next rerun:
    the view lost `chart=` and `stack=` (the share link without them, the chart area failing on chart None; issue
    14, tests/browser/test_late_inputs_browser.py). A widget the browser has drawn is in the request's widget
    states; one it has not drawn is not, and gets its value again.
    """
    from streamlit.runtime.state import get_session_state
    from streamlit.runtime.state.common import user_key_from_element_id
    try:      # at a run's start: the browser's states (after a script's st.rerun(): the last run's, a superset)
        reported = {user_key_from_element_id(widget.id) for widget in get_session_state().get_widget_states()}
    except (AttributeError, RuntimeError):      # no session (bare script) or another Streamlit: all of them again
        reported = set()
    for key in WIDGET_ATTRIBUTES:
        if key not in reported and key in st.session_state:
            try:
                st.session_state[key] = st.session_state[key]
            except StreamlitAPIException:    # its widget was drawn earlier in this run: nothing to do for it now
                pass


def from_widgets(state: ViewState) -> ViewState:
    """The state with every widget's current value."""
    changes = {}
    for key, attribute in WIDGET_ATTRIBUTES.items():
        if key in st.session_state:
            value = st.session_state[key]
            changes[attribute] = tuple(value) if isinstance(value, list) else value
    if not changes.get("devices"):
        changes.pop("devices", None)
    return replace(state, **changes)


def write_url(state: ViewState) -> None:
    query = to_query(_fitting(state, _base())[0])
    # the browser reports its address with each rerun, possibly before it applied the address the last run
    # sent (an upload swap reruns twice in quick succession): write whenever either differs
    if st.query_params.to_dict() != query or st.session_state.get("url_written") != query:
        st.query_params.from_dict(query)
        st.session_state["url_written"] = query


def _base() -> str:
    try:
        base = st.context.url or ""
    except Exception:  # no browser context (tests)
        base = ""
    return base or "http://localhost:8501/"


def _link(state: ViewState, base: str) -> str:
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(to_query(state)), ""))


def _fitting(state: ViewState, base: str) -> tuple[ViewState, str]:
    """The state whose link stays under MAX_LINK_CHARS, and a note naming the carried uploads left out.

    The config.json goes first, then the devices in the view's order while the link still fits."""
    if not (state.carried_devices or state.carried_config) or len(_link(state, base)) <= MAX_LINK_CHARS:
        return state, ""
    full = len(_link(state, base))
    kept = replace(state, carried_devices=(), carried_config="")
    left = []
    if len(_link(replace(kept, carried_config=state.carried_config), base)) <= MAX_LINK_CHARS:
        kept = replace(kept, carried_config=state.carried_config)
    elif state.carried_config:
        left.append("the uploaded config.json")
    for device in state.carried_devices:
        wider = replace(kept, carried_devices=kept.carried_devices + (device,))
        if len(_link(wider, base)) <= MAX_LINK_CHARS:
            kept = wider
        else:
            left.append(f"device {device[0]}")
    return kept, (f"This link cannot carry {', '.join(left)}: with every upload it would be {full:,} characters, over "
                  f"the {MAX_LINK_CHARS:,} a link can safely hold. Whoever opens it must upload the same workbook"
                  f"{' and config.json' if 'the uploaded config.json' in left else ''}; otherwise the view falls "
                  "back to the bundled devices and the default model.")


def share_link(state: ViewState) -> tuple[str, str]:
    """The full URL of this view (base from the browser's address when known) and a note on what it cannot carry."""
    base = _base()
    lean, note = _fitting(state, base)
    uncarried = [m for m in state.models
                 if m.startswith(UPLOAD_PREFIX) and not (m == state.model and lean.carried_config)]
    if uncarried:
        note = " ".join(filter(None, (note, f"This link cannot carry the uploaded config.json of "
                                            f"{', '.join(uncarried)} (Compare models, URL parameter models): whoever "
                                            "opens it must upload it; the page then shows the other models.")))
    return _link(lean, base), note
