"""Energy: per-kernel activities x per-operation energies + static power x time (engine/results/energy.py)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import engine
from engine.results.energy import ENERGY_COLUMNS, energy_summary, kernel_energy
from engine.results.run import estimate_gemm
from engine.hardware.device import Hardware

PJ = 1e-12


def toy(**changes) -> Hardware:
    base = dict(name="toy", vendor="test", kind="hypothetical", num_cores=10, clock_hz=1e9,
                matrix_macs_per_cycle_per_core_bf16=1000, vector_flops_per_cycle_per_core=100,
                memory_capacity_bytes=80e9, memory_bandwidth_bytes_per_s=1e12, tdp_w=500,
                matrix_energy_j_per_mac_bf16=0.5 * PJ, vector_energy_j_per_flop=1 * PJ,
                memory_energy_j_per_byte=30 * PJ, link_energy_j_per_bit=5 * PJ, static_power_w=100)
    return Hardware(**{**base, **changes})


def gemm_table(hw, m, n, k):
    row = estimate_gemm(hw, m=m, n=n, k=k, dtype="bf16")
    return pd.DataFrame([{**row, "count": 1.0}])


def test_one_gemm_by_hand():
    hw = toy()
    m = n = k = 1024
    table = gemm_table(hw, m, n, k)
    columns, notes = kernel_energy(table, hw)
    assert notes == []
    macs, nbytes = float(m * n * k), 3.0 * 1024 * 1024 * 2           # A, B, C in bf16, each once
    time = max(2 * macs / (2 * 10 * 1e9 * 1000), nbytes / 1e12)      # roofline: 0.10737 ms compute bound
    assert table["time_s"][0] == pytest.approx(time)
    assert columns["matrix_energy_j"][0] == pytest.approx(macs * 0.5 * PJ)
    assert columns["hbm_energy_j"][0] == pytest.approx(nbytes * 30 * PJ)
    assert columns["static_energy_j"][0] == pytest.approx(100 * time)
    assert columns["energy_j"][0] == pytest.approx(macs * 0.5 * PJ + nbytes * 30 * PJ + 100 * time)
    assert columns["link_energy_j"][0] == 0 and columns["vector_energy_j"][0] == 0


def test_missing_values_give_energy_unavailable_not_a_crash():
    hw = toy(static_power_w=None, matrix_energy_j_per_mac_bf16=None)
    columns, notes = kernel_energy(gemm_table(hw, 64, 64, 64), hw)
    assert columns is None
    assert "energy unavailable" in notes[0] and "static_power" in notes[0] and "matrix_energy_per_mac_bf16" in notes[0]


def test_request_energy_per_token_and_tokens_per_joule(devices, llama8b):
    scenario = engine.Scenario(phase="request", batch=2, input_length=128, output_length=16)
    result = engine.estimate(devices["H100-SXM"], llama8b, scenario)
    e = result.energy
    k = result.kernels
    assert set(ENERGY_COLUMNS) <= set(k.columns)
    total = float((k["count"] * k["energy_j"]).sum())
    assert e["request_energy_j"] == pytest.approx(total)
    assert sum(p["energy_j"] for p in e["phases"].values()) == pytest.approx(total)
    assert e["energy_per_token_j"] == pytest.approx(e["request_energy_j"] / (2 * 16))
    assert e["tokens_per_j"] == pytest.approx(1 / e["energy_per_token_j"])
    assert e["average_power_w"] == pytest.approx(total / result.total_time_s)
    assert sum(e["components_j"].values()) == pytest.approx(total)
    assert not e["exceeds_tdp"] and e["average_power_w"] < devices["H100-SXM"].tdp_w
    data = result.to_dict()
    assert data["energy"]["request_energy_j"] == pytest.approx(total)
    assert "energy_j" in data["kernels"][0]


def test_energy_over_devices_and_link_bytes(devices, llama8b):
    scenario = engine.Scenario(phase="decode", batch=4, context_length=512, tp=2)
    result = engine.estimate(devices["H100-SXM"], llama8b, scenario)
    k = result.kernels
    collectives = k[k["op"] == "collective"]
    assert (collectives["link_energy_j"] == collectives["link_bytes"] * 8 * 5.5e-12).all()
    assert result.energy["request_energy_j"] == pytest.approx(2 * result.energy["energy_per_device_j"])
    assert result.energy["energy_per_token_j"] == pytest.approx(result.energy["request_energy_j"] / 4)


def test_hierarchical_counts_every_level(devices, llama8b):
    scenario = engine.Scenario(phase="prefill", batch=1, input_length=512)
    hw = devices["H100-SXM"]
    k = engine.estimate(hw, llama8b, scenario, method="hierarchical").kernels
    assert (k["hbm_energy_j"] == k["hbm_bytes"] * hw.memory_energy_j_per_byte).all()
    assert (k["llc_energy_j"] == k["llc_bytes"] * hw.llc_energy_j_per_byte).all()
    assert (k["sram_energy_j"] == k["sram_bytes"] * hw.sram_energy_j_per_byte).all()


def test_tdp_flag_on_a_constructed_case():
    hw = toy(tdp_w=50)                                   # static power alone (100 W) is above this TDP
    table = gemm_table(hw, 1024, 1024, 1024).assign(phase="prefill")
    from engine.results.energy import add_energy
    add_energy(table, hw)
    scenario = engine.Scenario(phase="prefill", batch=1, input_length=1)
    summary = energy_summary(table, hw, scenario)
    power = table["energy_j"][0] / table["time_s"][0]
    assert summary["average_power_w"] == pytest.approx(power) and power > 100
    assert summary["exceeds_tdp"]
    assert not energy_summary(table, toy(tdp_w=1000), scenario)["exceeds_tdp"]


def test_device_without_energy_values_says_unavailable(devices, llama8b):
    result = engine.estimate(devices["T4"], llama8b, engine.Scenario(phase="decode", batch=1, context_length=128))
    assert result.energy is None and "energy_j" not in result.kernels
    assert any(note.startswith("energy unavailable: T4") for note in result.notes)
    assert result.to_dict()["energy"] is None
    assert not math.isnan(result.total_time_s)


def test_cli_prints_energy(capsys):
    from engine.cli.entry import main
    assert main(["estimate", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--phase", "request",
                 "--input-len", "64", "--output-len", "8"]) in (0, None)
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("energy"))
    assert "J/token" in line and "tokens/J" in line and "700 W TDP" in line


def test_cli_energy_is_in_the_unit_that_suits_it(capsys):
    """A long request uses kilojoules: the line says 'kJ' with three digits, never '3.98e+03 J'."""
    from engine.cli.entry import main
    assert main(["estimate", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--phase", "request",
                 "--batch", "64", "--input-len", "4096", "--output-len", "4096", "--json"]) in (0, None)
    request_j = json.loads(capsys.readouterr().out)["energy"]["request_energy_j"]
    assert 1e3 <= request_j < 1e6                                  # this request's energy is in the kJ range
    assert main(["estimate", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--phase", "request",
                 "--batch", "64", "--input-len", "4096", "--output-len", "4096"]) in (0, None)
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("energy"))
    shown = line.split()[1:3]
    assert shown[1] == "kJ" and "e+" not in line
    assert float(shown[0]) == pytest.approx(request_j / 1e3, rel=5e-3)
