"""Write specs workbooks (`hardware`, `sources`, `README` sheets) and the datasheet frame.

SI values are written in the unit of their workbook row: value_in_workbook = si / scale, picked so
that the reader's `to_si` (value_in_workbook * scale, computed on the decimal the cell shows)
gives back exactly the same float, so load_specs(write_specs(devices)) == devices.
Text is always stored as text: a device name or note beginning with `=` is never written as a
formula (and carries Excel's quote prefix, so editing the cell keeps it text).
"""

from __future__ import annotations

import decimal
import math
from typing import Any, Iterable, Mapping, Optional, Union

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font

from engine.hardware.device import WORKBOOK_FIELD_BY_KEY, WORKBOOK_FIELDS, Hardware, WorkbookField
from engine.hardware.specs.cells import _EXACT, HARDWARE_SHEET, README_SHEET, SOURCES_SHEET, is_integer_field, to_si

TEMPLATE_DEVICE = "MY-DEVICE"
SourceEntry = Union[str, tuple[str, str]]

README_LINES = [
    "llm-roofline hardware workbook",
    "",
    "SHEETS",
    "hardware: one row per field and one column per device. Column A is the field key, B its unit, "
    "C a description; row 1 holds the device names from column D on. Rows and columns may be "
    "reordered; rows are found by the key in column A, devices by their name in row 1.",
    "sources: where each number comes from. One row per device and non-blank field: device, "
    "field (the key from column A of 'hardware'), source (URL or document title), note "
    "(assumptions, arithmetic, caveats).",
    "README: this sheet.",
    "",
    "UNITS",
    "SI decimal units: 1 GB = 1e9 B, 1 GB/s = 1e9 B/s, 1 GHz = 1e9 Hz, 1 us = 1e-6 s.",
    "KiB and MiB are binary (1 KiB = 1024 B, 1 MiB = 1024*1024 B) and are used only for on-chip "
    "SRAM and caches, where datasheets state binary sizes.",
    "The seed notebook's hypothetical devices NVL-AX and JGS are entered exactly as the notebook "
    "computes them, in binary units: its '342 GB/s' is 342*1024^3 B/s (= 367.219703808 GB/s here) "
    "and its '36 MB' is 36 MiB.",
    "",
    "HOW PEAKS ARE DERIVED (peaks are never typed in)",
    "peak matrix FLOP/s for a dtype = 2 x num_cores x clock x matrix MAC/cycle/core for that dtype "
    "(1 multiply-accumulate = 2 FLOP).",
    "peak vector FLOP/s = num_cores x clock x vector FLOP/cycle/core (fp32; a fused multiply-add counts 2).",
    "SRAM bandwidth = num_cores x clock x SRAM bytes/cycle/core.",
    "clock is the clock at which the datasheet quotes its dense matrix headline. Per-cycle figures "
    "come from the architecture; where a vendor quotes vector peaks at another clock, the notes say so.",
    "Dense figures only: never enter 'with sparsity' rates (they are 2x the dense rate).",
    "A blank matrix row means the device has no dense matrix rate for that dtype; work in that "
    "dtype then runs at the rate of the next format (for example bf16 falls back to fp16, then tf32, then fp32).",
    "",
    "MEMORY HIERARCHY AND REALISTIC-METHOD ROWS",
    "register_file_per_core, sram_per_core and llc_capacity give the hierarchical method its reuse; "
    "sram_bandwidth_per_core, llc_bandwidth and memory_bandwidth its ceilings (a blank bandwidth skips the level).",
    "gemm_tile_shapes lists the GEMM tiles as text, e.g. '256x128,128x128,64x64' (blank: CUTLASS's SM80 list). "
    "achievable_matrix_fraction, achievable_memory_bandwidth_fraction (0 to 1) and kernel_latency are fitted "
    "to measured GEMM times where measurements exist (docs/accuracy.md); blank ones take the mean of the "
    "fitted devices.",
    "",
    "BLANK CELLS",
    "A blank cell means 'not published'. Required: vendor, kind, num_cores, clock, "
    "vector_flops_per_cycle_per_core, memory_capacity, memory_bandwidth and at least one matrix rate.",
    "",
    "HOW TO ADD A DEVICE",
    "1. Add a column on sheet 'hardware' (copying a similar device's column is the quickest start).",
    "2. Put a unique device name in row 1 of that column.",
    "3. Fill in values in the unit shown in column B. Leave unpublished optional values blank.",
    "4. Add one row per value on sheet 'sources' saying where it comes from.",
    "5. Load the workbook (Python: engine.load_specs('my_specs.xlsx')). Errors name the sheet and "
    "cell, the field, the device, the bad value and what was expected.",
]


def to_workbook_value(si: float, scale: float) -> float:
    """si / scale, chosen among its nearest floats so that the reader's to_si gives back si exactly."""
    if scale == 1.0:
        return si
    plain = float(_EXACT.divide(decimal.Decimal(repr(float(si))), decimal.Decimal(repr(scale))))
    candidates, up, down = [plain], plain, plain
    for _ in range(4):
        up, down = math.nextafter(up, math.inf), math.nextafter(down, -math.inf)
        candidates += [up, down]
    for candidate in candidates:
        if to_si(candidate, scale) == si:
            return candidate
    return plain  # no float reproduces si exactly (rare); the round trip is then off by 1 ulp


def value_in_workbook_units(device: Hardware, field: WorkbookField) -> Any:
    """A field of `device` in the unit of its workbook row: text as stored, whole numbers as int, None when
    not published (the one SI -> workbook conversion: the writer and engine/hardware/what_if.py use it)."""
    value = getattr(device, field.attribute)
    if value is None or field.text:
        return value
    if is_integer_field(field):
        return int(value)
    number = to_workbook_value(float(value), field.scale)
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _cell_value(device: Hardware, field: WorkbookField) -> Any:
    """What the workbook cell holds: value_in_workbook_units, with empty text as a blank cell."""
    value = value_in_workbook_units(device, field)
    return None if field.text and value == "" else value


