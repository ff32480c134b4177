"""Explore: any metric over one or two swept fields (line, heatmap), Pareto fronts over the sweep, a
sensitivity tornado and inverse design ("how much bandwidth for TPOT <= 20 ms?").

The base point is the sidebar's view: its model, workload and devices (the primary device, or every
selected device as the colour dimension of lines and Pareto clouds). Every control is in the URL
(dashboard.state: ex.view, ex.x, ex.xv, ex.y, ex.yv, ex.metric, ex.change, ex.ifield, ex.target).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

import pandas as pd
import streamlit as st

from dashboard import charts, data
from dashboard.charts.explore_fields import METRICS, field_title
from dashboard.charts.tables import sweep_table_view
from dashboard.context import PageContext
from dashboard.state import (
    DEVICE_FIELD, EXPLORE_FIELDS, EXPLORE_METRICS, EXPLORE_SCENARIO_FIELDS, EXPLORE_VIEWS, MODEL_FIELD, NO_FIELD,
    ValuesError, check_model_id, field_bounds, parse_values,
)
from dashboard.views.explore_design import render_inverse, render_sensitivity
from dashboard.widgets import chart, deck_button, lazy_table_downloads
from engine import WORKBOOK_FIELD_BY_KEY, Hardware, hardware_base_value, is_integer_field as is_integer

VIEW_TITLES = {"line": "Line", "heatmap": "Heatmap", "pareto": "Pareto fronts", "sensitivity": "Sensitivity",
               "inverse": "Inverse design"}
MAX_POINTS = 40_000
EXPLORE_SCENARIO_FIELDS_SET = set(EXPLORE_SCENARIO_FIELDS)
NAMED_FIELDS = (DEVICE_FIELD, MODEL_FIELD)         # values are names (a categorical axis)
WIDGETS = {"x": ("X values", "ex.xv", "w_ex_xv"), "y": ("Y values", "ex.yv", "w_ex_yv")}


# ----------------------------------------------------------------------------------- base and ranges
def is_integer_field(field: str) -> bool:
    return field in EXPLORE_SCENARIO_FIELDS or is_integer(field)


def base_value(field: str, hardware: Hardware, scenario) -> Optional[float | str]:
    """The sidebar's value of `field` (workbook units for hardware fields); None when the device has none."""
    if field == DEVICE_FIELD:
        return hardware.name
    if field == "context_length":
        return scenario.context_length if scenario.context_length is not None else scenario.decode_context
    if field in EXPLORE_SCENARIO_FIELDS:
        return getattr(scenario, field)
    return hardware_base_value(hardware, field)


def auto_spec(field: str, hardware: Hardware, scenario, model, selected: list[str], models: tuple = ()) -> str:
    """The range a field gets when its values box is empty: around the sidebar's value (the selected devices;
    the Compare models page's models, else the sidebar's model)."""
    if field == DEVICE_FIELD:
        return ",".join(selected)
    if field == MODEL_FIELD:
        return ",".join(models or (model.name,))
    if field == "batch":
        return "log:1:1024:11"
    if field in ("input_length", "output_length", "context_length"):
        top = 2 ** int(math.log2(max(min(model.max_position_embeddings, 131072), 256)))
        return f"log:128:{top}:{int(math.log2(top / 128)) + 1}"
    if field == "tp":
        return "1,2,4,8"
    if field == "compute_scale":
        return "log:0.25:4:9"
    if field in WORKBOOK_FIELD_BY_KEY and WORKBOOK_FIELD_BY_KEY[field].unit == "fraction":
        return "0.1:1:10"
    base = base_value(field, hardware, scenario)
    if not base:
        return "log:1:1000:13"
    return f"log:{base / 4:.6g}:{base * 4:.6g}:21"


