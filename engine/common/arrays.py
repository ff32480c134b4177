"""Truth tests of small numpy arrays without a ufunc reduction's set-up cost (fast path, issue 15).

`mask.any()` and `mask.all()` run numpy's reduction machinery, a few microseconds each, which on a one-step kernel
table of ~20 rows costs more than the test itself; counting the nonzero values answers the same question directly
(NaN counts as true, as it does for any() and all())."""

from __future__ import annotations

import numpy as np

try:        # the C function under np.count_nonzero's Python wrapper (axis=None goes straight to it)
    from numpy._core.multiarray import count_nonzero as _count_nonzero
except ImportError:         # numpy < 2
    _count_nonzero = np.count_nonzero


def any_true(values) -> bool:
    """np.any(values)."""
    return _count_nonzero(values) > 0


def all_true(values) -> bool:
    """np.all(values)."""
    return _count_nonzero(values) == (values.size if values.__class__ is np.ndarray else np.size(values))


_FLOAT = np.dtype(float)


def finite(values) -> np.ndarray:
    """`values` as floats with NaN as 0 and infinities as the largest floats (numpy.nan_to_num), without
    copying when every value is finite already (the common case; callers do not write to the result)."""
    if values.__class__ is not np.ndarray or values.dtype != _FLOAT:     # a float array as it is (np.asarray's)
        values = np.asarray(values, dtype=float)
    return values if all_true(np.isfinite(values)) else np.nan_to_num(values)


# rows up to which a table (a prefill or a decode step: ~20-40 rows) takes the short paths: labels compared in Python,
# no per-group bookkeeping, energy coefficients and timed rows kept per structure (one number for all of them)
SHORT_ROWS = 64


def equal_to(values: np.ndarray, value) -> np.ndarray:
    """values == value for an array of labels. numpy compares an object array with a str through a conversion of the
    str (~4x a plain ufunc call); a short object array is compared element by element in Python (the same rich
    comparison numpy's object loop makes)."""
    if values.dtype == object and len(values) <= SHORT_ROWS and values.ndim == 1:
        return np.array([item == value for item in values.tolist()], dtype=bool)
    return values == value
