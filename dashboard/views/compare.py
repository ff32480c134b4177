"""Compare devices: the same workload on every selected device, side by side."""

from __future__ import annotations

import streamlit as st

from dashboard.context import PageContext, metrics_frame
from dashboard.views.overview import figures, show_charts
from dashboard.widgets import table_downloads


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
    table_downloads(metrics, "device-comparison", key="compare", scenario=ctx.summary())
    roofline, *others = figures(ctx, results, results)
    show_charts([*others, roofline], ctx.summary(), key="compare")
