"""The kernel table twice: exact SI numbers for CSV/XLSX (`kernel_table_frame`), and the same numbers formatted
for the screen with units, thousands separators and a help text per column (`kernel_table_view`)."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pandas as pd

from dashboard.units import count, data_size, duration, flop_count, significant, with_prefix

# engine column -> export column (units in the name; values exactly as the engine computed them, SI)
KERNEL_TABLE_COLUMNS = {
    "device": "Device", "phase": "Phase", "name": "Kernel", "family": "Family", "type": "Type",
    "m": "m", "k": "k", "n": "n", "batch": "Batch", "count": "Calls",
    "macs": "MACs per call", "flops": "FLOPs per call", "bytes": "Bytes per call",
    "intensity": "Intensity (FLOP/byte)", "time_s": "Time per call (s)", "total_time_s": "Total time (s)",
    "share_percent": "Share of phase (%)", "bound": "Bound",
}
# export column -> screen column (the screen shows times in ms, like the charts; sizes carry their unit per cell)
SCREEN_NAMES = {"Time per call (s)": "Time per call (ms)", "Total time (s)": "Total time (ms)"}

COLUMN_HELP = {
    "Device": "The device this row runs on.",
    "Phase": "prefill: the prompt, all tokens at once; decode: one output token per step; chunked: a chunk "
             "of prompt and decode tokens sharing one step.",
    "Kernel": "The operation, named as in the seed notebook: Q/K/V*W projects into queries, keys and values; "
              "Q*gK are the attention scores against the (grouped) keys; Q*gK*gV weights the values; O*W the "
              "output projection; KVCache_Read/Store move the KV cache. A d/p prefix marks the decode/prefill "
              "part of a chunk.",
    "Family": "The group the kernel is stacked in on the charts (MLP, attention core, norms & residuals, ...).",
    "Type": "The seed's operand kinds, first operand then second: M = matrix, V = vector; a = activations, "
            "w = weights, qa = grouped activations (the K or V cache shared by a group of query heads). "
            "Ma_Mw: activations x weights (a GEMM); Va_Mqa: one query token against the cache (decode "
            "attention); KVCache: a cache read or write.",
    "m": "GEMM rows: C[m,n] = A[m,k] @ B[k,n]. For projections and the MLP, the tokens in the step; for "
         "attention, query tokens per sequence times the query heads sharing one KV head.",
    "k": "GEMM inner (reduction) dimension: C[m,n] = A[m,k] @ B[k,n].",
    "n": "GEMM columns: C[m,n] = A[m,k] @ B[k,n]; for the attention scores, the context length in tokens.",
    "Batch": "Independent GEMMs of this shape in one call. 1 for projections and the MLP (all tokens are in m); "
             "on attention rows (Q*gK, Q*gK*gV), sequences x KV heads: each sequence and KV head has its own "
             "keys and values.",
    "Calls": "How many times the kernel runs in its phase (layers x steps); totals are calls x per call.",
    "MACs per call": "Multiply-accumulates in one call (1 MAC = 2 FLOP for matrix work).",
    "FLOPs per call": "Floating-point operations in one call: 2 per MAC for matrix work, plus element-wise "
                      "work on the vector units.",
    "Bytes per call": "Bytes one call moves to and from device memory (weights, activations, KV cache); "
                      "decimal units, 1 GB = 10^9 B.",
    "Intensity (FLOP/byte)": "Arithmetic intensity: FLOPs per byte moved. Above the device's ridge point a "
                             "kernel is compute-bound. '—' for kernels that move no bytes.",
    "Time per call (ms)": "Estimated time of one call, in milliseconds, by the selected method.",
    "Total time (ms)": "Calls x time per call, in milliseconds.",
    "Share of phase (%)": "This kernel's share of its phase's time on its device; a phase's shares sum to 100.",
    "Bound": "What limits the kernel: compute, memory (or a memory level), communication or overhead.",
}


def _whole_or_float(values: pd.Series) -> pd.Series:
    """Integer-valued columns as integers (nullable), others unchanged."""
    numbers = pd.to_numeric(values, errors="coerce")
    finite = numbers.dropna()
    if len(finite) and np.all(np.isclose(finite, np.round(finite), rtol=0, atol=1e-9)):
        return numbers.round().astype("Int64")
    return numbers


def kernel_table_frame(kernels: pd.DataFrame) -> pd.DataFrame:
    """The kernel table in exact SI values (what CSV and XLSX export): shapes, calls, MACs, FLOPs and bytes per
    call, intensity (FLOP/byte; infinite for kernels that move no bytes), time per call and total time in
    seconds, share of the phase in percent, bound.

    `Calls` is how many times the kernel runs in its phase, so `Total time (s)` = calls x time per call and the
    shares of a phase sum to 100. The `Device` column is kept only when the input has one.
    """
    frame = kernels.copy()
    total = frame["total_time_s"] if "total_time_s" in frame else frame["count"] * frame["time_s"]
    if "time_share" in frame:
        share = frame["time_share"]
    else:
        keys = [frame[c] for c in ("device", "phase") if c in frame]
        share = total / total.groupby(keys).transform("sum")
    moved = frame["bytes"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = np.where(moved > 0, frame["flops"].to_numpy(dtype=float) / np.where(moved > 0, moved, 1), np.inf)
    frame = frame.assign(intensity=intensity, total_time_s=total, share_percent=share * 100)
    for column in ("m", "k", "n", "batch", "count"):
        if column in frame:
            frame[column] = _whole_or_float(frame[column])
    columns = [c for c in KERNEL_TABLE_COLUMNS if c in frame]
    return frame[columns].rename(columns=KERNEL_TABLE_COLUMNS).reset_index(drop=True)


def _number(value) -> str:
    """Thousands separators for whole numbers, three significant digits otherwise; '—' for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "—"
    value = float(value)
    return f"{value:,.0f}" if value == round(value) else significant(value)


