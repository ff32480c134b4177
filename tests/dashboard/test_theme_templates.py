"""The house templates and the unvalidated build: the dashboard's figures have the same JSON as plotly's
validated build, and registered templates copy quickly into figures without being shared."""

from __future__ import annotations

import copy
import json

import plotly.graph_objects as go
import plotly.io as pio
import pytest

import engine
from dashboard import charts
from dashboard.charts.gaps import ideal_vs_realistic_figure
from dashboard.charts.stacked import SEGMENTS_TEMPLATE
from dashboard.charts.theme import TEMPLATE_NAME, VALIDATE_ENV, house_figure
from dashboard.context import kernels_frame, memory_frame, phases_frame

DATA = [dict(type="bar", x=["a", "b"], y=[1.0, 2.5], name="bars"), dict(type="scatter", x=[1, 2], y=[3, 4])]
LAYOUT = dict(xaxis=dict(title=dict(text="x (unit)")), margin=dict(t=90))


def overview_figures(devices, model) -> list:
    """The overview's and comparison's charts (two devices: the roofline overlays both)."""
    results = {name: engine.estimate(devices[name], model, engine.Scenario(batch=8), method="realistic")
               for name in ("H100-SXM", "MI300X")}
    kernels = kernels_frame(results)
    ceilings = engine.roofline_ceilings(devices["H100-SXM"])
    return [charts.roofline_figure(ceilings, kernels), ideal_vs_realistic_figure(kernels, "realistic"),
            charts.kernel_time_bars(kernels, stack_by="name", percent=False),
            charts.kernel_time_bars(kernels, stack_by="family", percent=True),
            charts.bound_share_figure(phases_frame(results)), charts.memory_fit_figure(memory_frame(results)),
            charts.energy_by_kernel_figure(kernels, stack_by="name", percent=False),
            charts.energy_by_component_figure(kernels)]


def test_unvalidated_figures_have_the_json_of_validated_ones(monkeypatch, devices, llama8b):
    monkeypatch.setenv(VALIDATE_ENV, "1")
    validated = [json.loads(figure.to_json()) for figure in overview_figures(devices, llama8b)]
    monkeypatch.setenv(VALIDATE_ENV, "0")
    quick = overview_figures(devices, llama8b)
    assert not quick[0]._validate                        # the dashboard's own path, not the validated one
    assert [json.loads(figure.to_json()) for figure in quick] == validated
    assert quick[0].layout.template.layout.font.size == pio.templates[TEMPLATE_NAME].layout.font.size


def test_validation_in_tests_catches_a_misspelt_property(monkeypatch):
    monkeypatch.setenv(VALIDATE_ENV, "1")
    with pytest.raises(ValueError, match="colour"):
        house_figure([dict(type="bar", x=[1], y=[1], marker=dict(colour="red"))], {})


@pytest.mark.parametrize("validate", ["1", "0"])
def test_house_figure_matches_the_figure_built_from_a_plain_copy_of_the_template(monkeypatch, validate):
    monkeypatch.setenv(VALIDATE_ENV, validate)
    for name in (TEMPLATE_NAME, SEGMENTS_TEMPLATE):
        plain = go.layout.Template(pio.templates[name].to_plotly_json())      # plotly's ordinary Template
        expected = go.Figure(data=DATA, layout={"template": plain, "title": {"text": "T"}, **LAYOUT})
        built = house_figure(DATA, LAYOUT, title="T", template=name)
        assert json.loads(built.to_json()) == json.loads(expected.to_json())


@pytest.mark.parametrize("validate", ["1", "0"])
def test_a_figure_gets_its_own_copy_of_the_template(monkeypatch, validate):
    monkeypatch.setenv(VALIDATE_ENV, validate)
    first, second = house_figure(DATA, {}), house_figure(DATA, {})
    first.layout.template.layout.font.size = 99                   # one figure's edit stays in that figure
    assert second.layout.template.layout.font.size != 99
    assert pio.templates[TEMPLATE_NAME].layout.font.size != 99
    assert type(copy.deepcopy(pio.templates[TEMPLATE_NAME])) is go.layout.Template
