"""Specs workbook errors, and the conversions between cells and Hardware values (see `engine.hardware.specs`).

`SpecsError` names sheet, cell, field, device, the bad value and what was expected. Range checks
are Hardware's own pydantic Field limits; `expectation` states them in the workbook's units.
The sheets themselves are read in `engine.hardware.specs.sheets`, the file opened in `engine.hardware.specs.opening`.
"""

from __future__ import annotations

import decimal
import math
import typing
from typing import Any, Optional

from engine.hardware.device import Hardware, WorkbookField

HARDWARE_SHEET = "hardware"
SOURCES_SHEET = "sources"
README_SHEET = "README"
MAX_LISTED_PROBLEMS = 30  # a workbook damaged in every cell still gets a readable message


class SpecsError(ValueError):
    """A problem in a specs workbook, located to sheet and cell.

    str(err) reads "hardware!D7: memory_bandwidth of 'X' is -5 GB/s; expected a number >= 0.01 and ...".
    When several problems were found, `others` holds the rest and the message lists them after
    the first line.
    """

    def __init__(self, problem: str, *, sheet: Optional[str] = None, cell: Optional[str] = None,
                 field: Optional[str] = None, device: Optional[str] = None, value: Any = None,
                 expected: Optional[str] = None, hint: Optional[str] = None):
        self.problem, self.sheet, self.cell = problem, sheet, cell
        self.field, self.device, self.value, self.expected, self.hint = field, device, value, expected, hint
        self.others: list[SpecsError] = []
        super().__init__(self.line())

    def line(self) -> str:
        where = f"{self.sheet}!{self.cell}" if self.sheet and self.cell else (self.sheet or "workbook")
        text = f"{where}: {self.problem}"
        text = f"{text}; expected {self.expected}" if self.expected else text
        return f"{text}; {self.hint}" if self.hint else text

    def __str__(self) -> str:
        if not self.others:
            return self.line()
        more = [f"... and {len(self.others)} more problem(s):"]
        more += [f"  {e.line()}" for e in self.others[:MAX_LISTED_PROBLEMS]]
        if len(self.others) > MAX_LISTED_PROBLEMS:
            more.append(f"  ({len(self.others) - MAX_LISTED_PROBLEMS} more not listed)")
        return "\n".join([self.line(), *more])


# ---- formatting and limits ----------------------------------------------------------------
def format_number(x: float) -> str:
    """Short form (1e+06, 1555, 2.5) when it is exact, else the full repr."""
    short = f"{x:.6g}"
    if float(short) == x:
        return short
    return str(int(x)) if float(x).is_integer() and abs(x) < 2**53 else repr(float(x))


def _unit_suffix(field: WorkbookField) -> str:
    return "" if field.unit in ("count", "text") else f" {field.unit}"


def is_integer_field(field: WorkbookField) -> bool:
    annotation = Hardware.model_fields[field.attribute].annotation
    return annotation is int or int in typing.get_args(annotation)


def in_workbook_unit(si: float, scale: float) -> float:
    """si / scale as the decimal quotient (1e-9 J in pJ is 1000, not 1000.0000000000001)."""
    return float(decimal.Decimal(repr(float(si))) / decimal.Decimal(repr(float(scale))))


def expectation(field: WorkbookField) -> str:
    """What a valid cell holds, in the workbook's unit, from Hardware's Field limits."""
    if field.text:
        return "non-blank text"
    bounds = []
    for limit in Hardware.model_fields[field.attribute].metadata:
        for attr, symbol in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            if hasattr(limit, attr):
                bounds.append(f"{symbol} {format_number(in_workbook_unit(getattr(limit, attr), field.scale))}")
    kind = "a whole number" if is_integer_field(field) else "a number"
    return f"{kind} {' and '.join(bounds)}{_unit_suffix(field)}".replace("  ", " ")


def show_value(raw: Any, field: WorkbookField) -> str:
    if raw is None:
        return "blank"
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return f"{format_number(raw)}{_unit_suffix(field)}"
    return repr(raw)


def is_blank(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def raise_collected(errors: list[SpecsError]) -> None:
    if errors:
        first = errors[0]
        first.others = errors[1:]
        first.args = (str(first),)
        raise first


# ---- cells -> SI values --------------------------------------------------------------------
_EXACT = decimal.Context(prec=60)


def to_si(value: float, scale: float) -> float:
    """value_in_workbook * scale, read as the decimal number the cell shows.

    1.41 GHz gives exactly 1.41e9 Hz and 32985.34883328 GB/s exactly 30*1024**4 B/s, which binary
    float multiplication does not always do.
    """
    if scale == 1.0:
        return float(value)
    number = decimal.Decimal(value) if isinstance(value, int) else decimal.Decimal(repr(float(value)))
    return float(_EXACT.multiply(number, decimal.Decimal(repr(scale))))


def convert_cell(raw: Any, field: WorkbookField) -> tuple[Any, Optional[str]]:
    """(value in SI, None) or (None, problem text) for one non-blank cell."""
    if field.text:
        return (str(raw).strip() if not isinstance(raw, float) else format_number(raw)), None
    if isinstance(raw, bool):
        return None, "a TRUE/FALSE value, not a number"
    number = raw
    if isinstance(raw, str):
        try:
            number = float(raw.strip())
        except ValueError:
            return None, "not a number"
    if not isinstance(number, (int, float)):
        return None, "not a number"
    try:
        finite = math.isfinite(number)
    except OverflowError:  # a whole number with hundreds of digits
        finite = False
    if not finite:
        return None, "not a finite number"
    if is_integer_field(field):
        if float(number) != int(number):
            return None, "not a whole number"
        return int(number), None
    return to_si(number, field.scale), None
