"""Which engine defaults a measured serving run ran with, read from its recorded version and date (used by
engine/serving/validation_express.express, which re-exports these names)."""

from __future__ import annotations

import re

import pandas as pd

# vLLM's async scheduling: its default from this version on (v0.14.0 release notes: "Async scheduling is now
# enabled by default", #27614), and the date by which that release was out (a run measured before it ran an earlier one)
ASYNC_SCHEDULING_SINCE = ("vllm", (0, 14), "2026-01-21")


def async_scheduling_reading(run) -> bool | None:
    """False for a run of ASYNC_SCHEDULING_SINCE's backend that ran without async scheduling by default: a version
    before the one that turned it on, or no version (or an unnumbered one, as a nightly) and measured before the date
    it was out; None (the backend's default) otherwise."""
    backend, since, date = ASYNC_SCHEDULING_SINCE
    if run.backend != backend:
        return None
    version = getattr(run, "backend_version", None)
    numbers = re.match(r"(\d+)\.(\d+)", str(version)) if version is not None and not pd.isna(version) else None
    if numbers:
        return None if (int(numbers[1]), int(numbers[2])) >= since else False
    measured = getattr(run, "measured_at", None)
    if measured is None or pd.isna(measured):
        return None
    return False if pd.Timestamp(measured).tz_localize(None) < pd.Timestamp(date) else None
