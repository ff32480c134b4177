"""dashboard/plotly_view.py: charts drawn by a component with a fixed identity (updated in place by Plotly.react on
a rerun) and the vendored Plotly bundle it loads."""

from __future__ import annotations

import hashlib
import json
import re

from dashboard import plotly_view
from tests.dashboard.charts_sent import chart_elements, config_of, spec_of
from tests.dashboard.test_app import run_app

BUNDLE = plotly_view.VENDOR / plotly_view.BUNDLE


def test_the_vendored_bundle_is_the_version_and_file_its_readme_names_with_its_licence():
    text = BUNDLE.read_text(encoding="utf-8")
    assert text.startswith(f"/**\n* plotly.js (cartesian - minified) v{plotly_view.BUNDLE_VERSION}\n")
    readme = (plotly_view.VENDOR / "README.md").read_text(encoding="utf-8")
    assert f"version {plotly_view.BUNDLE_VERSION}" in readme
    (checksum,) = re.findall(r"sha256 of the file `([0-9a-f]{64})`", readme)
    assert hashlib.sha256(BUNDLE.read_bytes()).hexdigest() == checksum
    assert (plotly_view.VENDOR / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_drawable_names_exactly_the_trace_types_the_bundle_registers():
    registered = set(re.findall(r'moduleType:"trace",name:"(\w+)"', BUNDLE.read_text(encoding="utf-8")))
    assert registered == plotly_view.TRACE_TYPES
    assert plotly_view.drawable({"data": [{"type": "bar"}, {"type": "heatmap"}, {"x": [1]}]})    # no type: scatter
    assert not plotly_view.drawable({"data": [{"type": "scatter"}, {"type": "scattergl"}]})


def test_the_default_chart_keeps_its_element_across_a_new_batch_and_sends_the_new_figure():
    app = run_app()
    assert not app.exception
    (chart,) = chart_elements(app)
    assert chart.type == "bidi_component" and chart.proto.id.endswith("chart-overview-roofline")
    assert not chart.proto.isolate_styles                  # in the page's DOM: Plotly's own styles apply
    options = config_of(chart)["toImageButtonOptions"]
    assert options["scale"] == 2 and options["format"] == "png" and options["filename"].startswith("roofline-")
    before = spec_of(chart)
    assert "template" not in before["layout"] and before["layout"]["datarevision"]
    app.number_input(key="w_batch").set_value(7).run()
    assert not app.exception
    (after,) = chart_elements(app)
    assert after.proto.id == chart.proto.id                # the same element: updated in place, not remounted
    assert spec_of(after)["layout"]["datarevision"] != before["layout"]["datarevision"]
    assert "batch 7" in spec_of(after)["layout"]["title"]["subtitle"]["text"]
    assert json.loads(json.loads(after.proto.json))["config"] == config_of(chart) | {
        "toImageButtonOptions": {**options, "filename": config_of(after)["toImageButtonOptions"]["filename"]}}
