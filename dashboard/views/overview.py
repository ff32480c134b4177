"""Overview: headline metrics and every chart for the primary device (others overlaid on the roofline)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import charts, data
from dashboard.charts.gaps import ideal_vs_realistic_figure
from dashboard.context import PageContext, kernels_frame, memory_frame, phases_frame
from dashboard.state import STACK_BY
from dashboard.widgets import chart, deck_button, table_downloads


def fewest_devices_hint(ctx: PageContext, device: str) -> str:
    fit = data.fewest_devices_fit(ctx.devices[device], ctx.model, ctx.scenario)
    if fit is None:
        return " No layout up to TP 8 x PP 64 fits this workload."
    return (f" Fewest devices that fit: {fit.devices} (TP {fit.tp} x PP {fit.pp}, "
            f"{fit.memory.total_bytes / 1e9:.1f} GB on the most loaded device) — set them under Devices and parallelism.")


def headline(result, hint=lambda: "") -> None:
    devices = getattr(result, "devices", 1) or 1
    columns = st.columns(5 if devices > 1 else 4)
    ttft, tpot, rate, memory = columns[:4]
    ttft.metric("TTFT", "—" if result.ttft_s is None else f"{result.ttft_s * 1e3:.2f} ms")
    tpot.metric("TPOT", "—" if result.tpot_s is None else f"{result.tpot_s * 1e3:.2f} ms")
    rate.metric("Output tokens/s", "—" if result.tokens_per_s is None else f"{result.tokens_per_s:,.0f}")
    fit = result.memory
    memory.metric("Memory per device" if devices > 1 else "Memory",
                  f"{fit.total_bytes / 1e9:.1f} / {fit.capacity_bytes / 1e9:.0f} GB",
                  "fits" if fit.fits else "does not fit", delta_color="normal" if fit.fits else "inverse")
    if devices > 1:
        per_device = getattr(result, "tokens_per_s_per_device", None)
        columns[4].metric(f"Tokens/s per device ({devices} devices)", "—" if per_device is None else f"{per_device:,.0f}")
    touched = getattr(result, "experts_touched", None) or {}
    if touched:
        st.caption("Experts touched per MoE layer per step (they decide the expert weight traffic): " + ", ".join(
            f"{phase} {count:.2f}" for phase, count in touched.items()))
    message = getattr(fit, "message", "")
    if not fit.fits:
        st.error((message or f"{result.model_name} does not fit on {result.hardware_name}") + hint())
    for note in result.notes:
        st.info(note)


def stack_controls() -> None:
    left, right = st.columns([2, 1])
    left.segmented_control("Stack by", STACK_BY, key="w_stack",
                           format_func={"name": "kernel", "family": "kernel group"}.get, required=True)
    right.toggle("Percent of phase", key="w_percent")


def figures(ctx: PageContext, results: dict, roofline_results: dict) -> list[tuple[str, object]]:
    """The page's charts: bars, bound shares and memory for `results`; roofline overlays `roofline_results`;
    the ideal-vs-realistic comparison always uses the realistic method, whatever method is selected."""
    kernels = kernels_frame(results)
    links = ctx.scenario.device_count > 1
    ceilings = pd.concat([data.ceilings(ctx.devices[name], links) for name in roofline_results], ignore_index=True)
    realistic = ctx.estimates(method="realistic", names=set(results))
    return [
        ("Roofline", charts.roofline_figure(ceilings, kernels_frame(roofline_results))),
        ("Ideal roofline vs realistic", ideal_vs_realistic_figure(kernels_frame(realistic))),
        ("Kernel time by phase", charts.kernel_time_bars(kernels, stack_by=ctx.state.stack_by, percent=ctx.state.percent)),
        ("Compute- vs memory-bound time", charts.bound_share_figure(phases_frame(results))),
        ("Memory fit", charts.memory_fit_figure(memory_frame(results))),
    ]


def show_charts(figs: list, summary: str, key: str) -> None:
    """The deck button, then each chart under its title (stacking controls above the kernel bars)."""
    deck_button(figs, summary, key=key)
    for index, (title, figure) in enumerate(figs):
        st.subheader(title)
        if title == "Kernel time by phase":
            stack_controls()
        chart(figure, title, key=f"{key}-{index}")


def render(ctx: PageContext) -> None:
    results = ctx.estimates()
    for error in ctx.errors:
        st.error(error)
    if ctx.state.devices[0] not in results:
        return
    primary = {ctx.state.devices[0]: results[ctx.state.devices[0]]}
    st.caption(ctx.summary())
    headline(primary[ctx.state.devices[0]], hint=lambda: fewest_devices_hint(ctx, ctx.state.devices[0]))
    show_charts(figures(ctx, primary, results), ctx.summary(), key="overview")
    st.subheader("Kernels")
    table = charts.kernel_table_frame(kernels_frame(primary))
    st.dataframe(table, hide_index=True, width="stretch")
    table_downloads(table, "kernels", key="overview")
