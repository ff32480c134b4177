"""Compare models: the same workload for several models on one device (the primary), side by side.

The models are in the URL (`models=`, comma-separated ids; dashboard/state.py); empty, the page starts
from the sidebar's model. Each model's estimate is the cached engine.estimate the other pages use, and its
metrics are engine.explore.grid.metrics_from_estimate's SI columns (exported as they are; shown with units).
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from dashboard import charts, data
from dashboard.charts.model_compare import model_comparison_figure
from dashboard.context import PageContext, kernels_frame, memory_frame, phases_frame, scenario_line
from dashboard.views.overview import show_charts
from dashboard.widgets import table_downloads
from engine import metrics_from_estimate, ScenarioError

MAX_MODELS = 8
EXPORT_COLUMNS = ("model", "ttft_s", "tpot_s", "e2e_s", "tokens_per_s", "tokens_per_s_per_device",
                  "weights_per_device_bytes", "memory_per_device_bytes", "memory_capacity_bytes", "fits",
                  "largest_batch_that_fits", "devices")
SHOWN = {   # SI column -> (on-screen title, scale, hover help)
    "ttft_s": ("TTFT (ms)", 1e3, "Time to first token: the prefill pass"),
    "tpot_s": ("TPOT (ms)", 1e3, "Time per output token: one decode step"),
    "e2e_s": ("End-to-end (ms)", 1e3, "The whole request: prefill and every decode step"),
    "tokens_per_s": ("Output tokens/s", 1.0, "Output tokens per second over all data-parallel replicas"),
    "weights_per_device_bytes": ("Weights per device (GB)", 1e-9,
                                 "The model's weights on the most loaded device under the TP/PP/EP layout"),
    "memory_per_device_bytes": ("Memory per device (GB)", 1e-9,
                                "Weights + KV cache + peak activations + workspace on the most loaded device"),
    "memory_capacity_bytes": ("Capacity (GB)", 1e-9, "The device's memory"),
}


def model_options(current: list[str]) -> list[str]:
    """Catalog ids (grouped by family, as in the sidebar), this session's uploads, and whatever is selected."""
    from dashboard.sidebar import catalog_families
    families = catalog_families()
    options = sorted(families, key=lambda m: (families[m], m.lower()))
    options += [m for m in st.session_state.get("uploaded_models", {}) if m not in options]
    return options + [m for m in current if m not in options]


def load_models(ctx: PageContext, names: list[str]) -> dict:
    """{id: model}: the sidebar's model, the ones resolved from the URL, this session's uploads, else the
    catalog or local cache (never the network); one that cannot be loaded is named in an error and left out."""
    known = {ctx.state.model: ctx.model, **ctx.models, **st.session_state.get("uploaded_models", {})}
    models = {}
    for name in names:
        try:
            models[name] = known[name] if name in known else data.offline_model(name)
        except (ValueError, OSError, ImportError) as error:
            st.error(f"Models: {name} cannot be loaded ({error})")
    return models


def metrics_table(results: dict, hardware) -> pd.DataFrame:
    """One row per model: engine.explore.grid.metrics_from_estimate's SI columns plus the largest batch that fits."""
    rows = [{"model": name, **metrics_from_estimate(result, hardware),
             "largest_batch_that_fits": result.memory.max_batch} for name, result in results.items()]
    return pd.DataFrame(rows, columns=list(EXPORT_COLUMNS)) if rows else pd.DataFrame(columns=list(EXPORT_COLUMNS))


def shown_table(metrics: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """The table on screen (display units) and its column configs (units and thousands separators, help)."""
    frame = pd.DataFrame({"model": metrics["model"]})
    config = {"model": st.column_config.TextColumn("Model")}
    for column, (title, scale, help_text) in SHOWN.items():
        if pd.to_numeric(metrics[column], errors="coerce").notna().any():
            frame[title] = pd.to_numeric(metrics[column], errors="coerce") * scale
            config[title] = st.column_config.NumberColumn(title, format="localized", help=help_text)
    frame["Fits"] = metrics["fits"].astype(bool)
    frame["Largest batch that fits"] = metrics["largest_batch_that_fits"]
    config["Largest batch that fits"] = st.column_config.NumberColumn(
        help="The largest batch whose weights, KV cache and activations fit the device's memory")
    return frame, config


def render(ctx: PageContext) -> None:
    hardware = ctx.selected[0]
    picked = st.session_state.get("w_models") or [ctx.state.model]      # none yet: start from the sidebar's
    if len(picked) > MAX_MODELS:
        st.warning(f"Models (URL parameter models): showing the first {MAX_MODELS} of {len(picked)}; at most "
                   f"{MAX_MODELS} fit side by side")
    st.session_state["w_models"] = picked[:MAX_MODELS]
    st.multiselect("Models (side by side on the primary device)", model_options(picked[:MAX_MODELS]),
                   key="w_models", max_selections=MAX_MODELS, help="URL parameter models (comma-separated ids). "
                   "A model from the Hub or a config.json loaded in the sidebar appears here too.")
    models = load_models(ctx, st.session_state["w_models"])
    state = replace(ctx.state, devices=ctx.state.devices[:1])
    summary = scenario_line(", ".join(models) or ctx.model.name, state, ctx.scenario)
    st.caption(summary)
    if len(ctx.state.devices) > 1:
        st.caption(f"Models are compared on the primary device, {hardware.name}; Compare devices shows the others.")
    results = {}
    for name, model in models.items():
        try:
            results[name] = data.estimate(hardware, model, ctx.scenario, ctx.state.method)
        except (ScenarioError, ValueError) as error:
            st.error(f"{name} on {hardware.name}: {error}")
    if not results:
        return
    if len(results) < 2:
        st.info("Pick two or more models above to compare them side by side.")
    metrics = metrics_table(results, hardware)
    frame, config = shown_table(metrics)
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config)
    unfit = metrics.loc[~metrics["fits"].astype(bool), "model"].tolist()
    if unfit:
        st.warning(f"{', '.join(unfit)} {'does' if len(unfit) == 1 else 'do'} not fit in {hardware.name}'s memory "
                   "with this workload and layout: their times are what they would take if they did.")
    table_downloads(metrics, "model-comparison", key="compare-models", scenario=summary)
    figures = [
        ("Models side by side", model_comparison_figure(metrics, device=hardware.name)),
        ("Memory fit", charts.memory_fit_figure(memory_frame(results))),
        ("Kernel time by phase", charts.kernel_time_bars(kernels_frame(results), stack_by=ctx.state.stack_by,
                                                         percent=ctx.state.percent)),
        ("Compute- vs memory-bound time", charts.bound_share_figure(phases_frame(results))),
        ("Roofline", charts.roofline_figure(data.ceilings(hardware, ctx.scenario.device_count > 1),
                                            kernels_frame(results))),   # the device's roofs, each model's kernels
    ]
    show_charts(figures, summary, key="compare-models")
