"""Weighted sums that give the same bits on every machine.

`np.dot` of two float vectors runs in the BLAS library, which picks its kernel by the CPU (OpenBLAS: Haswell, Zen,
SkylakeX, ...), and kernels add in different orders: the same estimate then differed in its last bits between
machines (energy totals, a pipeline's bubble rows). numpy's own sum adds pairwise in an order fixed by its source,
whatever the CPU, and multiplying element by element rounds each product alone, so this sum is reproducible."""

from __future__ import annotations

import numpy as np


def weighted_sum(values: np.ndarray, weights: np.ndarray) -> float:
    """sum(values * weights) as a Python float, added in numpy's fixed pairwise order (never through BLAS)."""
    return float(np.add.reduce(np.multiply(values, weights)))
