"""What every page receives: the resolved view, devices, model, scenario and estimates."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from dashboard import data
from dashboard.state import ViewState
from engine.estimate import ScenarioError
from engine.hardware import Hardware
from engine.workload import Scenario


@dataclass
class PageContext:
    state: ViewState
    devices: dict[str, Hardware]
    model: object
    scenario: Scenario
    errors: list[str] = field(default_factory=list)

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
        s = self.scenario
        lengths = {"prefill": f"{s.input_length} tokens in", "decode": f"context {s.decode_context}",
                   "chunked": f"chunk {s.chunk_size}", "request": f"{s.input_length} in / {s.output_length} out"}
        dtypes = f"W {s.weight_dtype} · A {s.activation_dtype} · KV {s.kv_dtype}"
        return (f"{self.model.name} on {', '.join(self.state.devices)} · {s.phase}, batch {s.batch}, "
                f"{lengths[s.phase]} · {dtypes} · method {self.state.method}")


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
