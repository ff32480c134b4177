"""Serving design-space charts, pure functions of engine.serving.serving_search()'s frames (SearchResult.configs,
.best, .recommendation): the Pareto front per device with the SLA drawn and the best point marked, the
aggregated-vs-disaggregated comparison, and the recommendation as a sentence."""

from __future__ import annotations

import math

import pandas as pd

from dashboard.charts.frames import in_order
from dashboard.charts.theme import GREY, INK, device_style, house_figure

MAX_NAMED_EXCLUDED = 4
NOTES_NAME = "notes"


def series_label(device: str, mode: str) -> str:
    """'H200-SXM' for aggregated serving, 'H100-SXM→H200-SXM (disaggregated)' for the other mode."""
    return str(device) if mode in ("aggregated", "", None) else f"{device} ({mode})"


def _series(frame: pd.DataFrame) -> list[tuple[str, str]]:
    return in_order(zip(frame["device"], frame["mode"].fillna("aggregated")))


def _ms(value) -> str:
    return "n/a" if value is None or not math.isfinite(float(value)) else f"{float(value) * 1e3:.4g} ms"


def _hover(rows: pd.DataFrame) -> list[str]:
    """One hover text per row: layout, concurrency, budget, latencies, throughputs and the SLA verdict."""
    texts = []
    for row in rows.to_dict("records"):
        verdict = "meets the SLA" if row.get("meets_sla") else f"misses the SLA: {row.get('sla_failure') or 'n/a'}"
        texts.append(f"{row.get('layout', '')}, {int(row['concurrency'])} clients, token budget "
                     f"{int(row['token_budget']) if pd.notna(row.get('token_budget')) else 'n/a'}<br>"
                     f"{row['tokens_per_s_per_device']:.4g} tokens/s per device, {row['tokens_per_s_per_user']:.4g} "
                     f"tokens/s per user<br>TTFT {_ms(row.get('ttft_s'))}, TPOT {_ms(row.get('tpot_s'))}<br>{verdict}")
    return texts


def _ran(configs: pd.DataFrame) -> pd.DataFrame:
    fits = configs["fits"].fillna(False).astype(bool)
    x = pd.to_numeric(configs["tokens_per_s_per_user"], errors="coerce")
    y = pd.to_numeric(configs["tokens_per_s_per_device"], errors="coerce")
    return configs[fits & x.notna() & y.notna() & (x > 0) & (y > 0)]


def excluded_note(configs: pd.DataFrame) -> str:
    """'not run: TP1 PP1 DP8 EP1 (does not fit ...); ...': the layouts left out of the chart and why."""
    failed = configs[~configs["fits"].fillna(False).astype(bool)]
    if failed.empty:
        return ""
    layouts = failed.drop_duplicates(["device", "layout"])
    named = [f"{row['layout']} on {row['device']} ({str(row['reason']).split(':')[0][:60]})"
             for row in layouts.head(MAX_NAMED_EXCLUDED).to_dict("records")]
    more = len(layouts) - len(named)
    return "not run: " + "; ".join(named) + (f"; and {more} more" if more > 0 else "")


