"""Uploaded devices and configs carried inside a shared link, so the link reproduces the view.

Pure functions, no Streamlit. A blob is a compact JSON document, zlib-compressed, in URL-safe base64
without padding: `dev.<NAME>=<blob>` holds an uploaded workbook device's fields (SI units, as
engine.hardware.device.Hardware), `cfg=<blob>` the uploaded config.json. On the way back in they pass the same
validation as an upload (Hardware's limits; engine.models' config parsing); a bad or tampered blob
raises CarryError naming the URL parameter.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import zlib
from typing import Any, Mapping

from pydantic import ValidationError

from engine import Hardware, parse_config_json

MAX_LINK_CHARS = 8000          # longer links break in chat tools, mail clients and some proxies
MAX_INFLATED_BYTES = 1_000_000  # a blob never inflates beyond this (a config.json is a few kB)
DEVICE_PREFIX, CONFIG_KEY = "dev.", "cfg"


class CarryError(ValueError):
    """A carried blob that cannot be read; the message names the URL parameter."""


def pack(document: Any) -> str:
    text = json.dumps(document, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode().rstrip("=")


def unpack_bytes(blob: str, key: str) -> bytes:
    """The JSON bytes of a blob; CarryError naming `key` when it is not base64, not zlib or too large."""
    try:
        raw = base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))
        inflater = zlib.decompressobj()
        content = inflater.decompress(raw, MAX_INFLATED_BYTES)
    except (binascii.Error, ValueError, zlib.error):
        raise CarryError(f"URL parameter {key}: not a carried value (expected zlib-compressed JSON in URL-safe "
                         "base64, as the share link writes it)") from None
    if inflater.unconsumed_tail:
        raise CarryError(f"URL parameter {key}: inflates beyond {MAX_INFLATED_BYTES:,} bytes")
    return content


def device_fields(device: Hardware) -> dict:
    return device.model_dump(mode="json", exclude_defaults=True)


def device_from_blob(name: str, blob: str) -> Hardware:
    key = f"{DEVICE_PREFIX}{name}"
    try:
        fields = json.loads(unpack_bytes(blob, key))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise CarryError(f"URL parameter {key}: not valid JSON inside") from None
    if not isinstance(fields, dict):
        raise CarryError(f"URL parameter {key}: expected the device's fields (a JSON object)")
    try:
        return Hardware.model_validate({**fields, "name": name})
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:4])
        raise CarryError(f"URL parameter {key}: not a valid device ({problems})") from None


def config_from_blob(blob: str) -> dict:
    """The carried config.json as an object (same size, nesting and JSON checks as an upload)."""
    return parse_config_json(unpack_bytes(blob, CONFIG_KEY), f"URL parameter {CONFIG_KEY}")


def carried_devices(names, devices: Mapping[str, Hardware], bundled: Mapping[str, Hardware]) -> tuple:
    """((name, blob), ...) for the devices among `names` that the bundled workbook lacks or defines otherwise."""
    return tuple((name, pack(device_fields(devices[name]))) for name in dict.fromkeys(names)
                 if name in devices and bundled.get(name) != devices[name])


def devices_from_state(state) -> tuple[dict[str, Hardware], list[str]]:
    """{name: device} for a link's `dev.` parameters; a bad one is left out with a warning naming it."""
    devices, warnings = {}, []
    for name, blob in state.carried_devices:
        try:
            devices[name] = device_from_blob(name, blob)
        except CarryError as error:
            warnings.append(f"{error}; device {name!r} left out")
    return devices, warnings


def config_from_state(state, build) -> tuple[tuple[dict, object] | None, list[str]]:
    """(config, model) for a link's `cfg` parameter, built by `build(config, name)` under the link's `model=`
    name (uploaded/<file>), or None and a warning naming `cfg`."""
    from dashboard.state import UPLOAD_PREFIX
    if not state.carried_config:
        return None, []
    if not state.model.startswith(UPLOAD_PREFIX):
        return None, [f"URL parameter {CONFIG_KEY}: ignored, because model={state.model!r} is not an uploaded "
                      "config.json"]
    try:
        config = config_from_blob(state.carried_config)
        return (config, build(config, state.model)), []
    except ValueError as error:          # CarryError, ModelConfigError and the model's own field errors
        text = str(error)
        named = text if text.startswith("URL parameter") else f"URL parameter {CONFIG_KEY} ({state.model}): {text}"
        return None, [named]


def with_carried(workbook: Mapping[str, Hardware], carried: Mapping[str, Hardware], uploaded: bool) -> dict:
    """The workbook's devices plus the carried ones: a carried device replaces a bundled device of its name,
    never one of a workbook the user uploaded in this session."""
    if not carried:
        return workbook
    merged = copy.copy(workbook)          # keeps a Specs' sources and warnings
    for name, device in carried.items():
        if not (uploaded and name in workbook):
            merged[name] = device
    return merged


def used_device_names(state) -> tuple[str, ...]:
    """Every device the view needs: the selection, the clones' bases and the edited devices."""
    return tuple(dict.fromkeys(state.devices + tuple(base for _, base in state.clones)
                               + tuple(device for device, _ in state.edits)))
