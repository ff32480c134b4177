"""Figures shared between reruns and sessions: a view drawn once is not drawn again while its inputs stay the same.

Building a page's Plotly figures is most of a rerun's server time. The key holds everything a page's figures
depend on (the JSON of the model, the devices with their edits, the scenario, and the view's chart settings),
so an unchanged view (a rerun going back to an earlier value, a second visitor on the same link) reuses them.
The figures are shared objects: they are finished (the scenario subtitle added) before they are cached and are
read-only afterwards; nothing downstream changes a figure it is given (exports copy it). Being read-only, a
shared figure's plotly dict (what st.plotly_chart serialises on every rerun: a deep copy of the figure, arrays
as base64, a few ms a chart) is made once too: `for_streamlit`.
"""

from __future__ import annotations

import json
from typing import Callable

import streamlit as st
from plotly.basedatatypes import BaseFigure

from dashboard import data
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
    """What st.plotly_chart is given for a shared figure: a figure whose to_dict() (the one thing Streamlit asks of a
    plotly figure) returns the shared figure's dict, made on its first drawing. Never built with __init__."""

    def to_dict(self):
        return {**self._dict, "data": [dict(trace) for trace in self._dict["data"]]}   # Streamlit pops trace uids


def for_streamlit(figure):
    """`figure` for st.plotly_chart: a shared (read-only) figure as its dict made once; any other figure as it is."""
    if not hasattr(figure, "_shared_dict"):
        return figure
    if figure._shared_dict is None:
        figure._shared_dict = figure.to_dict()
    serialised = object.__new__(_Serialised)
    object.__setattr__(serialised, "_dict", figure._shared_dict)
    return serialised