def _intensity(value) -> str:
    """FLOP/byte to three significant digits; '—' where no bytes move (not 'inf')."""
    if value is None or pd.isna(value) or not math.isfinite(float(value)):
        return "—"
    return significant(float(value))


def _milliseconds(seconds) -> str:
    """Seconds shown in ms, four significant digits, thousands separators: 0.0123456 -> '12.35'."""
    if seconds is None or pd.isna(seconds):
        return "—"
    return significant(float(seconds) * 1e3, 4)


def _percent(value) -> str:
    return "—" if value is None or pd.isna(value) else f"{float(value):.1f}"


SCREEN_FORMATS: dict[str, Callable] = {
    "m": _number, "k": _number, "n": _number, "Batch": _number, "Calls": _number,
    "MACs per call": lambda v: "—" if pd.isna(v) else "0" if v == 0 else with_prefix(float(v), "MAC"),
    "FLOPs per call": lambda v: "—" if pd.isna(v) else "0" if v == 0 else flop_count(float(v)),
    "Bytes per call": lambda v: "—" if pd.isna(v) else data_size(float(v), digits=4),
    "Intensity (FLOP/byte)": _intensity,
    "Time per call (ms)": _milliseconds, "Total time (ms)": _milliseconds,
    "Share of phase (%)": _percent,
}


def kernel_table_view(table: pd.DataFrame):
    """(styler, column_config) for st.dataframe: `table` (from `kernel_table_frame`) with times named in ms, each
    cell formatted with its unit and thousands separators (the numbers underneath stay exact, so sorting works),
    and a help text on hover for every column. Pure pandas; the caller passes the config to Streamlit as
    `{name: st.column_config.Column(help=text)}`."""
    shown = table.rename(columns=SCREEN_NAMES)
    formats = {column: format_cell for column, format_cell in SCREEN_FORMATS.items() if column in shown}
    styler = shown.style.format(formats, na_rep="—")
    return styler, {column: COLUMN_HELP[column] for column in shown.columns if column in COLUMN_HELP}


def screen_text(table: pd.DataFrame) -> pd.DataFrame:
    """The text each cell of `kernel_table_view` shows (for tests and for copying): same rows and columns."""
    shown = table.rename(columns=SCREEN_NAMES)
    out = shown.astype(object).copy()
    for column, format_cell in SCREEN_FORMATS.items():
        if column in shown:
            out[column] = [format_cell(value) for value in shown[column]]
    return out


# the device comparison (dashboard.context.metrics_frame): column -> (screen name, cell text, help)
METRICS_SCREEN = {
    "device": ("device", str, "The device; its edits and clones are named in the scenario line above."),
    "TTFT (ms)": ("TTFT", lambda ms: duration(ms / 1e3), "Time to first token: the prefill of the request."),
    "TPOT (ms)": ("TPOT", lambda ms: duration(ms / 1e3), "Time per output token: one decode step."),
    "end-to-end (ms)": ("end-to-end", lambda ms: duration(ms / 1e3), "TTFT plus every decode step."),
    "output tokens/s": ("output tokens/s", count, "Output tokens per second over all devices (k = 1,000)."),
    "memory (GB)": ("memory per device", lambda gb: data_size(gb * 1e9),
                    "Weights, KV cache, activations and workspace on the most loaded device."),
    "capacity (GB)": ("capacity", lambda gb: data_size(gb * 1e9), "The device's memory capacity."),
    "fits": ("fits", lambda ok: "yes" if ok else "no", "Whether the memory per device fits its capacity."),
    "largest batch that fits": ("largest batch that fits", lambda b: f"{int(b):,}" if pd.notna(b) else "—",
                                "The largest batch whose memory fits one device."),
}


