"""The Compare models chart (dashboard/charts/model_compare.py) from hand-made metric rows, no browser.

Values are given in SI units (seconds, bytes) and read back in the chart's display units (ms, GB), so a
wrong scale, a dropped model or a non-fitting model drawn like a fitting one fails here.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dashboard.charts.model_compare import UNFIT_NOTE, model_comparison_figure

H100_BYTES = 80e9


def rows(**overrides) -> pd.DataFrame:
    frame = pd.DataFrame([
        {"model": "small/a", "ttft_s": 0.020, "tpot_s": 0.0050, "tokens_per_s": 200.0,
         "weights_per_device_bytes": 2e9, "memory_per_device_bytes": 12e9, "memory_capacity_bytes": H100_BYTES,
         "fits": True},
        {"model": "large/b", "ttft_s": 0.150, "tpot_s": 0.0400, "tokens_per_s": 25.0,
         "weights_per_device_bytes": 140e9, "memory_per_device_bytes": 150e9, "memory_capacity_bytes": H100_BYTES,
         "fits": False},
    ])
    for column, values in overrides.items():
        frame[column] = values
    return frame


def bars(figure, model: str) -> dict:
    """{metric column: displayed value} of one model's bars."""
    return {t.meta["metric"]: t.y[0] for t in figure.data if t.type == "bar" and t.meta["model"] == model}


def test_each_model_has_one_bar_per_metric_in_display_units():
    figure = model_comparison_figure(rows(), device="H100-SXM")
    assert bars(figure, "small/a") == pytest.approx({"ttft_s": 20.0, "tpot_s": 5.0, "tokens_per_s": 200.0,
                                                     "memory_per_device_bytes": 12.0})
    assert bars(figure, "large/b") == pytest.approx({"ttft_s": 150.0, "tpot_s": 40.0, "tokens_per_s": 25.0,
                                                     "memory_per_device_bytes": 150.0})
    titles = [a.text for a in figure.layout.annotations][:4]
    assert titles == ["TTFT (ms)", "TPOT (ms)", "Output tokens/s", "Memory per device (GB)"]
    assert "H100-SXM" in figure.layout.title.text
    assert figure.layout.barmode == "group"


def test_the_legend_names_each_model_once_and_bars_share_its_colour():
    figure = model_comparison_figure(rows())
    legend = [t.name for t in figure.data if t.showlegend]
    assert legend == ["small/a", "large/b"]
    for model in legend:
        colours = {t.marker.color for t in figure.data if t.meta["model"] == model}
        assert len(colours) == 1
    assert len({t.marker.color for t in figure.data}) == 2


def test_a_model_that_does_not_fit_is_hatched_with_the_reason_on_hover():
    figure = model_comparison_figure(rows())
    for trace in figure.data:
        hatched = trace.marker.pattern.shape == "/"
        assert hatched == (trace.meta["model"] == "large/b")
        assert ("does not fit in memory" in trace.hovertemplate) == hatched
        assert trace.marker.pattern.fillmode == "overlay"        # hatch over the model's colour, not a blank bar
    unfit = next(t for t in figure.data if t.meta["model"] == "large/b")
    assert "needs 150 GB per device, the device holds 80 GB" in unfit.hovertemplate
    assert UNFIT_NOTE in [a.text for a in figure.layout.annotations]
    everyone_fits = model_comparison_figure(rows(fits=[True, True], memory_per_device_bytes=[12e9, 70e9]))
    assert all(t.marker.pattern.shape == "" for t in everyone_fits.data)
    assert UNFIT_NOTE not in [a.text for a in everyone_fits.layout.annotations]


def test_the_memory_panel_has_the_capacity_line_and_room_for_the_tallest_bar():
    figure = model_comparison_figure(rows())
    [line] = [s for s in figure.layout.shapes if s.name == "capacity"]
    assert line.y0 == line.y1 == pytest.approx(80.0)
    assert line.yref == "y4"
    assert figure.layout.yaxis4.range[1] >= 150.0
    assert "capacity 80 GB" in [a.text for a in figure.layout.annotations]


def test_a_metric_no_model_has_gets_no_panel():
    """A decode step has no TTFT: three panels, none titled TTFT, and the text says n/a for no number."""
    figure = model_comparison_figure(rows(ttft_s=[math.nan, math.nan]))
    titles = [a.text for a in figure.layout.annotations]
    assert not any(t.startswith("TTFT") for t in titles)
    assert {t.meta["metric"] for t in figure.data} == {"tpot_s", "tokens_per_s", "memory_per_device_bytes"}
    one_missing = model_comparison_figure(rows(ttft_s=[0.02, math.nan]))
    missing = next(t for t in one_missing.data if t.meta == {"model": "large/b", "metric": "ttft_s", "fits": False})
    assert missing.y[0] is None and missing.text[0] == "n/a"


def test_bar_labels_use_thousands_separators_and_three_digits():
    figure = model_comparison_figure(rows(tokens_per_s=[15873.2, 0.01234]))
    labels = {t.meta["model"]: t.text[0] for t in figure.data if t.meta["metric"] == "tokens_per_s"}
    assert labels == {"small/a": "15,873", "large/b": "0.0123"}
