"""Read and validate the `hardware` sheet of a specs workbook (see `engine.specs`).

Rows are looked up by the field key in column A, devices by their name in row 1 (column D on).
Every problem becomes a `SpecsError` naming sheet, cell, field, device, the bad value and what
was expected; all problems are collected and the first is raised with the rest listed under it.
Range checks are Hardware's own pydantic Field limits; this module only maps them onto cells.
"""

from __future__ import annotations

import decimal
import math
import typing
from typing import Any, Optional

from openpyxl.utils import get_column_letter
from pydantic import ValidationError

from engine.hardware import WORKBOOK_FIELD_BY_KEY, WORKBOOK_FIELDS, Hardware, WorkbookField

HARDWARE_SHEET = "hardware"
SOURCES_SHEET = "sources"
README_SHEET = "README"
FIRST_DEVICE_COLUMN = 4  # column D; A = field, B = unit, C = description
MATRIX_KEY_PATTERN = "matrix_macs_per_cycle_per_core_<dtype>"


class SpecsError(ValueError):
    """A problem in a specs workbook, located to sheet and cell.

    str(err) reads "hardware!D7: memory_bandwidth of 'X' is -5 GB/s; expected a number > 0 ...".
    When several problems were found, `others` holds the rest and the message lists them after
    the first line.
    """

    def __init__(self, problem: str, *, sheet: Optional[str] = None, cell: Optional[str] = None,
                 field: Optional[str] = None, device: Optional[str] = None, value: Any = None,
                 expected: Optional[str] = None):
        self.problem, self.sheet, self.cell = problem, sheet, cell
        self.field, self.device, self.value, self.expected = field, device, value, expected
        self.others: list[SpecsError] = []
        super().__init__(self.line())

    def line(self) -> str:
        where = f"{self.sheet}!{self.cell}" if self.sheet and self.cell else (self.sheet or "workbook")
        text = f"{where}: {self.problem}"
        return f"{text}; expected {self.expected}" if self.expected else text

    def __str__(self) -> str:
        if not self.others:
            return self.line()
        more = [f"... and {len(self.others)} more problem(s):"] + [f"  {e.line()}" for e in self.others]
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


def expectation(field: WorkbookField) -> str:
    """What a valid cell holds, in the workbook's unit, from Hardware's Field limits."""
    if field.text:
        return "non-blank text"
    bounds = []
    for limit in Hardware.model_fields[field.attribute].metadata:
        for attr, symbol in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            if hasattr(limit, attr):
                bounds.append(f"{symbol} {format_number(getattr(limit, attr) / field.scale)}")
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


def _convert(raw: Any, field: WorkbookField) -> tuple[Any, Optional[str]]:
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
    if not math.isfinite(number):
        return None, "not a finite number"
    if is_integer_field(field):
        if float(number) != int(number):
            return None, "not a whole number"
        return int(number), None
    return to_si(number, field.scale), None


def _cell_error(field: WorkbookField, device: str, cell: str, raw: Any, note: str = "") -> SpecsError:
    shown = show_value(raw, field) + (f" ({note})" if note else "")
    expected = expectation(field) + ("" if field.text or raw is not None else " (required)")
    return SpecsError(f"{field.key} of {device!r} is {shown}", sheet=HARDWARE_SHEET, cell=cell,
                      field=field.key, device=device, value=raw, expected=expected)


# ---- the sheet -----------------------------------------------------------------------------
def _grid(worksheet) -> list[list[Any]]:
    rows = [list(r) for r in worksheet.iter_rows(values_only=True)]
    width = max((len(r) for r in rows), default=0)
    return [r + [None] * (width - len(r)) for r in rows]


