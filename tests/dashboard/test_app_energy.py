"""The overview's energy section through Streamlit's AppTest: headline metrics, charts, no-energy devices, TDP."""

from __future__ import annotations


from streamlit.testing.v1 import AppTest

import engine
from dashboard.views.overview import OPEN_ENERGY, OPEN_KERNELS
from tests.dashboard.test_app import APP, texts
from tests.dashboard.test_app import run_app as run_closed
from tests.dashboard.charts_sent import chart_specs

ENERGY_CHARTS = {"Energy and power", "Energy by kernel", "Energy by component"}


def run_app(**params) -> AppTest:
    """The app with the overview's energy section opened (it runs only while open)."""
    app = AppTest.from_file(APP, default_timeout=180)
    app.session_state[OPEN_ENERGY] = True
    for key, value in params.items():
        app.query_params[key] = value
    return app.run()


def test_closed_sections_compute_and_show_nothing_until_opened():
    """Issue 14: the energy section and the kernel table are lazy; opening one draws it, the other stays closed."""
    app = run_closed()
    assert not app.exception and not app.error
    titles = {s.value for s in app.subheader}
    assert not ENERGY_CHARTS & titles and "Kernels" not in titles
    assert "Energy per token" not in {m.label for m in app.metric} and len(app.dataframe) == 0
    assert [e.label.split(":")[0] for e in app.main.expander][-2:] == ["Energy and power", "Kernels"]
    app.session_state[OPEN_KERNELS] = True
    app.run()
    assert "Kernels" in {s.value for s in app.subheader} and len(app.dataframe) == 1
    assert not ENERGY_CHARTS & {s.value for s in app.subheader}
    app.session_state[OPEN_ENERGY] = True
    app.run()
    assert ENERGY_CHARTS <= {s.value for s in app.subheader} and "Energy per token" in {m.label for m in app.metric}


def test_default_overview_shows_energy_metrics_and_charts(devices, llama8b):
    app = run_app(method="roofline", chart="memory")        # checked against the engine's roofline estimate
    assert not app.exception and not app.error
    metrics = {m.label: m.value for m in app.metric}
    # defaults: Llama-3.1-8B on H100-SXM, one request of 1024 in / 256 out; method roofline from the URL
    summary = engine.estimate(devices["H100-SXM"], llama8b, engine.Scenario(
        phase="request", batch=1, input_length=1024, output_length=256)).energy
    per_token_mj = summary["energy_per_device_j"] / 256 * 1e3
    assert metrics["Energy per token"] == f"{per_token_mj:,.0f} mJ"
    assert metrics["Tokens per joule"] == f"{256 / summary['energy_per_device_j']:.3g}"
    assert metrics["Average power / TDP"] == f"{summary['average_power_w']:,.0f} / 700 W"
    assert not app.warning  # well under the H100's 700 W
    titles = [s.value for s in app.subheader]
    assert ENERGY_CHARTS <= set(titles)
    assert titles.index("Memory fit") < titles.index("Energy and power") < titles.index("Energy by kernel")


def test_power_above_tdp_warns_that_the_chip_would_throttle():
    app = run_app(**{"edit.H100-SXM": "tdp:150"})  # ~210 W average power against a 150 W TDP
    assert not app.exception
    assert "the chip would throttle" in texts(app.warning)
    assert "TDP" not in texts(app.info)  # the engine's TDP note becomes the warning, not a second message
    assert "/ 150 W" in {m.label: m.value for m in app.metric}["Average power / TDP"]


def test_device_without_energy_says_why_and_draws_no_energy_charts():
    app = run_app(hw="T4")
    assert not app.exception
    assert "T4 has no" in texts(app.info) and "specs workbook" in texts(app.info)
    titles = {s.value for s in app.subheader}
    assert "Energy and power" in titles
    assert not {"Energy by kernel", "Energy by component"} & titles
    assert "Energy per token" not in {m.label for m in app.metric}


def test_compare_page_names_devices_without_energy_on_the_energy_charts():
    app = run_app(page="compare", hw="H100-SXM,T4")
    assert not app.exception and not app.error
    assert {"Energy by kernel", "Energy by component"} <= {s.value for s in app.subheader}
    specs = chart_specs(app)
    energy = [spec for spec in specs if spec["layout"]["title"]["text"].startswith("Energy per phase")]
    assert len(energy) == 2
    for spec in energy:
        assert "no energy values for T4 in the specs workbook" in [a["text"] for a in spec["layout"]["annotations"]]
        assert {device for trace in spec["data"] for device in trace["x"]} == {"H100-SXM"}
