"""Serving: the model served at a fixed concurrency (engine/serving), and the curve architects compare chips
with: output tokens/s per device against tokens/s per user as the concurrency grows."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import data
from dashboard.charts.serving import headline_table, serving_curve_figure, serving_latency_figure
from dashboard.context import PageContext
from dashboard.state import DEFAULT_DRAFT_MODEL, SERVING_BACKENDS, SERVING_WORKLOADS, SPECULATIVE_KINDS
from dashboard.views import serving_search
from dashboard.widgets import chart, deck_button, table_downloads
from engine import (
    WORKLOAD_LABELS, WORKLOADS, catalog_ids, check_backend_device, doubling_concurrencies, expected_tokens_per_step,
    validation_notes,
)

LARGEST = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
TABLE_COLUMNS = {"device": "device", "concurrency": "clients", "ttft_s": "TTFT mean (ms)", "ttft_p90_s": "TTFT p90 (ms)",
                 "tpot_s": "TPOT mean (ms)", "tpot_p90_s": "TPOT p90 (ms)", "e2e_s": "request latency (s)",
                 "tokens_per_s": "output tokens/s", "tokens_per_s_per_device": "output tokens/s per device",
                 "tokens_per_s_per_user": "output tokens/s per user", "error": "why it cannot run"}


def controls() -> None:
    first, second, third, fourth = st.columns(4)
    first.number_input("Concurrency (clients)", min_value=1, max_value=4096, step=1, key="w_sv_c",
                       help="Clients in a closed loop: each sends its next request as soon as the last one finished.")
    options = list(LARGEST) + ([st.session_state["w_sv_cmax"]] if st.session_state.get("w_sv_cmax") not in LARGEST
                               else [])
    second.selectbox("Curve up to (clients)", options, key="w_sv_cmax", help="The curve doubles the concurrency "
                     "from 1 up to this value.")
    third.number_input("Tokens per iteration", min_value=1, max_value=1_000_000, step=512, key="w_sv_budget",
                       help="The scheduler's token budget (vLLM max_num_batched_tokens, TensorRT-LLM max_num_tokens): "
                            "prompt chunks and decode tokens of one forward pass.")
    fourth.selectbox("Serving engine", SERVING_BACKENDS, key="w_sv_backend",
                     help="Whose fitted host-side times apply (per iteration and per request; realistic methods "
                          "only): engine/serving/backends.py.")


def workload_controls(ctx: PageContext) -> None:
    first, second, third, fourth = st.columns(4)
    first.selectbox("Workload", SERVING_WORKLOADS, key="w_sv_wl",
                    format_func=lambda name: WORKLOAD_LABELS.get(name, "Custom: the sidebar's input/output tokens"),
                    help="Request lengths of a typical workload, or custom lengths (the sidebar's Input and Output "
                         "tokens).")
    isl, osl = request_lengths(ctx)
    second.metric("Tokens per request", f"{isl:,} in / {osl:,} out",
                  help="From the preset" if ctx.state.serving_workload != "custom" else "From the sidebar")
    third.selectbox("Speculative decoding", SPECULATIVE_KINDS, key="w_sv_sd",
                    format_func={"none": "None", "draft": "Draft model", "mtp": "MTP layers"}.get,
                    help="A draft model (or the target's multi-token-prediction layers) proposes k tokens per step; "
                         "the target verifies them in one pass (engine/serving/speculative.py).")
    if ctx.state.serving_speculative == "none":
        return
    if ctx.state.serving_speculative == "draft":
        ids = list(catalog_ids())
        if st.session_state.get("w_sv_dm") not in ids:
            st.warning(f"Draft model {st.session_state.get('w_sv_dm')!r} is not in the bundled catalog (URL parameter "
                       f"sv.dm); using {DEFAULT_DRAFT_MODEL}.")
            st.session_state["w_sv_dm"] = DEFAULT_DRAFT_MODEL
        fourth.selectbox("Draft model", ids, key="w_sv_dm", help="The smaller model that drafts the tokens.")
    left, right, note = st.columns([1, 1, 2])
    left.number_input("Drafted tokens per step (k)", min_value=1, max_value=16, step=1, key="w_sv_k")
    right.number_input("Acceptance rate (a)", min_value=0.0, max_value=1.0, step=0.05, key="w_sv_a",
                       help="Probability each drafted token is accepted.")
    note.caption(f"{expected_tokens_per_step(ctx.state.serving_draft_tokens, ctx.state.serving_acceptance_rate):.3g} "
                 "tokens per step on average: (1 - a^(k+1)) / (1 - a). Every step pays the draft's k passes and a "
                 "verification pass of k + 1 tokens per request.")


def request_lengths(ctx: PageContext) -> tuple[int, int]:
    """(input, output) tokens: the workload preset's, or the sidebar's for custom."""
    if ctx.state.serving_workload in WORKLOADS:
        return WORKLOADS[ctx.state.serving_workload]
    return ctx.scenario.input_length, ctx.scenario.output_length


def speculative_field(ctx: PageContext) -> dict | None:
    """The `speculative` serving option as plain values (cached by JSON), or None."""
    state = ctx.state
    if state.serving_speculative == "none":
        return None
    common = dict(draft_tokens=int(state.serving_draft_tokens), acceptance_rate=float(state.serving_acceptance_rate))
    if state.serving_speculative == "mtp":
        return dict(mtp_layers=int(getattr(ctx.model, "multi_token_prediction_layers", 0) or 1), **common)
    return dict(draft_model=state.serving_draft_model, **common)


def serving_fields(ctx: PageContext) -> dict:
    s, state = ctx.scenario, ctx.state
    isl, osl = request_lengths(ctx)
    fields = dict(input_length=isl, output_length=osl, token_budget=state.serving_token_budget,
                  backend=state.serving_backend, weight_dtype=s.weight_dtype, activation_dtype=s.activation_dtype,
                  kv_dtype=s.kv_dtype, tp=s.tp, pp=s.pp, dp=s.dp, ep=s.ep,
                  overlap_communication=s.overlap_communication)
    speculative = speculative_field(ctx)
    if speculative is not None:
        fields["speculative"] = speculative
    return fields


def runnable_devices(ctx: PageContext) -> list:
    """The selected devices the chosen serving engine runs on; each other one is named in a warning."""
    kept = []
    for hardware in ctx.selected:
        try:
            check_backend_device(ctx.state.serving_backend, hardware)
            kept.append(hardware)
        except ValueError as error:
            st.warning(f"{hardware.name} is left out: {error} (the Serving engine control, URL parameter sv.backend).")
    return kept


def headline(curve: pd.DataFrame, devices: list[str], concurrency: int) -> None:
    """The metrics at the chosen concurrency: one device's as numbers, several devices' as a table."""
    if len(devices) > 1:
        st.dataframe(headline_table(curve, concurrency), hide_index=True, width="stretch")
        return
    device = devices[0]
    row = curve[(curve["device"] == device) & (curve["concurrency"] == concurrency)].iloc[0]
    if row["error"]:
        st.error(f"{device} at {concurrency} clients: {row['error']}")
        return
    top, bottom = st.columns(3), st.columns(3)
    top[0].metric("TTFT mean", f"{row['ttft_s'] * 1e3:,.1f} ms")
    top[1].metric("TTFT p90", f"{row['ttft_p90_s'] * 1e3:,.1f} ms")
    top[2].metric("Request latency", f"{row['e2e_s']:,.2f} s")
    bottom[0].metric("TPOT mean", f"{row['tpot_s'] * 1e3:.2f} ms")
    bottom[1].metric("Tokens/s per device", f"{row['tokens_per_s_per_device']:,.0f}")
    bottom[2].metric("Tokens/s per user", f"{row['tokens_per_s_per_user']:,.1f}")


def render(ctx: PageContext) -> None:
    state = ctx.state
    if state.method == "seed":
        st.error("The seed method has no serving schedule: pick roofline, hierarchical, realistic or realistic-graph "
                 "in the sidebar.")
        return
    controls()
    workload_controls(ctx)
    isl, osl = request_lengths(ctx)
    st.caption(f"{ctx.model.name}: {state.serving_concurrency} clients in a closed loop, {isl} "
               f"in / {osl} out per request, {state.serving_token_budget} tokens per iteration, "
               f"{state.serving_backend} host-side times, method {state.method}, TP {ctx.scenario.tp} x PP "
               f"{ctx.scenario.pp} x DP {ctx.scenario.dp} (the sidebar's batch and phase do not apply here)")
    concurrencies = doubling_concurrencies(state.serving_max_concurrency, state.serving_concurrency)
    fields = serving_fields(ctx)
    runnable = runnable_devices(ctx)
    if not runnable:
        return
    curve = pd.concat([data.serving_curve_frame(hw, ctx.model, concurrencies, state.method, **fields)
                       for hw in runnable], ignore_index=True)
    headline(curve, [hw.name for hw in runnable], state.serving_concurrency)
    for hardware in ctx.selected:
        for note in validation_notes(hardware, state.method, ctx.scenario):
            st.info(note)
    failed = curve[curve["error"] != ""]
    for device, rows in failed.groupby("device", sort=False):
        st.warning(f"{device}: {len(rows)} concurrency point(s) cannot run ({', '.join(map(str, rows['concurrency']))} "
                   f"clients): {rows['error'].iloc[0]}")
    curve_figure = serving_curve_figure(curve, state.serving_concurrency)
    latency_figure = serving_latency_figure(curve)
    chart(curve_figure, "serving throughput per device vs per user", key="serving-curve", scenario=ctx.summary())
    chart(latency_figure, "serving latencies", key="serving-latency", scenario=ctx.summary())
    table = curve[list(TABLE_COLUMNS)].copy()
    for column in ("ttft_s", "ttft_p90_s", "tpot_s", "tpot_p90_s"):
        table[column] = table[column] * 1e3
    st.dataframe(table.rename(columns=TABLE_COLUMNS), hide_index=True, width="stretch")
    table_downloads(curve, "serving-curve", key="serving", scenario=ctx.summary())
    deck_button([("Serving: throughput per device vs per user", curve_figure),
                 ("Serving latencies", latency_figure)], ctx.summary(), key="serving")
    st.divider()
    st.toggle("Design space: search layouts, concurrency and the SLA", key="w_sv_ds",
              help="Every parallel layout of N devices at every concurrency of the curve and two token budgets, for "
                   "each selected device: the Pareto front, the best configuration within the SLA and the fewest "
                   "devices for a request rate (engine.serving_search).")
    if state.serving_design_space:
        serving_search.render(ctx, fields, concurrencies)
