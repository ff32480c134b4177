"""Numbers known as arithmetic of one variable, recorded and replayed (the pass templates' token count, issue 15).

`Traced.variable()` stands for a value not known yet (a pass's token count). Python's arithmetic operators on it
(+, -, *, /, //, unary -, and `as_float`) return new `Traced` values that record the operation and its operands in
order; `compile_traced` turns lists of recorded values (and plain constants) into one Python function of the
variable that performs exactly those operations, in that order, on the same operand objects. For a variable of the
type it was traced with, the function gives every value the traced code would have computed (bit for bit: it is
the same computation), as long as the traced code did not branch on the variable's value. Anything that would
read the value (comparisons, truth tests, float()/int(), str()/formatting, numpy conversion or ufuncs, powers)
raises `NotTraceable`
or numpy's TypeError, so such code cannot be traced and callers fall back to computing directly.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np


class NotTraceable(TypeError):
    """The traced code needed the variable's value (a comparison, a conversion, numpy)."""


def _refuse(self, *args, **kwargs):
    raise NotTraceable("a traced number has no value to compare, convert or pass to numpy")


class Traced:
    """A value computed from the variable by the operation `op` on `left` (and `right`); op None: the variable."""

    __slots__ = ("op", "left", "right")
    __array_ufunc__ = None          # numpy ufuncs refuse it (TypeError) and array operators defer to it
    __array__ = __bool__ = __float__ = __int__ = __index__ = __complex__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _refuse
    __pow__ = __rpow__ = __mod__ = __rmod__ = __abs__ = __round__ = __floor__ = __ceil__ = __trunc__ = _refuse
    __str__ = __format__ = __len__ = __iter__ = __getitem__ = _refuse    # no value in a name or a shape either
    __hash__ = None

    def __init__(self, op: str | None, left=None, right=None) -> None:
        self.op, self.left, self.right = op, left, right

    @classmethod
    def variable(cls) -> "Traced":
        return cls(None)

    def __add__(self, other): return Traced("+", self, other)
    def __radd__(self, other): return Traced("+", other, self)
    def __sub__(self, other): return Traced("-", self, other)
    def __rsub__(self, other): return Traced("-", other, self)
    def __mul__(self, other): return Traced("*", self, other)
    def __rmul__(self, other): return Traced("*", other, self)
    def __truediv__(self, other): return Traced("/", self, other)
    def __rtruediv__(self, other): return Traced("/", other, self)
    def __floordiv__(self, other): return Traced("//", self, other)
    def __rfloordiv__(self, other): return Traced("//", other, self)
    def __neg__(self): return Traced("neg", self)
    def __pos__(self): return Traced("pos", self)


def as_float(value):
    """`value` as a float: float() of a plain number, a recorded float() of a traced one, else a float array
    (np.asarray(value, dtype=float), which is what float() gives for plain numbers, as a 0-d array)."""
    if value.__class__ is float or value.__class__ is int:
        return float(value)
    if value.__class__ is Traced:
        return Traced("float", value)
    return np.asarray(value, dtype=float)


def compile_traced(lists: list[list]) -> Callable:
    """A function f(variable) -> tuple of lists: each list of `lists` with every Traced value replaced by what its
    recorded operations give for that variable (plain constants as they are). Raises NotTraceable where an operand
    or a value is a numpy array (the direct code would unpack or broadcast it)."""
    names: dict[int, str] = {}
    lines: list[str] = []
    constants: dict[str, object] = {}

    def constant(value) -> str:
        cls = value.__class__
        if cls is int or (cls is float and math.isfinite(value)):
            return f"({value!r})"                 # repr round-trips exactly; -0.0 folds to -0.0
        if isinstance(value, np.ndarray):
            raise NotTraceable("an array among the traced values")
        name = f"c{len(constants)}"               # nan, inf, numpy scalars: the object itself
        constants[name] = value
        return name

    def operand(value) -> str:
        if value.__class__ is not Traced:
            return constant(value)
        key = id(value)
        if key in names:
            return names[key]
        if value.op is None:
            return "t"
        if value.op in ("neg", "pos", "float"):
            inner = operand(value.left)
            expression = {"neg": f"-{inner}", "pos": f"+{inner}", "float": f"float({inner})"}[value.op]
        else:
            left = operand(value.left)
            expression = f"{left} {value.op} {operand(value.right)}"
        name = names[key] = f"v{len(names)}"
        lines.append(f"    {name} = {expression}")
        return name

    results = ["[" + ", ".join(operand(value) for value in values) + "]" for values in lists]
    source = "def evaluate(t):\n" + "\n".join(lines) + ("\n" if lines else "") + \
             f"    return ({', '.join(results)},)\n"
    namespace = dict(constants)
    exec(compile(source, "<traced numbers>", "exec"), namespace)
    return namespace["evaluate"]
