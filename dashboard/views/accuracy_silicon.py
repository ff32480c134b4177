"""Accuracy page, second part: the scores the benchmarks recorded against public silicon measurements
(aiconfigurator-core's per-operation tables and measured serving runs; calibration/results/)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.widgets import table_downloads
from engine import SERVING_BREAKDOWNS, ResultsFileError, read_results, results_with_verdicts

# The serving breakdowns the page shows in tabs (SERVING_BREAKDOWNS' keys): the tab's title and the subject's name
BREAKDOWN_TABS = {"system": ("By system", "system"), "backend": ("By backend", "backend"),
                  "family": ("By model family", "model family"),
                  "concurrency_bucket": ("By concurrency", "concurrency (clients)")}
SPLIT_TEXT = {"in-sample": "fitted on all devices, scored on them",
              "leave-one-device-out": "fitted without the scored device",
              "leave-one-system-out": "serving terms fitted without the scored system"}


def is_serving_breakdown(results: pd.DataFrame) -> pd.Series:
    """The serving rows of one system, backend, model family or concurrency bucket (shown in the breakdown tabs)."""
    variants = [SERVING_BREAKDOWNS[by] for by in BREAKDOWN_TABS]
    return results["scope"].eq("serving") & results["variant"].isin(variants)


def serving_breakdown(results: pd.DataFrame, by: str) -> pd.DataFrame:
    """One row per split and value of `by` (a key of BREAKDOWN_TABS), TPOT and TTFT side by side in percent, in the
    recorded order (concurrency buckets from the fewest clients). Empty where none is recorded. Pure."""
    rows = results[results["scope"].eq("serving") & results["variant"].eq(SERVING_BREAKDOWNS[by])]
    out = []
    for (split, subject), group in rows.groupby(["split", "subject"], sort=False):
        metrics = group.set_index("family")
        row = {"split": split, BREAKDOWN_TABS[by][1]: subject, "runs": int(group["count"].max())}
        for metric in ("tpot", "ttft"):
            for column, label in (("median_abs_error", "median"), ("p90_abs_error", "p90"), ("bias", "bias")):
                row[f"{metric.upper()} {label} (%)"] = (100 * metrics.at[metric, column] if metric in metrics.index
                                                         else float("nan"))
        out.append(row)
    columns = ["split", BREAKDOWN_TABS[by][1], "runs"] + [f"{m} {label} (%)" for m in ("TPOT", "TTFT")
                                                          for label in ("median", "p90", "bias")]
    return pd.DataFrame(out, columns=columns)


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
    shown = display_frame(results[~is_serving_breakdown(results)])
    formats = {c: st.column_config.NumberColumn(format="%.1f") for c in shown.columns if c.endswith("(%)")}
    formats["median error (%)"] = st.column_config.NumberColumn(format="%.2f")   # as the verdict counts its points
    formats["against the target"] = st.column_config.TextColumn(width="medium")   # "missed: median by 32.98 points"
    st.dataframe(shown, hide_index=True, width="stretch", column_config=formats)
    table_downloads(shown, "silicon-accuracy", key="silicon-accuracy")
    render_serving_breakdowns(results)


def render_serving_breakdowns(results: pd.DataFrame) -> None:
    tables = {by: serving_breakdown(results, by) for by in BREAKDOWN_TABS}
    if all(table.empty for table in tables.values()):
        return
    st.subheader("Serving accuracy by system, backend, model family and concurrency")
    st.caption("TTFT and TPOT errors of `serve` on the measured aggregated runs, per group. **leave-one-system-out**: "
               "the serving terms fitted without the scored system (issue 12's headline; its targets hold for all "
               "runs together, the first serving rows of the table above, not for a group); **in-sample**: fitted on "
               "all systems. Errors |predicted / measured - 1| in percent; bias the median signed error (negative: "
               "predicted too fast). How they were fitted: docs/serving.md.")
    formats = {c: st.column_config.NumberColumn(format="%.1f") for c in next(iter(tables.values())).columns
               if c.endswith("(%)")}
    for (by, table), tab in zip(tables.items(), st.tabs([BREAKDOWN_TABS[by][0] for by in tables])):
        with tab:
            if table.empty:
                st.caption("Not recorded: `python benchmarks/serving_accuracy.py --write` records it.")
                continue
            st.dataframe(table, hide_index=True, width="stretch", column_config=formats)
            table_downloads(table, f"serving-accuracy-{by.replace('_', '-')}", key=f"serving-accuracy-{by}")
