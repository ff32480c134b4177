"""The charts a page sent the browser, read from an AppTest run: each figure as the browser gets it, in page order,
whether drawn in place by dashboard.plotly_view's component or by st.plotly_chart (a figure with a trace type the
vendored Plotly bundle lacks)."""

from __future__ import annotations

import json

from dashboard import plotly_view


def chart_elements(app) -> list:
    """The page's chart elements in page order (AppTest nodes: plotly_chart or the chart component)."""
    found = []

    def walk(node):
        kind = getattr(node, "type", None)
        if kind == "plotly_chart" or (kind == "bidi_component" and node.proto.component_name == plotly_view.NAME):
            found.append(node)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(app._tree)
    return found


def spec_of(element) -> dict:
    """One chart element's figure dict (data, layout) as sent."""
    if element.type == "plotly_chart":
        return json.loads(element.proto.spec)
    return json.loads(json.loads(element.proto.json))["figure"]


def chart_specs(app) -> list[dict]:
    """Every chart's figure dict, in page order."""
    return [spec_of(element) for element in chart_elements(app)]


def config_of(element) -> dict:
    """One chart element's Plotly config (toolbar) as sent."""
    if element.type == "plotly_chart":
        return json.loads(element.proto.config)
    return json.loads(json.loads(element.proto.json))["config"]
