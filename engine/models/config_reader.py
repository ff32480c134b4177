"""Typed reading of config.json fields; every failure is a ModelConfigError naming the field and its value."""

from __future__ import annotations

from typing import Any


from engine.models.errors import ModelConfigError, field_error, shown  # noqa: F401  (ModelConfigError, shown re-exported)
from engine.models.size_limits import SIZE_LIMITS, check_size

MISSING = object()


class ConfigReader:
    """Typed access to the fields of one config.json dict (or of a nested one such as `text_config`).

    `prefix` is put in front of field names in messages ("text_config.hidden_size"), so an error in a
    nested config still points at the right place.
    """

    def __init__(self, data: dict, model_type: str, prefix: str = ""):
        self.data = data
        self.model_type = model_type
        self.prefix = prefix

    def name(self, field: str) -> str:
        return self.prefix + field

    def has(self, field: str) -> bool:
        """True when the field is present and not null."""
        return self.data.get(field) is not None

    def raw(self, field: str, default: Any = None) -> Any:
        value = self.data.get(field)
        return default if value is None else value

    def _get(self, field: str, default: Any) -> Any:
        value = self.data.get(field, MISSING)
        if value is MISSING or (value is None and default is not MISSING):
            if default is MISSING:
                raise ModelConfigError(f"config.json field {self.name(field)!r} is missing: "
                                       f"required for model_type {self.model_type!r}")
            return default
        return value

    def error(self, field: str, value: Any, problem: str) -> ModelConfigError:
        return field_error(self.name(field), value, problem)

    def positive_int(self, field: str, default: Any = MISSING) -> int:
        value = self._get(field, default)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.error(field, value, "expected a positive integer")
        return self._bounded(field, value)

    def optional_positive_int(self, field: str) -> int | None:
        """A positive integer, or None when the field is absent or null."""
        return self.positive_int(field) if self.has(field) else None

    def non_negative_int(self, field: str, default: Any = MISSING) -> int:
        value = self._get(field, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.error(field, value, "expected a non-negative integer")
        return self._bounded(field, value)

    def _bounded(self, field: str, value: int) -> int:
        """Within the physical bounds of engine/models/size_limits.py when the field has them."""
        return check_size(field, value, self.prefix) if field in SIZE_LIMITS else value

    def boolean(self, field: str, default: Any = MISSING) -> bool:
        value = self._get(field, default)
        if not isinstance(value, bool):
            raise self.error(field, value, "expected true or false")
        return value

    def string(self, field: str, default: Any = MISSING) -> str:
        value = self._get(field, default)
        if not isinstance(value, str) or not value:
            raise self.error(field, value, "expected a non-empty string")
        return value

    def fraction(self, field: str, default: Any = MISSING) -> float:
        """A number in (0, 1], e.g. the share of head channels that are rotated."""
        value = self._get(field, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise self.error(field, value, "expected a number in (0, 1]")
        return float(value)

    def epsilon(self, field: str, default: float) -> float:
        value = self._get(field, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise self.error(field, value, "expected a small non-negative number")
        return float(value)

    def optional_positive_number(self, field: str) -> float | None:
        """A positive number (softcap, attention scale), or None when absent or null."""
        if not self.has(field):
            return None
        value = self.data[field]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise self.error(field, value, "expected a positive number or null")
        return float(value)

    def int_list(self, field: str, default: Any = MISSING) -> list[int]:
        value = self._get(field, default)
        if not isinstance(value, (list, tuple)) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise self.error(field, value, "expected a list of integers")
        if len(value) > 10_000:
            raise self.error(field, f"{len(value):,} entries", "expected at most one per layer")
        return list(value)

    def string_list(self, field: str) -> list[str]:
        value = self._get(field, MISSING)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise self.error(field, value, "expected a list of strings")
        return list(value)

    def nested(self, field: str, model_type: str | None = None) -> ConfigReader:
        """A reader for a nested config object such as `text_config`."""
        value = self._get(field, MISSING)
        if not isinstance(value, dict):
            raise self.error(field, value, "expected a JSON object")
        return ConfigReader(value, model_type or self.model_type, prefix=f"{self.prefix}{field}.")
