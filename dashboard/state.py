"""The dashboard's whole view as a value, and its round trip through the URL query string.

Pure functions, no Streamlit: `parse_query(params)` -> (ViewState, warnings) and
`to_query(state)` -> {key: value}. A bad or unknown parameter gives a warning naming it and
falls back for that field only.

URL keys: page, hw (comma-separated devices, the first is the primary), model, phase, batch,
in, out, ctx, chunk, wdt, adt, kvdt, method, tp, pp, dp, ep, ovl (overlap communication),
cpf (chunked prefill), stack, pct, sweep, plus
`clone.<NEW NAME>=<BASE DEVICE>` for hypothetical devices and
`edit.<DEVICE>=<field>:<value>;<field>:<value>` for edited fields (workbook units).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Optional

from engine.dtypes import DTYPES, check_dtype
from engine.estimators import METHODS
from engine.workload import PHASES

PAGES = ("overview", "compare", "sweeps", "hardware", "accuracy")
PAGE_TITLES = {"overview": "Overview", "compare": "Compare devices", "sweeps": "Sweeps", "hardware": "Hardware",
               "accuracy": "Accuracy"}
STACK_BY = ("name", "family")
SWEEP_FIELDS = ("batch", "input_length", "tp")
DEFAULT_DEVICE = "H100-SXM"
DEFAULT_MODEL = "meta-llama/Llama-3.1-8B"
NAME_FORBIDDEN = set(",;:=")


@dataclass(frozen=True)
class ViewState:
    page: str = "overview"
    devices: tuple[str, ...] = (DEFAULT_DEVICE,)
    model: str = DEFAULT_MODEL
    phase: str = "request"
    batch: int = 1
    input_length: int = 1024
    output_length: int = 256
    context_length: Optional[int] = None
    chunk_size: int = 256
    weight_dtype: str = "bf16"
    activation_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    method: str = "roofline"
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    overlap_communication: bool = False
    chunked_prefill: bool = False
    stack_by: str = "name"
    percent: bool = False
    sweep_field: str = "batch"
    clones: tuple[tuple[str, str], ...] = ()                          # (new name, base device)
    edits: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()   # (device, ((field, value), ...))

    def edits_for(self, device: str) -> dict[str, str]:
        return dict(next((fields for name, fields in self.edits if name == device), ()))

    def with_edits(self, device: str, fields: Mapping[str, Any]) -> "ViewState":
        others = tuple((name, f) for name, f in self.edits if name != device)
        kept = tuple((k, _format_value(v)) for k, v in fields.items())
        return replace(self, edits=others + ((device, kept),) if kept else others)

    @property
    def scenario_fields(self) -> dict[str, Any]:
        return {"phase": self.phase, "batch": self.batch, "input_length": self.input_length,
                "output_length": self.output_length, "context_length": self.context_length,
                "chunk_size": self.chunk_size, "weight_dtype": self.weight_dtype,
                "activation_dtype": self.activation_dtype, "kv_dtype": self.kv_dtype, "tp": self.tp, "pp": self.pp,
                "dp": self.dp, "ep": self.ep, "overlap_communication": self.overlap_communication,
                "chunked_prefill": self.chunked_prefill}


def _format_value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _whole(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise ValueError
        return value
    parse.expected = f"a whole number from {low} to {high}"
    return parse


def _choice(options) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in options:
            raise ValueError
        return text
    parse.expected = "one of " + ", ".join(options)
    return parse


def _flag(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError
    return text == "1"


_flag.expected = "0 or 1"


def _name(text: str) -> str:
    text = text.strip()
    if not text or NAME_FORBIDDEN & set(text) or len(text) > 80:
        raise ValueError
    return text


_name.expected = "a name without , ; : ="


def _dtype(text: str) -> str:
    return check_dtype(text)            # ValueError for unknown formats


_dtype.expected = "a dtype such as " + ", ".join(DTYPES[:6]) + " or a grouped format like int4_g128"


def _devices(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(_name(part) for part in text.split(",")))
    if not names:
        raise ValueError
    return names


_devices.expected = "device names separated by commas"

# URL key -> (ViewState attribute, parser, formatter)
SCALAR_PARAMETERS: dict[str, tuple[str, Callable, Callable[[Any], str]]] = {
    "page": ("page", _choice(PAGES), str),
    "hw": ("devices", _devices, ",".join),
    "model": ("model", _name, str),
    "phase": ("phase", _choice(PHASES), str),
    "batch": ("batch", _whole(1, 1_000_000), str),
    "in": ("input_length", _whole(1, 10_000_000), str),
    "out": ("output_length", _whole(1, 10_000_000), str),
    "ctx": ("context_length", _whole(0, 10_000_000), str),
    "chunk": ("chunk_size", _whole(1, 10_000_000), str),
    "wdt": ("weight_dtype", _dtype, str),
    "adt": ("activation_dtype", _dtype, str),
    "kvdt": ("kv_dtype", _dtype, str),
    "method": ("method", _choice(tuple(METHODS)), str),
    "tp": ("tp", _whole(1, 4096), str),
    "pp": ("pp", _whole(1, 4096), str),
    "dp": ("dp", _whole(1, 1_000_000), str),
    "ep": ("ep", _whole(1, 4096), str),
    "ovl": ("overlap_communication", _flag, lambda v: "1" if v else "0"),
    "cpf": ("chunked_prefill", _flag, lambda v: "1" if v else "0"),
    "stack": ("stack_by", _choice(STACK_BY), str),
    "pct": ("percent", _flag, lambda v: "1" if v else "0"),
    "sweep": ("sweep_field", _choice(SWEEP_FIELDS), str),
}


def _single(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        value = value[-1] if value else ""
    return str(value)


def parse_query(params: Mapping[str, Any]) -> tuple[ViewState, list[str]]:
    """A ViewState from URL query parameters, with one warning per bad or unknown parameter."""
    values: dict[str, Any] = {}
    warnings: list[str] = []
    clones: list[tuple[str, str]] = []
    edits: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    for key, raw in params.items():
        text = _single(raw)
        if key in SCALAR_PARAMETERS:
            attribute, parse, _ = SCALAR_PARAMETERS[key]
            try:
                values[attribute] = parse(text)
            except ValueError:
                default = getattr(ViewState(), attribute)
                warnings.append(f"URL parameter {key}={text!r} is not valid (expected {parse.expected}); "
                                f"using {default!r}")
        elif key.startswith("clone."):
            try:
                clones.append((_name(key[len("clone."):]), _name(text)))
            except ValueError:
                warnings.append(f"URL parameter {key}={text!r} is not valid (expected clone.NEW=BASE device names); ignored")
        elif key.startswith("edit."):
            try:
                edits.append((_name(key[len("edit."):]), _parse_edit_fields(text)))
            except ValueError:
                warnings.append(f"URL parameter {key}={text!r} is not valid (expected field:value;field:value); ignored")
        else:
            warnings.append(f"unknown URL parameter {key!r} ignored")
    return ViewState(**values, clones=tuple(clones), edits=tuple(edits)), warnings


def _parse_edit_fields(text: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for part in filter(None, text.split(";")):
        key, sep, value = part.partition(":")
        if not sep or not key.strip():
            raise ValueError
        pairs.append((key.strip(), value.strip()))
    if not pairs:
        raise ValueError
    return tuple(pairs)


def to_query(state: ViewState) -> dict[str, str]:
    """URL query parameters that reproduce `state` (parse_query(to_query(s)) == s)."""
    query = {}
    for key, (attribute, _, formatter) in SCALAR_PARAMETERS.items():
        value = getattr(state, attribute)
        if value is not None:
            query[key] = formatter(value)
    for new_name, base in state.clones:
        query[f"clone.{new_name}"] = base
    for device, fields in state.edits:
        query[f"edit.{device}"] = ";".join(f"{k}:{v}" for k, v in fields)
    return query
