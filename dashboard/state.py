"""The dashboard's whole view as a value, and its round trip through the URL query string.

Pure functions, no Streamlit: `parse_query(params)` -> (ViewState, warnings) and
`to_query(state)` -> {key: value}. A bad or unknown parameter gives a warning naming it and
falls back for that field only.

URL keys: page, hw (comma-separated devices, the first is the primary), model, models (comma-separated
model ids the Compare models page shows side by side; a bad id is dropped with a warning, the others kept),
phase, batch, in, out, ctx, chunk, wdt, adt, kvdt, method, tp, pp, dp, ep, ovl (overlap communication),
cpf (chunked prefill), stack, pct, sweep, chart (the overview's chart: roofline, gap, kernels, bounds, memory or
all; absent: roofline); coll (collective algorithm ring|tree), mb (prefill micro-batches),
skew (MoE routing skew), mla (MLA decode form absorbed|naive), left out at their defaults; plus
`dev.<DEVICE>=<blob>` and `cfg=<blob>`: an uploaded workbook device and config.json carried in the link
(dashboard/carry.py), and
`clone.<NEW NAME>=<BASE DEVICE>` for hypothetical devices and
`edit.<DEVICE>=<field>:<value>;<field>:<value>` for edited fields (workbook units).

Explore page keys (written on the Explore page, and on other pages only when not at their default):
- ex.view: line | heatmap | pareto | sensitivity | inverse
- ex.x, ex.y: the swept fields: a scenario field (batch, input_length, output_length,
  context_length, tp), a numeric hardware field in workbook units (memory_bandwidth GB/s,
  matrix_tflops TFLOP/s, compute_scale x, clock GHz, num_cores, llc_capacity MiB, ...; see
  engine.explore.grid.HARDWARE_FIELDS), `device` or `model`; ex.y may be `none` (line and Pareto views).
- ex.xv, ex.yv: their values: `start:stop:count` (evenly spaced), `log:start:stop:count`
  (geometric), or a comma list (`1,8,64`; device names for `device`, model ids for `model`); empty = an automatic
  range around the sidebar's value (see `parse_values`).
- ex.metric: the metric (tpot_s, ttft_s, tokens_per_s, ...; EXPLORE_METRICS).
- ex.change: the sensitivity step, in percent (20 = each field -20% and +20%).
- ex.ifield: the field the inverse design solves for (INVERSE_FIELDS); it uses ex.metric (one of
  INVERSE_METRICS there).
- ex.target: the inverse design's target for ex.metric, in the metric's display unit (ms for
  TPOT/TTFT, tokens/s, mJ per token, ...); absent = twice as good as the base point.

Serving page keys (likewise): sv.c (the concurrency shown), sv.cmax (the curve's largest concurrency),
sv.budget (tokens per iteration), sv.backend (generic, vllm, sglang, trtllm: fitted host-side times),
sv.wl (workload preset chat|rag|code|reasoning, or custom: the sidebar's input/output tokens),
sv.sd (speculative decoding none|draft|mtp), sv.dm (the draft model), sv.k (drafted tokens per step),
sv.a (acceptance rate 0..1); the design-space search (sv.ds=1): sv.ttft, sv.tpot (SLA limits in ms, absent:
none), sv.n (devices), sv.rps (requests/s to serve, absent: no recommendation), sv.dis (also disaggregated),
sv.pd, sv.dd (prefill and decode devices; absent: the primary device).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Optional

from engine import DTYPES, HARDWARE_FIELDS, METHODS, PHASES, check_dtype, is_geometric, parse_numbers

PAGES = ("overview", "compare", "compare_models", "sweeps", "explore", "serving", "hardware", "accuracy")
PAGE_TITLES = {"overview": "Overview", "compare": "Compare devices", "compare_models": "Compare models",
               "sweeps": "Sweeps", "explore": "Explore",
               "serving": "Serving", "hardware": "Hardware", "accuracy": "Accuracy"}
SERVING_BACKENDS = ("generic", "vllm", "sglang", "trtllm")
SERVING_WORKLOADS = ("custom", "chat", "rag", "code", "reasoning")      # engine/serving/presets.py, custom first
SPECULATIVE_KINDS = ("none", "draft", "mtp")
DEFAULT_DRAFT_MODEL = "meta-llama/Llama-3.1-8B"
STACK_BY = ("name", "family")
OVERVIEW_CHARTS = ("roofline", "gap", "kernels", "bounds", "memory", "all")   # the overview draws one (or all)
SWEEP_FIELDS = ("batch", "input_length", "tp")
DEFAULT_DEVICE = "H100-SXM"
DEFAULT_MODEL = "meta-llama/Llama-3.1-8B"
NAME_FORBIDDEN = set(",;:=")

EXPLORE_VIEWS = ("line", "heatmap", "pareto", "sensitivity", "inverse")
EXPLORE_SCENARIO_FIELDS = ("batch", "input_length", "output_length", "context_length", "tp")
_FIRST_HARDWARE_FIELDS = ("memory_bandwidth", "matrix_tflops", "compute_scale", "clock", "num_cores", "memory_capacity",
                          "llc_capacity", "llc_bandwidth", "link_bandwidth")
EXPLORE_HARDWARE_FIELDS = _FIRST_HARDWARE_FIELDS + tuple(f for f in HARDWARE_FIELDS if f not in _FIRST_HARDWARE_FIELDS)
DEVICE_FIELD, MODEL_FIELD, NO_FIELD = "device", "model", "none"
EXPLORE_FIELDS = EXPLORE_SCENARIO_FIELDS + EXPLORE_HARDWARE_FIELDS + (DEVICE_FIELD, MODEL_FIELD)
EXPLORE_METRICS = ("tpot_s", "ttft_s", "e2e_s", "tokens_per_s", "tokens_per_s_per_device", "prefill_tokens_per_s",
                   "energy_per_token_j", "tokens_per_j", "average_power_w", "memory_per_device_bytes",
                   "weights_per_device_bytes", "compute_bound_share")
INVERSE_FIELDS = ("memory_bandwidth", "matrix_tflops", "compute_scale", "clock", "num_cores", "llc_capacity",
                  "llc_bandwidth", "link_bandwidth", "inter_node_bandwidth", "tp")
INVERSE_METRICS = ("tpot_s", "ttft_s", "e2e_s", "tokens_per_s", "tokens_per_s_per_device", "prefill_tokens_per_s",
                   "tokens_per_j")     # engine.explore.inverse: latencies met at or below the target, the others at or above
MAX_AXIS_VALUES = 200


@dataclass(frozen=True)
class ViewState:
    page: str = "overview"
    devices: tuple[str, ...] = (DEFAULT_DEVICE,)
    model: str = DEFAULT_MODEL
    models: tuple[str, ...] = ()                                      # Compare models; () = the sidebar's model
    phase: str = "request"
    batch: int = 1
    input_length: int = 1024
    output_length: int = 256
    context_length: Optional[int] = None
    chunk_size: int = 256
    weight_dtype: str = "bf16"
    activation_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    method: str = "realistic"                                         # calibrated; the ideal roofline beside it
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    overlap_communication: bool = False
    chunked_prefill: bool = False
    stack_by: str = "name"
    percent: bool = False
    sweep_field: str = "batch"
    overview_chart: str = "roofline"                                  # the chart the overview draws
    explore_view: str = "line"
    explore_x: str = "batch"
    explore_x_values: str = ""                                        # "" = automatic range
    explore_y: str = NO_FIELD
    explore_y_values: str = ""
    explore_metric: str = "tpot_s"
    explore_change: int = 20                                          # percent
    explore_inverse_field: str = "memory_bandwidth"
    explore_target: Optional[float] = None                           # display unit of the metric; None = automatic
    serving_concurrency: int = 16
    serving_max_concurrency: int = 256
    serving_token_budget: int = 8192
    serving_backend: str = "generic"
    serving_workload: str = "custom"                                   # custom: the sidebar's input/output tokens
    serving_speculative: str = "none"
    serving_draft_model: str = DEFAULT_DRAFT_MODEL
    serving_draft_tokens: int = 3
    serving_acceptance_rate: float = 0.7
    serving_design_space: bool = False
    serving_ttft_max_ms: Optional[float] = None
    serving_tpot_max_ms: Optional[float] = None
    serving_devices: int = 8
    serving_requests_per_s: Optional[float] = None
    serving_disaggregated: bool = False
    serving_prefill_device: str = ""                                   # "": the primary device
    serving_decode_device: str = ""
    collective_algorithm: str = "ring"
    micro_batches: Optional[int] = None                               # None = the engine's choice
    routing_skew: float = 0.0                                         # MoE models only
    mla_decode: str = "absorbed"                                      # MLA models only
    clones: tuple[tuple[str, str], ...] = ()                          # (new name, base device)
    edits: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()   # (device, ((field, value), ...))
    carried_devices: tuple[tuple[str, str], ...] = ()                 # (device, blob): dashboard/carry.py
    carried_config: str = ""                                          # blob of an uploaded config.json

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
                "chunked_prefill": self.chunked_prefill, "collective_algorithm": self.collective_algorithm,
                "micro_batches": self.micro_batches, "routing_skew": self.routing_skew,
                "mla_decode": self.mla_decode}


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
    parse.bounds = (low, high)
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


UPLOAD_PREFIX = "uploaded/"          # the name a config.json uploaded in this browser session goes by
_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?")
MODEL_EXPECTED = ("a catalog id, a Hugging Face repo id (owner/name) or a config.json uploaded in this browser "
                  "session; the dashboard reads no paths")


def check_model_id(text: str) -> str:
    """`text` when it is a catalog or Hub repo id (owner/name) or an upload's name; ValueError otherwise.

    Decided from the text alone, never by looking at the server's disk, so the answer (and its message,
    MODEL_EXPECTED) is the same whether or not a file of that name exists: `/etc/passwd`, `~root/.bashrc`,
    `../x`, `a/b/c`, `C:\\x` are refused."""
    text = str(text).strip()
    if text.startswith(UPLOAD_PREFIX):
        name = text[len(UPLOAD_PREFIX):]
        if name and len(name) <= 200 and not (set(name) & set("/\\")) and ".." not in name \
                and name.isprintable():
            return text
    elif _REPO_ID.fullmatch(text) and ".." not in text and "--" not in text and not text.endswith((".", "-")):
        return text
    raise ValueError(f"model {text[:100]!r}: expected {MODEL_EXPECTED}")


def _model_id(text: str) -> str:
    return check_model_id(text)


_model_id.expected = MODEL_EXPECTED


def _model_ids(text: str) -> tuple[str, ...]:
    """Comma-separated model ids, each checked like `model` (parse_query keeps the good ones of a mixed list)."""
    ids = tuple(dict.fromkeys(check_model_id(part) for part in text.split(",") if part.strip()))
    if not ids:
        raise ValueError("no model ids")
    return ids


_model_ids.expected = "model ids separated by commas (each " + MODEL_EXPECTED + ")"


def _some_model_ids(text: str, warnings: list[str]) -> tuple[str, ...]:
    """The good ids of `models=`, one warning per bad one naming the parameter (the others are kept)."""
    kept = []
    for part in filter(str.strip, text.split(",")):
        try:
            kept.append(check_model_id(part))
        except ValueError as error:
            others = ", keeping the others" if "," in text else ""
            warnings.append(f"URL parameter models: {error}; left out{others}")
    return tuple(dict.fromkeys(kept))


def _dtype(text: str) -> str:
    return check_dtype(text)            # ValueError for unknown formats


_dtype.expected = "a dtype such as " + ", ".join(DTYPES[:6]) + " or a grouped format like int4_g128"


def _devices(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(_name(part) for part in text.split(",")))
    if not names:
        raise ValueError
    return names


_devices.expected = "device names separated by commas"


class ValuesError(ValueError):
    """A value range or list that cannot be read; the message says what is expected."""


VALUES_EXPECTED = "start:stop:count, log:start:stop:count or a comma-separated list"


def parse_values(text: str, numeric: bool = True) -> tuple[list, bool]:
    """The values of an Explore range, and whether they are geometric (drawn on a log axis).

    "1:100:5" -> [1, 25.75, 50.5, 75.25, 100] (evenly spaced, count values including both ends);
    "log:1:1000:4" -> [1, 10, 100, 1000]; "1,8,64" -> [1, 8, 64] (as given; names when not `numeric`).
    The syntax is the sweep CLI's (engine/explore/grid_spec.py). ValuesError (a ValueError) says what is wrong;
    at most MAX_AXIS_VALUES values.
    """
    text = str(text).strip()
    if not text:
        raise ValuesError(f"no values: expected {VALUES_EXPECTED}")
    if not numeric:
        items = [item.strip() for item in text.split(",")]
        if any(not item for item in items):
            raise ValuesError(f"{text!r}: an empty item in the list")
        if any(NAME_FORBIDDEN & set(item) for item in items):
            raise ValuesError(f"{text!r}: names cannot contain , ; : =")
        values = items
    else:
        try:
            values = parse_numbers(text, max_count=MAX_AXIS_VALUES)
        except ValueError as error:
            raise ValuesError(str(error)) from None
    if len(values) > MAX_AXIS_VALUES:
        raise ValuesError(f"{text!r}: at most {MAX_AXIS_VALUES} values")
    return list(dict.fromkeys(_tidy(v) for v in values) if numeric else dict.fromkeys(values)), \
        numeric and is_geometric(text)


def _tidy(value: float) -> float:
    """Round off floating-point noise (12 significant digits): 2.0000000000000004 -> 2.0."""
    return float(f"{value:.12g}")


def _values_spec(text: str) -> str:
    text = text.strip()
    if text:
        parse_values(text, numeric=False) if ":" not in text else parse_values(text)
    return text


_values_spec.expected = VALUES_EXPECTED + " (or empty for an automatic range)"


def _positive(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise ValueError
    return value


_positive.expected = "a number > 0"


def _skew(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 10:        # also refuses nan
        raise ValueError
    return value


_skew.expected = "a number from 0 (even routing) to 10"


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:         # also refuses nan
        raise ValueError
    return value


_fraction.expected = "a number from 0 to 1"

def _field(allow_none: bool) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in EXPLORE_FIELDS and not (allow_none and text == NO_FIELD):
            raise ValueError
        return text
    parse.expected = ("a scenario field (" + ", ".join(EXPLORE_SCENARIO_FIELDS) + "), a numeric hardware field ("
                      + ", ".join(_FIRST_HARDWARE_FIELDS) + ", ... engine.explore.grid.HARDWARE_FIELDS), device or model"
                      + (" or none" if allow_none else ""))
    return parse


# URL key -> (ViewState attribute, parser, formatter)
SCALAR_PARAMETERS: dict[str, tuple[str, Callable, Callable[[Any], str]]] = {
    "page": ("page", _choice(PAGES), str),
    "hw": ("devices", _devices, ",".join),
    "model": ("model", _model_id, str),
    "models": ("models", _model_ids, ",".join),
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
    "coll": ("collective_algorithm", _choice(("ring", "tree")), str),
    "mb": ("micro_batches", _whole(1, 1_000_000), str),
    "skew": ("routing_skew", _skew, _format_value),
    "mla": ("mla_decode", _choice(("absorbed", "naive")), str),
    "ovl": ("overlap_communication", _flag, lambda v: "1" if v else "0"),
    "cpf": ("chunked_prefill", _flag, lambda v: "1" if v else "0"),
    "stack": ("stack_by", _choice(STACK_BY), str),
    "pct": ("percent", _flag, lambda v: "1" if v else "0"),
    "sweep": ("sweep_field", _choice(SWEEP_FIELDS), str),
    "chart": ("overview_chart", _choice(OVERVIEW_CHARTS), str),
    "ex.view": ("explore_view", _choice(EXPLORE_VIEWS), str),
    "ex.x": ("explore_x", _field(allow_none=False), str),
    "ex.xv": ("explore_x_values", _values_spec, str),
    "ex.y": ("explore_y", _field(allow_none=True), str),
    "ex.yv": ("explore_y_values", _values_spec, str),
    "ex.metric": ("explore_metric", _choice(EXPLORE_METRICS), str),
    "ex.change": ("explore_change", _whole(1, 90), str),
    "ex.ifield": ("explore_inverse_field", _choice(INVERSE_FIELDS), str),
    "ex.target": ("explore_target", _positive, _format_value),
    "sv.c": ("serving_concurrency", _whole(1, 4096), str),
    "sv.cmax": ("serving_max_concurrency", _whole(1, 4096), str),
    "sv.budget": ("serving_token_budget", _whole(1, 1_000_000), str),
    "sv.backend": ("serving_backend", _choice(SERVING_BACKENDS), str),
    "sv.wl": ("serving_workload", _choice(SERVING_WORKLOADS), str),
    "sv.sd": ("serving_speculative", _choice(SPECULATIVE_KINDS), str),
    "sv.dm": ("serving_draft_model", _model_id, str),
    "sv.k": ("serving_draft_tokens", _whole(1, 16), str),
    "sv.a": ("serving_acceptance_rate", _fraction, _format_value),
    "sv.ds": ("serving_design_space", _flag, lambda v: "1" if v else "0"),
    "sv.ttft": ("serving_ttft_max_ms", _positive, _format_value),
    "sv.tpot": ("serving_tpot_max_ms", _positive, _format_value),
    "sv.n": ("serving_devices", _whole(1, 4096), str),
    "sv.rps": ("serving_requests_per_s", _positive, _format_value),
    "sv.dis": ("serving_disaggregated", _flag, lambda v: "1" if v else "0"),
    "sv.pd": ("serving_prefill_device", _name, str),
    "sv.dd": ("serving_decode_device", _name, str),
}
EXPLORE_KEYS = tuple(key for key in SCALAR_PARAMETERS if key.startswith("ex."))
SERVING_KEYS = tuple(key for key in SCALAR_PARAMETERS if key.startswith("sv."))
PAGE_KEYS = {"explore": EXPLORE_KEYS, "serving": SERVING_KEYS}   # written on their page, elsewhere only when changed
OMITTED_AT_DEFAULT = ("chart", "coll", "mb", "skew", "mla", "models", "sv.wl", "sv.sd", "sv.dm", "sv.k", "sv.a", "sv.ds",
                      "sv.n", "sv.dis")                               # left out of links while at their default
OMITTED_WHEN_EMPTY = EXPLORE_KEYS + ("sv.pd", "sv.dd")               # "" means automatic: left out of links
URL_KEY_OF = {attribute: key for key, (attribute, _, _) in SCALAR_PARAMETERS.items()}   # ViewState field -> URL key


def field_bounds(attribute: str) -> tuple[int, int] | None:
    """(lowest, highest) the URL accepts for a whole-number ViewState field (batch, input_length, tp, ...)."""
    key = URL_KEY_OF.get(attribute)
    return getattr(SCALAR_PARAMETERS[key][1], "bounds", None) if key else None


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
    carried: dict[str, Any] = {"dev": [], "cfg": ""}
    for key, raw in params.items():
        text = _single(raw)
        if key == "models":
            values["models"] = _some_model_ids(text, warnings)
        elif key in SCALAR_PARAMETERS:
            attribute, parse, _ = SCALAR_PARAMETERS[key]
            try:
                values[attribute] = parse(text)
            except ValueError as error:
                default = getattr(ViewState(), attribute)
                detail = str(error) if isinstance(error, ValuesError) else f"expected {parse.expected}"
                warnings.append(f"URL parameter {key}={text!r} is not valid ({detail}); "
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
        elif key.startswith("dev.") or key == "cfg":
            _read_carried(key, text, carried, warnings)
        else:
            warnings.append(f"unknown URL parameter {key!r} ignored")
    return ViewState(**values, clones=tuple(clones), edits=tuple(edits), carried_devices=tuple(carried["dev"]),
                     carried_config=carried["cfg"]), warnings


_BLOB = re.compile(r"[A-Za-z0-9_-]{1,20000}")


def _read_carried(key: str, text: str, carried: dict, warnings: list[str]) -> None:
    """Keep a carried blob's text (dashboard/carry.py decodes and validates it against the engine)."""
    if not _BLOB.fullmatch(text):
        warnings.append(f"URL parameter {key} is not valid (expected URL-safe base64 as the share link writes it); "
                        "ignored")
    elif key == "cfg":
        carried["cfg"] = text
    else:
        try:
            carried["dev"].append((_name(key[len("dev."):]), text))
        except ValueError:
            warnings.append(f"URL parameter {key} is not valid (expected dev.DEVICE with a device name); ignored")


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
    default = ViewState()
    for key, (attribute, _, formatter) in SCALAR_PARAMETERS.items():
        value = getattr(state, attribute)
        page = next((name for name, keys in PAGE_KEYS.items() if key in keys), None)
        if page and state.page != page and value == getattr(default, attribute):
            continue
        if key in OMITTED_AT_DEFAULT and value == getattr(default, attribute):
            continue              # a page's own controls stay out of other pages' links unless changed
        if value is not None and (value != "" or key not in OMITTED_WHEN_EMPTY):
            query[key] = formatter(value)
    for new_name, base in state.clones:
        query[f"clone.{new_name}"] = base
    for device, fields in state.edits:
        query[f"edit.{device}"] = ";".join(f"{k}:{v}" for k, v in fields)
    for device, blob in state.carried_devices:
        query[f"dev.{device}"] = blob
    if state.carried_config:
        query["cfg"] = state.carried_config
    return query
