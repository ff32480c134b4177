"""Element-wise operations on a Python float or a numpy array (fast path, issue 15).

A one-phase estimate times one fused attention kernel: numpy on one-value arrays costs ~0.5-1 us per operation,
Python on floats ~0.05 us. These functions take floats (and bools, for conditions) to floats and arrays to
arrays, so one definition of a formula serves both. Float arithmetic and numpy's float64 arithmetic are the same
IEEE double operations, and each function below gives the value numpy gives, NaN included; where no exact
Python equivalent exists (rint of NaN, a division by zero) the float forms raise ScalarFallback or Python's own
error, and the caller runs the arrays instead."""

from __future__ import annotations

import math

import numpy as np


class ScalarFallback(ArithmeticError):
    """A float operation whose numpy result Python does not reproduce exactly: run the arrays instead."""


def where(condition, yes, no):
    """np.where(condition, yes, no)."""
    if condition.__class__ is bool:
        return float(yes if condition else no)
    return np.where(condition, yes, no)


def maximum(a, b):
    """np.maximum(a, b): NaN where either is NaN."""
    if a.__class__ is np.ndarray or b.__class__ is np.ndarray:
        return np.maximum(a, b)
    return a if a != a or a >= b else b


def minimum(a, b):
    """np.minimum(a, b): NaN where either is NaN."""
    if a.__class__ is np.ndarray or b.__class__ is np.ndarray:
        return np.minimum(a, b)
    return a if a != a or a <= b else b


def largest(*values):
    """np.maximum.reduce(values), pairwise from the first."""
    result = values[0]
    for value in values:
        if value.__class__ is np.ndarray:
            return np.maximum.reduce(list(values))
    for value in values[1:]:
        if not (result != result or result >= value):
            result = value
    return result


def ceil(values):
    """np.ceil(values)."""
    if values.__class__ is np.ndarray:
        return np.ceil(values)
    if not math.isfinite(values):
        raise ScalarFallback("ceil of a non-finite value")
    return float(math.ceil(values))


def rint(values):
    """np.rint(values): halves to even."""
    if values.__class__ is np.ndarray:
        return np.rint(values)
    if not math.isfinite(values):
        raise ScalarFallback("rint of a non-finite value")
    return float(round(values))


def logical_not(values):
    """~values of a boolean array, `not` of a bool."""
    return (not values) if values.__class__ is bool else ~values


def full_like(values, fill, dtype=None):
    """np.full(np.shape(values), fill, dtype) for an array, `fill` (as a float or bool) for a float."""
    if values.__class__ is np.ndarray:
        return np.full(values.shape, fill, dtype=dtype)
    return bool(fill) if dtype is bool else float(fill)


def nan_to(values, nan: float):
    """np.nan_to_num(values, nan=nan) of values without infinities (NaN replaced, the rest kept)."""
    if values.__class__ is np.ndarray:
        return np.nan_to_num(values, nan=nan)
    if math.isinf(values):
        raise ScalarFallback("nan_to_num of an infinity")
    return nan if values != values else values


def power(base, exponent):
    """np.power(base, exponent) (numpy's own loop for floats too: it may differ from math.pow in the last bit)."""
    if base.__class__ is np.ndarray:
        return base ** exponent
    return float(np.power(base, exponent))
