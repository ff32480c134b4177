"""Roofline oracles from the seed documents and hand arithmetic (never from the code's own output)."""

from __future__ import annotations


import pytest

import engine
from engine.estimators.roofline import estimate_roofline
from engine.hardware.device import Hardware
from engine.kernels.table import KernelTableBuilder


def one_kernel(hardware, *, macs=0.0, vector_flops=0.0, weight_bytes=0.0, activation_bytes=0.0, dtype="bf16"):
    builder = KernelTableBuilder()
    builder.add(phase="x", name="kernel", type="Ma_Mw", op="gemm", unit="matrix", dtype=dtype, macs=macs,
                vector_flops=vector_flops, weight_bytes=weight_bytes, activation_bytes=activation_bytes)
    return {key: value[0] for key, value in estimate_roofline(builder.build_columns(), hardware).items()}


def test_seed_000_fused_mlp_on_a100_pcie(devices):
    """Seed 000: tensor core 20.65 us, CUDA cores 26.9 ns, memory 129.8 us; estimate 129.8 us."""
    a100 = devices["A100-40GB-PCIe"]
    b, d, f, bf16 = 32, 4096, 8192, 2
    tensor_flops = b * d * f * 2 * 3
    cuda_flops = b * f * 2
    total_bytes = 2 * (b * d * bf16) + 3 * (d * f * bf16)   # x and out, three weights
    assert tensor_flops / a100.matrix_flops_per_s("bf16") == pytest.approx(0.00002065, rel=2e-3)
    assert cuda_flops / a100.vector_flops_per_s == pytest.approx(2.69e-8, rel=2e-3)
    row = one_kernel(a100, macs=tensor_flops / 2, vector_flops=cuda_flops, activation_bytes=2 * b * d * bf16,
                     weight_bytes=3 * d * f * bf16)
    assert row["memory_time_s"] == pytest.approx(total_bytes / 1.555e12, rel=1e-12)
    assert row["time_s"] == pytest.approx(129.8e-6, rel=1e-3)
    assert row["bound"] == "memory"


@pytest.mark.parametrize("m, k, n, expected_s, bound", [
    (32, 4096, 8192, 43.66e-6, "memory"),
    (8192, 8192, 8192, 3.524e-3, "compute"),
])
def test_gemm_roofline_on_a100_pcie(devices, m, k, n, expected_s, bound):
    row = engine.estimate_gemm(devices["A100-40GB-PCIe"], m=m, n=n, k=k, dtype="bf16")
    assert row["time_s"] == pytest.approx(expected_s, rel=1e-3)
    assert row["bound"] == bound
    assert row["flops"] == 2 * m * n * k
    assert row["bytes"] == 2 * (m * k + k * n + m * n)


def seed_003_gpu() -> Hardware:
    """Seed 003's example device: 9.89e14 FLOP/s and 1e10 B/s (1000 cores at 1 GHz, 494.5 MAC/cycle)."""
    return Hardware(name="seed-003", vendor="seed", kind="hypothetical", num_cores=1000, clock_hz=1e9,
                    matrix_macs_per_cycle_per_core_bf16=494.5, vector_flops_per_cycle_per_core=1.0,
                    memory_capacity_bytes=1e9, memory_bandwidth_bytes_per_s=1e10)


def test_seed_003_first_example():
    hw = seed_003_gpu()
    row = one_kernel(hw, macs=1e12 / 2, activation_bytes=1e9)
    assert row["intensity"] == pytest.approx(1e3)
    assert hw.ridge_point("bf16") == pytest.approx(9.89e4)
    assert row["compute_time_s"] == pytest.approx(1e12 / 9.89e14)
    assert row["memory_time_s"] == pytest.approx(0.1)
    assert row["bound"] == "memory"


def test_seed_003_dot_product_intensity():
    """bf16[N] . bf16[N]: 2N FLOP over 4N bytes = 0.5 FLOP/byte (the seed writes the inverse, 2)."""
    n = 1 << 20
    row = one_kernel(seed_003_gpu(), macs=n, activation_bytes=4 * n)
    assert row["intensity"] == pytest.approx(0.5)


def test_seed_003_tpu_v5e_ridge_points(devices):
    tpu = devices["TPU-v5e"]
    assert tpu.ridge_point("bf16") == pytest.approx(1.97e14 / 8.1e11, rel=0.02)     # ~243 (seed)
    assert tpu.ridge_point("int8") == pytest.approx(3.94e14 / 8.1e11, rel=0.02)     # ~486 (seed)


@pytest.mark.parametrize("batch, dtype, bound", [
    (200, "bf16", "memory"), (300, "bf16", "compute"),        # bf16: compute bound once B > ~240
    (200, "int8", "memory"), (300, "int8", "compute"),        # int8: 2B > 486, i.e. B > 243
])
def test_seed_003_matmul_bound_flips_with_batch(devices, batch, dtype, bound):
    d = f = 8192
    row = engine.estimate_gemm(devices["TPU-v5e"], m=batch, k=d, n=f, dtype=dtype)
    value_bytes = 2 if dtype == "bf16" else 1
    assert row["intensity"] == pytest.approx(2 * batch * d * f / (value_bytes * (batch * d + d * f + batch * f)))
    assert row["bound"] == bound


@pytest.mark.parametrize("batch, bound", [(100, "memory"), (150, "compute")])
def test_seed_003_int8_weights_bf16_activations(devices, batch, bound):
    """q2: bf16[B,D] x int8[D,F]: intensity ~ 2B, so compute bound from B > ~121 at the bf16 rate."""
    d = f = 8192
    row = one_kernel(devices["TPU-v5e"], macs=batch * d * f, weight_bytes=d * f,
                     activation_bytes=2 * batch * d + 2 * batch * f, dtype="bf16")
    assert row["intensity"] == pytest.approx(2 * batch * d * f / (2 * batch * d + d * f + 2 * batch * f))
    assert row["bound"] == bound


def test_seed_001_t4_elementwise_round_trip(devices):
    """Seed 001: reading an fp32 8192x8192 matrix on a 0.32 TB/s T4 takes 0.839 ms; read + write 1.678 ms."""
    t4 = devices["T4"]
    elements = 8192 * 8192
    row = one_kernel(t4, vector_flops=elements, activation_bytes=2 * 4 * elements, dtype="fp32")
    assert row["time_s"] == pytest.approx(2 * 0.839e-3, rel=2e-3)
    assert row["bound"] == "memory"


def test_fp32_gemm_without_fp32_matrix_rate_runs_on_vector_units(devices):
    """T4 has no fp32/tf32 tensor-core rate: an fp32 GEMM runs on the CUDA cores (8.1 TFLOP/s)."""
    t4 = devices["T4"]
    assert t4.matrix_rate_dtype("fp32") == "vector"
    row = engine.estimate_gemm(t4, m=4096, n=4096, k=4096, dtype="fp32")
    assert row["compute_time_s"] == pytest.approx(2 * 4096**3 / 8.1e12, rel=0.01)
