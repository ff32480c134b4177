"""The Serving page's design-space section (URL sv.ds=1): engine.serving.serving_search over the parallel
layouts of sv.n devices, the concurrencies of the curve and two token budgets, under an SLA (sv.ttft, sv.tpot
in ms), for the selected devices, optionally disaggregated (sv.dis, prefill on sv.pd, decode on sv.dd), with
the fewest devices for sv.rps requests/s. Charts: dashboard/charts/serving_search.py."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dashboard.charts.serving_search import mode_comparison_figure, pareto_figure, recommendation_sentence
from dashboard.context import PageContext
from dashboard.data import model_key
from dashboard.widgets import chart, deck_button, table_downloads
from engine import Hardware

SEARCH_TOKEN_BUDGETS = (2048, 8192)
MISSING = ("The design-space search (engine.serving.search, engine/serving/sla.py) is not in this installation "
           "yet, so this section cannot run: {error}")
FRONT_COLUMNS = ("device", "mode", "layout", "concurrency", "token_budget", "devices", "ttft_s", "tpot_s", "e2e_s",
                 "tokens_per_s", "tokens_per_s_per_device", "tokens_per_s_per_user", "meets_sla", "sla_failure")


def search_function():
    """(serving_search, SLA) from the engine, or raise ImportError naming what is missing (tests swap it)."""
    from engine import serving_search
    from engine import SLA
    return serving_search, SLA


@st.cache_data(show_spinner="Searching the serving design space ...", max_entries=16)
def _search(hardware_json: str, model_json: str, prefill_json: str, decode_json: str, arguments_json: str,
            sla_json: str, _model):
    serving_search, SLA = search_function()
    devices = {name: Hardware.model_validate_json(text) for name, text in json.loads(hardware_json).items()}
    arguments = json.loads(arguments_json)
    sla = SLA.model_validate_json(sla_json) if sla_json else None
    prefill = Hardware.model_validate_json(prefill_json) if prefill_json else None
    decode = Hardware.model_validate_json(decode_json) if decode_json else None
    return serving_search(devices, _model, sla=sla, prefill_hardware=prefill, decode_hardware=decode, **arguments)


def controls(ctx: PageContext) -> None:
    first, second, third, fourth = st.columns(4)
    first.number_input("TTFT limit (ms)", min_value=0.001, max_value=1e7, value=None, key="w_sv_ttft",
                       placeholder="no limit", help="SLA: the most mean time to first token. Empty: no limit.")
    second.number_input("TPOT limit (ms)", min_value=0.001, max_value=1e7, value=None, key="w_sv_tpot",
                        placeholder="no limit", help="SLA: the most mean time per output token (the Pareto chart's "
                                                     "vertical line at 1000 / TPOT tokens/s per user). Empty: no limit.")
    third.number_input("Devices", min_value=1, max_value=4096, step=1, key="w_sv_n",
                       help="Devices each configuration uses: every tp x pp x dp (x ep) layout of this many.")
    fourth.number_input("Requests/s to serve", min_value=0.001, max_value=1e9, value=None, key="w_sv_rps",
                        placeholder="no target", help="With a target: the fewest devices (and the layout) that serve "
                                                      "it within the SLA, re-checked by simulation.")
    left, middle, right = st.columns([1, 2, 2])
    left.checkbox("Also disaggregated", key="w_sv_dis", help="A prefill pool and a decode pool (possibly different "
                  "devices), the KV cache sent between them, compared with aggregated serving on as many devices.")
    if st.session_state.get("w_sv_dis"):
        names = [""] + list(ctx.devices)
        for column, key, label in ((middle, "w_sv_pd", "Prefill device"), (right, "w_sv_dd", "Decode device")):
            if st.session_state.get(key) not in names:
                st.warning(f"{label} {st.session_state.get(key)!r} is not a known device; using the primary device.")
                st.session_state[key] = ""
            column.selectbox(label, names, key=key, format_func=lambda n: n or f"{ctx.state.devices[0]} (primary)")


def sla_limits(ctx: PageContext) -> dict:
    state = ctx.state
    return {"ttft_max_s": state.serving_ttft_max_ms / 1e3 if state.serving_ttft_max_ms else None,
            "tpot_max_s": state.serving_tpot_max_ms / 1e3 if state.serving_tpot_max_ms else None}


def run_search(ctx: PageContext, fields: dict, concurrencies: list[int]):
    """The SearchResult for the page's state, or None (with the reason shown) when it cannot run."""
    state = ctx.state
    try:
        _, SLA = search_function()
    except ImportError as error:
        st.warning(MISSING.format(error=error))
        return None
    limits = sla_limits(ctx)
    sla = SLA(**limits) if any(v is not None for v in limits.values()) else None
    searched = {k: v for k, v in fields.items() if k not in ("tp", "pp", "dp", "ep", "token_budget")}
    arguments = dict(devices=int(state.serving_devices), method=state.method, concurrencies=list(concurrencies),
                     token_budgets=list(SEARCH_TOKEN_BUDGETS), requests_per_s=state.serving_requests_per_s,
                     disaggregated=bool(state.serving_disaggregated), **searched)
    hardware = {hw.name: hw.model_dump_json() for hw in ctx.selected}
    pools = ["", ""]
    if state.serving_disaggregated:
        pools = [ctx.devices[name].model_dump_json() if name in ctx.devices else ""
                 for name in (state.serving_prefill_device, state.serving_decode_device)]
    try:
        return _search(json.dumps(hardware), model_key(ctx.model), pools[0], pools[1],
                       json.dumps(arguments, sort_keys=True), sla.model_dump_json() if sla else "", ctx.model)
    except ImportError as error:
        st.warning(MISSING.format(error=error))
    except NotImplementedError as error:
        st.warning(f"Disaggregated serving is not available in this installation: {error}")
    except (ValueError, TypeError) as error:
        st.error(f"The design-space search cannot run: {str(error).splitlines()[0]}")
    return None


