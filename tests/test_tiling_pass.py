"""The kept-plan tile search of one pass's GEMMs (engine/estimators/tiling_pass.py) against tiling.choose_tilings, the
per-GEMM search it shortcuts, bit for bit over many shapes, devices and constants; and its guards."""

from __future__ import annotations

import numpy as np
import pytest

from engine.estimators import tiling_pass
from engine.estimators.tiling import GemmRates, Tiling, choose_tilings
from engine.estimators.tiling_pass import pass_tilings

DEVICES = ("H100-SXM", "A100-80GB-SXM", "B200")


def _rates(rng, per_core, value_bytes):
    return GemmRates(per_core, np.full(len(per_core), value_bytes), float(rng.uniform(0.5, 1.0)),
                     float(rng.choice([2.0e12, 3.35e12, 8e12])), float(rng.uniform(0.6, 1.0)),
                     float(rng.choice([0.0, 4e-6])), float(rng.choice([0.0, 2.9e-6])),
                     float(rng.choice([np.inf, 4.0e14, 1.0e15])), float(rng.choice([0.0, 0.14, 0.6])),
                     float(rng.choice([0.0, 1.0e-8])))


def _same(expected: Tiling, got: Tiling) -> None:
    for field in Tiling.__dataclass_fields__:
        want, have = getattr(expected, field), getattr(got, field)
        assert have.shape == want.shape and have.tobytes() == want.tobytes(), (field, want, have)


@pytest.mark.parametrize("device", DEVICES)
def test_pass_tilings_is_choose_tilings_bit_for_bit(devices, device):
    """Random passes (1-12 GEMMs, model-like and odd n and k, batched, fractional m, fp8 and bf16), each compared with
    choose_tilings field by field; the same plan is then reused for new m (a prefill sweep) and compared again. Most
    passes take the kept plan (the rest, whose products pass 2**53, are the guards' test below)."""
    hardware = devices[device]
    rng = np.random.default_rng(sum(map(ord, device)))
    compared = 0
    for _ in range(60):
        rows = int(rng.integers(1, 13))
        n = rng.choice([64, 127, 1024, 1280, 4096, 8192, 28672, 128256, 3000], rows).astype(float)
        k = rng.choice([64, 128, 999, 1024, 8192, 28672], rows).astype(float)
        batch = rng.choice([1, 1, 1, 2, 8, 64, 128], rows).astype(float)
        value_bytes = float(rng.choice([1.0, 2.0]))
        per_core = rng.choice([0.5e12, 1.0e12, 2.0e12], rows) / hardware.num_cores
        rates = _rates(rng, per_core, value_bytes)
        for _ in range(3):      # new m on the kept plan
            m = np.floor(rng.uniform(1, 40000, rows)) + rng.choice([0.0, 0.0, 0.5, 0.25], rows)
            nbytes = (m * k + k * n + m * n) * batch * value_bytes
            got = pass_tilings(m, n, k, batch, nbytes, per_core, value_bytes, hardware, rates)
            if got is None:     # a product past 2**53 (a huge batched GEMM): the general path (guards test below)
                continue
            _same(choose_tilings(m, n, k, batch, nbytes, hardware, rates), got)
            compared += 1
    assert compared >= 120


def test_seed_002_shapes(devices):
    """1792 and 1793 on A100 (the seed's tile and wave example) through both paths."""
    hardware = devices["A100-80GB-SXM"]
    per_core = np.full(2, 1024 * 1.41e9)
    rates = GemmRates(per_core, np.full(2, 2.0), 0.8, 2.039e12, 0.8, 5e-6)
    m = n = k = np.array([1792.0, 1793.0])
    nbytes = 3 * m * m * 2
    got = pass_tilings(m, n, k, np.ones(2), nbytes, per_core, 2.0, hardware, rates)
    _same(choose_tilings(m, n, k, np.ones(2), nbytes, hardware, rates), got)


@pytest.mark.parametrize("change", ["fractional n", "fractional k", "fractional batch", "zero m", "negative m",
                                    "nan m", "inf m", "huge"])
def test_guards_leave_rows_to_choose_tilings(devices, change):
    """Rows whose kept products could round, or whose m makes the split-K zero factor differ, take the general path."""
    hardware = devices["H100-SXM"]
    m, n, k, batch = (np.array([v]) for v in (1024.0, 8192.0, 8192.0, 1.0))
    if change == "fractional n":
        n = n + 0.5
    elif change == "fractional k":
        k = k + 0.5
    elif change == "fractional batch":
        batch = batch + 0.5
    elif change == "zero m":
        m = m * 0.0
    elif change == "negative m":
        m = -m
    elif change == "nan m":
        m = m * np.nan
    elif change == "inf m":
        m = m * np.inf
    else:
        m, n, k, batch = (np.array([v]) for v in (2.0 ** 40, 2.0 ** 20, 2.0 ** 20, 2.0 ** 10))
    per_core = np.array([1e12 / 132])
    rates = GemmRates(per_core, np.array([2.0]), 0.8, 3.35e12, 0.9, 5e-6)
    assert pass_tilings(m, n, k, batch, m * 2.0, per_core, 2.0, hardware, rates) is None


def test_plans_are_kept_and_bounded(devices):
    """One plan per (n, k, batch, rate, device, rates): equal inputs reuse it, at most KEPT are kept."""
    tiling_pass.clear()
    hardware = devices["H100-SXM"]
    per_core = np.array([1e12 / 132])
    rates = GemmRates(per_core, np.array([2.0]), 0.8, 3.35e12, 0.9, 5e-6)
    for m in (100.0, 101.0):
        pass_tilings(np.array([m]), np.array([4096.0]), np.array([4096.0]), np.ones(1), np.array([1e6]), per_core, 2.0,
                     hardware, rates)
    assert len(tiling_pass._KEPT) == 1
    for n in range(tiling_pass.KEPT + 5):
        pass_tilings(np.array([100.0]), np.array([4096.0 + n]), np.array([4096.0]), np.ones(1), np.array([1e6]),
                     per_core, 2.0, hardware, rates)
    assert len(tiling_pass._KEPT) == tiling_pass.KEPT
