"""Read and validate the `hardware` and `sources` sheets of a specs workbook (see `engine.hardware.specs`).

Rows are looked up by the field key in column A, devices by their name in row 1 (column D on).
Every problem becomes a `SpecsError` naming sheet, cell, field, device, the bad value and what
was expected; all problems are collected and the first is raised with the rest listed under it.
Values outside the usual range of their field load with a `SpecsWarning` (engine/hardware/specs/plausible.py).
Only the cells the file holds are visited (`engine.hardware.specs.opening.SheetCells`).
"""

from __future__ import annotations

from typing import Any, Optional

from openpyxl.utils import get_column_letter
from pydantic import ValidationError

from engine.hardware.device import WORKBOOK_FIELD_BY_KEY, WORKBOOK_FIELDS, Hardware, WorkbookField
from engine.hardware.specs.opening import SheetCells, UncalculatedFormula
from engine.hardware.specs.plausible import SpecsWarning, slip_hint, unusual_value
from engine.hardware.specs.cells import (
    HARDWARE_SHEET, SOURCES_SHEET, SpecsError, convert_cell, expectation, is_blank, raise_collected, show_value,
)

FIRST_DEVICE_COLUMN = 4  # column D; A = field, B = unit, C = description
MATRIX_KEY_PATTERN = "matrix_macs_per_cycle_per_core_<dtype>"
FORMULA_HINT = "open and save the workbook in Excel/LibreOffice (which calculates and saves it), or type the value"


def formula_error(sheet: str, cell: str, raw: UncalculatedFormula, what: str = "", **where) -> SpecsError:
    """'hardware!F16: memory_bandwidth of 'X' holds a formula (=1+1) with no saved value; open and save ...'"""
    subject = f"{what} holds" if what else "holds"
    return SpecsError(f"{subject} a formula ({raw.formula}) with no saved value", sheet=sheet, cell=cell,
                      value=raw.formula, hint=FORMULA_HINT, **where)


def _as_number(raw: Any) -> Optional[float]:
    """The number a cell shows (a number, or text holding one), else None."""
    if isinstance(raw, bool):
        return None
    try:
        return float(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError, OverflowError):
        return None


def _cell_error(field: WorkbookField, device: str, cell: str, raw: Any, note: str = "") -> SpecsError:
    shown = show_value(raw, field) + (f" ({note})" if note else "")
    expected = expectation(field) + ("" if field.text or raw is not None else " (required)")
    number = None if field.text else _as_number(raw)
    hint = slip_hint(field.key, number) if number is not None else None
    return SpecsError(f"{field.key} of {device!r} is {shown}", sheet=HARDWARE_SHEET, cell=cell,
                      field=field.key, device=device, value=raw, expected=expected, hint=hint)


def _row_label(grid: SheetCells, row: int, errors: list) -> Optional[str]:
    """The field key of a row (lower case), or None with an error when there is none to use."""
    label = grid.get(row, 0)
    if isinstance(label, UncalculatedFormula):
        errors.append(formula_error(HARDWARE_SHEET, f"A{row + 1}", label, "the field key"))
        return None
    if is_blank(label):
        if any(not is_blank(grid.get(row, c)) for c in grid.columns(row) if c >= FIRST_DEVICE_COLUMN - 1):
            errors.append(SpecsError(f"row {row + 1} has values but no field key in column A",
                                     sheet=HARDWARE_SHEET, cell=f"A{row + 1}",
                                     expected="a field key such as 'memory_bandwidth'"))
        return None
    key = str(label).strip().lower()
    if key not in WORKBOOK_FIELD_BY_KEY:
        errors.append(SpecsError(f"unknown field {str(label).strip()!r}", sheet=HARDWARE_SHEET,
                                 cell=f"A{row + 1}", field=str(label).strip(), value=label,
                                 expected="one of " + ", ".join(WORKBOOK_FIELD_BY_KEY)))
        return None
    return key


def _check_unit(grid: SheetCells, row: int, key: str, errors: list) -> None:
    unit = grid.get(row, 1)
    field = WORKBOOK_FIELD_BY_KEY[key]
    if isinstance(unit, UncalculatedFormula):
        errors.append(formula_error(HARDWARE_SHEET, f"B{row + 1}", unit, f"the unit of {key!r}", field=key))
    elif not is_blank(unit) and str(unit).strip() != field.unit:
        errors.append(SpecsError(f"unit of {key!r} is {str(unit).strip()!r}", sheet=HARDWARE_SHEET,
                                 cell=f"B{row + 1}", field=key, value=unit,
                                 expected=f"{field.unit!r} (values in this row are read as {field.unit})"))


