"""The browser form of a figure (dashboard/browser_spec.py: template written in, no meta, a data revision) draws the
same plot as the figure itself, in Chromium with the Plotly the page draws with (dashboard/plotly_view.py's bundle): Plotly's full layout and full data (what
it draws from, every default resolved) are equal, and so is the number of SVG nodes. The figures are the ones the
pages draw (AppTest runs of several pages)."""

from __future__ import annotations

import json

import pytest
from plotly.io.json import to_json_plotly
from streamlit.testing.v1 import AppTest

from dashboard import figure_cache
from dashboard.browser_spec import browser_dict
from tests.browser.waits import TIMEOUT_MS, charts_drawn
from tests.conftest import REPO

pytestmark = pytest.mark.browser

PAGES = ({"chart": "all"}, {"page": "compare", "hw": "H100-SXM,H200-SXM", "chart": "all"},
         {"page": "explore", "ex.view": "pareto"}, {"page": "explore", "ex.view": "sensitivity"},
         {"page": "sweeps", "sweep": "tp"})

COMPARE = """async ([first, second]) => {
  const P = window.Plotly, one = document.getElementById('one'), two = document.getElementById('two');
  await P.newPlot(one, first.data, first.layout); await P.newPlot(two, second.data, second.layout);
  const LEFT_OUT = ['uid', 'template', 'meta', 'datarevision', 'index'];
  const clean = o => { if (Array.isArray(o)) return o.map(clean);
    if (o && typeof o === 'object') { const kept = {}; for (const k of Object.keys(o).sort()) {
      if (!k.startsWith('_') && !LEFT_OUT.includes(k) && typeof o[k] !== 'function') kept[k] = clean(o[k]); }
      return kept; }
    return o; };
  const differences = [], walk = (a, b, path) => {
    if (JSON.stringify(a) === JSON.stringify(b)) return;
    if (a && b && typeof a === 'object' && typeof b === 'object') {
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) walk(a[k], b[k], path + '.' + k); return; }
    differences.push(path + ': ' + JSON.stringify(a) + ' vs ' + JSON.stringify(b)); };
  walk(clean(one._fullLayout), clean(two._fullLayout), 'layout');
  walk(clean(one._fullData), clean(two._fullData), 'data');
  const nodes = [one, two].map(plot => plot.querySelectorAll('*').length);
  if (nodes[0] !== nodes[1]) differences.push('SVG nodes: ' + nodes.join(' vs '));
  return differences; }"""


def sent_figures(monkeypatch) -> list[tuple[str, dict]]:
    """(page, figure dict) for every chart the pages in PAGES draw (AppTest, in this process; every chart on them
    goes to the chart component through figure_cache.browser_json)."""
    seen: list[tuple[str, dict]] = []
    given = figure_cache.browser_json
    page = ""

    def spy(figure):
        seen.append((page, figure.to_dict()))
        return given(figure)
    monkeypatch.setattr(figure_cache, "browser_json", spy)
    for params in PAGES:
        page = json.dumps(params)
        app = AppTest.from_file(str(REPO / "dashboard" / "app.py"), default_timeout=300)
        for key, value in params.items():
            app.query_params[key] = value
        app.run()
        assert not app.exception, (params, app.exception)
    return seen


def test_plotly_draws_the_browser_form_of_every_chart_as_the_figure_itself(page, server_url, monkeypatch):
    figures = sent_figures(monkeypatch)
    assert len(figures) >= 15
    page.goto(server_url)
    page.wait_for_function(charts_drawn(1), timeout=TIMEOUT_MS)         # the page's Plotly is loaded
    page.evaluate("() => { document.body.innerHTML = '<div id=one style=\"width:960px\"></div>"
                  "<div id=two style=\"width:960px\"></div>'; }")
    different = []
    for name, shared in figures:
        sent = browser_dict(shared)
        assert "template" not in sent["layout"]
        differences = page.evaluate(COMPARE, [json.loads(to_json_plotly(shared)), json.loads(to_json_plotly(sent))])
        if differences:
            different.append((name, shared["layout"].get("title", {}).get("text"), differences[:5]))
    assert different == []
