"""Compare devices: the same workload on every selected device, side by side."""

from __future__ import annotations

import streamlit as st

from dashboard.context import PageContext, metrics_frame
from dashboard.views.overview import figures, stack_controls
from dashboard.widgets import chart, deck_button, table_downloads


def render(ctx: PageContext) -> None:
    results = ctx.estimates()
    for error in ctx.errors:
        st.error(error)
    if not results:
        return
    st.caption(ctx.summary())
    if len(results) < 2:
        st.info("Select two or more devices in the sidebar to compare them.")
    metrics = metrics_frame(results)
    formats = {column: st.column_config.NumberColumn(format="%.2f") for column in metrics.columns
               if column not in ("device", "fits", "largest batch that fits")}
    st.dataframe(metrics, hide_index=True, width="stretch", column_config=formats)
    table_downloads(metrics, "device-comparison", key="compare")
    roofline, *others = figures(ctx, results, results)
    figs = [*others, roofline]
    deck_button(figs, ctx.summary(), key="compare")
    for index, (title, figure) in enumerate(figs):
        st.subheader(title)
        if title == "Kernel time by phase":
            stack_controls()
        chart(figure, title, key=f"compare-{index}")
