"""Views that drop a device for lack of energy values say so (issue 14): the Pareto energy panel, Explore's
line and heatmap of an energy metric name every device they leave out and why."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from dashboard.charts import heatmap_figure, line_figure, pareto_figure
from engine.explore.grid import sweep_grid

DECODE = engine.Scenario(phase="decode", batch=8, input_length=1024)
DEVICES = ("H100-SXM", "TPU-v5e", "T4")


@pytest.fixture(scope="module")
def frame(devices, llama8b):
    return sweep_grid(llama8b, DECODE, {"batch": [1, 8, 64], "device": list(DEVICES)}, hardware=devices["H100-SXM"],
                      devices={name: devices[name] for name in DEVICES})


def footnote(figure) -> str:
    return " ".join(a.text.replace("<br>", " ") for a in figure.layout.annotations if a.name == "footnote")


def test_the_workbook_gives_energy_to_h100_only_among_these(devices):
    # independent of the charts: TPU-v5e has per-operation energies but no static power (no published TDP),
    # T4 has neither; H100-SXM has both
    assert devices["H100-SXM"].static_power_w and devices["H100-SXM"].memory_energy_j_per_byte
    assert devices["TPU-v5e"].static_power_w is None and devices["T4"].static_power_w is None


def test_pareto_energy_panel_names_the_devices_it_leaves_out(frame):
    figure = pareto_figure(frame, ["batch"])
    energy_cloud = {t.meta["device"]: len([v for v in t.y if v is not None and np.isfinite(v)])
                    for t in figure.data if t.meta and t.meta.get("role") == "cloud" and t.xaxis == "x2"}
    assert energy_cloud["H100-SXM"] > 0 and energy_cloud.get("TPU-v5e", 0) == 0 and energy_cloud.get("T4", 0) == 0
    note = footnote(figure)
    assert "Tokens per joule leaves out TPU-v5e, T4" in note and "no energy values" in note
    assert "H100-SXM" not in note
    assert "Output tokens/s per device leaves out" not in note        # every device has a throughput


def test_explore_line_of_an_energy_metric_names_the_devices_without_values(frame):
    figure = line_figure(frame, "batch", "tokens_per_j", "device")
    assert "Tokens per joule leaves out TPU-v5e, T4" in footnote(figure)
    assert "leaves out" not in footnote(line_figure(frame, "batch", "tpot_s", "device"))


def test_explore_heatmap_of_a_device_without_energy_says_why_it_is_empty(devices, llama8b):
    sweep = sweep_grid(llama8b, DECODE, {"batch": [1, 8], "input_length": [512, 1024]}, hardware=devices["T4"])
    figure = heatmap_figure(sweep, "batch", "input_length", "energy_per_token_j")
    assert "Energy per token leaves out the device: no energy values" in footnote(figure)
    h100 = sweep_grid(llama8b, DECODE, {"batch": [1, 8], "input_length": [512, 1024]}, hardware=devices["H100-SXM"])
    assert footnote(heatmap_figure(h100, "batch", "input_length", "energy_per_token_j")) == ""
