"""Explore's design views: the sensitivity tornado (each hardware field -X% and +X%) and inverse design
(the least value of a field that meets a target, checked just below, with the answer on the roofline)."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from dashboard import charts, data
from dashboard.charts.explore_fields import METRICS, field_label, field_title, field_unit_of
from dashboard.context import PageContext
from dashboard.state import INVERSE_FIELDS, INVERSE_METRICS
from dashboard.widgets import chart, deck_button, lazy_table_downloads
from dashboard.units import significant
from engine import Hardware, metrics_from_estimate, ScenarioError

SENSITIVITY_METRICS = ("tpot_s", "ttft_s", "tokens_per_s")


# --------------------------------------------------------------------------------------- sensitivity
def render_sensitivity(ctx: PageContext) -> None:
    st.number_input("Change each field by ± (%)", min_value=1, max_value=90, step=5, key="w_ex_change",
                    help="Each field is lowered and raised by this much, one at a time (URL ex.change)")
    primary = ctx.selected[0]
    change = st.session_state["w_ex_change"] / 100
    try:
        frame = data.sensitivity_frame(primary, ctx.model, ctx.scenario, change, SENSITIVITY_METRICS, ctx.state.method)
    except (ScenarioError, ValueError) as error:
        st.error(f"{primary.name}: {error}")
        return
    shown = [m for m in SENSITIVITY_METRICS if m in set(frame["metric"])]   # the phase may not define one
    figure = charts.tornado_figure(frame, metrics=shown, change=change)
    title = f"Sensitivity on {primary.name}"
    deck_button([(title, figure)], ctx.summary(), key="explore")
    chart(figure, title, key="explore-sensitivity", scenario=ctx.summary())
    st.dataframe(frame, hide_index=True, width="stretch")
    lazy_table_downloads(frame, "sensitivity", key="explore-sensitivity", scenario=ctx.summary())


# ------------------------------------------------------------------------------------------- inverse
def round_up(value: float, digits: int = 4) -> float:
    """`value` rounded up to `digits` significant digits (a least value stays on the good side)."""
    if value <= 0 or not math.isfinite(value):
        return value
    step = 10 ** (math.floor(math.log10(value)) - digits + 1)
    return math.ceil(value / step - 1e-9) * step


def number(value: float, digits: int = 4) -> str:
    """`digits` significant digits with thousands separators, never an exponent: 6716.0 -> '6,716',
    0.0022599 -> '0.00226', 12345678 -> '12,345,678'."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return significant(float(value), digits)


def base_metrics(ctx: PageContext, hardware: Hardware) -> dict:
    result = data.estimate(hardware, ctx.model, ctx.scenario, ctx.state.method)
    return metrics_from_estimate(result, hardware)


def render_inverse(ctx: PageContext) -> None:
    field_column, metric_column, target_column = st.columns(3)
    field_column.selectbox("Solve for", INVERSE_FIELDS, key="w_ex_ifield", format_func=field_title,
                           help="The field whose least value meets the target (URL ex.ifield)")
    if st.session_state.get("w_ex_metric") not in INVERSE_METRICS:
        st.session_state["w_ex_metric"] = "tpot_s"      # the inverse search handles latencies and throughputs
    metric_column.selectbox("Metric", INVERSE_METRICS, key="w_ex_metric", format_func=lambda m: METRICS[m].title)
    metric, field = st.session_state["w_ex_metric"], st.session_state["w_ex_ifield"]
    info = METRICS[metric]
    primary = ctx.selected[0]
    try:
        base = base_metrics(ctx, primary)[metric]
    except (ScenarioError, ValueError) as error:
        st.error(f"{primary.name}: {error}")
        return
    factor = 0.5 if info.better == "lower" else 2.0           # automatic target: twice as good as the base point
    automatic = float(f"{base * info.scale * factor:.3g}") if math.isfinite(base) else None
    comparison = "≤" if info.better == "lower" else "≥"
    target_column.number_input(f"Target {info.label} {comparison} ({info.unit})", min_value=0.0, key="w_ex_target",
                               value=None, placeholder=f"auto: {automatic:g}" if automatic else "",
                               format="%g", help="Empty = twice as good as the sidebar's point (URL ex.target)")
    target = st.session_state.get("w_ex_target") or automatic
    if not target:
        st.error(f"{info.label} is not available for this workload, so there is no target to meet")
        return
    try:
        result = data.least_value(primary, ctx.model, ctx.scenario, field, metric, target / info.scale,
                                  ctx.state.method)
    except (ScenarioError, ValueError) as error:
        st.error(f"Inverse design: {error}")
        return
    show_inverse(ctx, primary, result, info, target, base)


