"""Sweeps over the parallel layout: how latency, throughput per device and memory change with tp (or pp, dp).

`layout_sweep` returns one row per layout tried (a clean frame for a chart of TPOT and tokens/s per
device against tp); a layout the model or device cannot take is kept with its reason in `error`.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from engine.results.run import estimate, updated_scenario

LAYOUT_SWEEP_COLUMNS = (
    "device", "tp", "pp", "dp", "ep", "devices", "ttft_s", "tpot_s", "e2e_s", "tokens_per_s",
    "tokens_per_s_per_device", "communication_share", "memory_per_device_bytes", "capacity_bytes", "fits",
    "max_batch", "message", "error",
)


def layout_sweep(hardware, model, scenario, field: str = "tp", values: Iterable[int] = (1, 2, 4, 8),
                 method: str = "roofline") -> pd.DataFrame:
    """One row per value of `field` (tp, pp, dp or ep), the other layout fields as in `scenario`.

    communication_share = collective time (exposed) / total time over all phases.
    """
    if field not in ("tp", "pp", "dp", "ep"):
        raise ValueError(f"cannot sweep the layout over {field!r}; expected tp, pp, dp or ep")
    rows = []
    for value in values:
        layout = {"tp": scenario.tp, "pp": scenario.pp, "dp": scenario.dp, "ep": scenario.ep, field: int(value)}
        base = dict(device=hardware.name, **layout, devices=layout["tp"] * layout["pp"] * layout["dp"])
        try:
            result = estimate(hardware, model, updated_scenario(scenario, **layout), method=method)
        except ValueError as error:   # the model does not divide, the device has no links, ...
            rows.append({**base, "error": " ".join(str(error).split())})
            continue
        phases = result.phases
        total = float(phases["time_s"].sum())
        communication = float(phases["communication_bound_time_s"].sum()) if "communication_bound_time_s" in phases \
            else 0.0
        memory = result.memory
        rows.append({**base, "ttft_s": result.ttft_s, "tpot_s": result.tpot_s, "e2e_s": result.e2e_s,
                     "tokens_per_s": result.tokens_per_s, "tokens_per_s_per_device": result.tokens_per_s_per_device,
                     "communication_share": communication / total if total else np.nan,
                     "memory_per_device_bytes": memory.total_bytes, "capacity_bytes": memory.capacity_bytes,
                     "fits": memory.fits, "max_batch": memory.max_batch, "message": memory.message, "error": ""})
    return pd.DataFrame(rows, columns=list(LAYOUT_SWEEP_COLUMNS))
