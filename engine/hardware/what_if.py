"""What-if edits of a device in workbook units (as users type them), validated like the workbook."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from pydantic import ValidationError

from engine.hardware.device import WORKBOOK_FIELD_BY_KEY, WORKBOOK_FIELDS, Hardware
from engine.hardware.specs.cells import expectation, is_integer_field, to_si
from engine.hardware.specs.writing import value_in_workbook_units


class EditError(ValueError):
    """An edit that cannot be applied; names the field, the value and what is expected."""

    def __init__(self, field: str, value: Any, expected: str):
        self.field, self.value, self.expected = field, value, expected
        super().__init__(f"{field} = {value!r}: expected {expected}")


def workbook_value(hardware: Hardware, key: str) -> Any:
    """A field of `hardware` in the unit of its workbook row (None when not published)."""
    return value_in_workbook_units(hardware, WORKBOOK_FIELD_BY_KEY[key])


def workbook_values(hardware: Hardware) -> dict[str, Any]:
    return {field.key: workbook_value(hardware, field.key) for field in WORKBOOK_FIELDS}


def _si_value(key: str, value: Any) -> Any:
    field = WORKBOOK_FIELD_BY_KEY.get(key)
    if field is None:
        raise EditError(key, value, "a field of the hardware sheet (" + ", ".join(WORKBOOK_FIELD_BY_KEY) + ")")
    if field.text:
        return "" if value is None else str(value)
    if value is None or (isinstance(value, str) and not value.strip()):
        if field.required:
            raise EditError(key, value, expectation(field))
        return None
    if isinstance(value, bool):
        raise EditError(key, value, expectation(field))
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise EditError(key, value, expectation(field)) from None
    if is_integer_field(field):
        if not number.is_integer():
            raise EditError(key, value, "a whole number, " + expectation(field))
        return int(number)
    return to_si(number, field.scale)


def apply_edits(hardware: Hardware, edits: Mapping[str, Any], new_name: Optional[str] = None) -> Hardware:
    """A validated copy of `hardware` with `edits` ({workbook key: value in workbook units})."""
    changes = {WORKBOOK_FIELD_BY_KEY[key].attribute if key in WORKBOOK_FIELD_BY_KEY else key: _si_value(key, value)
               for key, value in edits.items()}
    if new_name is not None:
        changes["name"] = new_name
    try:
        return hardware.with_changes(**changes)
    except ValidationError as error:
        first = error.errors()[0]
        attribute = str(first["loc"][0]) if first.get("loc") else "device"
        key = next((f.key for f in WORKBOOK_FIELDS if f.attribute == attribute), attribute)
        field = WORKBOOK_FIELD_BY_KEY.get(key)
        shown = edits.get(key, first.get("input"))
        raise EditError(key, shown, expectation(field) if field else first.get("msg", "a valid value")) from None
