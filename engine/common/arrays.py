"""Truth tests of small numpy arrays without a ufunc reduction's set-up cost (fast path, issue 15).

`mask.any()` and `mask.all()` run numpy's reduction machinery, a few microseconds each, which on a one-step kernel
table of ~20 rows costs more than the test itself; np.count_nonzero answers the same question directly (NaN counts
as true, as it does for any() and all())."""

from __future__ import annotations

import numpy as np


def any_true(values) -> bool:
    """np.any(values)."""
    return np.count_nonzero(values) > 0


def all_true(values) -> bool:
    """np.all(values)."""
    return np.count_nonzero(values) == np.size(values)
