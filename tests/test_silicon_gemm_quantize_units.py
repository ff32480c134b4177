"""The tables' activation-quantize constants per framework and kind of matrix unit (fit.QUANTIZE_BY_SCALE_UNITS, off:
tried and not kept, h/gemm11, docs/accuracy.md).

- hand arithmetic: with the switch on, an H100 group (no native block scales) pays "<framework>/promoted"'s latency and a
  B200 group "<framework>/native"'s, each plus m x k x 3 bytes at the achievable bandwidth; a key the constants lack
  falls back to the framework's; off, the key is the framework;
- the fit recovers two latencies of one framework from times made with them, where one shared value cannot fit both.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.calibration.silicon import fit, tables
from engine.estimators.realistic import DeviceRates
from engine.hardware.specs import load_specs

SUBSET = Path(__file__).parent / "data" / "aiconfigurator" / "systems"


@pytest.fixture
def split(monkeypatch):
    monkeypatch.setattr(fit, "QUANTIZE_BY_SCALE_UNITS", True)


def _one(device: str, m: int = 64, k: int = 4096) -> fit.DeviceGemms:
    rows = pd.DataFrame({"device": [device], "framework": ["sglang"], "m": [m], "n": [4096], "k": [k],
                         "time_s": [1.0], "weight_dtype": ["fp8"], "activation_dtype": ["fp8"], "dtype": ["fp8"]})
    return fit.DeviceGemms(rows, load_specs()[device], tile_store={})


def test_hand_arithmetic_of_the_quantize_kernel_per_kind_of_unit(split):
    latency = {"sglang/promoted": 1.75e-6, "sglang/native": 3.5e-6}
    for device, key, expected_latency in (("H100-SXM", "sglang/promoted", 1.75e-6), ("B200", "sglang/native", 3.5e-6)):
        group = _one(device)
        assert group.quantize_key == key
        rates = DeviceRates.of(load_specs()[device])
        stream = 64 * 4096 * 3.0 / (rates.bandwidth * rates.memory_fraction)   # read bf16, write e4m3
        assert float(np.asarray(group.quantize_s(latency))[0]) == pytest.approx(expected_latency + stream, rel=1e-12)
        # 6 bytes per value: twice the stream
        assert float(np.asarray(group.quantize_s(latency, {key: 6.0}))[0]) == pytest.approx(
            expected_latency + 2 * stream, rel=1e-12)
    # the shipped constants are keyed by framework: a split key falls back to them
    assert float(np.asarray(_one("H100-SXM").quantize_s({"sglang": 3.25e-6}))[0]) > 3.25e-6


def test_switch_off_keys_by_framework():
    assert not fit.QUANTIZE_BY_SCALE_UNITS      # the shipped default: tried and not kept (B300 worse)
    assert _one("H100-SXM").quantize_key == _one("B200").quantize_key == "sglang"


def test_the_fit_recovers_one_latency_per_kind_of_unit(split):
    rows = tables.gemm_table(SUBSET)
    rows = rows[rows["dtype"] == "fp8"].assign(framework="sglang")
    groups = list(fit.device_gemms(rows, load_specs(), tile_store={}).values())
    truth = {"sglang/promoted": 1.75e-6, "sglang/native": 3.5e-6}
    for g in groups:        # times made with the constants (efficiency 1.0, 4,500 cycles, no cap, split-K, loss, step)
        g.measured = g.predicted_clock(1.0, 4500.0, 0.0, quantize_latency=truth)
    fitted = fit.fit_dtype_clock_block_scaled(groups, latency_cycles=4500.0, quantize_bytes=False)
    assert fitted[5] == pytest.approx(truth, abs=0.25e-6)     # one step of the grid

    def p90_error(quantize) -> float:
        predicted = np.concatenate([g.predicted_clock(*fitted[:5], quantize_latency=quantize) for g in groups])
        return float(np.quantile(np.abs(predicted / np.concatenate([g.measured for g in groups]) - 1), 0.9))
    # measured: fitted 2.2% (the grids' steps); one value for both kinds (their mean) 6.5%: it misses both devices'
    # small GEMMs
    assert p90_error(fitted[5]) < 0.035
    assert p90_error({"sglang": 2.625e-6}) > 0.05
