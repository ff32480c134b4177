"""Sweeps: batch size or prompt length, showing where the phase crosses each device's ridge point."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import charts, data
from dashboard.charts.layout import layout_sweep_figure
from dashboard.context import PageContext
from dashboard.widgets import chart, table_downloads
from engine import batch_sweep_values

LABELS = {"batch": "batch size", "input_length": "prompt length", "tp": "tensor-parallel degree"}
TP_VALUES = (1, 2, 4, 8)


def sweep_values(field: str, model) -> list[int]:
    if field == "batch":
        return batch_sweep_values(1024)
    limit = model.max_position_embeddings
    return [n for n in (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072) if n < limit]


def render_layout_sweep(ctx: PageContext) -> None:
    """TPOT and tokens/s per device over TP 1..8 (the other layout fields as in the sidebar)."""
    frames = [data.layout_sweep_frame(hw, ctx.model, ctx.scenario, "tp", TP_VALUES, ctx.state.method)
              for hw in ctx.selected]
    sweep = pd.concat(frames, ignore_index=True)
    for row in sweep[sweep["error"].fillna("") != ""].itertuples():
        st.warning(f"{row.device}, TP={row.tp}: {row.error}")
    chart(layout_sweep_figure(sweep, "tp"), "sweep over tensor-parallel degree", key="layout-sweep",
          scenario=ctx.summary())
    st.dataframe(sweep, hide_index=True, width="stretch")
    table_downloads(sweep, "tp-sweep", key="layout-sweep", scenario=ctx.summary())


def render(ctx: PageContext) -> None:
    st.caption(ctx.summary())
    st.segmented_control("Sweep over", list(LABELS), format_func=LABELS.get, key="w_sweep", required=True)
    field = ctx.state.sweep_field
    if field == "tp":
        render_layout_sweep(ctx)
        return
    values = sweep_values(field, ctx.model)
    frames = []
    for hardware in ctx.selected:
        try:
            frames.append(data.sweep_frame(hardware, ctx.model, ctx.scenario, field, values, ctx.state.method))
        except ValueError as error:
            st.error(f"{hardware.name}: {error}")
    if not frames:
        return
    sweep = pd.concat(frames, ignore_index=True)
    title = f"Sweep over {LABELS[field]}"
    chart(charts.sweep_figure(sweep, x="value"), title, key="sweep", scenario=ctx.summary())
    st.dataframe(sweep, hide_index=True, width="stretch")
    table_downloads(sweep, "sweep", key="sweep", scenario=ctx.summary())
