"""Open a specs workbook's bytes with bounded work, and say where a damaged one is damaged.

    sheets = open_workbook(data, "my_specs.xlsx")    # {sheet title: SheetCells}, in workbook order

- Work is bounded by what the file holds, not by the sheet's nominal size: only cells present in the
  XML are read (a formatted empty cell at A1048576 costs nothing), the unzipped size is capped, and
  merged ranges that openpyxl would expand into millions of cell objects are refused.
- A formula with no saved value (written by a script and never calculated) comes back as an
  `UncalculatedFormula`, not as a blank: the reader names its cell.
- When openpyxl cannot parse the file, the XML is scanned for what broke it (a number that is not a
  number, a shared-string or style index out of range, malformed XML) and the error names the file,
  the sheet and the cell.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any, Iterator, Optional
from xml.etree import ElementTree

import openpyxl
from openpyxl.utils import range_boundaries
from openpyxl.utils.datetime import from_ISO8601

from engine.hardware.specs.cells import SpecsError

MAX_UNZIPPED_BYTES = 64 * 2**20    # a specs workbook unzips to well under 1 MB; the bundled one to 0.2 MB
MAX_MERGED_CELLS = 1_000_000       # openpyxl makes one object per merged cell
REPAIR_HINT = "open and save the workbook in Excel or LibreOffice (which repairs or reports it), or re-type the cell"
_FORMULA_TAG = re.compile(rb"<(?:\w+:)?f[\s>/]")
_MERGE_REF = re.compile(rb"<(?:\w+:)?mergeCell\b[^>]*\bref=\"([^\"]+)\"")
_COORDINATE = re.compile(r"^\$?([A-Z]{1,3})\$?([1-9][0-9]{0,6})$")
_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_RELATION = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_PACKAGE_RELATION = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"


@dataclass(frozen=True)
class UncalculatedFormula:
    """A cell holding a formula whose value was never calculated and saved (openpyxl reads None)."""

    formula: str

    def __str__(self) -> str:
        return self.formula


class SheetCells:
    """The non-empty cells of one worksheet by 0-based (row, column); nothing else is materialised."""

    def __init__(self, title: str, values: dict[tuple[int, int], Any]):
        self.title = title
        self.values = values
        self.columns_by_row: dict[int, list[int]] = {}
        for row, column in sorted(values):
            self.columns_by_row.setdefault(row, []).append(column)

    def get(self, row: int, column: int) -> Any:
        return self.values.get((row, column))

    def rows(self) -> list[int]:
        """Row indexes holding at least one value, ascending."""
        return list(self.columns_by_row)

    def columns(self, row: Optional[int] = None) -> list[int]:
        """Column indexes holding a value (in `row`, or anywhere), ascending."""
        if row is not None:
            return self.columns_by_row.get(row, [])
        return sorted({column for _, column in self.values})


# ---- the zip: sheet names, sizes, merged ranges ------------------------------------------------------
def _sheet_paths(archive: zipfile.ZipFile) -> dict[str, str]:
    """{sheet title: path of its XML in the zip}; falls back to the file names when workbook.xml is odd."""
    try:
        book = ElementTree.fromstring(archive.read("xl/workbook.xml"))
        relations = ElementTree.fromstring(archive.read("xl/_rels/workbook.xml.rels"))
        targets = {r.get("Id"): r.get("Target", "") for r in relations.iter(_PACKAGE_RELATION)}
        paths = {}
        for sheet in book.iter(f"{_MAIN}sheet"):
            target = targets.get(sheet.get(_RELATION), "")
            path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("xl", target))
            paths[sheet.get("name", path)] = path
        if paths:
            return paths
    except (KeyError, ElementTree.ParseError):
        pass
    return {posixpath.basename(n): n for n in archive.namelist()
            if n.startswith("xl/worksheets/") and n.endswith(".xml")}


def _check_sizes(archive: zipfile.ZipFile, label: str) -> None:
    unzipped = sum(info.file_size for info in archive.infolist())
    if unzipped > MAX_UNZIPPED_BYTES:
        raise SpecsError(f"{label} unzips to {unzipped / 2**20:.0f} MiB, more than a specs workbook can need "
                         f"(limit {MAX_UNZIPPED_BYTES // 2**20} MiB)",
                         expected="a workbook with one sheet of devices (a few hundred KB at most)")


def _check_merged_ranges(title: str, xml: bytes, label: str) -> None:
    total = 0
    for match in _MERGE_REF.finditer(xml):
        reference = match.group(1).decode("ascii", "replace")
        try:
            min_col, min_row, max_col, max_row = range_boundaries(reference)
        except (ValueError, TypeError):
            raise SpecsError(f"{label}: merged range {reference!r} is not a cell range", sheet=title,
                             expected=f"ranges like 'A1:C3'; {REPAIR_HINT}") from None
        total += (max_col - min_col + 1) * (max_row - min_row + 1)
        if total > MAX_MERGED_CELLS:
            raise SpecsError(f"{label}: merged range {reference} covers {total:,} cells", sheet=title,
                             cell=reference.split(":")[0],
                             expected=f"merged ranges covering at most {MAX_MERGED_CELLS:,} cells; unmerge them")


def _inspect_zip(data: bytes, label: str) -> bool:
    """Size and merge checks before openpyxl runs; True when some sheet holds a formula."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise SpecsError(f"could not read {label} as a workbook (not an .xlsx zip archive: {exc})",
                         expected="an .xlsx file written by Excel, LibreOffice or write_specs") from exc
    with archive:
        _check_sizes(archive, label)
        has_formula = False
        for title, path in _sheet_paths(archive).items():
            try:
                xml = archive.read(path)
            except (KeyError, zipfile.BadZipFile, OSError, EOFError, zlib.error):
                continue  # openpyxl reports a missing or broken part below
            _check_merged_ranges(title, xml, label)
            has_formula = has_formula or bool(_FORMULA_TAG.search(xml))
    return has_formula


