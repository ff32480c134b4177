"""What every page receives: the resolved view, devices, model, scenario and estimates."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from dashboard import data
from dashboard.state import ViewState
from engine import WORKBOOK_FIELD_BY_KEY, Hardware, Scenario, ScenarioError


@dataclass
class PageContext:
    state: ViewState
    devices: dict[str, Hardware]
    model: object
    scenario: Scenario
    errors: list[str] = field(default_factory=list)
    models: dict = field(default_factory=dict)      # {id: model} of the Compare models page (state.models)

    @property
    def selected(self) -> list[Hardware]:
        return [self.devices[name] for name in self.state.devices]

    def estimates(self, method: str | None = None, names=None) -> dict:
        """{device name: Estimate} for the selected devices (or `names`); problems go to `errors`."""
        results = {}
        for hardware in self.selected:
            if names is not None and hardware.name not in names:
                continue
            try:
                results[hardware.name] = data.estimate(hardware, self.model, self.scenario, method or self.state.method)
            except (ScenarioError, ValueError) as error:
                self.errors.append(f"{hardware.name}: {error}")
        return results

    def summary(self) -> str:
        """The scenario line: page header, chart subtitles, deck subtitle and exported file names."""
        return scenario_line(self.model.name, self.state, self.scenario)

    def file_tag(self) -> str:
        """The scenario line as a file-name fragment (the same words, lower case, dashes)."""
        return file_tag(self.summary())


def edit_text(key: str, value: str) -> str:
    """('memory_bandwidth', '6700') -> 'memory bandwidth 6,700 GB/s' (the workbook's unit)."""
    field = WORKBOOK_FIELD_BY_KEY.get(key)
    try:
        number = float(value)
        shown = f"{number:,.0f}" if number == int(number) and abs(number) >= 1000 else f"{number:g}"
    except ValueError:
        shown = value
    unit = "" if field is None or field.unit in ("", "text", "count", "fraction") else f" {field.unit}"
    return f"{key.replace('_', ' ')} {shown}{unit}"


def device_label(name: str, state: ViewState) -> str:
    """'H100-SXM', 'H100-SXM (edited: memory bandwidth 6,700 GB/s)' when the view edits it, and
    'H100-NEXT (clone of H100-SXM; edited: ...)' for a clone."""
    notes = [f"clone of {base}" for clone, base in state.clones if clone == name]
    edits = state.edits_for(name)
    if edits:
        notes.append(f"edited: {', '.join(edit_text(key, value) for key, value in edits.items())}")
    return f"{name} ({'; '.join(notes)})" if notes else name


def scenario_line(model_name: str, state: ViewState, s: Scenario) -> str:
    """Model, devices with their edits, layout (TP/PP/DP/EP above 1), phase and lengths, chunked prefill,
    dtypes and method: the one place the scenario is named."""
    lengths = {"prefill": f"{s.input_length} tokens in", "decode": f"context {s.decode_context}",
               "chunked": f"chunk {s.chunk_size}", "request": f"{s.input_length} in / {s.output_length} out"}
    parts = [f"{model_name} on {', '.join(device_label(name, state) for name in state.devices)}"]
    layout = [f"{label} {ways}" for label, ways in (("TP", s.tp), ("PP", s.pp), ("DP", s.dp), ("EP", s.ep))
              if ways and ways > 1]
    if layout:
        parts.append(" x ".join(layout))
    workload = f"{s.phase}, batch {s.batch}, {lengths[s.phase]}"
    if s.phase == "request" and s.chunked_prefill:
        workload += f", chunked prefill (chunk {s.chunk_size})"
    parts += [workload, f"W {s.weight_dtype}, A {s.activation_dtype}, KV {s.kv_dtype}", f"method {state.method}"]
    return " · ".join(parts)


def file_tag(line: str, limit: int = 150) -> str:
    """A scenario line as a file-name fragment: letters and digits joined by dashes, at most `limit` long."""
    return re.sub(r"[^A-Za-z0-9]+", "-", line).strip("-").lower()[:limit].rstrip("-")


def kernels_frame(results: dict) -> pd.DataFrame:
    return pd.concat([r.kernels.assign(device=name) for name, r in results.items()], ignore_index=True)


def phases_frame(results: dict) -> pd.DataFrame:
    return pd.concat([r.phases.reset_index().assign(device=name) for name, r in results.items()], ignore_index=True)


def memory_frame(results: dict) -> pd.DataFrame:
    return pd.DataFrame([{"device": name, **r.memory.to_dict()} for name, r in results.items()])


def metrics_frame(results: dict) -> pd.DataFrame:
    rows = []
    for name, r in results.items():
        rows.append({"device": name, "TTFT (ms)": _ms(r.ttft_s), "TPOT (ms)": _ms(r.tpot_s),
                     "end-to-end (ms)": _ms(r.e2e_s), "output tokens/s": r.tokens_per_s,
                     "memory (GB)": r.memory.total_bytes / 1e9, "capacity (GB)": r.memory.capacity_bytes / 1e9,
                     "fits": r.memory.fits, "largest batch that fits": r.memory.max_batch})
    return pd.DataFrame(rows)


def _ms(seconds):
    return None if seconds is None else seconds * 1e3