def axis_values(field: str, text: str, which: str, auto: str, devices: dict) -> tuple[list, Optional[bool]]:
    """The values of one axis (auto range when `text` is empty) and whether to draw it on a log axis (a
    log: range yes, a start:stop:count range no, a list: None, decided from the values); ValuesError
    naming the widget and URL key."""
    label, url_key, _ = WIDGETS[which]
    spec = text.strip() or auto
    try:
        values, log = parse_values(spec, numeric=field not in NAMED_FIELDS)
    except ValuesError as error:
        raise ValuesError(f"{label} (URL parameter {url_key}): {error}") from None
    if field == MODEL_FIELD:
        try:
            return [check_model_id(name) for name in values], False
        except ValueError as error:
            raise ValuesError(f"{label} (URL parameter {url_key}): {error}") from None
    if field == DEVICE_FIELD:
        unknown = [name for name in values if name not in devices]
        if unknown:
            raise ValuesError(f"{label} (URL parameter {url_key}): unknown device {', '.join(map(repr, unknown))}; "
                              f"known: {', '.join(devices)}")
        return values, False
    check_axis_bounds(field, values, f"{label} (URL parameter {url_key})")
    if is_integer_field(field):
        values = list(dict.fromkeys(int(round(v)) for v in values))
    return values, log if ":" in spec else None


MAX_HARDWARE_VALUE = 1e12      # workbook units (GB/s, TFLOP/s, MiB, ...): beyond any conceivable chip


def check_axis_bounds(field: str, values: list, where: str) -> None:
    """ValuesError naming `where` when a value is outside what the field can take: a workload field's URL
    range (batch 1..1,000,000, lengths up to 10,000,000, tp up to 4096), a hardware field > 0 and finite."""
    bounds = field_bounds(field)
    low, high = bounds if bounds else (0.0, MAX_HARDWARE_VALUE)
    for value in values:
        outside = not math.isfinite(value) or value < low or value > high or (not bounds and value <= 0)
        if outside:
            expected = f"from {low:,} to {high:,}" if bounds else f"above 0 and at most {high:g}"
            raise ValuesError(f"{where}: {value:.6g} is outside what {field} can take ({expected})")


# ------------------------------------------------------------------------------------------ controls
def _reset_values(key: str) -> None:
    st.session_state[key] = ""          # a new field: its old range means something else


def field_picker(label: str, key: str, values_key: str, with_none: bool, help_text: str) -> None:
    options = ([NO_FIELD] if with_none else []) + list(EXPLORE_FIELDS)
    st.selectbox(label, options, key=key, format_func=lambda f: "none" if f == NO_FIELD else field_title(f),
                 on_change=_reset_values, args=(values_key,), help=help_text)


def sweep_controls(ctx: PageContext, view: str, placeholders: dict) -> None:
    x_column, xv_column, y_column, yv_column, metric_column = st.columns([4, 3, 4, 3, 3])
    with x_column:
        field_picker("X field", "w_ex_x", "w_ex_xv", False, "What varies along the x axis (URL ex.x)")
    if view == "heatmap" and st.session_state.get("w_ex_y", NO_FIELD) in (NO_FIELD, st.session_state["w_ex_x"]):
        st.session_state["w_ex_y"] = "matrix_tflops" if st.session_state["w_ex_x"] != "matrix_tflops" \
            else "memory_bandwidth"
        st.session_state["w_ex_yv"] = ""
    with y_column:
        help_text = ("Rows of the heatmap (URL ex.y)" if view == "heatmap" else
                     "Optional second field: one line per value (URL ex.y); none = one line per selected device")
        field_picker("Y field", "w_ex_y", "w_ex_yv", view != "heatmap", help_text)
    xv_column.text_input("X values", key="w_ex_xv", placeholder=placeholders["x"],
                         help="start:stop:count, log:start:stop:count or a comma list (URL ex.xv); empty = "
                              "the range shown, around the sidebar's value")
    if st.session_state["w_ex_y"] != NO_FIELD:
        yv_column.text_input("Y values", key="w_ex_yv", placeholder=placeholders["y"],
                             help="Like X values (URL ex.yv)")
    if view != "pareto":
        metric_column.selectbox("Metric", EXPLORE_METRICS, key="w_ex_metric", format_func=lambda m: METRICS[m].title)


