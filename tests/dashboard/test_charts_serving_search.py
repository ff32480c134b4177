"""Serving design-space charts from a hand-built SearchResult-shaped frame: the front line, the SLA line, the
best point, hollow markers and hover text for configurations outside the SLA, excluded layouts named."""

import math

import pandas as pd
import pytest

from dashboard.charts.serving_search import (excluded_note, figure_notes, mode_comparison_figure, pareto_figure,
                                             recommendation_sentence, series_label)


def _row(device, layout, concurrency, per_user, per_device, *, on_front=True, meets=True, failure="", fits=True,
         reason="", mode="aggregated"):
    return dict(device=device, mode=mode, layout=layout, concurrency=concurrency, token_budget=8192, fits=fits,
                reason=reason, ttft_s=0.2, tpot_s=1 / per_user if per_user else math.nan,
                tokens_per_s_per_user=per_user, tokens_per_s_per_device=per_device, meets_sla=meets,
                sla_failure=failure, on_front=on_front)


@pytest.fixture
def configs():
    return pd.DataFrame([
        _row("H200-SXM", "TP8 PP1 DP1 EP1", 64, 20.0, 900.0, meets=False, failure="TPOT 50 ms > 25 ms"),
        _row("H200-SXM", "TP8 PP1 DP1 EP1", 8, 80.0, 300.0),
        _row("H200-SXM", "TP4 PP1 DP2 EP1", 16, 50.0, 600.0),
        _row("H200-SXM", "TP2 PP1 DP4 EP1", 16, 40.0, 400.0, on_front=False),         # dominated by (50, 600)
        _row("H200-SXM", "TP1 PP1 DP8 EP1", 1, math.nan, math.nan, on_front=False, meets=False, fits=False,
             failure="does not run", reason="does not fit: weights 140 GB exceed 141 GB"),
        _row("B200", "TP8 PP1 DP1 EP1", 32, 60.0, 1200.0),
        _row("B200", "TP8 PP1 DP1 EP1", 4, 150.0, 250.0, meets=False, failure="TTFT 0.9 s > 0.5 s"),
    ])


@pytest.fixture
def best(configs):
    rows = configs.iloc[[2, 5]].copy()
    rows["message"] = ["H200 best: TP4 PP1 DP2 EP1 at 16 clients", "B200 best: TP8 at 32 clients"]
    return rows.reset_index(drop=True)


def test_front_line_runs_through_the_front_in_order_of_speed_per_user(configs, best):
    figure = pareto_figure(configs, best, tpot_max_s=0.025)
    fronts = {trace.name: trace for trace in figure.data if trace.mode == "lines+markers"}
    assert list(fronts) == ["H200-SXM", "B200"]
    assert list(fronts["H200-SXM"].x) == [20.0, 50.0, 80.0]
    assert list(fronts["H200-SXM"].y) == [900.0, 600.0, 300.0]
    # hollow (white inside the series' outline) over the points that miss the SLA
    hollow = {t.name: t for t in figure.data if t.name and t.name.endswith("outside the SLA")}
    assert list(hollow["H200-SXM: outside the SLA"].x) == [20.0]
    assert list(hollow["B200: outside the SLA"].x) == [150.0]
    assert hollow["B200: outside the SLA"].marker.color == "white"
    assert hollow["B200: outside the SLA"].marker.symbol == fronts["B200"].marker.symbol == "diamond"
    # the dominated configuration is a faint point beside the line, not on it
    others = next(t for t in figure.data if t.name == "H200-SXM: other configurations")
    assert list(others.x) == [40.0] and others.marker.opacity < 0.5