def _locate_rows(grid: SheetCells, errors: list) -> dict[str, int]:
    """Field key -> 0-based row index; unknown, duplicate and key-less rows become errors."""
    rows: dict[str, int] = {}
    for index in grid.rows():
        if index == 0:
            continue
        key = _row_label(grid, index, errors)
        if key is None:
            continue
        if key in rows:
            errors.append(SpecsError(f"field {key!r} appears twice (also A{rows[key] + 1})",
                                     sheet=HARDWARE_SHEET, cell=f"A{index + 1}", field=key,
                                     expected="one row per field"))
            continue
        rows[key] = index
        _check_unit(grid, index, key, errors)
    for field in WORKBOOK_FIELDS:
        if field.required and field.key not in rows:
            errors.append(SpecsError(f"field row {field.key!r} is missing", sheet=HARDWARE_SHEET,
                                     field=field.key,
                                     expected=f"a row with {field.key!r} in column A (unit {field.unit})"))
    return rows


def _device_columns(grid: SheetCells, rows: dict[str, int]) -> list[int]:
    """Columns from D on with a name in row 1 or a value in a field row."""
    value_rows = set(rows.values()) | {0}
    return sorted({c for r in value_rows for c in grid.columns(r) if c >= FIRST_DEVICE_COLUMN - 1})


def _locate_devices(grid: SheetCells, rows: dict[str, int], errors: list) -> list[tuple[int, str]]:
    """(0-based column index, device name) in column order."""
    devices: list[tuple[int, str]] = []
    seen: dict[str, str] = {}
    value_rows = sorted(rows.values())
    for col in _device_columns(grid, rows):
        letter = get_column_letter(col + 1)
        header = grid.get(0, col)
        if isinstance(header, UncalculatedFormula):
            errors.append(formula_error(HARDWARE_SHEET, f"{letter}1", header, "the device name"))
            continue
        if is_blank(header):
            filled = [r for r in value_rows if not is_blank(grid.get(r, col))]
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


def _device_values(grid: SheetCells, rows, col: int, name: str, errors) -> Optional[dict]:
    """{field key: (field, cell, raw, value in SI)} for one column, or None when a cell is unusable."""
    letter = get_column_letter(col + 1)
    cells: dict[str, tuple] = {}
    found_error = False
    for field in WORKBOOK_FIELDS:
        if field.key not in rows:
            continue
        cell = f"{letter}{rows[field.key] + 1}"
        raw = grid.get(rows[field.key], col)
        if isinstance(raw, UncalculatedFormula):
            errors.append(formula_error(HARDWARE_SHEET, cell, raw, f"{field.key} of {name!r}", field=field.key,
                                        device=name))
            found_error = True
        elif is_blank(raw):
            if field.required:
                errors.append(_cell_error(field, name, cell, None))
                found_error = True
        else:
            value, problem = convert_cell(raw, field)
            if problem:
                errors.append(_cell_error(field, name, cell, raw, problem))
                found_error = True
            cells[field.key] = (field, cell, raw, value)
    return None if found_error else cells


def _validation_errors(exc: ValidationError, cells: dict, rows, col: int, name: str) -> list[SpecsError]:
    by_attribute = {field.attribute: (field, cell, raw) for field, cell, raw, _ in cells.values()}
    letter = get_column_letter(col + 1)
    errors = []
    for detail in exc.errors():
        attribute = detail["loc"][0] if detail["loc"] else None
        if attribute in by_attribute:
            field, cell, raw = by_attribute[attribute]
            errors.append(_cell_error(field, name, cell, raw))
        elif attribute is None:  # model-level rule: at least one matrix rate
            matrix_rows = [rows[f.key] for f in WORKBOOK_FIELDS if f.key.startswith("matrix_") and f.key in rows]
            cell = f"{letter}{min(matrix_rows) + 1}" if matrix_rows else f"{letter}1"
            errors.append(SpecsError(f"{MATRIX_KEY_PATTERN} of {name!r} is blank for every dtype",
                                     sheet=HARDWARE_SHEET, cell=cell, field=MATRIX_KEY_PATTERN,
                                     device=name, expected="at least one dense matrix rate in MAC/cycle/core"))
    return errors


