"""Tile and wave quantization against hand arithmetic (seed 002's 1792 vs 1793 example and edges)."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.estimators.tiling import candidate_terms, tile_candidates, tile_count, wave_count


@pytest.fixture(scope="module")
def a100_256x128(devices):
    """A100 (108 SMs) whose GEMMs use only 256x128 tiles, with round achievable fractions."""
    return devices["A100-80GB-SXM"].with_changes(
        gemm_tile_shapes="256x128", achievable_matrix_fraction=0.8, achievable_memory_bandwidth_fraction=0.8,
        kernel_latency_s=5e-6)


def test_seed_002_tile_and_wave_counts():
    """1792 / 256 = 7 and 1792 / 128 = 14: 98 tiles, one wave of 108 SMs; 1793: 8 x 15 = 120, two waves."""
    assert tile_count(1792, 1792, 256, 128) == 7 * 14 == 98
    assert wave_count(98, 108) == 1
    assert tile_count(1793, 1793, 256, 128) == 8 * 15 == 120
    assert wave_count(120, 108) == 2


def test_seed_002_candidate_without_split_k(a100_256x128):
    per_core = 1024 * 1.41e9   # A100 bf16 MAC/s per SM
    col = lambda v: np.array([[float(v)]])  # noqa: E731
    for size, tiles, waves in ((1792, 98, 1), (1793, 120, 2)):
        terms = candidate_terms(col(size), col(size), col(size), 1.0, col(3 * size * size * 2), col(per_core),
                                a100_256x128, 2.0, 2.039e12)
        no_split = np.flatnonzero(terms["split_k"][0] == 1)[0]
        assert terms["tiles"][0, no_split] == tiles and terms["waves"][0, no_split] == waves
        assert terms["wave_peak_s"][0, no_split] == pytest.approx(waves * 256 * 128 * size / per_core)


def test_seed_002_estimate_jumps_from_1792_to_1793(a100_256x128):
    small = engine.estimate_gemm(a100_256x128, 1792, 1792, 1792, method="realistic")
    large = engine.estimate_gemm(a100_256x128, 1793, 1793, 1793, method="realistic")
    # 1792: one wave of 98 tiles, compute-bound: latency + tile time at 80% of 1024 MAC/cycle at 1.41 GHz
    assert (small["tiles"], small["waves"], small["split_k"]) == (98, 1, 1)
    assert small["time_s"] == pytest.approx(5e-6 + 256 * 128 * 1792 / (1024 * 1.41e9 * 0.8), rel=1e-9)
    # 1793: the best split-K (fewer idle SMs, more partial-sum traffic) still costs > 25% more
    assert large["time_s"] > 1.25 * small["time_s"]
    # one wave of 98 tiles leaves 10 of 108 SMs idle: the wave gap at peak is 10/108 of the wave
    assert small["gap_wave_quantization_s"] == pytest.approx(256 * 128 * 1792 / (1024 * 1.41e9) * 10 / 108, rel=1e-9)
    assert large["gap_wave_quantization_s"] > 2 * small["gap_wave_quantization_s"]
    roofline_small = engine.estimate_gemm(a100_256x128, 1792, 1792, 1792)["time_s"]
    roofline_large = engine.estimate_gemm(a100_256x128, 1793, 1793, 1793)["time_s"]
    assert roofline_large / roofline_small == pytest.approx((1793 / 1792) ** 3, rel=1e-9)   # no jump


def test_tile_quantization_of_m(devices):
    """m = 4097 with 128-row tiles pads to 33 x 128 = 4224 rows: 127/4097 more matrix work at peak."""
    hw = devices["A100-80GB-SXM"].with_changes(gemm_tile_shapes="128x128")
    assert tile_count(4097, 4096, 128, 128) == 33 * 32
    exact = engine.estimate_gemm(hw, 4096, 4096, 4096, method="realistic")
    padded = engine.estimate_gemm(hw, 4097, 4096, 4096, method="realistic")
    assert exact["gap_tile_quantization_s"] == 0.0
    ideal = 2 * 4097 * 4096 * 4096 / hw.matrix_flops_per_s("bf16")     # compute-bound at this size
    assert padded["ideal_time_s"] == pytest.approx(ideal, rel=1e-12)
    assert padded["gap_tile_quantization_s"] == pytest.approx(ideal * 127 / 4097, rel=1e-9)


def test_tiles_that_do_not_fit_the_sram_are_dropped(devices):
    """Two pipeline stages of a 256x128 tile (32-deep k slices) need (256 + 128) x 32 x 2 B x 2 = 48 KiB."""
    hw = devices["A100-80GB-SXM"].with_changes(gemm_tile_shapes="256x128,64x64", sram_per_core_bytes=40 * 1024)
    tile_m, tile_n, _ = tile_candidates(hw, 2.0)
    assert set(zip(tile_m, tile_n)) == {(64.0, 64.0)}
    roomy = hw.with_changes(sram_per_core_bytes=48 * 1024)
    assert (256.0, 128.0) in set(zip(*tile_candidates(roomy, 2.0)[:2]))


def test_split_k_for_a_skinny_gemm(devices):
    """m = 16, n = 1024, k = 65536: 8 tiles of 64x128 leave 100 of 108 SMs idle; split-K fills them."""
    hw = devices["A100-80GB-SXM"].with_changes(gemm_tile_shapes="64x128")
    row = engine.estimate_gemm(hw, 16, 1024, 65536, method="realistic")
    assert row["split_k"] > 1
    assert row["tiles"] == 8 * row["split_k"]


def test_gemv_streams_without_tiles(devices):
    hw = devices["H100-SXM"]
    row = engine.estimate_gemm(hw, 1, 8192, 8192, method="realistic")
    assert np.isnan(row["tile_m"]) and row["gap_tile_quantization_s"] == 0.0
    weights = (8192 * 8192 + 2 * 8192) * 2
    expected = hw.kernel_latency_s + weights / (hw.memory_bandwidth_bytes_per_s * hw.achievable_memory_bandwidth_fraction)
    assert row["kernel_time_s"] == pytest.approx(expected, rel=1e-12)
