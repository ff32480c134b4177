"""Sweeps over one scenario field: where does decode cross the ridge?"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from engine.results.run import estimate
from engine.hardware.device import Hardware
from engine.workload.scenario import Scenario

SWEEP_COLUMNS = ("device", "phase", "field", "value", "batch", "input_length", "time_s", "flops", "bytes",
                 "intensity", "ridge_point", "compute_bound_share", "tokens_per_s",
                 "fits", "max_batch", "memory_message")
SWEEPABLE = ("batch", "input_length", "output_length", "context_length", "chunk_size")


def sweep(hardware: Hardware, model, scenario: Scenario, field: str, values: Iterable[int],
          method: str = "roofline") -> pd.DataFrame:
    """One row per (value, phase): time, FLOPs, bytes, phase intensity against the ridge point.

    `tokens_per_s` counts output tokens for decode (batch per step time) and prompt tokens for prefill.
    `fits`, `max_batch` and `memory_message` say whether the point fits in device memory and why not.
    """
    if field not in SWEEPABLE:
        raise ValueError(f"cannot sweep {field!r}; expected one of {', '.join(SWEEPABLE)}")
    rows = []
    ridge = hardware.ridge_point(scenario.activation_dtype)
    for value in values:
        point = Scenario.model_validate({**scenario.model_dump(), field: int(value)})
        result = estimate(hardware, model, point, method=method)
        for phase, totals in result.phases.iterrows():
            time_s = float(totals["time_s"])
            steps = 1.0 if phase != "decode" or point.phase != "request" else max(point.output_length - 1, 1)
            tokens = point.batch * steps if phase == "decode" else point.batch * point.input_length
            rows.append((hardware.name, phase, field, int(value), point.batch, point.input_length, time_s,
                         float(totals["flops"]), float(totals["bytes"]),
                         float(totals["flops"] / totals["bytes"]) if totals["bytes"] else np.inf, ridge,
                         float(totals["compute_bound_time_s"] / time_s) if time_s else 0.0,
                         tokens / time_s if time_s else np.nan, bool(result.memory.fits), result.memory.max_batch,
                         result.memory.message))
    return pd.DataFrame(rows, columns=list(SWEEP_COLUMNS))


def batch_sweep_values(largest: int = 1024) -> list[int]:
    """1, 2, 4, ... up to `largest` (powers of two), the usual batch sweep."""
    values, batch = [], 1
    while batch <= largest:
        values.append(batch)
        batch *= 2
    return values
