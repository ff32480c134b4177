"""Overview: headline metrics and the charts for the primary device (others overlaid on the roofline), one chart at a
time (the picker's choice, `chart=` in the link) or all of them."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import pandas as pd
import streamlit as st

from dashboard import charts, data, session
from dashboard.charts.gaps import ideal_vs_realistic_figure
from dashboard.charts.tables import kernel_table_view
from dashboard.context import PageContext, kernels_frame, memory_frame, phases_frame
from dashboard.figure_cache import shared_figures, view_key
from dashboard.state import OVERVIEW_CHARTS, STACK_BY
from dashboard.units import count, duration, energy, memory_card
from dashboard.widgets import chart, deck_button, row, table_downloads
from engine import REALISTIC_METHODS

ENERGY_BY_KERNEL, ENERGY_BY_COMPONENT = "Energy by kernel", "Energy by component"
OPEN_ENERGY, OPEN_KERNELS = "open_energy", "open_kernels"   # session keys of the lazy sections' expanders


def is_energy_note(note: str) -> bool:
    """The engine's energy notes (energy unavailable, a level left out, power above TDP): shown with the energy."""
    return note.startswith("energy") or "TDP" in note


def fewest_devices_hint(ctx: PageContext, device: str) -> str:
    """One sentence: the smallest layout that fits, or that none tried does."""
    fit = data.fewest_devices_fit(ctx.devices[device], ctx.model, ctx.scenario)
    if fit is None:
        return "No layout up to TP 8 x PP 64 fits this workload."
    return (f"The fewest devices that fit it are {fit.devices} (TP {fit.tp} x PP {fit.pp}, "
            f"{fit.memory.total_bytes / 1e9:.1f} GB on the most loaded device); set them under Devices and "
            "parallelism.")


def sentence(text: str) -> str:
    """One message as a sentence: a lower-case first word capitalised (names such as 'meta-llama/...' or 'tp=2'
    are left as they are), a full stop at the end."""
    text = text.strip()
    if not text:
        return ""
    first = text.split(maxsplit=1)[0].rstrip(":,;")
    if first.isalpha() and first.islower():
        text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def as_sentences(*parts: str) -> str:
    """Messages joined as sentences: each starts with a capital (see `sentence`) and ends with a full stop, one
    space between them."""
    return " ".join(sentence(part) for part in parts if part.strip())


def beside(name: str, other, attribute: str, show) -> dict:
    """metric() arguments putting `other`'s value beside a headline card, as a neutral delta."""
    value = None if other is None else getattr(other, attribute, None)
    if value is None:
        return {}
    return dict(delta=f"{name}: {show(value)}", delta_color="off", delta_arrow="off")


def headline(result, hint=lambda: "", other=None, method: str = "") -> None:
    """The headline cards of `result` (from `method`); `other`: the estimate shown beside it under each time
    card (the ideal roofline beside a calibrated method, the calibrated realistic beside the roofline)."""
    devices = getattr(result, "devices", 1) or 1
    cards = row()
    name = "ideal roofline" if method != "roofline" else "realistic"
    cards.metric("TTFT", duration(result.ttft_s), help=f"time to first token: the prefill ({method})",
                 **beside(name, other, "ttft_s", duration))
    cards.metric("TPOT", duration(result.tpot_s), help=f"time per output token: one decode step ({method})",
                 **beside(name, other, "tpot_s", duration))
    cards.metric("Output tokens/s", count(result.tokens_per_s), help=f"output tokens per second, all devices ({method})",
                 **beside(name, other, "tokens_per_s", count))
    fit = result.memory
    used, verdict = memory_card(fit.total_bytes, fit.capacity_bytes, fit.fits)
    cards.metric("Memory per device" if devices > 1 else "Memory", used, verdict,
                 delta_color="normal" if fit.fits else "inverse", help=getattr(fit, "message", None) or None)
    if devices > 1:
        per_device = getattr(result, "tokens_per_s_per_device", None)
        cards.metric("Tokens/s per device", count(per_device),
                     help=f"output tokens per second divided by the {devices} devices of the layout")
    touched = getattr(result, "experts_touched", None) or {}
    if touched:
        st.caption("Experts touched per MoE layer per step (they decide the expert weight traffic): " + ", ".join(
            f"{phase} {count:.2f}" for phase, count in touched.items()))
    message = getattr(fit, "message", "")
    if not fit.fits:
        st.error(as_sentences(message or f"{result.model_name} does not fit on {result.hardware_name}", hint()))
    for note in result.notes:
        if not is_energy_note(note):
            st.info(sentence(note))


