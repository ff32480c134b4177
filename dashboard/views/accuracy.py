"""Accuracy: how far to trust a number — every method against measured kernel times, attention and decode steps."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard.charts.accuracy import accuracy_figure
from dashboard.views import accuracy_silicon
from dashboard.widgets import chart, table_downloads
from engine import METHODS, calibration_measurements as calibration

SCORED_METHODS = calibration.DEFAULT_METHODS


@st.cache_data(show_spinner="Scoring every method against the measurements…", max_entries=16)
def scored(sources: tuple[tuple[str, float], ...]) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """Per source file (path, modification time): its predictions, or the ValueError that kept it out.

    The modification times are part of the key, so a file recorded or rewritten since is scored again.
    """
    frames, errors = {}, {}
    for index, (path, _) in enumerate(sources):
        methods = SCORED_METHODS if index == 0 else calibration.GROUND_TRUTH_METHODS   # the Vidur file comes first
        try:
            frames[path] = calibration.predict(calibration.load_measurements(path), methods=methods)
        except ValueError as error:          # malformed file: name it on the page, keep the other sources
            errors[path] = str(error)
    return frames, errors


def source_key(paths) -> tuple[tuple[str, float], ...]:
    return tuple((str(p), Path(p).stat().st_mtime if Path(p).exists() else -1.0) for p in paths)


@st.cache_data(show_spinner=False)
def seed_000(hardware_json: str) -> pd.DataFrame:
    from engine import Hardware
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


def metadata(path: Path) -> dict[str, str]:
    try:
        return calibration.read_metadata(path)
    except (OSError, ValueError):
        return {}


def ground_truth_line(path: Path, measured: pd.DataFrame | None) -> str:
    """One caption line per repo ground-truth file: what was measured, on what, with what, how timed."""
    if measured is None:
        return f"GPU ground truth `{path.name}`: not scored (see the error above)."
    info = metadata(path)
    hardware, gpu, torch, cuda, date, timing = (info.get(key) or "not recorded" for key in
                                                 ("hardware", "gpu", "torch", "cuda", "date", "timing"))
    counts = measured["kind"].value_counts(sort=False)
    kinds = ", ".join(f"{counts[kind]} {kind}" for kind in calibration.ALL_KINDS if kind in counts)
    return (f"GPU ground truth `{path.name}`: {kinds} on {hardware} ({gpu}); torch {torch}, CUDA {cuda}; "
            f"recorded {date}; timing: {timing}.")


def sources_caption(vidur: Path, measured: list[Path], frames: dict[str, pd.DataFrame]) -> str:
    lines = []
    if str(vidur) in frames:
        count = len(frames[str(vidur)]) // len(SCORED_METHODS)
        sample = " (the bundled sample of it)" if vidur == calibration.BUNDLED_SAMPLE else ""
        lines.append(f"{count:,} measured kernel times (GEMMs, SwiGLU, RMSNorm, residual add; Llama-2-7B/70B shapes; "
                     f"A100-80GB and H100-SXM) from the public Vidur profiling data{sample} (`{vidur.name}`).")
    for path in measured:
        tidy = frames.get(str(path))
        lines.append(ground_truth_line(path, None if tidy is None else tidy[tidy["method"] == SCORED_METHODS[0]]))
    if not measured:
        lines.append("No GPU ground truth is recorded yet (attention, whole decode steps, H200): "
                     "`python3 calibration/measure_gpu.py` on a GPU records it under calibration/measured/ "
                     "(see calibration/README.md).")
    lines.append("Median/p90 absolute error and bias (median signed error) per device and op kind; "
                 "see docs/accuracy.md for how the realistic method was fitted and where it misses.")
    return "\n\n".join(lines)


def render(method: str, devices: dict) -> None:
    vidur, measured = calibration.default_measurements_path(), calibration.measured_paths()
    frames, errors = scored(source_key([vidur, *measured]))
    for path, message in errors.items():
        st.error(f"Could not score {Path(path).name}: {message}", icon=":material/error:")
    st.caption(sources_caption(vidur, measured, frames))
    if not frames:
        return
    tidy = pd.concat([frame.assign(source=Path(path).name) for path, frame in frames.items()], ignore_index=True)
    shown = method if method in set(tidy["method"]) else "realistic"
    if shown != method:
        st.info(f"{method} is scored like realistic (same kernel times); showing realistic.")
    elif method == "realistic-graph":
        st.info("realistic-graph is scored on the recorded GPU ground truth only (its decode steps are timed as "
                "CUDA-graph replays); on kernel times it equals realistic.")
    chart(accuracy_figure(tidy, shown), f"accuracy-{shown}", key="accuracy")
    summary = calibration.summary(tidy, by=("source", "method", "device", "kind"))   # a file's rows stay apart
    st.subheader("Error by source file, method, device and op kind")
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
    accuracy_silicon.render()
