"""Compare devices: the same workload on every selected device, side by side."""

from __future__ import annotations

import streamlit as st

from dashboard.charts.tables import metrics_view
from dashboard.context import PageContext, metrics_frame
from dashboard.views.overview import energy_figures, figures, show_charts
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
    shown, helps = metrics_view(metrics)          # each value in the unit that suits it; exports keep SI values
    st.dataframe(shown, hide_index=True, width="stretch",
                 column_config={column: st.column_config.Column(help=text) for column, text in helps.items()})
    table_downloads(metrics, "device-comparison", key="compare", scenario=ctx.summary())
    roofline, *others = figures(ctx, results, results)
    show_charts([*others, *energy_figures(ctx, results), roofline], ctx.summary(), key="compare")