def placeholders_for(ctx: PageContext) -> dict:
    primary = ctx.selected[0]
    return {which: auto_spec(st.session_state.get(key, NO_FIELD), primary, ctx.scenario, ctx.model,
                             list(ctx.state.devices), ctx.state.models) if st.session_state.get(key, NO_FIELD) != NO_FIELD else ""
            for which, key in (("x", "w_ex_x"), ("y", "w_ex_y"))}


# -------------------------------------------------------------------------------------------- sweeps
def build_grid(ctx: PageContext, view: str, x: str, y: Optional[str], placeholders: dict) -> tuple[dict, dict, str]:
    """(grid, {field: log axis?}, series column) for the view; ValuesError for bad ranges."""
    state = ctx.state
    x_values, x_log = axis_values(x, state.explore_x_values, "x", placeholders["x"], ctx.devices)
    logs = {x: x_log}
    grid = {}
    if y:
        y_values, logs[y] = axis_values(y, state.explore_y_values, "y", placeholders["y"], ctx.devices)
        grid[y] = y_values                      # rows first: the heatmap's row-major order
    grid[x] = x_values
    series = y if (y and view == "line") else None
    several = len(state.devices) > 1 and DEVICE_FIELD not in grid
    if several and view == "pareto" or (several and view == "line" and not y):
        grid[DEVICE_FIELD] = list(state.devices)
        series = series or DEVICE_FIELD
    if x == DEVICE_FIELD and view == "line" and not y:
        series = None
    return grid, logs, series


def grid_size(grid: dict) -> int:
    return math.prod(len(values) for values in grid.values())


def run_sweep(ctx: PageContext, grid: dict) -> Optional[pd.DataFrame]:
    if grid_size(grid) > MAX_POINTS:
        st.error(f"{grid_size(grid):,} points: at most {MAX_POINTS:,} (fewer values in X values / Y values)")
        return None
    names = grid.get(DEVICE_FIELD, [ctx.state.devices[0]])
    model = ctx.model
    if MODEL_FIELD in grid:
        model = swept_models(ctx, grid[MODEL_FIELD])
        if model is None:
            return None
    try:
        return data.grid_frame(model, ctx.scenario, grid, ctx.selected[0],
                               {name: ctx.devices[name] for name in names}, ctx.state.method)
    except ValueError as error:
        named = [f"{label} (URL parameter {url_key})" for which, (label, url_key, _) in WIDGETS.items()
                 if _axis_field(ctx.state, which) in str(error)]
        st.error(f"{', '.join(named)}: {error}" if named else str(error))
        return None


def swept_models(ctx: PageContext, names: list[str]) -> Optional[dict]:
    """{id: model} of a `model` axis: the sidebar's and Compare models' models, this session's uploads, else
    the catalog or local cache (never the network); None after an error naming the widget and URL key."""
    known = {ctx.state.model: ctx.model, **ctx.models, **st.session_state.get("uploaded_models", {})}
    models = {}
    for name in names:
        try:
            models[name] = known[name] if name in known else data.offline_model(name)
        except (ValueError, OSError, ImportError) as error:
            where = [f"{label} (URL parameter {url_key})" for which, (label, url_key, _) in WIDGETS.items()
                     if _axis_field(ctx.state, which) == MODEL_FIELD]
            st.error(f"{', '.join(where) or 'Model axis'}: model {name!r} cannot be loaded ({error})")
            return None
    return models


def sidebar_value(ctx: PageContext, field: str):
    """The sidebar's value of a swept field (marked on the charts): the model id for `model`."""
    return ctx.state.model if field == MODEL_FIELD else base_value(field, ctx.selected[0], ctx.scenario)


def _axis_field(state, which: str) -> str:
    field = state.explore_x if which == "x" else state.explore_y
    return field if field != NO_FIELD else "\0"


