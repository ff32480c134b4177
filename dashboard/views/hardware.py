"""Hardware: edit any field of a device for what-if, clone it into a hypothetical one, download the workbook."""

from __future__ import annotations

import io
from dataclasses import replace

import pandas as pd
import streamlit as st

from dashboard import session
from dashboard.context import PageContext
from engine import (
    WORKBOOK_FIELD_BY_KEY, WORKBOOK_FIELDS, apply_edits, EditError, load_sources, workbook_values, write_specs,
)


def _shown(value) -> str:
    return "" if value is None else str(value)


def field_table(original, current, edits: dict) -> pd.DataFrame:
    """One row per workbook field: value now (editable), original, unit, marker, description."""
    before, after = workbook_values(original), workbook_values(current)
    return pd.DataFrame({
        "field": [f.key for f in WORKBOOK_FIELDS],
        "value": [_shown(after[f.key]) for f in WORKBOOK_FIELDS],
        "unit": [f.unit for f in WORKBOOK_FIELDS],
        "edited": ["✎ edited" if f.key in edits else "" for f in WORKBOOK_FIELDS],
        "original": [_shown(before[f.key]) for f in WORKBOOK_FIELDS],
        "description": [f.description for f in WORKBOOK_FIELDS],
    })


def _editor_key(device: str) -> str:
    return f"editor-{device}-{st.session_state.get('editor_version', 0)}"


def fold_edits(device: str, original, shown: pd.DataFrame, edited: pd.DataFrame) -> list[str]:
    """Fold the table's changed values into the view's edits (validated one by one); returns errors."""
    state = session.view()
    edits = state.edits_for(device)
    errors = []
    for row in range(len(shown)):
        value = edited["value"].iloc[row]
        if value == shown["value"].iloc[row]:
            continue
        key = shown["field"].iloc[row]
        value = "" if value is None else str(value).strip()
        try:
            apply_edits(original, {key: value})
        except EditError as error:
            errors.append(f"{device}: {error}; not applied")
            continue
        if _shown(workbook_values(original)[key]) == value:
            edits.pop(key, None)          # back to the original value: no longer an edit
        else:
            edits[key] = value
    session.set_view(state.with_edits(device, edits))
    return errors


def _reset(device: str) -> None:
    session.set_view(session.view().with_edits(device, {}))
    st.session_state["editor_version"] = st.session_state.get("editor_version", 0) + 1


def _clone(base: str, existing) -> None:
    """A hypothetical copy of `base` with its edits (carried as the clone's own edits, so the link rebuilds it),
    added to the selection after the devices already chosen."""
    name = st.session_state.get("w_clone_name", "").strip()
    if not name or name in existing or set(name) & set(",;:="):
        st.session_state["clone_error"] = f"choose a new name without , ; : = (not {name!r})"
        return
    state = session.view()
    state = replace(state, clones=state.clones + ((name, base),))
    session.set_view(state.with_edits(name, state.edits_for(base)))   # the clone starts from the values shown
    st.session_state["w_devices"] = [*st.session_state.get("w_devices", []), name]   # the primary stays first
    st.session_state["w_edit_device"] = name
    st.session_state.pop("clone_error", None)


def unedited(device: str, base_devices: dict, clones: dict):
    """The device before any edit (a clone copies its base as the workbook has it)."""
    if device in base_devices:
        return base_devices[device]
    return unedited(clones[device], base_devices, clones).with_changes(name=device, kind="hypothetical")


def workbook_sources(base_devices) -> dict:
    """The sources sheet of the workbook in use (an upload's own citations, else the bundled ones)."""
    sources = getattr(base_devices, "sources", None)
    return load_sources() if sources is None else sources


def workbook_bytes(devices: dict, state, sources: dict | None = None) -> bytes:
    """All devices as a workbook, keeping `sources` (the loaded workbook's sources sheet; default the
    bundled one); edited and cloned values say so in the sources sheet."""
    sources = load_sources() if sources is None else sources
    sources = {name: {key: entry for key, entry in fields.items() if key in WORKBOOK_FIELD_BY_KEY}
               for name, fields in sources.items() if name in devices}
    for new_name, base in state.clones:
        sources[new_name] = {key: (f"clone of {base}", "what-if device made in the llm-roofline dashboard")
                             for key in workbook_values(devices[new_name])}
    for device, fields in state.edits:
        for key, _ in fields:
            sources.setdefault(device, {})[key] = ("what-if edit in the llm-roofline dashboard", "")
    buffer = io.BytesIO()
    write_specs(devices.values(), buffer, sources=sources)
    return buffer.getvalue()


def render(ctx: PageContext, base_devices: dict) -> None:
    names = list(ctx.devices)
    if st.session_state.get("w_edit_device") not in names:
        st.session_state["w_edit_device"] = ctx.state.devices[0]
    device = st.selectbox("Device", names, key="w_edit_device")
    original = unedited(device, base_devices, dict(ctx.state.clones))
    edits = ctx.state.edits_for(device)
    st.caption("Edit the **value** column (workbook units). Edited fields are marked and carried in the link; "
               "set a value back to its original, or reset, to undo.")
    shown = field_table(original, ctx.devices[device], edits)
    edited = st.data_editor(shown, key=_editor_key(device), hide_index=True, width="stretch",
                            height=35 * (len(shown) + 1) + 3,      # every field visible, no inner scrolling
                            disabled=["field", "unit", "edited", "original", "description"])
    if not edited["value"].equals(shown["value"]):
        st.session_state["edit_errors"] = fold_edits(device, original, shown, edited)
        st.session_state["editor_version"] = st.session_state.get("editor_version", 0) + 1
        st.rerun()
    for error in st.session_state.get("edit_errors", []):
        st.error(error)
    left, middle, right = st.columns(3)
    left.button(f"Reset edits of {device}", on_click=_reset, args=(device,), disabled=not edits)
    with middle:
        st.text_input("Clone as (new hypothetical device)", key="w_clone_name", placeholder=f"{device}-next")
        st.button("Clone", on_click=_clone, args=(device, names))
        if st.session_state.get("clone_error"):
            st.error(st.session_state["clone_error"])
    right.download_button("Download workbook with edits (.xlsx)", data=workbook_bytes(ctx.devices, ctx.state,
                                                                      workbook_sources(base_devices)),
                          file_name="specs-edited.xlsx", on_click="ignore", icon=":material/download:",
                          mime="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