def number(value: float) -> str:
    """970 -> '970', 1234.5 -> '1,234', 5.123 -> '5.12'."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def energy_headline(result) -> None:
    """Energy per token, tokens per joule and average power against TDP; the engine's energy notes."""
    summary = result.energy
    notes = [note for note in result.notes if is_energy_note(note) and "TDP" not in note]
    if summary is None:
        for note in notes or [f"No energy values for {result.hardware_name} in the specs workbook."]:
            st.info(sentence(note))
        return
    per_token, tokens_per_j = summary["energy_per_token_j"], summary["tokens_per_j"]
    power, tdp = summary["average_power_w"], summary["tdp_w"]
    cards = row()
    cards.metric("Energy per token", energy(per_token))
    cards.metric("Tokens per joule", "—" if tokens_per_j is None else number(tokens_per_j))
    if power is None:
        cards.metric("Average power", "—")
    elif tdp is None:
        cards.metric("Average power", f"{power:,.0f} W")
    else:
        cards.metric("Average power / TDP", f"{power:,.0f} / {tdp:,.0f} W",
                     "exceeds TDP" if summary["exceeds_tdp"] else "within TDP",
                     delta_color="inverse" if summary["exceeds_tdp"] else "normal")
    if summary["exceeds_tdp"]:
        st.warning(f"Average power {power:,.0f} W exceeds the {tdp:,.0f} W TDP of {result.hardware_name}: "
                   "the chip would throttle, so the times above are optimistic.")
    st.caption(f"Per device and request: {energy(summary['energy_per_device_j'])}. Dynamic energy (MACs, FLOPs and "
               "bytes at the workbook's per-operation energies) plus static power x time; tokens are output "
               "tokens (prefill only: input tokens). The kernel bars follow the Stack by and Percent controls of the "
               "Kernel time chart.")
    for note in notes:
        st.info(sentence(note))


def whole_page_while_sharing():
    """The on_change of the chart area's inputs (the chart picker, Stack by, Percent of phase). They rerun the chart
    area alone (its fragment), which writes the address but not the sidebar: while the share box is open its link,
    drawn by the last whole-page run, would keep the old values, so then a change reruns the whole page."""
    return (lambda: st.rerun()) if st.session_state.get(session.OPEN_SHARE) else None


def stack_controls() -> None:
    left, right = st.columns([2, 1])
    left.segmented_control("Stack by", STACK_BY, key="w_stack", on_change=whole_page_while_sharing(),
                           format_func={"name": "kernel", "family": "kernel group"}.get, required=True)
    right.toggle("Percent of phase", key="w_percent", on_change=whole_page_while_sharing())


def gap_method_for(method: str) -> str:
    """The method whose gap breakdown the ideal-vs-realistic chart shows: the selected one when it has one."""
    return method if method in REALISTIC_METHODS else "realistic"


CHART_LABELS = {"roofline": "Roofline", "gap": "Ideal vs realistic", "kernels": "Kernel time",
                "bounds": "Compute vs memory bound", "memory": "Memory fit", "all": "All charts"}
CHARTS = tuple(name for name in OVERVIEW_CHARTS if name != "all")     # the page's charts, in the deck's order


def figures(ctx: PageContext, results: dict, roofline_results: dict,
            names: tuple[str, ...] = CHARTS) -> list[tuple[str, object]]:
    """The page's charts `names` (default all of them, as the deck holds them): roofline (overlaying
    `roofline_results`), the ideal-vs-realistic comparison (the selected method when it is a realistic one,
    realistic-graph included, else realistic; its title says which), kernel time bars, bound shares and memory for
    `results`. Each is built once per view (dashboard.figure_cache) and only when asked for, with the scenario line
    as its subtitle."""
    return [one_figure(ctx, name, results, roofline_results) for name in names]


def one_figure(ctx: PageContext, name: str, results: dict, roofline_results: dict) -> tuple[str, object]:
    """(title, figure) of the chart `name`, cached under what it depends on (the stacking only for kernel bars)."""
    settings: dict = {"results": list(results)}
    if name == "roofline":
        settings["roofline"] = list(roofline_results)
    if name == "kernels":
        settings.update(stack_by=ctx.state.stack_by, percent=ctx.state.percent)
    key = view_key(ctx, chart=f"overview-{name}", **settings)
    return shared_figures(key, ctx.summary(), lambda: [build_figure(ctx, name, results, roofline_results)])[0]


