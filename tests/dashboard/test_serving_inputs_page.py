"""The Serving page on unusual input (issue 12's audit): every selected device's numbers at the chosen
concurrency, a serving engine that cannot run on a device, an unknown prefill device in the link."""

from __future__ import annotations

import pandas as pd
import pytest

import engine
from dashboard.charts.serving import headline_table
from engine.serving import serve, serving_curve
from tests.dashboard.test_app import run_app

SMALL = {"sv.c": "4", "sv.cmax": "8", "in": "256", "out": "32", "method": "realistic"}


def test_headline_table_has_each_device_at_the_concurrency():
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    devices = [engine.load_hardware(name) for name in ("H100-SXM", "H200-SXM")]
    curve = pd.concat([serving_curve(hw, model, [1, 4], input_length=256, output_length=32) for hw in devices],
                      ignore_index=True)
    table = headline_table(curve, 4)
    assert list(table["device"]) == ["H100-SXM", "H200-SXM"]
    for row, hardware in zip(table.itertuples(index=False), devices):
        expected = serve(hardware, model, concurrency=4, input_length=256, output_length=32)
        assert row[table.columns.get_loc("TPOT mean (ms)")] == round(expected.tpot_s * 1e3, 2)
        assert row[table.columns.get_loc("TTFT mean (ms)")] == round(expected.ttft_s * 1e3, 1)
    assert "why it cannot run" not in table
    failed = curve.copy()
    failed.loc[failed["device"] == "H200-SXM", "error"] = "does not fit"
    assert list(headline_table(failed, 4)["why it cannot run"]) == ["", "does not fit"]


def test_several_devices_each_get_their_headline_numbers():
    app = run_app(page="serving", hw="H100-SXM,H200-SXM", **SMALL)
    assert not app.exception and not app.error
    table = app.dataframe[0].value
    assert list(table["device"]) == ["H100-SXM", "H200-SXM"]
    h200 = serve(engine.load_hardware("H200-SXM"), engine.load_model("meta-llama/Llama-3.1-8B"), concurrency=4,
                 input_length=256, output_length=32, method="realistic")
    assert table["TPOT mean (ms)"].iloc[1] == pytest.approx(round(h200.tpot_s * 1e3, 2))


def test_tensorrt_llm_on_an_amd_device_is_a_warning_naming_both():
    app = run_app(page="serving", hw="MI300X,H100-SXM", **{"sv.backend": "trtllm"}, **SMALL)
    assert not app.exception and not app.error
    warnings = [w.value for w in app.warning if "TensorRT-LLM" in w.value]
    assert len(warnings) == 1 and warnings[0].startswith("MI300X is left out")
    assert "made by AMD" in warnings[0] and "sv.backend" in warnings[0]
    assert {m.label for m in app.metric} >= {"TPOT mean", "TTFT p90"}     # H100-SXM alone: its numbers


def test_an_unknown_prefill_device_in_the_link_stays_warned_on_later_runs():
    app = run_app(page="serving", **{"sv.ds": "1", "sv.dis": "1", "sv.pd": "NoSuch"}, **SMALL)
    assert not app.exception

    def warned(app):
        return [w.value for w in app.warning if "sv.pd" in w.value and "'NoSuch' is not a known device" in w.value]
    assert len(warned(app)) == 1
    assert len(warned(app.run())) == 1        # a rerun (the browser reruns once the URL is rewritten) keeps it
