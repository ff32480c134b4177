"""Accuracy: how far to trust a number — every method against measured kernel times."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.charts.accuracy import accuracy_figure
from dashboard.widgets import chart, table_downloads
from engine import calibration
from engine.estimators import METHODS

SCORED_METHODS = calibration.DEFAULT_METHODS


@st.cache_data(show_spinner="Scoring every method against the measurements…")
def scored(path: str) -> pd.DataFrame:
    return calibration.predict(calibration.load_measurements(path))


@st.cache_data(show_spinner=False)
def seed_000(hardware_json: str) -> pd.DataFrame:
    from engine.hardware import Hardware
    hardware = Hardware.model_validate_json(hardware_json)
    measured = calibration.SEED_000["measured_s"]
    rows = []
    for name in SCORED_METHODS:
        predicted = calibration.seed_000_prediction(hardware, name)
        rows.append({"method": name, "predicted (us)": predicted * 1e6, "measured (us)": measured * 1e6,
                     "error (%)": (predicted / measured - 1) * 100})
    return pd.DataFrame(rows)


def percent_columns(summary: pd.DataFrame) -> pd.DataFrame:
    out = summary.copy()
    for column in ("median_abs_error", "p90_abs_error", "bias"):
        out[f"{column.replace('_', ' ')} (%)"] = out.pop(column) * 100
    return out


def render(method: str, devices: dict) -> None:
    path = calibration.default_measurements_path()
    tidy = scored(str(path))
    shown = method if method in SCORED_METHODS else "realistic"
    st.caption(f"{len(tidy) // len(SCORED_METHODS):,} measured kernel times (GEMMs, SwiGLU, RMSNorm, residual add; "
               f"Llama-2-7B/70B shapes; A100-80GB and H100-SXM) from the public Vidur profiling data "
               f"({path.name}). Median/p90 absolute error and bias (median signed error) per device and op kind; "
               "see docs/accuracy.md for how the realistic method was fitted and where it misses.")
    if shown != method:
        st.info(f"{method} is scored like realistic (same kernel times); showing realistic.")
    chart(accuracy_figure(tidy, shown), f"accuracy-{shown}", key="accuracy")
    summary = calibration.summary(tidy, by=("method", "device", "kind"))
    summary = summary[summary["method"].isin(SCORED_METHODS)]
    st.subheader("Error by method, device and op kind")
    summary = percent_columns(summary)
    formats = {c: st.column_config.NumberColumn(format="%.1f") for c in summary.columns if c.endswith("(%)")}
    st.dataframe(summary, hide_index=True, width="stretch", column_config=formats)
    table_downloads(summary, "accuracy-summary", key="accuracy")
    device = calibration.SEED_000["device"]
    if device in devices:
        st.subheader(f"Seed 000: fused MLP on {device}, measured 191 us")
        seed = seed_000(devices[device].model_dump_json())
        st.dataframe(seed, hide_index=True, width="content",
                     column_config={c: st.column_config.NumberColumn(format="%.1f") for c in seed.columns[1:]})
    st.caption("Methods: " + " · ".join(f"**{m}** — {METHODS[m].description}" for m in SCORED_METHODS))
