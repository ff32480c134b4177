"""Measured attention kernels and whole decode steps against every method (ground truth from a GPU).

Rows of kind (see calibration/README.md for how they are measured):
  attention_prefill  `batch` sequences of `context` tokens each, causal attention of one layer (one kernel);
  attention_decode   one new token per sequence over `context` cached tokens + itself, one layer;
  decode_step        the whole model's step: `batch` sequences, `context` tokens already cached;
  prefill_step       the whole model's prefill: `batch` sequences of `context` tokens (last-token logits).
`model` is a catalog id (e.g. meta-llama/Llama-3.1-8B); `tp` the tensor-parallel degree the shapes had.

Each row is predicted with engine.estimate on the scenario the measurement ran, so attention goes
through the same decomposition (and, for realistic, the same fused attention kernel) users see:
  attention rows: one layer's attention core (scores, softmax, context and, in decode, the
  KV-cache read; the cache store is a separate kernel), per-kernel device time as for the other
  measured kernels (kernel_time_s where the method reports it, else time_s);
  decode_step / prefill_step: the decode phase's time (one step) / the prefill phase's time, host launches
  included as the method counts them (the measurements are CUDA-graph replays: compare realistic-graph).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

SCENARIO_KINDS = ("attention_prefill", "attention_decode", "decode_step", "prefill_step")
STEP_PHASES = {"decode_step": "decode", "prefill_step": "prefill"}
ATTENTION_FAMILY = "attention core"
CACHE_STORE = "KVCache_Store"


@lru_cache(maxsize=32)
def _model(name: str):
    from engine.models import load_model
    return load_model(name)


def _scenario(row) -> dict:
    batch, context = int(row.batch), int(row.context)
    if row.kind in ("attention_prefill", "prefill_step"):
        fields = dict(phase="prefill", batch=batch, input_length=context)
    else:
        fields = dict(phase="decode", batch=batch, input_length=context, context_length=context)
    return dict(fields, tp=int(row.tp), weight_dtype=row.dtype, activation_dtype=row.dtype, kv_dtype=row.dtype)


def row_seconds(row, hardware, method: str) -> float:
    """One measurement row's predicted seconds (see the module docstring for what is compared)."""
    from engine.results.run import estimate
    if method == "seed":
        return float("nan")                    # the seed tiler has no attention or whole-step model
    result = estimate(hardware, _model(row.model), method=method, **_scenario(row))
    if row.kind in STEP_PHASES:
        return float(result.phases.loc[STEP_PHASES[row.kind], "time_s"])
    kernels = result.kernels
    core = kernels[(kernels["family"] == ATTENTION_FAMILY) & (kernels["name"] != CACHE_STORE)]
    seconds = core["kernel_time_s"] if "kernel_time_s" in core else core["time_s"]
    return float(seconds.sum())


def scenario_seconds(rows: pd.DataFrame, hardware, method: str) -> np.ndarray:
    """Predicted seconds per row (same order); rows that describe the same scenario are estimated once."""
    keys = ["model", "kind", "batch", "context", "tp", "dtype"]
    seconds = {}
    for row in rows[keys].drop_duplicates().itertuples(index=False):
        seconds[tuple(row)] = row_seconds(row, hardware, method)
    return np.array([seconds[tuple(row)] for row in rows[keys].itertuples(index=False)], dtype=float)


def check_rows(rows: pd.DataFrame, where: str) -> None:
    """Scenario rows need a catalog model and whole batch/context numbers; the error names the first bad row."""
    from engine.models.loading import catalog_ids
    known = {name.lower() for name in catalog_ids()}
    for index, row in rows.iterrows():
        place = f"{where} row {index + 1} ({row['kind']})"
        if str(row["model"]).lower() not in known:
            raise ValueError(f"{place}: model {row['model']!r} is not in the bundled catalog (expected a repo id "
                             f"such as meta-llama/Llama-3.1-8B)")
        for column in ("batch", "context", "tp"):
            value = row.get(column)
            if value is None or pd.isna(value) or float(value) < 1 or float(value) != int(value):
                raise ValueError(f"{place}: {column} must be a whole number >= 1, got {value!r}")