def _locate_rows(grid, errors) -> dict[str, int]:
    """Field key -> 0-based row index; unknown, duplicate and key-less rows become errors."""
    rows: dict[str, int] = {}
    for index, row in enumerate(grid[1:], start=1):
        label = row[0]
        if is_blank(label):
            if any(not is_blank(v) for v in row[FIRST_DEVICE_COLUMN - 1:]):
                errors.append(SpecsError(f"row {index + 1} has values but no field key in column A",
                                         sheet=HARDWARE_SHEET, cell=f"A{index + 1}",
                                         expected="a field key such as 'memory_bandwidth'"))
            continue
        key = str(label).strip().lower()
        if key not in WORKBOOK_FIELD_BY_KEY:
            errors.append(SpecsError(f"unknown field {str(label).strip()!r}", sheet=HARDWARE_SHEET,
                                     cell=f"A{index + 1}", field=str(label).strip(), value=label,
                                     expected="one of " + ", ".join(WORKBOOK_FIELD_BY_KEY)))
        elif key in rows:
            errors.append(SpecsError(f"field {key!r} appears twice (also A{rows[key] + 1})",
                                     sheet=HARDWARE_SHEET, cell=f"A{index + 1}", field=key,
                                     expected="one row per field"))
        else:
            rows[key] = index
            unit = grid[index][1] if len(grid[index]) > 1 else None
            field = WORKBOOK_FIELD_BY_KEY[key]
            if not is_blank(unit) and str(unit).strip() != field.unit:
                errors.append(SpecsError(f"unit of {key!r} is {str(unit).strip()!r}", sheet=HARDWARE_SHEET,
                                         cell=f"B{index + 1}", field=key, value=unit,
                                         expected=f"{field.unit!r} (values in this row are read as {field.unit})"))
    for field in WORKBOOK_FIELDS:
        if field.required and field.key not in rows:
            errors.append(SpecsError(f"field row {field.key!r} is missing", sheet=HARDWARE_SHEET,
                                     field=field.key,
                                     expected=f"a row with {field.key!r} in column A (unit {field.unit})"))
    return rows


def _locate_devices(grid, rows, errors) -> list[tuple[int, str]]:
    """(0-based column index, device name) in column order."""
    devices: list[tuple[int, str]] = []
    seen: dict[str, str] = {}
    value_rows = sorted(rows.values())
    for col in range(FIRST_DEVICE_COLUMN - 1, len(grid[0])):
        letter = get_column_letter(col + 1)
        header = grid[0][col]
        if is_blank(header):
            filled = [r for r in value_rows if not is_blank(grid[r][col])]
            if filled:
                errors.append(SpecsError(f"column {letter} has values (e.g. {letter}{filled[0] + 1}) "
                                         "but no device name in row 1", sheet=HARDWARE_SHEET,
                                         cell=f"{letter}1", expected="a device name in row 1"))
            continue
        name = str(header).strip()
        if name in seen:
            errors.append(SpecsError(f"device name {name!r} appears twice (also {seen[name]})",
                                     sheet=HARDWARE_SHEET, cell=f"{letter}1", device=name, value=header,
                                     expected="unique device names"))
            continue
        seen[name] = f"{letter}1"
        devices.append((col, name))
    if not devices and not errors:
        errors.append(SpecsError("no device columns", sheet=HARDWARE_SHEET, cell="D1",
                                 expected="a device name in row 1 from column D on, values below it"))
    return devices