# ---- damaged XML: find the cell ---------------------------------------------------------------------
def _count(archive: zipfile.ZipFile, path: str, tag: str, parent: Optional[str] = None) -> Optional[int]:
    try:
        root = ElementTree.fromstring(archive.read(path))
    except (KeyError, ElementTree.ParseError):
        return None
    if parent is not None:
        found = root.find(f"{_MAIN}{parent}")
        return None if found is None else len(found.findall(f"{_MAIN}{tag}"))
    return len(root.findall(f"{_MAIN}{tag}"))


def _cell_problem(kind: Optional[str], text: Optional[str], style: Optional[str], strings: Optional[int],
                  styles: Optional[int]) -> Optional[str]:
    """Why openpyxl cannot read this <c> element, or None."""
    if style is not None and styles is not None and (not style.isdigit() or int(style) >= styles):
        return f"style index {style!r} is out of range (the workbook defines {styles} cell styles)"
    if text is None or kind in ("str", "inlineStr", "e"):
        return None
    if kind in (None, "n"):
        try:
            float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:
            return f"number stored as {text!r}, which is not a number"
    elif kind == "s":
        if not text.strip().isdigit() or (strings is not None and int(text) >= strings):
            return f"shared-string index {text!r} is out of range (the workbook has {strings} shared strings)"
    elif kind == "b" and text.strip() not in ("0", "1"):
        return f"TRUE/FALSE value stored as {text!r}"
    elif kind == "d":
        try:
            from_ISO8601(text)
        except (ValueError, TypeError, OverflowError):
            return f"date stored as {text!r}, which is not an ISO 8601 date"
    return None