def build_figure(ctx: PageContext, name: str, results: dict, roofline_results: dict) -> tuple[str, object]:
    if name == "roofline":
        links = ctx.scenario.device_count > 1
        ceilings = pd.concat([data.ceilings(ctx.devices[device], links) for device in roofline_results],
                             ignore_index=True)
        return "Roofline", charts.roofline_figure(ceilings, kernels_frame(roofline_results))
    if name == "gap":
        gap_method = gap_method_for(ctx.state.method)
        realistic = results if gap_method == ctx.state.method else ctx.estimates(method=gap_method, names=set(results))
        return f"Ideal roofline vs {gap_method}", ideal_vs_realistic_figure(kernels_frame(realistic), gap_method)
    if name == "kernels":
        return "Kernel time by phase", charts.kernel_time_bars(kernels_frame(results), stack_by=ctx.state.stack_by,
                                                               percent=ctx.state.percent)
    if name == "bounds":
        return "Compute- vs memory-bound time", charts.bound_share_figure(phases_frame(results))
    if name == "memory":
        return "Memory fit", charts.memory_fit_figure(memory_frame(results))
    raise ValueError(f"overview chart {name!r}: expected one of {', '.join(CHARTS)}")


def energy_figures(ctx: PageContext, results: dict) -> list[tuple[str, object]]:
    """Energy by kernel and by component, when any device has energy values (the others are named on the charts);
    built when the energy section is opened or the deck is made, then cached per view like the others."""
    if all(result.energy is None for result in results.values()):
        return []
    key = view_key(ctx, chart="overview-energy", results=list(results), stack_by=ctx.state.stack_by,
                   percent=ctx.state.percent)

    def build():
        kernels = kernels_frame(results)
        return [(ENERGY_BY_KERNEL, charts.energy_by_kernel_figure(kernels, stack_by=ctx.state.stack_by,
                                                                  percent=ctx.state.percent)),
                (ENERGY_BY_COMPONENT, charts.energy_by_component_figure(kernels))]
    return shared_figures(key, ctx.summary(), build)


def show_charts(figs: list, summary: str, key: str, deck: list | Callable[[], list] | None = None) -> None:
    """The deck button (`deck`: its slides, default `figs`; a callable is called when the deck is made), then each
    chart under its title (stacking controls above the kernel bars)."""
    deck_button(figs if deck is None else deck, summary, key=key)
    draw_charts(figs, summary, key)


def draw_charts(figs: list, summary: str, key: str, first: int = 0, names: tuple[str, ...] | None = None) -> None:
    """Each chart under its title; its element key is `key`-name (`names`, stable whichever charts are shown) or
    `key`-index (counted from `first`)."""
    for index, (title, figure) in enumerate(figs, start=first):
        st.subheader(title)
        if title == "Kernel time by phase":
            stack_controls()
        chart(figure, title, key=f"{key}-{names[index - first] if names else index}", scenario=summary)


def chart_picker() -> None:
    st.segmented_control(
        "Chart", OVERVIEW_CHARTS, key="w_ov_chart", format_func=CHART_LABELS.get, required=True,
        on_change=whole_page_while_sharing(),
        help="The overview draws one chart at a time (All charts: every one, slower to draw). The choice is part "
             "of the link (chart=); the deck holds every chart whichever is shown.")


@st.fragment
def chart_area(ctx: PageContext, primary: dict, results: dict, energy_open: bool) -> None:
    """The chart picker, the deck button and the chosen chart (or all of them): only the chart on screen is built
    and sent. A fragment: the picker and the stacking controls rerun this part alone, and it writes the link
    itself; the sidebar's inputs rerun the whole page (and with it this part, with the new context)."""
    session.resend_unreported()       # a fragment's own rerun draws the picker again: its value if the browser lacks it
    state = session.from_widgets(session.view())          # the picker's and stacking controls' values of this run
    session.set_view(state)
    if energy_open and (state.stack_by, state.percent) != (ctx.state.stack_by, ctx.state.percent):
        st.rerun()                      # the open energy section's kernel bars follow the stacking too: the whole page
    ctx = replace(ctx, state=state)
    chart_picker()
    names = CHARTS if state.overview_chart == "all" else (state.overview_chart,)

    def deck() -> list:                 # every chart (and the energy charts while that section is open), on click
        every = figures(ctx, primary, results)
        return every + energy_figures(ctx, primary) if energy_open else every
    deck_button(deck, ctx.summary(), key="overview")
    draw_charts(figures(ctx, primary, results, names), ctx.summary(), "overview", names=names)
    session.write_url(session.from_widgets(state))


