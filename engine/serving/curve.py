"""The serving curve: one device's throughput against per-user speed as the concurrency grows."""

from __future__ import annotations

import pandas as pd

from engine.results.run import ScenarioError
from engine.serving.simulate import METRICS, serve

CURVE_COLUMNS = ("device", "concurrency", *METRICS, "error")


def doubling_concurrencies(largest: int, also: int | None = None) -> list[int]:
    """1, 2, 4, ... up to `largest` (and `largest` itself), plus `also`, sorted."""
    values, value = set(), 1
    while value < largest:
        values.add(value)
        value *= 2
    values.add(int(largest))
    if also:
        values.add(int(also))
    return sorted(values)


def serving_curve(hardware, model, concurrencies, method: str = "realistic", **fields) -> pd.DataFrame:
    """One row per concurrency: serve()'s metrics, or `error` where that point cannot run (it does not fit,
    a request is longer than the model takes, ...). `fields` are serve()'s other fields."""
    rows = []
    for concurrency in concurrencies:
        row = {"device": hardware.name, "concurrency": int(concurrency), "error": ""}
        try:
            result = serve(hardware, model, method=method, concurrency=int(concurrency), **fields)
            row.update(result.metrics)
        except (ScenarioError, ValueError) as error:
            row["error"] = str(error).splitlines()[0]
        rows.append(row)
    return pd.DataFrame(rows, columns=list(CURVE_COLUMNS))