def test_hover_names_why_a_configuration_misses_the_sla(configs, best):
    figure = pareto_figure(configs, best, tpot_max_s=0.025)
    h200 = next(t for t in figure.data if t.name == "H200-SXM")
    assert "misses the SLA: TPOT 50 ms > 25 ms" in h200.text[0]
    assert "misses the SLA: TPOT 50 ms > 25 ms" in next(t for t in figure.data
                                                        if t.name == "H200-SXM: outside the SLA").text[0]
    assert "TP8 PP1 DP1 EP1, 64 clients" in h200.text[0]
    assert "meets the SLA" in h200.text[1]
    b200 = next(t for t in figure.data if t.name == "B200")
    assert "TTFT 0.9 s > 0.5 s" in b200.text[1]


def test_sla_line_at_one_over_tpot(configs, best):
    figure = pareto_figure(configs, best, ttft_max_s=0.5, tpot_max_s=0.025)
    lines = [shape for shape in figure.layout.shapes if shape.type == "line"]
    assert len(lines) == 1 and lines[0].x0 == pytest.approx(40.0) and lines[0].x1 == pytest.approx(40.0)
    assert any("TPOT ≤ 25 ms" in a.text for a in figure.layout.annotations)
    assert "TTFT ≤ 500 ms checked per point" in figure_notes(figure)
    # no SLA: no line
    assert not pareto_figure(configs, best).layout.shapes


def test_best_point_per_device_is_a_star(configs, best):
    figure = pareto_figure(configs, best, tpot_max_s=0.025)
    stars = [t for t in figure.data if t.name and t.name.endswith("best within the SLA")]
    assert [(t.name, t.x[0], t.y[0], t.marker.symbol) for t in stars] == [
        ("H200-SXM: best within the SLA", 50.0, 600.0, "star"), ("B200: best within the SLA", 60.0, 1200.0, "star")]
    # a device whose best misses the SLA gets an open star, named "closest"
    missing = best.assign(meets_sla=[False, True])
    names = [t.name for t in pareto_figure(configs, missing).data]
    assert "H200-SXM: closest to the SLA" in names


def test_excluded_layouts_are_named(configs):
    note = excluded_note(configs)
    assert note == "not run: TP1 PP1 DP8 EP1 on H200-SXM (does not fit)"
    assert note in figure_notes(pareto_figure(configs))
    assert excluded_note(configs[configs["fits"]]) == ""


def test_mode_comparison_puts_the_modes_side_by_side():
    best = pd.DataFrame([
        dict(device="H200-SXM", mode="aggregated", layout="TP8 PP1 DP1 EP1", tokens_per_s_per_device=700.0,
             tokens_per_s_per_user=40.0, meets_sla=True, message="a"),
        dict(device="H100-SXM→H200-SXM", mode="disaggregated", layout="P TP4 x2 / D TP8 x1",
             tokens_per_s_per_device=820.0, tokens_per_s_per_user=42.0, meets_sla=False, message="b"),
    ])
    figure = mode_comparison_figure(best)
    assert [t.name for t in figure.data] == ["aggregated", "disaggregated"]
    assert list(figure.data[1].x) == ["H100-SXM→H200-SXM"] and list(figure.data[1].y) == [820.0]
    assert list(figure.data[0].marker.pattern.shape) == [""] and list(figure.data[1].marker.pattern.shape) == ["/"]
    assert "42 tok/s per user" in figure.data[1].text[0]
    assert "hatched: none meets the SLA" in figure_notes(figure)
    assert series_label("H100-SXM→H200-SXM", "disaggregated") == "H100-SXM→H200-SXM (disaggregated)"


def test_recommendation_sentence_prefers_the_recommendation(best):
    recommendation = pd.DataFrame({"device": ["H200-SXM", "B200"], "mode": ["aggregated"] * 2,
                                   "sentence": ["Use 16 x H200-SXM.", "Use 8 x B200."]})
    assert recommendation_sentence(recommendation, best) == "Use 16 x H200-SXM. Use 8 x B200."
    assert recommendation_sentence(pd.DataFrame(columns=["device", "mode"]), best) == \
        "H200 best: TP4 PP1 DP2 EP1 at 16 clients B200 best: TP8 at 32 clients"
    assert recommendation_sentence(None, None) == ""
