"""Accuracy page, second part: the scores the benchmarks recorded against public silicon measurements
(aiconfigurator-core's per-operation tables and measured serving runs; calibration/results/)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.widgets import table_downloads
from engine import ResultsFileError, read_results, results_with_verdicts

SPLIT_TEXT = {"in-sample": "fitted on all devices, scored on them",
              "leave-one-device-out": "fitted without the scored device",
              "leave-one-system-out": "serving terms fitted without the scored system"}


def display_frame(results: pd.DataFrame) -> pd.DataFrame:
    """The recorded rows with errors in percent and readable column names (pure: tested without Streamlit)."""
    judged = results_with_verdicts(results)
    out = results[["scope", "family", "subject", "variant", "split", "count"]].copy()
    out["median error (%)"] = results["median_abs_error"] * 100
    out["p90 error (%)"] = results["p90_abs_error"] * 100
    out["bias (%)"] = results["bias"] * 100
    out["target (issue 12)"] = judged["target"]
    out["against the target"] = judged["verdict"]
    out["recorded"] = results["recorded"] + " · " + results["benchmark"]
    first = ["family", "subject", "split", "median error (%)", "target (issue 12)", "against the target"]
    out = out[first + [c for c in out.columns if c not in first]]     # the verdict in view without scrolling
    return out.rename(columns={"count": "measurements"})


def provenance(results: pd.DataFrame) -> str:
    versions = ", ".join(sorted({v for v in results["package_version"] if v})) or "unknown"
    splits = "; ".join(f"**{split}**: {SPLIT_TEXT[split]}" for split in dict.fromkeys(results["split"]))
    return (f"Scores recorded by the benchmarks against NVIDIA's aiconfigurator-core {versions} (Apache-2.0): measured "
            f"per-operation tables and serving runs. {splits}. Errors are |predicted / measured - 1|; bias is the "
            "median signed error. Targets: issue 12's (serving leave-one-system-out over all systems; kernel tables "
            "leave-one-device-out per device); why a cell misses: docs/accuracy.md, \"Targets: met or missed, and why\".")


def render() -> None:
    st.subheader("Public silicon measurements (aiconfigurator-core)")
    try:
        results = read_results()
    except ResultsFileError as error:
        st.error(f"Could not read the recorded results: {error}", icon=":material/error:")
        return
    if results.empty:
        st.caption("No scores recorded yet: `python benchmarks/serving_accuracy.py --write` (calibration extra) "
                   "records them in calibration/results/.")
        return
    st.caption(provenance(results))
    shown = display_frame(results)
    formats = {c: st.column_config.NumberColumn(format="%.1f") for c in shown.columns if c.endswith("(%)")}
    formats["median error (%)"] = st.column_config.NumberColumn(format="%.2f")   # as the verdict counts its points
    formats["against the target"] = st.column_config.TextColumn(width="medium")   # "missed: median by 32.98 points"
    st.dataframe(shown, hide_index=True, width="stretch", column_config=formats)
    table_downloads(shown, "silicon-accuracy", key="silicon-accuracy")
