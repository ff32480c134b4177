"""Pure Plotly figure builders: engine DataFrames in, `go.Figure` out (no Streamlit).

Several devices are compared by stacking their rows with a `device` column.
"""

from dashboard.charts.bounds import bound_share_figure
from dashboard.charts.energy import energy_by_component_figure, energy_by_kernel_figure, energy_headline_frame
from dashboard.charts.explore import heatmap_figure, line_figure
from dashboard.charts.inverse_search import inverse_search_figure
from dashboard.charts.kernel_bars import kernel_time_bars
from dashboard.charts.memory import memory_fit_figure
from dashboard.charts.pareto import pareto_figure, pareto_front
from dashboard.charts.roofline import roofline_figure
from dashboard.charts.sensitivity import tornado_figure
from dashboard.charts.sweeps import ridge_crossings, sweep_figure
from dashboard.charts.tables import kernel_table_frame
from dashboard.charts.theme import BOUND_COLORS, FIGURE_SIZE, apply_theme

__all__ = [
    "BOUND_COLORS", "FIGURE_SIZE", "apply_theme", "bound_share_figure", "energy_by_component_figure",
    "energy_by_kernel_figure", "energy_headline_frame", "heatmap_figure", "inverse_search_figure", "kernel_table_frame",
    "kernel_time_bars", "line_figure", "memory_fit_figure", "pareto_figure", "pareto_front", "ridge_crossings",
    "roofline_figure", "sweep_figure", "tornado_figure",
]