def _scan_cells(xml: bytes, strings: Optional[int], styles: Optional[int]) -> Iterator[tuple[str, str]]:
    """(cell, problem) for every damaged <c> element; ParseError for malformed XML."""
    for _, element in ElementTree.iterparse(io.BytesIO(xml), events=("end",)):
        if element.tag != f"{_MAIN}c":
            continue
        reference = element.get("r", "")
        value = element.find(f"{_MAIN}v")
        if reference and not _COORDINATE.match(reference):
            yield reference, f"cell reference {reference!r} is not a cell address"
        else:
            problem = _cell_problem(element.get("t"), None if value is None else value.text, element.get("s"),
                                    strings, styles)
            if problem:
                yield reference or "?", problem
        element.clear()


def locate_damage(data: bytes, label: str, cause: BaseException) -> SpecsError:
    """A SpecsError naming the file and, when the XML shows it, the sheet and cell that broke openpyxl."""
    fallback = SpecsError(f"could not read {label} as a workbook ({type(cause).__name__}: {cause})",
                          expected=f"an .xlsx file written by Excel, LibreOffice or write_specs; {REPAIR_HINT}")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError):
        return fallback
    with archive:
        has_strings = "xl/sharedStrings.xml" in archive.namelist()
        strings = _count(archive, "xl/sharedStrings.xml", "si") if has_strings else 0
        styles = _count(archive, "xl/styles.xml", "xf", parent="cellXfs")
        for title, path in _sheet_paths(archive).items():
            try:
                xml = archive.read(path)
                for cell, problem in _scan_cells(xml, strings, styles):
                    return SpecsError(f"{label} is damaged: {problem}", sheet=title, cell=cell,
                                      expected=f"a readable cell; {REPAIR_HINT}")
            except ElementTree.ParseError as exc:
                line, column = exc.position
                return SpecsError(f"{label} is damaged: the XML of sheet {title!r} is malformed at line {line}, "
                                  f"column {column} ({exc})", sheet=title, expected=REPAIR_HINT)
            except (KeyError, zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
                return SpecsError(f"{label} is damaged: the part holding sheet {title!r} cannot be read ({exc})",
                                  sheet=title, expected=REPAIR_HINT)
    return fallback


# ---- openpyxl -> SheetCells --------------------------------------------------------------------------
def _load(data: bytes, label: str, data_only: bool):
    try:
        return openpyxl.load_workbook(io.BytesIO(data), data_only=data_only)
    except Exception as exc:  # noqa: BLE001  any parse failure of a damaged file: locate it, never a traceback
        raise locate_damage(data, label, exc) from exc


def _present_cells(worksheet) -> dict[tuple[int, int], Any]:
    """Cells the file holds, by 1-based (row, column). openpyxl's own store: iter_rows() would create
    every cell up to max_row x max_column (a formatted A1048576 makes that a million rows)."""
    return getattr(worksheet, "_cells", {})


def _formula_text(cell) -> Optional[str]:
    value = cell.value
    if cell.data_type != "f" and not (isinstance(value, str) and value.startswith("=")):
        return None
    text = getattr(value, "text", value)  # ArrayFormula / DataTableFormula carry their text
    return str(text) if str(text).startswith("=") else f"={text}"


def open_workbook(data: bytes, label: str) -> dict[str, SheetCells]:
    """{sheet title: SheetCells} in workbook order; SpecsError naming file, sheet and cell on damage."""
    has_formula = _inspect_zip(data, label)
    values_book = _load(data, label, data_only=True)
    formula_book = _load(data, label, data_only=False) if has_formula else None
    sheets = {}
    for title in values_book.sheetnames:
        cells = {(r - 1, c - 1): cell.value for (r, c), cell in _present_cells(values_book[title]).items()
                 if cell.value is not None}
        if formula_book is not None:
            for (r, c), cell in _present_cells(formula_book[title]).items():
                formula = _formula_text(cell)
                if formula is not None and (r - 1, c - 1) not in cells:
                    cells[(r - 1, c - 1)] = UncalculatedFormula(formula)
        sheets[title] = SheetCells(title, cells)
    return sheets