def render(ctx: PageContext, fields: dict, concurrencies: list[int]) -> None:
    st.subheader("Design space: layouts, concurrency and the SLA")
    controls(ctx)
    result = run_search(ctx, fields, concurrencies)
    if result is None:
        return
    configs, best = result.configs, result.best
    sentence = recommendation_sentence(result.recommendation, best)
    if sentence:
        st.info(sentence)
    limits = sla_limits(ctx)
    st.caption(f"{len(configs):,} configurations on {', '.join(hw.name for hw in ctx.selected)} with "
               f"{ctx.state.serving_devices} devices each: {int(configs['fits'].sum()):,} run, "
               f"{int(configs['meets_sla'].sum()):,} within the SLA.")
    front_figure = pareto_figure(configs, best, **limits)
    chart(front_figure, "serving design space pareto front", key="serving-front", scenario=ctx.summary())
    slides = [("Serving design space: Pareto front per device", front_figure)]
    if (configs["mode"] == "disaggregated").any():
        comparison = mode_comparison_figure(best)
        chart(comparison, "aggregated vs disaggregated serving", key="serving-modes", scenario=ctx.summary())
        slides.append(("Aggregated against disaggregated serving", comparison))
    front = result.front
    columns = [c for c in FRONT_COLUMNS if c in front.columns]
    st.dataframe(front[columns], hide_index=True, width="stretch")
    table_downloads(front, "serving-front", key="serving-front", scenario=ctx.summary())
    excluded = configs[~configs["fits"].astype(bool)]
    if len(excluded):
        with st.expander(f"{excluded['layout'].nunique()} layout(s) that do not run, and why"):
            st.dataframe(pd.DataFrame(excluded[["device", "layout", "reason"]].drop_duplicates()), hide_index=True,
                         width="stretch")
    deck_button(slides, ctx.summary(), key="serving-search")
