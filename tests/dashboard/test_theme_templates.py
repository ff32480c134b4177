"""The registered house templates copy quickly into figures and give the same figure as plotly's own copy."""

from __future__ import annotations

import copy
import json

import plotly.graph_objects as go
import plotly.io as pio

from dashboard.charts.stacked import SEGMENTS_TEMPLATE
from dashboard.charts.theme import TEMPLATE_NAME, house_figure

DATA = [dict(type="bar", x=["a", "b"], y=[1.0, 2.5], name="bars"), dict(type="scatter", x=[1, 2], y=[3, 4])]
LAYOUT = dict(xaxis=dict(title=dict(text="x (unit)")), margin=dict(t=90))


def test_house_figure_matches_the_figure_built_from_a_plain_copy_of_the_template():
    for name in (TEMPLATE_NAME, SEGMENTS_TEMPLATE):
        plain = go.layout.Template(pio.templates[name].to_plotly_json())      # plotly's ordinary Template
        expected = go.Figure(data=DATA, layout={"template": plain, "title": {"text": "T"}, **LAYOUT})
        built = house_figure(DATA, LAYOUT, title="T", template=name)
        assert json.loads(built.to_json()) == json.loads(expected.to_json())
        assert built.layout.template.layout.font.size == plain.layout.font.size


def test_a_figure_gets_its_own_copy_of_the_template():
    first, second = house_figure(DATA, {}), house_figure(DATA, {})
    first.layout.template.layout.font.size = 99                   # one figure's edit stays in that figure
    assert second.layout.template.layout.font.size != 99
    assert pio.templates[TEMPLATE_NAME].layout.font.size != 99
    assert type(copy.deepcopy(pio.templates[TEMPLATE_NAME])) is go.layout.Template