def sweep_figures(ctx: PageContext, view: str, frame: pd.DataFrame, x: str, y: Optional[str], logs: dict,
                  series: Optional[str]) -> list[tuple[str, object]]:
    metric = ctx.state.explore_metric
    x_base = sidebar_value(ctx, x)
    if view == "line":
        figure = charts.line_figure(frame, x, metric, series, base=x_base if x not in NAMED_FIELDS else None,
                                    log_x=logs[x])
        return [(figure.layout.title.text, figure)]
    if view == "heatmap":
        y_base = sidebar_value(ctx, y)
        figure = charts.heatmap_figure(frame, x, y, metric, base=(x_base, y_base), log_x=logs[x], log_y=logs[y])
        return [(figure.layout.title.text, figure)]
    latency = "tpot_s" if ctx.scenario.phase != "prefill" else "ttft_s"
    figure = charts.pareto_figure(frame, [f for f in (x, y) if f], latency=latency)
    return [(figure.layout.title.text, figure)]


def render_sweep(ctx: PageContext, view: str) -> None:
    placeholders = placeholders_for(ctx)
    sweep_controls(ctx, view, placeholders)
    placeholders = placeholders_for(ctx)      # the heatmap may have picked a Y field
    state = ctx.state
    x = st.session_state["w_ex_x"]
    y = st.session_state["w_ex_y"] if st.session_state["w_ex_y"] != NO_FIELD else None
    if y == x:
        st.error("X field and Y field are the same (URL parameters ex.x and ex.y): pick two different fields")
        return
    state = replace(state, explore_x=x, explore_y=y or NO_FIELD, explore_x_values=st.session_state["w_ex_xv"],
                    explore_y_values=st.session_state.get("w_ex_yv", ""))
    ctx = PageContext(state, ctx.devices, ctx.model, ctx.scenario, models=ctx.models)
    try:
        grid, logs, series = build_grid(ctx, view, x, y, placeholders)
    except ValuesError as error:
        st.error(str(error))
        return
    frame = run_sweep(ctx, grid)
    if frame is None:
        return
    figures = sweep_figures(ctx, view, frame, x, y, logs, series)
    if view == "pareto" and not EXPLORE_SCENARIO_FIELDS_SET & {x, y}:
        st.info("More of every hardware resource is better on both axes, so the fronts collapse onto the "
                "largest values: sweep a workload field (batch, lengths, tp) to trade latency for throughput.")
    problems = frame["error"].fillna("").astype(str)
    unfit = (problems == "") & ~frame["fits"].astype(bool)
    st.caption(f"{len(frame):,} points · {int(unfit.sum()):,} do not fit in memory · "
               f"{int((problems != '').sum()):,} cannot run" + (f" (first: {problems[problems != ''].iloc[0]})"
                                                                 if (problems != '').any() else ""))
    deck_button(figures, ctx.summary(), key="explore")
    for index, (title, figure) in enumerate(figures):
        chart(figure, title, key=f"explore-{view}-{index}", scenario=ctx.summary())
    st.subheader("Sweep table")
    shown, helps = sweep_table_view(frame)            # in the charts' units; the downloads keep SI values
    st.dataframe(shown, hide_index=True, width="stretch", height=300, column_config={
        name: (st.column_config.NumberColumn(help=text, format="localized")
               if pd.api.types.is_float_dtype(shown[name]) else st.column_config.Column(help=text))
        for name, text in helps.items()})
    lazy_table_downloads(frame, f"explore-{view}", key="explore", scenario=ctx.summary())


# ---------------------------------------------------------------------------------------------- page
def render(ctx: PageContext) -> None:
    st.caption(ctx.summary())
    st.segmented_control("View", EXPLORE_VIEWS, key="w_ex_view", format_func=VIEW_TITLES.get, required=True)
    view = st.session_state.get("w_ex_view") or ctx.state.explore_view
    if view == "sensitivity":
        render_sensitivity(ctx)
    elif view == "inverse":
        render_inverse(ctx)
    else:
        render_sweep(ctx, view)
