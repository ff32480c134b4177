"""Grid specifications as people type them: `FIELD=VALUES` with comma lists and ranges, or a JSON file.

    parse_grid_values("batch", "1,8,64")                 -> [1, 8, 64]
    parse_grid_values("memory_bandwidth", "1000:4000:4") -> [1000.0, 2000.0, 3000.0, 4000.0]
    parse_grid_values("batch", "log:1:1024:11")          -> [1, 2, 4, ..., 1024]

Used by `llm-roofline sweep` (--grid, --grid-file) and the dashboard's Explore page; errors are
ValueErrors saying what is expected (docs/sweeps.md).
"""

from __future__ import annotations

import json
import math
import typing

from engine.hardware.dtypes import check_dtype
from engine.common.errors import one_line
from engine.models.config_reader import shown


NONE_WORDS = ("none", "null")
TRUE_WORDS, FALSE_WORDS = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


DEFAULT_MAX_POINTS = 1_000_000        # points one sweep evaluates (each row is kept in memory)
MAX_GRID_FILE_BYTES = 16 * 2**20
MAX_POINTS_HINT = "raise the limit with --max-points N (or sweep fewer values)"


class GridArgumentError(ValueError):
    """A --grid or --grid-file entry that cannot be read; the message names the flag and the field."""


def value_kind(field: str) -> tuple[str, tuple, bool]:
    """(kind, choices, accepts None) of a grid field's values: kind is int, float, bool, choice, dtype or text."""
    from engine.explore.grid import DEVICE_FIELD, MODEL_FIELD, PSEUDO_HARDWARE_FIELDS, SCENARIO_FIELDS, check_fields
    from engine.hardware.device import WORKBOOK_FIELD_BY_KEY
    from engine.hardware.specs.cells import is_integer_field
    from engine.workload.scenario import Scenario
    check_fields([field])
    if field in (DEVICE_FIELD, MODEL_FIELD):
        return "text", (), False
    if field in PSEUDO_HARDWARE_FIELDS:
        return "float", (), False
    if field not in SCENARIO_FIELDS:
        return ("int" if is_integer_field(WORKBOOK_FIELD_BY_KEY[field]) else "float"), (), False
    annotation = Scenario.model_fields[field].annotation
    if typing.get_origin(annotation) is typing.Literal:
        return "choice", typing.get_args(annotation), False
    options = typing.get_args(annotation)
    optional = type(None) in options
    base = next((a for a in options if a is not type(None)), annotation) if options else annotation
    if field.endswith("_dtype"):
        return "dtype", (), optional
    return {bool: "bool", int: "int", float: "float"}.get(base, "text"), (), optional