def pareto_figure(configs: pd.DataFrame, best: pd.DataFrame | None = None, ttft_max_s: float | None = None,
                  tpot_max_s: float | None = None, latency_max_s: float | None = None):
    """Output tokens/s per device (y) against tokens/s per user (x): per device (and mode) every configuration
    that ran as a faint point, its Pareto front as a line whose points are filled when they meet the SLA and
    hollow (white inside, a trace of its own) when they miss it (the hover says why), the best configuration within the SLA as a large star (an
    open star when none meets it: the closest miss). A TPOT limit is the vertical line x = 1 / TPOT; TTFT and
    latency limits have no axis here and are checked per point. Layouts that do not run are named under the
    title.

    configs: SearchResult.configs (device, mode, layout, concurrency, token_budget, fits, reason, ttft_s, tpot_s,
    tokens_per_s_per_device, tokens_per_s_per_user, meets_sla, sla_failure, on_front); best: SearchResult.best.
    """
    ran = _ran(configs)
    data = []
    for index, (device, mode) in enumerate(_series(configs)):
        style, label = device_style(index), series_label(device, mode)
        rows = ran[(ran["device"] == device) & (ran["mode"].fillna("aggregated") == mode)]
        others = rows[~rows["on_front"].astype(bool)]
        front = rows[rows["on_front"].astype(bool)].sort_values("tokens_per_s_per_user")
        data.append(dict(type="scatter", mode="markers", name=f"{label}: other configurations", legendgroup=label,
                         showlegend=False, x=others["tokens_per_s_per_user"].tolist(),
                         y=others["tokens_per_s_per_device"].tolist(), text=_hover(others), hoverinfo="text",
                         marker=dict(size=7, color=style["color"], opacity=0.25, symbol=style["symbol"])))
        data.append(dict(type="scatter", mode="lines+markers", name=label, legendgroup=label,
                         x=front["tokens_per_s_per_user"].tolist(), y=front["tokens_per_s_per_device"].tolist(),
                         text=_hover(front), hoverinfo="text",
                         line=dict(color=style["color"], dash=style["dash"], width=3),
                         marker=dict(size=11, color=style["color"], symbol=style["symbol"])))
        outside = front[~front["meets_sla"].astype(bool)]       # hollow: white inside the series' outline
        data.append(dict(type="scatter", mode="markers", name=f"{label}: outside the SLA", legendgroup=label,
                         showlegend=False, x=outside["tokens_per_s_per_user"].tolist(),
                         y=outside["tokens_per_s_per_device"].tolist(), text=_hover(outside), hoverinfo="text",
                         marker=dict(size=11, color="white", symbol=style["symbol"],
                                     line=dict(color=style["color"], width=2.5))))
        chosen = _best_row(best, device, mode)
        if chosen is not None:
            inside = bool(chosen.get("meets_sla"))
            data.append(dict(type="scatter", mode="markers", legendgroup=label,
                             name=f"{label}: best within the SLA" if inside else f"{label}: closest to the SLA",
                             x=[chosen["tokens_per_s_per_user"]], y=[chosen["tokens_per_s_per_device"]],
                             text=[str(chosen.get("message", ""))], hoverinfo="text",
                             marker=dict(size=24, symbol="star" if inside else "star-open", color=style["color"],
                                         line=dict(color=INK, width=2))))
    shapes, annotations = [], []
    if tpot_max_s:
        x = 1.0 / tpot_max_s
        shapes.append(dict(type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1,
                           line=dict(color=GREY, dash="dash", width=2)))
        annotations.append(dict(xref="x", yref="paper", x=x, y=1.0, yanchor="bottom", showarrow=False,
                                text=f"TPOT ≤ {tpot_max_s * 1e3:.3g} ms", font=dict(color=GREY, size=14)))
    limits = [f"TTFT ≤ {ttft_max_s * 1e3:.4g} ms" if ttft_max_s else "",
              f"latency ≤ {latency_max_s:.3g} s" if latency_max_s else ""]
    checked = ", ".join(filter(None, limits))
    notes = ["filled: meets the SLA, hollow: misses it (hover says why); star: best within the SLA"]
    if checked:
        notes.append(f"{checked} checked per point")
    excluded = excluded_note(configs)
    if excluded:
        notes.append(excluded)
    annotations.append(dict(xref="paper", yref="paper", x=0.0, y=-0.14, xanchor="left", yanchor="top",
                            showarrow=False, align="left", text="<br>".join(notes), font=dict(size=13),
                            name=NOTES_NAME))
    layout = dict(xaxis=dict(title=dict(text="Output tokens/s per user (1 / TPOT)"), rangemode="tozero"),
                  yaxis=dict(title=dict(text="Output tokens/s per device"), rangemode="tozero"),
                  legend=dict(x=1.02, xanchor="left", y=1.0, yanchor="top"), shapes=shapes, annotations=annotations,
                  title=dict(text="Serving design space: Pareto front per device"),
                  margin=dict(t=100, b=110 + 18 * len(notes)))
    return house_figure(data, layout)