def metrics_view(metrics: pd.DataFrame):
    """(styler, help by column) for the device comparison table: times in the unit that suits each value
    ('4.64 h', not '16704591.15 ms'), sizes in GB/MB, tokens/s with k/M; the numbers underneath stay those
    of `metrics` (and of its CSV/XLSX). Columns this does not know are shown as they are."""
    names = {column: METRICS_SCREEN[column][0] for column in metrics if column in METRICS_SCREEN}
    shown = metrics.rename(columns=names)
    formats = {names[column]: (lambda cell, text=METRICS_SCREEN[column][1]: "—" if cell is None or (
        isinstance(cell, float) and math.isnan(cell)) else text(cell)) for column in names}
    helps = {names[column]: METRICS_SCREEN[column][2] for column in names}
    return shown.style.format(formats), helps


# Explore's sweep table: the metrics in the charts' units (ms, GB, mJ, %) and a help text per column
SWEEP_EXTRA_COLUMNS = {   # column -> (label, unit, scale from SI, help)
    "time_s": ("Time", "ms", 1e3, "Time of the whole workload (the request, or the phase), in ms."),
    "flops": ("FLOPs", "TFLOP", 1e-12, "Floating-point operations of the whole workload on one device."),
    "bytes": ("Bytes moved", "GB", 1e-9, "Bytes to and from device memory for the whole workload, one device."),
    "energy_j": ("Energy", "J", 1.0, "Energy of the whole workload over all devices."),
    "tdp_w": ("TDP", "W", 1.0, "The device's thermal design power."),
    "memory_capacity_bytes": ("Memory capacity", "GB", 1e-9, "The device's memory capacity."),
}
SWEEP_HELP = {
    "tpot_s": "Time per output token: one decode step.", "ttft_s": "Time to first token: the prefill.",
    "e2e_s": "TTFT plus every decode step.", "tokens_per_s": "Output tokens per second over all devices.",
    "tokens_per_s_per_device": "Output tokens per second divided by the devices.",
    "prefill_tokens_per_s": "Prompt tokens per second during the prefill.",
    "energy_per_token_j": "Energy per output token (prefill only: per input token).",
    "tokens_per_j": "Tokens per joule of energy.", "average_power_w": "Energy divided by time, per device.",
    "memory_per_device_bytes": "Weights, KV cache, activations and workspace on the most loaded device.",
    "compute_bound_share": "Share of the time spent in compute-bound kernels.",
    "exceeds_tdp": "Whether the average power exceeds the TDP (the chip would throttle).",
    "fits": "Whether the memory per device fits its capacity.", "devices": "Devices in the layout (TP x PP x DP).",
    "error": "Why the point cannot run (empty when it runs).",
}


def sweep_table_view(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """(shown, help by shown column) for Explore's sweep table: each metric scaled to the unit its chart uses and
    named with it ('TPOT (ms)', 'Memory per device (GB)'), the swept fields titled with their units; vectorised,
    so 10,000 rows stay quick. The downloads keep `frame` itself (SI values)."""
    from dashboard.charts.explore_fields import FIELD_LABELS, METRICS, field_title

    shown = pd.DataFrame(index=frame.index)
    helps = {}
    for column in frame.columns:
        if column in METRICS:
            metric = METRICS[column]
            name, values, text = metric.title, frame[column] * metric.scale, SWEEP_HELP.get(column, metric.label + ".")
        elif column in SWEEP_EXTRA_COLUMNS:
            label, unit, scale, text = SWEEP_EXTRA_COLUMNS[column]
            name, values = f"{label} ({unit})", frame[column] * scale
        elif column in FIELD_LABELS:
            name, values, text = field_title(column), frame[column], "A swept field, in workbook units."
        else:
            name, values = column.replace("_", " ").capitalize(), frame[column]
            text = SWEEP_HELP.get(column, "A swept field." if column not in SWEEP_HELP else "")
        shown[name] = values
        helps[name] = text
    return shown.reset_index(drop=True), helps