def _grid_value(field: str, value, kind: tuple[str, tuple, bool]):
    """One value of `field` (text from the command line, or a JSON number/bool/null) as the sweep takes it;
    ValueError saying what is expected."""
    name, choices, optional = kind
    text = value.strip() if isinstance(value, str) else value
    if text is None or (isinstance(text, str) and text.lower() in NONE_WORDS):
        if optional:
            return None
        raise ValueError(f"expected {_expected(kind)}, got none")
    if name == "bool":
        if isinstance(text, bool):
            return text
        if isinstance(text, str) and text.lower() in TRUE_WORDS + FALSE_WORDS:
            return text.lower() in TRUE_WORDS
        raise ValueError(f"expected true or false, got {value!r}")
    if name in ("int", "float"):
        if isinstance(text, bool):
            raise ValueError(f"expected {_expected(kind)}, got {value!r}")
        try:
            number = float(text)
        except (TypeError, ValueError):
            raise ValueError(f"expected {_expected(kind)}, got {value!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"expected {_expected(kind)}, got {value!r}")
        if name == "float":
            return number
        if not number.is_integer():
            raise ValueError(f"expected whole numbers, got {value!r}")
        return int(number)
    if not isinstance(text, str) or not text:
        raise ValueError(f"expected {_expected(kind)}, got {value!r}")
    if name == "choice" and text not in choices:
        raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
    if name == "dtype":
        return check_dtype(text)
    return text


def _expected(kind: tuple[str, tuple, bool]) -> str:
    name, choices, optional = kind
    noun = {"int": "whole numbers", "float": "numbers", "bool": "true or false", "dtype": "a dtype",
            "text": "names", "choice": "one of " + ", ".join(choices)}[name]
    return noun + (" or none" if optional else "")


def _grid_range(field: str, text: str, kind: tuple[str, tuple, bool], max_count: int | None = None) -> list:
    """`start:stop:count` (linear, both ends included) or `log:start:stop:count` (geometric); integer
    fields round to whole numbers (duplicates from rounding dropped), float fields to 12 significant digits."""
    import numpy as np
    parts = [p.strip() for p in text.split(":")]
    geometric = parts[0].lower() == "log"
    if geometric:
        parts = parts[1:]
    if kind[0] not in ("int", "float"):
        raise ValueError(f"a range {text!r} needs a numeric field")
    if len(parts) != 3:
        raise ValueError(f"expected a range start:stop:count or log:start:stop:count, got {text!r}")
    try:
        start, stop, count = float(parts[0]), float(parts[1]), float(parts[2])
    except ValueError:
        raise ValueError(f"range {text!r}: start, stop and count must be numbers") from None
    if not all(math.isfinite(v) for v in (start, stop, count)):
        raise ValueError(f"range {text!r}: start, stop and count must be finite")
    if not count.is_integer() or count < 1 or (count == 1 and start != stop):
        raise ValueError(f"range {text!r}: count must be a whole number >= 2 (1 only when start = stop)")
    if max_count is not None and count > max_count:
        raise ValueError(f"range {text!r}: count must be from 2 to {max_count:,}, got {count:,.0f}")
    if geometric and (start <= 0 or stop <= 0):
        raise ValueError(f"range {text!r}: a log range needs start and stop > 0")
    values = (np.geomspace if geometric else np.linspace)(start, stop, int(count))
    values[0], values[-1] = start, stop                 # the ends exactly as typed
    if kind[0] == "int":
        return list(dict.fromkeys(math.floor(v + 0.5) for v in values))
    return [float(f"{v:.12g}") for v in values]


def parse_grid_values(field: str, text: str, max_count: int | None = None) -> list:
    """VALUES of `--grid FIELD=VALUES`: comma-separated values and ranges (docs/sweeps.md); a range has at
    most `max_count` values (checked before any is made)."""
    return _parse_values(field, text, value_kind(field), max_count)


def parse_numbers(text: str, max_count: int | None = None) -> list[float]:
    """Comma-separated numbers and ranges for no field in particular (floats; the dashboard's axes);
    `max_count` bounds a range's count."""
    return _parse_values("values", text, ("float", (), False), max_count)


def is_geometric(text: str) -> bool:
    """Whether VALUES is one log range (drawn on a log axis)."""
    return str(text).strip().lower().startswith("log:") and "," not in str(text)


def _parse_values(field: str, text: str, kind: tuple[str, tuple, bool], max_count: int | None = None) -> list:
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or any(not item for item in items):
        raise ValueError(f"expected a comma-separated list of {_expected(kind)} or a range, got {text!r}")
    values: list = []
    for item in items:
        if ":" in item and kind[0] in ("int", "float"):
            values.extend(_grid_range(field, item, kind, max_count))
        else:
            values.append(_grid_value(field, item, kind))
    return values


def sweep_grid_arguments(grid_flags, grid_file, max_points: int = DEFAULT_MAX_POINTS) -> dict[str, list]:
    """The grid of --grid-file (a JSON object: field -> list of values, or a VALUES string) and the
    --grid FIELD=VALUES flags, in that order (the first field varies slowest); at most `max_points` points,
    checked before the grid is expanded (a range's count before its values are made)."""
    from engine.explore.grid import GridError
    grid: dict[str, list] = {}

    def add(flag: str, field: str, make) -> None:
        if field in grid:
            raise GridArgumentError(f"{flag}: grid field {field!r} given twice")
        try:
            grid[field] = make()
        except GridError as error:
            raise GridArgumentError(f"{flag}: {one_line(error)}") from None
        except ValueError as error:
            hint = f"; {MAX_POINTS_HINT}" if "count must be from 2 to" in str(error) else ""
            raise GridArgumentError(f"{flag}: grid field {field!r}: {one_line(error)}{hint}") from None
        check_grid_size(grid, max_points, flag)

    if grid_file:
        flag = f"--grid-file {grid_file}"
        for field, values in _read_grid_file(grid_file).items():
            if isinstance(values, str):
                add(flag, field, lambda f=field, v=values: parse_grid_values(f, v, max_points))
            elif isinstance(values, list) and values:
                add(flag, field, lambda f=field, v=values: _json_values(f, v, max_points))
            else:
                raise GridArgumentError(f"{flag}: grid field {field!r}: expected a non-empty list of values or a "
                                        f"VALUES string, got {shown(values)}")
    for entry in grid_flags or ():
        field, equals, text = entry.partition("=")
        field = field.strip()
        if not equals or not field:
            raise GridArgumentError(f"--grid {shown(entry)}: expected FIELD=VALUES (e.g. batch=1,8,64)")
        add(f"--grid {entry}", field, lambda f=field, t=text: parse_grid_values(f, t, max_points))
    return grid


def check_grid_size(grid: dict, max_points: int, flag: str = "the grid") -> None:
    """GridArgumentError when the grid's points (the product of its value counts) exceed `max_points`."""
    total = math.prod(len(values) for values in grid.values())
    if total > max_points:
        sizes = " x ".join(f"{len(values):,} {field}" for field, values in grid.items())
        raise GridArgumentError(f"{flag}: the grid has {total:,} points ({sizes}), more than the {max_points:,} "
                                f"a sweep evaluates at once; {MAX_POINTS_HINT}")


def _read_grid_file(grid_file) -> dict:
    """The JSON object of a --grid-file: at most MAX_GRID_FILE_BYTES, nested at most MAX_JSON_DEPTH."""
    from engine.models.validation import MAX_JSON_DEPTH, json_depth
    flag = f"--grid-file {grid_file}"
    try:
        with open(grid_file, "rb") as handle:
            content = handle.read(MAX_GRID_FILE_BYTES + 1)
    except OSError as error:
        raise GridArgumentError(f"{flag}: cannot read it ({error.strerror or type(error).__name__}); expected "
                                "a JSON file of field -> list of values") from None
    if len(content) > MAX_GRID_FILE_BYTES:
        raise GridArgumentError(f"{flag}: larger than {MAX_GRID_FILE_BYTES:,} bytes; expected a small JSON object "
                                "of field -> list of values (ranges as \"start:stop:count\")")
    try:
        data = json.loads(content)
    except RecursionError:
        raise GridArgumentError(f"{flag}: nested deeper than {MAX_JSON_DEPTH} levels; expected a JSON object "
                                "of field -> list of values") from None
    except ValueError as error:       # JSONDecodeError, bad UTF-8, an integer of thousands of digits
        raise GridArgumentError(f"{flag}: not JSON ({shown(str(error))})") from None
    if json_depth(data) > MAX_JSON_DEPTH:
        raise GridArgumentError(f"{flag}: nested deeper than {MAX_JSON_DEPTH} levels; expected a JSON object "
                                "of field -> list of values")
    if not isinstance(data, dict) or not data:
        raise GridArgumentError(f"{flag}: expected a JSON object of field -> list of values")
    return data


def _json_values(field: str, values: list, max_count: int | None = None) -> list:
    kind = value_kind(field)
    out: list = []
    for value in values:
        if isinstance(value, str) and ":" in value and kind[0] in ("int", "float"):
            out.extend(_grid_range(field, value, kind, max_count))
        elif isinstance(value, (list, dict)):
            raise ValueError(f"expected {_expected(kind)}, got {shown(value)}")
        else:
            out.append(_grid_value(field, value, kind))
    return out