def figure_notes(figure) -> str:
    """The notes under the Pareto chart (SLA legend, limits checked per point, layouts not run)."""
    return next((a.text for a in figure.layout.annotations if a.name == NOTES_NAME), "")


def _best_row(best: pd.DataFrame | None, device: str, mode: str) -> dict | None:
    if best is None or best.empty:
        return None
    rows = best[(best["device"] == device) & (best["mode"].fillna("aggregated") == mode)]
    if rows.empty:
        return None
    row = rows.iloc[0].to_dict()
    x, y = row.get("tokens_per_s_per_user"), row.get("tokens_per_s_per_device")
    if x is None or y is None or not (math.isfinite(float(x)) and math.isfinite(float(y))):
        return None
    return row


def mode_comparison_figure(best: pd.DataFrame):
    """The best configuration of each device and mode as bars of output tokens/s per device, aggregated and
    disaggregated side by side (hatched: no configuration meets the SLA, the bar is the closest miss), labelled
    with the layout and the tokens/s per user. best: SearchResult.best."""
    rows = best[pd.to_numeric(best["tokens_per_s_per_device"], errors="coerce").notna()] if not best.empty else best
    data = []
    for index, mode in enumerate(in_order(rows["mode"].fillna("aggregated")) if not rows.empty else []):
        part = rows[rows["mode"].fillna("aggregated") == mode]
        meets = part["meets_sla"].fillna(False).astype(bool).tolist()
        color = device_style(index)["color"]
        data.append(dict(type="bar", name=mode, x=[str(d) for d in part["device"]],
                         y=part["tokens_per_s_per_device"].astype(float).tolist(),
                         text=[f"{layout}<br>{user:.3g} tok/s per user" for layout, user in
                               zip(part["layout"].fillna(""), part["tokens_per_s_per_user"].astype(float))],
                         textposition="outside", hovertext=[str(m) for m in part.get("message", [""] * len(part))],
                         hoverinfo="text",
                         marker=dict(color=color, pattern=dict(shape=["" if ok else "/" for ok in meets]))))
    top = float(pd.to_numeric(rows["tokens_per_s_per_device"]).max()) if not rows.empty else 1.0
    note = ("the best configuration within the SLA per device and mode, labelled with its layout and tokens/s per "
            "user; hatched: none meets the SLA (the closest miss)")
    layout = dict(barmode="group", xaxis=dict(title=dict(text="Device (prefill→decode when disaggregated)")),
                  yaxis=dict(title=dict(text="Best output tokens/s per device"), range=[0, 1.2 * top]),
                  legend=dict(x=1.02, xanchor="left", y=1.0, yanchor="top"),
                  title=dict(text="Aggregated against disaggregated serving"),
                  annotations=[dict(xref="paper", yref="paper", x=0.0, y=-0.16, xanchor="left", yanchor="top",
                                    showarrow=False, align="left", text=note, font=dict(size=13), name=NOTES_NAME)],
                  margin=dict(t=100, b=140))
    return house_figure(data, layout)


def recommendation_sentence(recommendation: pd.DataFrame | None, best: pd.DataFrame | None = None) -> str:
    """The recommendation in words: the search's sentences (fewest devices per device and mode) when a request
    rate or user count was given, else the best configuration per device (or why none meets the SLA)."""
    for frame, column in ((recommendation, "sentence"), (best, "message")):
        if frame is not None and not frame.empty and column in frame:
            sentences = [str(s) for s in frame[column] if isinstance(s, str) and s.strip()]
            if sentences:
                return " ".join(sentences)
    return ""