def lazy_section(label: str, key: str):
    """An expander whose body runs only while it is open (on_change="rerun"): nothing in it is computed or sent
    on a rerun while it is closed. Returns (container, open)."""
    box = st.expander(label, key=key, on_change="rerun")
    return box, bool(box.open)


def energy_section(ctx: PageContext, result, primary: dict) -> None:
    """Energy and power (opened on demand): the headline, the engine's energy notes, the energy charts."""
    box, opened = lazy_section("Energy and power: energy per token, tokens per joule, power against TDP",
                               OPEN_ENERGY)
    if not opened:
        return
    with box:
        st.subheader("Energy and power")
        energy_headline(result)
        draw_charts(energy_figures(ctx, primary), ctx.summary(), "overview-energy")


def kernel_section(ctx: PageContext, primary: dict) -> None:
    """The kernel table with units and help per column, CSV/XLSX of the exact SI values (opened on demand)."""
    box, opened = lazy_section("Kernels: the kernel table, with CSV and XLSX downloads", OPEN_KERNELS)
    if not opened:
        return
    with box:
        st.subheader("Kernels")
        table = charts.kernel_table_frame(kernels_frame(primary))       # exact SI values: what CSV/XLSX export
        shown, helps = kernel_table_view(table)                          # units per cell, help per column
        st.dataframe(shown, hide_index=True, width="stretch",
                     column_config={column: st.column_config.Column(help=text) for column, text in helps.items()})
        table_downloads(table, "kernels", key="overview", scenario=ctx.summary())


def beside_estimate(ctx: PageContext, device: str):
    """The estimate the headline shows beside the selected one: the ideal roofline beside any other method,
    the calibrated realistic beside the roofline (None when it cannot run)."""
    method = "realistic" if ctx.state.method == "roofline" else "roofline"
    return ctx.estimates(method=method, names={device}).get(device)


@st.fragment(key=session.OVERVIEW_BODY)
def body(ctx: PageContext, sidebar_part: Callable[[], None] | None = None) -> None:
    """The overview below the sidebar as one fragment: an input only the body depends on reruns this part alone, so
    the browser re-renders only the page's own elements. `sidebar_part` draws the Batch input into its place in the
    sidebar (dashboard/sidebar.py, batch_input): an input the fragment drew reruns it directly, one run per change;
    the other body-only inputs call `st.rerun(session.OVERVIEW_BODY)` (a full run aborted at once, then this one).
    On such a rerun the view comes from the widgets (ctx is the last full run's) and the link is written here."""
    from dashboard.resolve import resolve_scenario
    session.resend_unreported()       # a body-only rerun draws the picker again: its value if the browser lacks it
    if sidebar_part is not None:
        sidebar_part()                # first: in place whatever the body draws below
    state = session.from_widgets(session.view())
    if state != ctx.state:
        session.set_view(state)
        scenario, warnings = resolve_scenario(state)
        for warning in warnings:
            st.warning(warning, icon=":material/link_off:")
        ctx = replace(ctx, state=state, scenario=scenario, errors=[])
    render(ctx)
    session.write_url(session.from_widgets(session.view()))


def render(ctx: PageContext) -> None:
    results = ctx.estimates()
    for error in ctx.errors:
        st.error(error)
    if ctx.state.devices[0] not in results:
        return
    primary = {ctx.state.devices[0]: results[ctx.state.devices[0]]}
    st.caption(ctx.summary())
    result = primary[ctx.state.devices[0]]
    headline(result, hint=lambda: fewest_devices_hint(ctx, ctx.state.devices[0]),
             other=beside_estimate(ctx, ctx.state.devices[0]), method=ctx.state.method)
    energy_open = bool(st.session_state.get(OPEN_ENERGY))
    chart_area(ctx, primary, results, energy_open)
    energy_section(ctx, result, primary)
    kernel_section(ctx, primary)
