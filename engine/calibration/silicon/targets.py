"""Issue 12's accuracy targets and the verdict of a recorded score against them (met, or missed by how much).

The targets (issue 12, "Validation and targets"): serving, leave-one-system-out over every expressible run, TPOT
median <= 12% and p90 <= 35%, TTFT median <= 30% and p90 <= 80%; kernel tables, leave-one-device-out per device,
GEMM median <= 8%, attention <= 12%, collectives <= 15%. The MoE grouped GEMMs have no target of their own and are
held to the GEMM one. Other rows (in-sample scores, per-system or per-backend serving breakdowns, disaggregated
serving) carry no target. Why a cell misses is written in docs/accuracy.md ("Targets: met or missed, and why").
"""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd


class Target(NamedTuple):
    scope: str
    family_prefix: str          # the recorded family starts with it ("gemm" covers "gemm bf16", "gemm fp8", ...)
    split: str
    median: float               # the largest median |error| that meets the target
    p90: float | None           # the largest p90 |error| that meets it (None: no p90 target)
    subject: str | None = None  # only rows of this subject ("all": the headline over every system); None: any


TARGETS = (
    Target("serving", "tpot", "leave-one-system-out", 0.12, 0.35, subject="all"),
    Target("serving", "ttft", "leave-one-system-out", 0.30, 0.80, subject="all"),
    Target("kernel", "gemm", "leave-one-device-out", 0.08, None),
    Target("kernel", "moe", "leave-one-device-out", 0.08, None),
    Target("kernel", "prefill attention", "leave-one-device-out", 0.12, None),
    Target("kernel", "decode attention", "leave-one-device-out", 0.12, None),
    Target("kernel", "prefill mla", "leave-one-device-out", 0.12, None),
    Target("kernel", "decode mla", "leave-one-device-out", 0.12, None),
    Target("kernel", "collective", "leave-one-device-out", 0.15, None),
)


def target_of(row: dict) -> Target | None:
    """The target a recorded row is held to, or None (in-sample scores, breakdowns, families without one)."""
    for target in TARGETS:
        if (row["scope"] == target.scope and str(row["family"]).startswith(target.family_prefix)
                and row["split"] == target.split and target.subject in (None, row["subject"])):
            return target
    return None


def target_text(target: Target | None) -> str:
    if target is None:
        return ""
    text = f"median <= {100 * target.median:g}%"
    return text + (f", p90 <= {100 * target.p90:g}%" if target.p90 is not None else "")


def verdict(row: dict) -> str:
    """"met", "missed by N points" (the median's or p90's excess, in percentage points), or "" without a target."""
    target = target_of(row)
    if target is None:
        return ""
    misses = []
    for name, limit in (("median", target.median), ("p90", target.p90)):
        shown = round(100 * row[f"{name}_abs_error"], 2)        # in points, as the tables print it (8.46%: by 0.46)
        if limit is not None and shown > 100 * limit:
            misses.append(f"{name} by {shown - 100 * limit:.2f} points")
    return "missed: " + ", ".join(misses) if misses else "met"


def with_verdicts(results: pd.DataFrame) -> pd.DataFrame:
    """The recorded rows with two more columns: `target` (its text, "" if none) and `verdict`."""
    records = results.to_dict("records")
    out = results.copy()
    out["target"] = [target_text(target_of(row)) for row in records]
    out["verdict"] = [verdict(row) for row in records]
    return out
