"""The hardware workbook (specs.xlsx): load, validate, write, and the blank template.

    devices = load_specs()                      # the bundled specs.xlsx: {name: Hardware}
    h100 = load_hardware("H100-SXM")
    mine = load_specs("my_specs.xlsx")          # or bytes, or a binary file object (an upload)
    mine.warnings                               # unusual values (likely unit slips) that still loaded
    mine.sources                                # its `sources` sheet, as load_sources gives it
    write_specs(devices.values(), "copy.xlsx", sources=load_sources())
    write_template("blank.xlsx")

Layout (sheet `hardware`): A1 `field`, B1 `unit`, C1 `description`, device names from D1 on;
one row per `engine.hardware.device.WORKBOOK_FIELDS` entry. Sheet `sources` says where every number
comes from; sheet `README` explains units and how peaks are derived. Any problem raises a
`SpecsError` naming sheet!cell, field, device, the bad value and what was expected; a value outside
the usual range of its field loads with a `SpecsWarning` (the likely unit slip) in `Specs.warnings`.

The bundled workbook is parsed once per file modification time. The returned dict is new on
every call, and so are the Hardware objects in it; still, make what-if edits with
`Hardware.with_changes(...)` (validated copies) rather than by assigning attributes.
"""

from __future__ import annotations

import functools
import io
import os
from pathlib import Path
from typing import Iterable, Mapping, Optional, Union

from engine.common.names import did_you_mean
from engine.hardware.device import Hardware
from engine.hardware.specs.opening import open_workbook
from engine.hardware.specs.plausible import SpecsWarning
from engine.hardware.specs.cells import SpecsError
from engine.hardware.specs.sheets import read_hardware_sheet, read_sources_sheet
from engine.hardware.specs.writing import TEMPLATE_DEVICE, specs_to_frame, to_workbook_value, write_specs, write_template

__all__ = [
    "Specs", "SpecsError", "SpecsWarning", "TEMPLATE_DEVICE", "default_specs_path", "load_hardware", "load_sources",
    "load_specs", "specs_to_frame", "to_workbook_value", "write_specs", "write_template",
]

SPECS_PATH_ENV = "LLM_ROOFLINE_SPECS"
SpecsSource = Union[None, str, os.PathLike, bytes, bytearray, memoryview, io.IOBase]


def default_specs_path() -> Path:
    """The bundled specs.xlsx at the repository root, or the file named by $LLM_ROOFLINE_SPECS."""
    override = os.environ.get(SPECS_PATH_ENV)
    if override:
        return Path(override).expanduser()
    return Path(__file__).resolve().parents[3] / "specs.xlsx"


class Specs(dict):
    """{device name: Hardware} in column order, with what else the workbook said.

    warnings: SpecsWarning for each value outside its field's usual range (it loaded; str() names the
    cell, the value, the usual range and the likely unit slip). sources: {device: {field key:
    (source, note)}} from the `sources` sheet, so a workbook written back keeps the user's citations.
    """

    def __init__(self, devices: Mapping[str, Hardware] = (), warnings: Iterable[SpecsWarning] = (),
                 sources: Optional[Mapping[str, Mapping[str, tuple[str, str]]]] = None):
        super().__init__(devices)
        self.warnings: list[SpecsWarning] = list(warnings)
        self.sources = {device: dict(fields) for device, fields in (sources or {}).items()}


def _read(data: bytes, label: str) -> tuple[dict[str, Hardware], list[SpecsWarning], dict]:
    sheets = open_workbook(data, label)
    devices, warnings = read_hardware_sheet(sheets)
    return devices, warnings, read_sources_sheet(sheets)


def _read_bytes(source: SpecsSource) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), "the uploaded bytes"
    if hasattr(source, "getvalue"):  # io.BytesIO, Streamlit's UploadedFile
        return bytes(source.getvalue()), getattr(source, "name", "the uploaded file")
    if hasattr(source, "read"):
        if hasattr(source, "seek"):
            source.seek(0)
        return source.read(), getattr(source, "name", "the file object")
    raise TypeError(f"specs source must be None, a path, bytes or a binary file object, not {type(source).__name__}")


@functools.lru_cache(maxsize=8)
def _parse_file(path: str, modified_ns: int, size: int) -> tuple[dict[str, Hardware], list[SpecsWarning], dict]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SpecsError(f"cannot read workbook {path!r} ({exc.strerror or exc})",
                         expected="a readable .xlsx file") from exc
    return _read(data, path)


def _parse(source: SpecsSource) -> tuple[dict[str, Hardware], list[SpecsWarning], dict]:
    if source is None or isinstance(source, (str, os.PathLike)):
        path = Path(source).expanduser() if source is not None else default_specs_path()
        try:
            stat = path.stat()
        except OSError as exc:
            raise SpecsError(f"cannot open workbook {str(path)!r} ({exc.strerror or exc})",
                             expected="an existing .xlsx file") from exc
        return _parse_file(str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    data, label = _read_bytes(source)
    return _read(data, label)


def load_specs(source: SpecsSource = None) -> Specs:
    """{device name: Hardware} in column order, from the bundled workbook or `source`, as a `Specs`
    dict whose `warnings` list unusual values and `sources` holds the sources sheet.

    source: None (bundled specs.xlsx), a path, raw bytes, or a binary file-like object.
    """
    devices, warnings, sources = _parse(source)
    return Specs({name: device.model_copy() for name, device in devices.items()}, warnings, sources)


def load_sources(source: SpecsSource = None) -> dict[str, dict[str, tuple[str, str]]]:
    """{device name: {field key: (source, note)}} from the `sources` sheet."""
    _, _, sources = _parse(source)
    return {device: dict(fields) for device, fields in sources.items()}


def load_hardware(name: str, source: SpecsSource = None) -> Hardware:
    """One device by name (exact, else case-insensitive); SpecsError lists the available names."""
    devices = load_specs(source)
    if name in devices:
        return devices[name]
    matches = [n for n in devices if n.lower() == str(name).strip().lower()]
    if len(matches) == 1:
        return devices[matches[0]]
    close = did_you_mean(name, devices)
    raise SpecsError(f"unknown device {name!r}" + (f" ({close})" if close else ""), sheet="hardware", device=name,
                     value=name, expected="one of " + ", ".join(devices))


def clear_cache() -> None:
    """Forget parsed workbooks (the cache also refreshes by itself when a file changes)."""
    _parse_file.cache_clear()

