"""Reusable page pieces: a chart with its export buttons, table downloads, the slide deck."""

from __future__ import annotations

import functools
import re

import pandas as pd
import streamlit as st

from dashboard import export, plotly_view
from dashboard.context import file_tag

MIME = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf"}


def row():
    """A row of elements side by side (headline cards: equal widths; buttons: their own widths, left-aligned): one
    horizontal block, where st.columns makes a block and one more per column, each of which every rerun sends and
    the browser re-renders."""
    return st.container(horizontal=True, gap="small")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "chart"


@st.cache_data(show_spinner=False, max_entries=128)
def _static_bytes(figure_json: str, fmt: str) -> bytes:
    import plotly.io as pio
    return export.figure_bytes(pio.from_json(figure_json), fmt)


def _figure_file(figure, fmt: str) -> bytes:
    """The download's bytes, made when the button is clicked (the figure's JSON is the cache key): a rerun
    that nobody downloads from serialises nothing."""
    return _static_bytes(figure.to_json(), fmt)


def scenario_subtitle(figure, scenario: str, width: int = 120):
    """The scenario line under the figure's title (wrapped at its ' · ' joints), room made above the plot."""
    lines: list[str] = []
    for part in scenario.split(" · "):
        if lines and len(lines[-1]) + len(part) + 3 <= width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    text = "<br>".join(lines)
    if figure.layout.title.subtitle.text == text:     # already there (a figure drawn twice)
        return figure
    top = figure.layout.margin.t if figure.layout.margin.t is not None else 80
    # set on the layout's own objects: the same layout as update_layout(title_subtitle=..., margin_t=...), a
    # sixth of the time (no walk over the whole layout)
    figure.layout.title.subtitle = dict(text=text, font=dict(size=13))
    figure.layout.margin.t = top + 18 * len(lines)
    if getattr(figure, "_shared_dict", None) is not None:    # a shared figure given another line: its dict is stale
        figure._shared_dict = None
    return figure


def file_name(name: str, scenario: str, extension: str) -> str:
    """'roofline-<the scenario line's words>.png': the chart's name and the scenario it shows."""
    tag = file_tag(scenario) if scenario else ""
    return f"{slug(name)}{'-' + tag if tag else ''}.{extension}"


def chart(figure, name: str, key: str, scenario: str = "") -> None:
    """The figure (the scenario line as its subtitle), with toolbar PNG export at 2x and server-side
    PNG/SVG/PDF download buttons; file names carry the chart's name and the scenario."""
    if scenario:
        scenario_subtitle(figure, scenario)
    stem = file_name(name, scenario, "x")[:-2]
    from dashboard.figure_cache import browser_json, browser_spec, for_streamlit   # here: they import this module
    config = export.toolbar_config(stem)
    if plotly_view.drawable(browser_spec(figure)):       # drawn in place, updated by Plotly.react on a rerun
        plotly_view.plot(browser_json(figure), config, key=f"chart-{key}")
    else:
        st.plotly_chart(for_streamlit(figure), config=config, key=f"chart-{key}", theme=None)
    available, reason = export.static_export_available()
    if not available:
        st.caption(reason)
        return
    buttons = row()
    for fmt in ("png", "svg", "pdf"):
        buttons.download_button(fmt.upper(), data=functools.partial(_figure_file, figure, fmt),
                                file_name=file_name(name, scenario, fmt), mime=MIME[fmt], key=f"dl-{key}-{fmt}",
                                on_click="ignore", icon=":material/download:")


def table_downloads(frame: pd.DataFrame, name: str, key: str, scenario: str = "") -> None:
    """CSV and XLSX buttons (each file made when its button is clicked); the file names carry the table's name
    and the scenario line."""
    buttons = row()
    buttons.download_button("CSV", data=functools.partial(export.table_csv, frame),
                            file_name=file_name(name, scenario, "csv"),
                            mime="text/csv",
                            key=f"csv-{key}", on_click="ignore", icon=":material/download:")
    buttons.download_button("XLSX", data=functools.partial(export.table_xlsx, frame),
                            file_name=file_name(name, scenario, "xlsx"),
                            mime="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                            key=f"xlsx-{key}", on_click="ignore", icon=":material/download:")


def _deck_bytes(slides, summary: str) -> bytes:
    return export.deck_pptx(slides() if callable(slides) else slides, summary)


def deck_button(slides, summary: str, key: str) -> None:
    """One PPTX with each chart on its own 16:9 slide (built when clicked). `slides`: [(title, figure), ...], or a
    callable returning them when the deck is made (charts of closed sections are then built only for the deck)."""
    available, reason = export.static_export_available()
    if not available:
        st.caption(f"Slide deck unavailable: {reason}")
        return
    st.download_button("Download deck (PPTX)", data=functools.partial(_deck_bytes, slides, summary),
                       file_name=file_name("llm-roofline", summary, "pptx"), key=f"deck-{key}", on_click="ignore",
                       icon=":material/slideshow:",
                       mime="application/vnd.openxmlformats-officedocument.presentationml.presentation")


def lazy_table_downloads(frame: pd.DataFrame, name: str, key: str, scenario: str = "") -> None:
    """CSV and XLSX buttons that build their file only when clicked (sweeps can be 40,000 rows)."""
    buttons = row()
    buttons.download_button("CSV", data=functools.partial(export.table_csv, frame),
                            file_name=file_name(name, scenario, "csv"),
                            mime="text/csv", key=f"csv-{key}", on_click="ignore", icon=":material/download:")
    buttons.download_button("XLSX", data=functools.partial(export.table_xlsx, frame, "sweep"),
                            file_name=file_name(name, scenario, "xlsx"), key=f"xlsx-{key}", on_click="ignore",
                            mime="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                            icon=":material/download:")
