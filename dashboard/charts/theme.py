"""One look for every chart: white, dark text, large fonts, colour-blind-safe colours.

Colours come from the Okabe-Ito palette (safe for the common colour-vision deficiencies).
Each bound has one colour everywhere (roofline points, bound shares, ...), and each memory
level of a roofline has the colour of the bound it causes (HBM slope = memory-bound colour).
"""

from __future__ import annotations

import os

import plotly.graph_objects as go
import plotly.io as pio

# Okabe-Ito
BLACK, ORANGE, SKY_BLUE, BLUISH_GREEN = "#000000", "#E69F00", "#56B4E9", "#009E73"
YELLOW, BLUE, VERMILLION, REDDISH_PURPLE = "#F0E442", "#0072B2", "#D55E00", "#CC79A7"
GREY, TEXT, GRID = "#7F7F7F", "#1A1A1A", "#E3E3E3"
INK = "#2a3f5f"  # plotly_white's ink: arrows and shapes that name no colour of their own
WARNING = VERMILLION

FIGURE_SIZE = (1280, 720)  # 16:9 slide size in layout pixels (export at scale 2 -> 2560 x 1440)
SCREEN_WIDTH = 960         # a chart's width in the dashboard's main column at a 1440 px window: labels are fitted to it
LEGEND_WIDTH = 220         # a vertical legend right of the plot, about
FONT_FAMILY = "Liberation Sans, Arial, Helvetica, sans-serif"
FONT_SIZE = 16

BOUND_COLORS = {
    "compute": BLUE,
    "memory": VERMILLION,   # HBM / DRAM
    "hbm": VERMILLION,
    "llc": ORANGE,
    "sram": REDDISH_PURPLE,
    "overhead": GREY,
    "communication": BLUISH_GREEN,
}
BOUND_ORDER = ("compute", "memory", "hbm", "llc", "sram", "communication", "overhead")
MEMORY_LEVEL_COLORS = {"HBM": VERMILLION, "LLC": ORANGE, "SRAM": REDDISH_PURPLE}
# Colours for series that are devices (sweeps) or families of kernels
SERIES_COLORS = (BLUE, VERMILLION, BLUISH_GREEN, REDDISH_PURPLE, ORANGE, SKY_BLUE, BLACK, GREY)
DEVICE_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
DEVICE_SYMBOLS = ("circle", "diamond", "square", "triangle-up", "cross", "star")


def bound_color(bound: str) -> str:
    """The colour of a bound (unknown bounds are grey)."""
    return BOUND_COLORS.get(str(bound).lower(), GREY)


def bound_sort_key(bound: str) -> tuple[int, str]:
    key = str(bound).lower()
    return (BOUND_ORDER.index(key) if key in BOUND_ORDER else len(BOUND_ORDER), key)


def device_style(index: int) -> dict:
    """Dash, marker symbol and series colour of the index-th device of a comparison."""
    return {
        "dash": DEVICE_DASHES[index % len(DEVICE_DASHES)],
        "symbol": DEVICE_SYMBOLS[index % len(DEVICE_SYMBOLS)],
        "color": SERIES_COLORS[index % len(SERIES_COLORS)],
    }