def show_inverse(ctx: PageContext, primary: Hardware, result, info, target: float, base: float) -> None:
    unit = result.unit or field_unit_of(result.field)
    answer = getattr(result, "value", None)
    (st.success if result.reachable else st.warning)(result.message)
    if not result.reachable or answer is None:
        return
    shown = int(answer) if result.field == "tp" else round_up(answer)
    value, there, below = st.columns(3)
    value.metric(f"Least {field_label(result.field).lower()}", f"{number(shown, 6)} {unit}".strip(),
                 f"{number(result.base_value, 6)} {unit} on {primary.name}".strip(), delta_color="off",
                 delta_arrow="off")
    there.metric(f"{info.label} there", f"{number(result.metric_at_value * info.scale, 5)} {info.unit}",
                 f"target {number(target, 5)} {info.unit}", delta_color="off", delta_arrow="off")
    if result.value_below is not None and result.metric_below is not None:
        below.metric(f"Just below ({number(result.value_below, 6)} {unit})".strip(),
                     f"{number(result.metric_below * info.scale, 5)} {info.unit}", "misses the target",
                     delta_color="off", delta_arrow="off")
    rows = [("sidebar's device", result.base_value, base), ("least value", result.value, result.metric_at_value),
            ("just below", result.value_below, result.metric_below)]
    table = pd.DataFrame([{"point": point, f"{result.field} ({unit})": v,
                           f"{info.label} ({info.unit})": None if m is None else m * info.scale}
                          for point, v, m in rows])
    st.dataframe(table, hide_index=True)
    st.caption(f"{result.evaluations} evaluations in {result.seconds * 1e3:.0f} ms"
               + ("" if result.fits else " · the answer does not fit in device memory"))
    figures = inverse_figures(ctx, primary, result, unit, shown)
    deck_button(figures, ctx.summary(), key="explore")
    for index, (title, figure) in enumerate(figures):
        chart(figure, title, key=f"explore-inverse-{index}", scenario=ctx.summary())


def inverse_figures(ctx: PageContext, primary: Hardware, result, unit: str, shown) -> list[tuple[str, object]]:
    """The search's check (metric at every value tried, target, answer) and, for hardware answers, the
    roofline of the sidebar's device with the device at the answer overlaid."""
    figures = []
    if getattr(result, "tried", None) is not None and len(result.tried):
        search = charts.inverse_search_figure(result.tried, result.field, result.metric, result.target, result.value,
                                              base_value=result.base_value, unit=unit)
        figures.append((search.layout.title.text, search))
    hardware = result.hardware_at_value
    if hardware is None:
        return figures
    name = f"answer: {number(shown, 6)} {unit}".strip()
    answer = hardware.model_copy(update={"name": name})
    scenario = result.scenario_at_value or ctx.scenario
    links = ctx.scenario.device_count > 1
    ceilings = pd.concat([data.ceilings(primary, links), data.ceilings(answer, links)], ignore_index=True)
    try:
        kernels = pd.concat([
            data.estimate(primary, ctx.model, ctx.scenario, ctx.state.method).kernels.assign(device=primary.name),
            data.estimate(answer, ctx.model, scenario, ctx.state.method).kernels.assign(device=name)],
            ignore_index=True)
    except (ScenarioError, ValueError) as error:
        st.error(str(error))
        return figures
    title = f"Roofline: {primary.name} and the device at the answer"
    return figures + [(title, charts.roofline_figure(ceilings, kernels, title=title))]
