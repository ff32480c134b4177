"""unique_inverse (engine/estimators/row_groups.py) and group_runs (engine/kernels/table.py), fast path of
issue 15: both answer as np.unique does."""

from __future__ import annotations

import numpy as np
import pytest

from engine.estimators.row_groups import SMALL_UNIQUE, unique_inverse


@pytest.mark.parametrize("size", (1, 2, 7, SMALL_UNIQUE, SMALL_UNIQUE + 1, 300))
def test_unique_inverse_matches_numpy_for_strings_and_integers(size):
    rng = np.random.default_rng(size)
    labels = np.array(["Q*gK", "dQ*gK", "Q*gK (sliding)", "Softmax", "pKV_b*W", "Ä", "a"])
    for values in (rng.integers(-3, 9, size), labels[rng.integers(0, len(labels), size)]):
        unique, inverse = unique_inverse(values)
        expected_unique, expected_inverse = np.unique(values, return_inverse=True)
        assert unique.dtype == expected_unique.dtype
        np.testing.assert_array_equal(unique, expected_unique)
        np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))
        np.testing.assert_array_equal(unique[inverse], values)


@pytest.mark.parametrize("groups", ([0, 0, 1, 1, 1, 2], [0, 1, 2, 3], [0], [], [0, 0, 2, 2], [1, 1, 0], [0, 1, 0],
                                    [0.0, 0.0, 1.0], [3, 3, 4]))
def test_group_runs_matches_numpy(groups):
    from engine.kernels.table import group_runs
    values = np.asarray(groups)
    codes, first, inverse = group_runs(values)
    expected_codes, expected_first, expected_inverse = np.unique(values, return_index=True, return_inverse=True)
    assert codes.dtype == expected_codes.dtype
    np.testing.assert_array_equal(codes, expected_codes)
    np.testing.assert_array_equal(first, expected_first)
    np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))
