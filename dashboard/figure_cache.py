"""Figures shared between reruns and sessions: a view drawn once is not drawn again while its inputs stay the same.

Building a page's Plotly figures is most of a rerun's server time. The key holds everything a page's figures
depend on (the JSON of the model, the devices with their edits, the scenario, and the view's chart settings),
so an unchanged view (a rerun going back to an earlier value, a second visitor on the same link) reuses them.
The figures are shared objects: they are finished (the scenario subtitle added) before they are cached and are
read-only afterwards; nothing downstream changes a figure it is given (exports copy it). Being read-only, a
shared figure's browser dict and its JSON (what a chart sends on every rerun: a deep copy of the figure, arrays
as base64, a few ms a chart) are made once too: `browser_spec`, `browser_json` (for the chart component,
dashboard/plotly_view.py) and `for_streamlit` (for st.plotly_chart). The browser dict is the form Plotly.react
updates without redrawing what did not change (`dashboard.browser_spec`: the template written in, a data revision).
"""

from __future__ import annotations

import json
from typing import Callable

import plotly.io as pio
import streamlit as st
from plotly.basedatatypes import BaseFigure

from dashboard import data
from dashboard.browser_spec import browser_dict
from dashboard.widgets import scenario_subtitle


@st.cache_resource(show_spinner=False, max_entries=48)
def _shared(key: str, _build: Callable[[], list]) -> list:
    return _build()


def view_key(ctx, **settings) -> str:
    """What identifies a view's figures: model, selected devices (edited), scenario, method, summary, `settings`."""
    return json.dumps({
        "model": data.model_key(ctx.model),
        "devices": [hardware.model_dump_json() for hardware in ctx.selected],
        "scenario": ctx.scenario.model_dump_json(), "method": ctx.state.method, "summary": ctx.summary(),
        **settings}, sort_keys=True, default=str)


def shared_figures(key: str, summary: str, build: Callable[[], list[tuple[str, object]]]) -> list[tuple[str, object]]:
    """build() -> [(title, figure), ...], each figure with `summary` as its subtitle, cached under `key`."""
    def finished():
        figures = [(title, scenario_subtitle(figure, summary)) for title, figure in build()]
        for _, figure in figures:
            figure._shared_dict = None           # shared from here on: read-only, its dict made once (for_streamlit)
        return figures
    return _shared(key, finished)


class _Serialised(BaseFigure):
    """What st.plotly_chart is given for a figure: a figure whose to_dict() (the one thing Streamlit asks of a
    plotly figure) returns the figure's browser dict (a shared figure's made on its first drawing). Never built
    with __init__."""

    def to_dict(self):
        return {**self._dict, "data": [dict(trace) for trace in self._dict["data"]]}   # Streamlit pops trace uids


def browser_spec(figure) -> dict:
    """The figure's browser dict (`browser_spec.browser_dict`): a shared (read-only) figure's made once, any other
    figure's on every call (the figure itself is not changed)."""
    if not hasattr(figure, "_shared_dict"):
        return browser_dict(figure.to_dict())
    if figure._shared_dict is None:
        figure._shared_dict = browser_dict(figure.to_dict())
        figure._shared_json = None
    return figure._shared_dict


def browser_json(figure) -> str:
    """`browser_spec(figure)` as Plotly's JSON (what st.plotly_chart sends); a shared figure's made once."""
    spec = browser_spec(figure)
    if not hasattr(figure, "_shared_dict"):
        return pio.to_json(spec, validate=False)
    if getattr(figure, "_shared_json", None) is None:
        figure._shared_json = pio.to_json(spec, validate=False)
    return figure._shared_json


def for_streamlit(figure):
    """`figure` for st.plotly_chart: an object whose to_dict() is the figure's browser dict (`browser_spec`)."""
    serialised = object.__new__(_Serialised)
    object.__setattr__(serialised, "_dict", browser_spec(figure))
    return serialised
