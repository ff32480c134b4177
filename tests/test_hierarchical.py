"""Hierarchical (cache-aware) roofline: traffic per level by hand, and the bound names the level."""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine

MiB, KiB = 1024**2, 1024


@pytest.fixture(scope="module")
def small_caches(devices):
    """A100 with small caches so that reuse shows on a 1024^3 GEMM."""
    return devices["A100-80GB-SXM"].with_changes(
        register_file_per_core_bytes=8 * KiB, sram_per_core_bytes=64 * KiB, llc_capacity_bytes=1 * MiB)


def test_traffic_per_level_by_hand(small_caches):
    """1024^3 bf16: A, B and C are 2 MiB each. A square tile t fits capacity S if t^2 + 2 t 32 <= S / 2 B:
    registers 8 KiB -> t = sqrt(32^2 + 4096) - 32 = 39.55 -> 26 tiles per side;
    SRAM 64 KiB -> t = sqrt(32^2 + 32768) - 32 = 151.8 -> 7 per side;
    LLC 1 MiB -> t = sqrt(32^2 + 524288) - 32 = 692.8 -> 2 per side.
    Traffic served by a level = A x (tiles along n) + B x (tiles along m) + C."""
    for capacity, per_side in ((8 * KiB, 26), (64 * KiB, 7), (1 * MiB, 2)):
        assert math.ceil(1024 / (math.sqrt(32**2 + capacity / 2) - 32)) == per_side
    row = engine.estimate_gemm(small_caches, 1024, 1024, 1024, method="hierarchical")
    operand = 1024 * 1024 * 2
    assert row["hbm_bytes"] == pytest.approx((2 + 2 + 1) * operand)       # reuse from the LLC tile
    assert row["llc_bytes"] == pytest.approx((7 + 7 + 1) * operand)       # reuse from the SRAM tile
    assert row["sram_bytes"] == pytest.approx((26 + 26 + 1) * operand)    # reuse from the register tile
    assert row["hbm_time_s"] == pytest.approx(5 * operand / 2.039e12)
    assert row["llc_time_s"] == pytest.approx(15 * operand / (5120 * 1.41e9))
    assert row["sram_time_s"] == pytest.approx(53 * operand / (108 * 1.41e9 * 128))
    assert row["time_s"] == max(row["compute_time_s"], row["hbm_time_s"], row["llc_time_s"], row["sram_time_s"])


def test_a_gemm_that_fits_the_llc_moves_each_operand_once(devices):
    row = engine.estimate_gemm(devices["A100-80GB-SXM"], 4096, 4096, 4096, method="hierarchical")
    assert row["hbm_bytes"] == row["bytes"] == 3 * 4096 * 4096 * 2
    assert row["bound"] == "compute"


def test_bound_names_the_level(devices):
    a100 = devices["A100-80GB-SXM"]
    slow_llc = a100.with_changes(llc_bandwidth_bytes_per_s=50e9)            # hypothetical: L2 at 50 GB/s
    assert engine.estimate_gemm(slow_llc, 4096, 4096, 4096, method="hierarchical")["bound"] == "llc"
    slow_sram = a100.with_changes(sram_bandwidth_bytes_per_cycle_per_core=1.0)     # 1 B/cycle: the physical floor
    assert engine.estimate_gemm(slow_sram, 4096, 4096, 4096, method="hierarchical")["bound"] == "sram"
    assert engine.estimate_gemm(a100, 1, 8192, 8192, method="hierarchical")["bound"] == "memory"   # GEMV: HBM


def test_levels_without_bandwidth_are_skipped(devices):
    no_llc = devices["A100-80GB-SXM"].with_changes(llc_bandwidth_bytes_per_s=50e9)
    no_llc = no_llc.with_changes(llc_bandwidth_bytes_per_s=None)
    row = engine.estimate_gemm(no_llc, 4096, 4096, 4096, method="hierarchical")
    assert np.isnan(row["llc_time_s"]) and row["bound"] != "llc"
    nvl = devices["NVL-AX"]   # the seed's device: only HBM bandwidth and an LLC capacity
    row = engine.estimate_gemm(nvl, 8192, 8192, 8192, method="hierarchical")
    assert np.isnan(row["llc_time_s"]) and np.isnan(row["sram_time_s"])
    assert row["time_s"] == max(row["compute_time_s"], row["hbm_time_s"])


def test_never_faster_than_the_roofline_and_sums_stay_consistent(devices, llama8b):
    hw = devices["H100-SXM"]
    for phase in ("prefill", "decode", "chunked", "request"):
        scenario = engine.Scenario(phase=phase, batch=4, input_length=512, output_length=16)
        roofline = engine.estimate(hw, llama8b, scenario)
        hierarchical = engine.estimate(hw, llama8b, scenario, method="hierarchical")
        k = hierarchical.kernels
        assert set(k["bound"]) <= {"compute", "memory", "llc", "sram"}
        assert (k["time_s"].to_numpy() >= roofline.kernels["time_s"].to_numpy() * (1 - 1e-12)).all()
        for phase_name, total in hierarchical.phases["time_s"].items():
            rows = k[k["phase"] == phase_name]
            assert (rows["count"] * rows["time_s"]).sum() == pytest.approx(total, rel=1e-9)