def _read_device(grid, rows, col: int, name: str, errors) -> Optional[Hardware]:
    letter = get_column_letter(col + 1)
    values: dict[str, Any] = {"name": name}
    cells: dict[str, tuple[WorkbookField, str, Any]] = {}
    found_error = False
    for field in WORKBOOK_FIELDS:
        if field.key not in rows:
            continue
        cell = f"{letter}{rows[field.key] + 1}"
        raw = grid[rows[field.key]][col]
        cells[field.attribute] = (field, cell, raw)
        if is_blank(raw):
            if field.required:
                errors.append(_cell_error(field, name, cell, None))
                found_error = True
            continue
        value, problem = _convert(raw, field)
        if problem:
            errors.append(_cell_error(field, name, cell, raw, problem))
            found_error = True
        else:
            values[field.attribute] = value
    if found_error:
        return None
    try:
        return Hardware.model_validate(values)
    except ValidationError as exc:
        for detail in exc.errors():
            attribute = detail["loc"][0] if detail["loc"] else None
            if attribute in cells:
                field, cell, raw = cells[attribute]
                errors.append(_cell_error(field, name, cell, raw))
            elif attribute is None:  # model-level rule: at least one matrix rate
                matrix_rows = [rows[f.key] for f in WORKBOOK_FIELDS if f.key.startswith("matrix_") and f.key in rows]
                cell = f"{letter}{min(matrix_rows) + 1}" if matrix_rows else f"{letter}1"
                errors.append(SpecsError(f"{MATRIX_KEY_PATTERN} of {name!r} is blank for every dtype",
                                         sheet=HARDWARE_SHEET, cell=cell, field=MATRIX_KEY_PATTERN,
                                         device=name, expected="at least one dense matrix rate in MAC/cycle/core"))
        return None


def raise_collected(errors: list[SpecsError]) -> None:
    if errors:
        first = errors[0]
        first.others = errors[1:]
        first.args = (str(first),)
        raise first


def find_sheet(workbook, name: str):
    for sheet_name in workbook.sheetnames:
        if sheet_name.strip().lower() == name.lower():
            return workbook[sheet_name]
    return None


def read_hardware_sheet(workbook) -> dict[str, Hardware]:
    """Devices of the `hardware` sheet, in column order; raises SpecsError on any problem."""
    worksheet = find_sheet(workbook, HARDWARE_SHEET)
    if worksheet is None:
        raise SpecsError(f"sheet {HARDWARE_SHEET!r} is missing (sheets found: {', '.join(workbook.sheetnames)})",
                         sheet=HARDWARE_SHEET,
                         expected="a sheet named 'hardware' with one row per field and one column per device")
    grid = _grid(worksheet)
    header = grid[0][0] if grid and grid[0] else None
    if is_blank(header) or str(header).strip().lower() != "field":
        raise SpecsError(f"header cell is {header!r}", sheet=HARDWARE_SHEET, cell="A1", value=header,
                         expected="'field' in A1, 'unit' in B1, 'description' in C1 and device names from D1 on")
    errors: list[SpecsError] = []
    rows = _locate_rows(grid, errors)
    devices = _locate_devices(grid, rows, errors)
    if any(field.required and field.key not in rows for field in WORKBOOK_FIELDS):
        devices = []  # without a required row every device would fail; the missing row is the news
    result = {}
    for col, name in devices:
        device = _read_device(grid, rows, col, name, errors)
        if device is not None:
            result[name] = device
    raise_collected(errors)
    return result


def read_sources_sheet(workbook) -> dict[str, dict[str, tuple[str, str]]]:
    """{device: {field key: (source, note)}} from the `sources` sheet ({} when it is absent)."""
    worksheet = find_sheet(workbook, SOURCES_SHEET)
    if worksheet is None:
        return {}
    grid = _grid(worksheet)
    if not grid:
        return {}
    header = [str(h).strip().lower() if not is_blank(h) else "" for h in grid[0]]
    missing = [c for c in ("device", "field", "source") if c not in header]
    if missing:
        raise SpecsError(f"header lacks column(s) {', '.join(missing)}", sheet=SOURCES_SHEET, cell="A1",
                         expected="columns device, field, source, note")
    col = {name: header.index(name) for name in ("device", "field", "source", "note") if name in header}
    result: dict[str, dict[str, tuple[str, str]]] = {}
    for row in grid[1:]:
        device, key = row[col["device"]], row[col["field"]]
        if is_blank(device) or is_blank(key):
            continue
        text = lambda v: "" if is_blank(v) else str(v).strip()  # noqa: E731
        note = text(row[col["note"]]) if "note" in col else ""
        result.setdefault(str(device).strip(), {})[str(key).strip()] = (text(row[col["source"]]), note)
    return result
