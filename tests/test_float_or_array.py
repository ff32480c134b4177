"""engine/common/float_or_array.py: on floats each operation gives numpy's value to the last bit (NaN included),
or refuses (ArithmeticError) where Python has no exact equivalent."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.common import float_or_array as ops

VALUES = [0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 1.0 / 3.0, 7.0, 1e300, -1e-300, 4503599627370495.5, math.nan]


def same(actual, expected) -> bool:
    expected = float(expected)
    return actual.__class__ is float and (actual == expected or (actual != actual and expected != expected))


@pytest.mark.parametrize("a", VALUES)
@pytest.mark.parametrize("b", VALUES)
def test_two_argument_operations_match_numpy(a, b):
    assert same(ops.maximum(a, b), np.maximum(a, b))
    assert same(ops.minimum(a, b), np.minimum(a, b))
    assert same(ops.largest(a, b, 1.0), np.maximum.reduce([np.array([a]), np.array([b]), np.array([1.0])])[0])
    assert same(ops.where(a > b, a, b), np.where(a > b, a, b))
    if a > 0 and not math.isnan(b):
        with np.errstate(over="ignore", under="ignore"):
            assert same(ops.power(a, b), np.power(np.array([a]), b)[0])


@pytest.mark.parametrize("a", VALUES)
def test_rounding_matches_numpy_or_refuses(a):
    if math.isfinite(a):
        assert same(ops.ceil(a), np.ceil(a)) and same(ops.rint(a), np.rint(a))
        assert same(ops.nan_to(a, 2.0), np.nan_to_num(a, nan=2.0))
    else:
        with pytest.raises(ArithmeticError):
            ops.rint(a)
        assert ops.nan_to(a, 2.0) == 2.0
    with pytest.raises(ArithmeticError):
        ops.ceil(math.inf)


def test_arrays_go_to_numpy():
    values = np.array(VALUES)
    assert np.array_equal(ops.maximum(values, 1.0), np.maximum(values, 1.0), equal_nan=True)
    assert np.array_equal(ops.rint(values), np.rint(values), equal_nan=True)
    assert ops.logical_not(True) is False and ops.logical_not(np.array([True]))[0] == np.False_
    assert ops.full_like(np.zeros(3), 2.0).tolist() == [2.0] * 3 and ops.full_like(1.0, 2) == 2.0