def _unusual(cells: dict, name: str) -> list[SpecsWarning]:
    warnings = []
    for field, cell, raw, _ in cells.values():
        number = None if field.text else _as_number(raw)
        found = unusual_value(field.key, number) if number is not None else None
        if found:
            message, usual = found
            warnings.append(SpecsWarning(HARDWARE_SHEET, cell, field.key, name, number, usual,
                                         f"{field.key} of {name!r} is {message}"))
    return warnings


def _read_device(grid: SheetCells, rows, col: int, name: str, errors, warnings) -> Optional[Hardware]:
    cells = _device_values(grid, rows, col, name, errors)
    if cells is None:
        return None
    values = {"name": name, **{field.attribute: value for field, _, _, value in cells.values()}}
    try:
        device = Hardware.model_validate(values)
    except ValidationError as exc:
        errors.extend(_validation_errors(exc, cells, rows, col, name))
        return None
    warnings.extend(_unusual(cells, name))
    return device


def find_sheet(sheets: dict[str, SheetCells], name: str) -> Optional[SheetCells]:
    for title, cells in sheets.items():
        if title.strip().lower() == name.lower():
            return cells
    return None


def read_hardware_sheet(sheets: dict[str, SheetCells]) -> tuple[dict[str, Hardware], list[SpecsWarning]]:
    """Devices of the `hardware` sheet in column order, and warnings; raises SpecsError on any problem."""
    grid = find_sheet(sheets, HARDWARE_SHEET)
    if grid is None:
        raise SpecsError(f"sheet {HARDWARE_SHEET!r} is missing (sheets found: {', '.join(sheets)})",
                         sheet=HARDWARE_SHEET,
                         expected="a sheet named 'hardware' with one row per field and one column per device")
    header = grid.get(0, 0)
    if isinstance(header, UncalculatedFormula):
        raise formula_error(HARDWARE_SHEET, "A1", header, expected="'field' in A1")
    if is_blank(header) or str(header).strip().lower() != "field":
        raise SpecsError(f"header cell is {header!r}", sheet=HARDWARE_SHEET, cell="A1", value=header,
                         expected="'field' in A1, 'unit' in B1, 'description' in C1 and device names from D1 on")
    errors: list[SpecsError] = []
    warnings: list[SpecsWarning] = []
    rows = _locate_rows(grid, errors)
    devices = _locate_devices(grid, rows, errors)
    if any(field.required and field.key not in rows for field in WORKBOOK_FIELDS):
        devices = []  # without a required row every device would fail; the missing row is the news
    result = {}
    for col, name in devices:
        device = _read_device(grid, rows, col, name, errors, warnings)
        if device is not None:
            result[name] = device
    raise_collected(errors)
    return result, warnings


def _text(grid: SheetCells, row: int, col: Optional[int], errors: list) -> str:
    if col is None:
        return ""
    value = grid.get(row, col)
    if isinstance(value, UncalculatedFormula):
        errors.append(formula_error(SOURCES_SHEET, f"{get_column_letter(col + 1)}{row + 1}", value))
        return ""
    return "" if is_blank(value) else str(value).strip()


def read_sources_sheet(sheets: dict[str, SheetCells]) -> dict[str, dict[str, tuple[str, str]]]:
    """{device: {field key: (source, note)}} from the `sources` sheet ({} when it is absent)."""
    grid = find_sheet(sheets, SOURCES_SHEET)
    if grid is None or not grid.values:
        return {}
    header = {}
    for col in grid.columns(0):
        name = grid.get(0, col)
        if isinstance(name, str) and name.strip().lower() in ("device", "field", "source", "note"):
            header.setdefault(name.strip().lower(), col)
    missing = [c for c in ("device", "field", "source") if c not in header]
    if missing:
        raise SpecsError(f"header lacks column(s) {', '.join(missing)}", sheet=SOURCES_SHEET, cell="A1",
                         expected="columns device, field, source, note")
    errors: list[SpecsError] = []
    result: dict[str, dict[str, tuple[str, str]]] = {}
    for row in grid.rows():
        if row == 0:
            continue
        device, key = _text(grid, row, header["device"], errors), _text(grid, row, header["field"], errors)
        source, note = _text(grid, row, header["source"], errors), _text(grid, row, header.get("note"), errors)
        if device and key:
            result.setdefault(device, {})[key] = (source, note)
    raise_collected(errors)
    return result