def _template() -> go.layout.Template:
    """The house template, built from scratch with only the layout keys our charts use.

    Not a copy of plotly_white: its colour scales and polar/geo/3D styles would be deep-copied
    into every figure for nothing (8-10 ms each). The plotly_white settings that do show
    in our charts are restated here (zero-line width, arrow and shape ink, hover alignment,
    strict number typing), so the figures look as they did on top of plotly_white. `showgrid`
    is explicit because plotly.js draws no grid on category axes unless asked.
    """
    axis = dict(
        showline=True, linecolor=TEXT, linewidth=1.2, mirror=True, ticks="outside", tickcolor=TEXT,
        showgrid=True, gridcolor=GRID, zerolinecolor=GRID, zerolinewidth=2, automargin=True,
        title=dict(font=dict(size=FONT_SIZE + 2), standoff=10), tickfont=dict(size=FONT_SIZE - 2),
    )
    return go.layout.Template(layout=dict(
        font=dict(family=FONT_FAMILY, size=FONT_SIZE, color=TEXT),
        title=dict(font=dict(size=FONT_SIZE + 6), x=0.01, xanchor="left", y=0.97, yanchor="top"),
        paper_bgcolor="white", plot_bgcolor="white", colorway=list(SERIES_COLORS),
        xaxis=axis, yaxis=axis,
        legend=dict(font=dict(size=FONT_SIZE - 2), bgcolor="rgba(255,255,255,0.85)",
                    bordercolor=GRID, borderwidth=1, groupclick="toggleitem"),
        hoverlabel=dict(font=dict(size=FONT_SIZE - 2, family=FONT_FAMILY), bgcolor="white", align="left"),
        hovermode="closest", autotypenumbers="strict",
        annotationdefaults=dict(arrowcolor=INK, arrowhead=0, arrowwidth=1), shapedefaults=dict(line_color=INK),
        margin=dict(l=80, r=30, t=80, b=70),
    ))


class _QuickCopyTemplate(go.layout.Template):
    """A registered template that copies in one step. Plotly deep-copies the registered template into every
    figure that names it; the generic deepcopy walks the object's validators and parents (about 20 ms a
    figure, the largest single cost of building a chart). This copies only its plain JSON, already validated
    when it was registered; the figure's JSON is the same."""

    def __deepcopy__(self, memo):
        return go.layout.Template(self.to_plotly_json(), _validate=False)


def _register(name: str, template: go.layout.Template) -> None:
    pio.templates[name] = template                         # validated, and the public registry knows the name
    registry = getattr(pio.templates, "_templates", None)
    if isinstance(registry, dict):                         # plotly's private store: swap in the quick-copy kind
        registry[name] = _QuickCopyTemplate(pio.templates[name].to_plotly_json())


TEMPLATE = _template()
TEMPLATE_NAME = "llm_roofline"
_register(TEMPLATE_NAME, TEMPLATE)


def register_template(name: str, **trace_defaults: list[dict]) -> str:
    """Register the house template plus per-trace-type defaults (bar=[{...}], ...) as `name`.

    Style shared by many traces of a chart is cheaper set once there than on every trace.
    """
    _register(name, go.layout.Template(layout=TEMPLATE.layout, data=trace_defaults))
    return name


VALIDATE_ENV = "LLM_ROOFLINE_VALIDATE_FIGURES"   # "1": plotly validates every property (the tests set it)


def house_figure(data: list[dict], layout: dict, title: str | None = None, template: str = TEMPLATE_NAME) -> go.Figure:
    """A figure with the house look, built in one go from plain trace and layout dicts.

    Plotly validates every property it is given, about half of a chart's build time. The dashboard builds
    without it (the template passed as its JSON, so the figure's JSON is the same); with the environment
    variable LLM_ROOFLINE_VALIDATE_FIGURES=1 (set for the tests) every property is validated, so a misspelt
    property fails a test, and tests/dashboard/test_theme_templates.py checks both builds give the same JSON.
    `template`: the name of a registered template (the house one, or one from `register_template`).
    """
    titled = {"title": {"text": title}} if title is not None else {}
    if os.environ.get(VALIDATE_ENV) == "1":
        return go.Figure(data=data, layout={"template": template, **titled, **layout})
    return go.Figure(data=data, layout={"template": pio.templates[template].to_plotly_json(), **titled, **layout},
                     _validate=False)


def apply_theme(fig: go.Figure, title: str | None = None) -> go.Figure:
    """Give `fig` the house look (in place, and returned), optionally with a title.

    The figure does not depend on Streamlit's theme: pass `theme=None` to st.plotly_chart.
    """
    if title is None:
        fig.update_layout(template=TEMPLATE_NAME)
    else:
        fig.update_layout(template=TEMPLATE_NAME, title_text=title)
    return fig