def _device_list(devices: Union[Iterable[Hardware], Mapping[str, Hardware]]) -> list[Hardware]:
    if isinstance(devices, Mapping):
        for key, device in devices.items():
            if key != device.name:
                raise ValueError(f"device stored under {key!r} is named {device.name!r}; keys must be the names")
        items = list(devices.values())
    else:
        items = list(devices)
    names = [d.name for d in items]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate device names: {', '.join(duplicates)}")
    return items


FORMULA_STARTS = ("=", "+", "-", "@")


def _store_text_as_text(sheet) -> None:
    """Every string cell is written as text (openpyxl would write '=...' as a live formula)."""
    for row in sheet.iter_rows():
        for cell in row:
            if isinstance(cell.value, str):
                cell.data_type = "s"
                if cell.value.startswith(FORMULA_STARTS):
                    cell.quotePrefix = True


def _write_hardware(sheet, devices: list[Hardware], names: list[str]) -> None:
    sheet.append(["field", "unit", "description", *names])
    for field in WORKBOOK_FIELDS:
        sheet.append([field.key, field.unit, field.description, *(_cell_value(d, field) for d in devices)])
    _store_text_as_text(sheet)
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    sheet.freeze_panes = "D2"
    for letter, width in (("A", 36), ("B", 16), ("C", 80)):
        sheet.column_dimensions[letter].width = width
    for index in range(len(names)):
        sheet.column_dimensions[sheet.cell(row=1, column=4 + index).column_letter].width = 18


def _write_sources(sheet, rows: list[tuple[str, str, str, str]]) -> None:
    sheet.append(["device", "field", "source", "note"])
    for row in rows:
        sheet.append(list(row))
    _store_text_as_text(sheet)
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    sheet.freeze_panes = "A2"
    for letter, width in (("A", 18), ("B", 36), ("C", 90), ("D", 90)):
        sheet.column_dimensions[letter].width = width


def _write_readme(sheet) -> None:
    for line in README_LINES:
        sheet.append([line])
    sheet["A1"].font = Font(bold=True, size=14)
    for row in sheet.iter_rows(min_row=2):
        if row[0].value and row[0].value.isupper():
            row[0].font = Font(bold=True)
        row[0].alignment = Alignment(wrap_text=True, vertical="top")
    sheet.column_dimensions["A"].width = 120


def _source_rows(devices: list[Hardware], sources: Optional[Mapping[str, Mapping[str, SourceEntry]]]):
    sources = sources or {}
    names = {d.name for d in devices}
    unknown = [f"device {n!r}" for n in sources if n not in names]
    unknown += [f"field {k!r} of {n!r}" for n, fields in sources.items() for k in fields if k not in WORKBOOK_FIELD_BY_KEY]
    if unknown:
        raise ValueError("sources name unknown " + ", ".join(unknown))
    rows = []
    for device in devices:
        given = sources.get(device.name, {})
        for field in WORKBOOK_FIELDS:
            if _cell_value(device, field) is None:
                continue
            entry = given.get(field.key, ("", ""))
            source, note = (entry, "") if isinstance(entry, str) else entry
            rows.append((device.name, field.key, source, note))
    return rows


def _new_workbook():
    workbook = Workbook()
    hardware = workbook.active
    hardware.title = HARDWARE_SHEET
    return workbook, hardware, workbook.create_sheet(SOURCES_SHEET), workbook.create_sheet(README_SHEET)


def write_specs(devices: Union[Iterable[Hardware], Mapping[str, Hardware]], path_or_buffer,
                sources: Optional[Mapping[str, Mapping[str, SourceEntry]]] = None) -> None:
    """Write devices (in order) to a workbook at a path or into a binary buffer.

    sources: {device name: {field key: "source" or ("source", "note")}}; a row is written to the
    `sources` sheet for every non-blank value (with an empty source where none is given).
    """
    items = _device_list(devices)
    workbook, hardware, sources_sheet, readme = _new_workbook()
    _write_hardware(hardware, items, [d.name for d in items])
    _write_sources(sources_sheet, _source_rows(items, sources))
    _write_readme(readme)
    workbook.save(path_or_buffer)


def write_template(path_or_buffer) -> None:
    """A blank workbook: every field with unit and description, one empty device column MY-DEVICE."""
    workbook, hardware, sources_sheet, readme = _new_workbook()
    _write_hardware(hardware, [], [TEMPLATE_DEVICE])
    _write_sources(sources_sheet, [(TEMPLATE_DEVICE, "memory_bandwidth", "URL or title of the datasheet",
                                    "example row: one per value you fill in")])
    _write_readme(readme)
    workbook.save(path_or_buffer)


def specs_to_frame(devices: Union[Iterable[Hardware], Mapping[str, Hardware]]):
    """Datasheet layout: rows = field keys, columns = unit, description, then one per device.

    Values are in workbook units (GB/s, GHz, MiB, ...); None where not published.
    """
    import pandas as pd

    items = _device_list(devices)
    data = {"unit": [f.unit for f in WORKBOOK_FIELDS], "description": [f.description for f in WORKBOOK_FIELDS]}
    for device in items:
        data[device.name] = [_cell_value(device, f) for f in WORKBOOK_FIELDS]
    frame = pd.DataFrame(data, index=pd.Index([f.key for f in WORKBOOK_FIELDS], name="field"), dtype=object)
    return frame
