"""Small helpers the chart builders share: device/phase order and number formatting."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

DEFAULT_DEVICE = "device"
SI_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def with_device(frame: pd.DataFrame, default: str = DEFAULT_DEVICE) -> pd.DataFrame:
    """`frame` with a `device` column (added as `default` when the caller gave one device)."""
    if "device" in frame.columns:
        return frame
    return frame.assign(device=default)


def with_phase_column(frame: pd.DataFrame) -> pd.DataFrame:
    """The engine's phases frame has `phase` as its index; charts want it as a column."""
    if "phase" in frame.columns:
        return frame
    out = frame.reset_index()
    if "phase" not in out.columns:
        out = out.rename(columns={out.columns[0]: "phase"})
    return out


def in_order(values) -> list:
    """Distinct values in order of first appearance."""
    return list(dict.fromkeys(values))


def records(frame: pd.DataFrame) -> list[dict]:
    """The rows as plain dicts of Python values: `to_dict("records")`, but quick on small, wide frames."""
    columns = list(frame.columns)
    return [dict(zip(columns, row)) for row in zip(*(frame[column].tolist() for column in columns))]


def si(value: float, unit: str = "", digits: int = 3) -> str:
    """1.98e15, 'FLOP/s' -> '1.98 PFLOP/s' (decimal prefixes, as everywhere in the engine)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return f"∞ {unit}".strip()
    magnitude = abs(value)
    for factor, prefix in SI_PREFIXES:
        if magnitude >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}".strip()
    return f"{value:.{digits}g} {unit}".strip()


def shape_text(row) -> str:
    """'m=1024 k=4096 n=14336 batch=1' from a kernel row (missing parts left out)."""
    parts = []
    for key in ("m", "k", "n", "batch"):
        value = row.get(key) if hasattr(row, "get") else None
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            parts.append(f"{key}={value:g}")
    return " ".join(parts)


def wrap_words(text: str, width: int = 70) -> str:
    """Long hover text broken into lines (<br>) at spaces."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + len(word) < width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


ATTENTION_BODY = ("attention", "softmax")     # the ops of one attention block after its KV-cache read


def attention_with_kv_reads(kernels: pd.DataFrame) -> pd.DataFrame:
    """The kernel table with each KV-cache read folded into the attention products that consume it.

    The engine books a decode step's KV reads in a zero-FLOP `kv_read` row (it has no place on a log-log
    roofline), so the Q*K and P*V points alone show no bytes and sit on the compute roof. Here each
    `kv_read` row's bytes and time (count x per call) go to the `attention` rows that follow it in the same
    device and phase (the first attention block after it: attention and softmax rows, with query-side work
    such as MLA's absorbed Q*W_UK allowed before it), in proportion to their FLOPs
    (Q*K reads K, P*V reads V: FLOPs in proportion to the head dims); the bound is recomputed from the
    compute and memory times, and the folded `kv_read` rows are dropped. The engine's table is not changed.
    """
    if "op" not in kernels or not (kernels["op"] == "kv_read").any():
        return kernels
    frame = kernels.reset_index(drop=True).copy()
    ops, flops, count = frame["op"].tolist(), frame["flops"].tolist(), frame["count"].tolist()
    group = list(zip(frame["device"], frame["phase"])) if "device" in frame else frame["phase"].tolist()
    columns = {column: frame[column].to_numpy(dtype=float, copy=True)
               for column in ("bytes", "kv_bytes", "time_s", "memory_time_s", "compute_time_s", "time_share")
               if column in frame}
    read_bytes, targeted = np.zeros(len(frame)), np.zeros(len(frame), dtype=bool)
    rows_of: dict = {}
    for row, key in enumerate(group):
        rows_of.setdefault(key, []).append(row)          # rows of one device and phase, in table order
    folded = []
    for index in rows_of.values():
        for position, read in enumerate(index):
            if ops[read] != "kv_read":
                continue
            body, started = [], False
            for following in index[position + 1:]:
                op = ops[following]
                if op not in ATTENTION_BODY and (started or op != "gemm"):
                    break                             # before the block only a query-side GEMM (MLA's Q*W_UK)
                started |= op == "attention"
                if op == "attention" and flops[following] > 0 and count[following] > 0:
                    body.append(following)
            if body:
                _fold(columns, read_bytes, count, flops, read, body)
                targeted[body] = True
                folded.append(read)
    for column, values in columns.items():
        frame[column] = values
    frame["kv_read_bytes"] = read_bytes
    if {"compute_time_s", "memory_time_s", "bound"} <= set(frame):
        memory_bound = np.where(columns["memory_time_s"] >= columns["compute_time_s"], "memory", "compute")
        rebound = frame["bound"].isin(("compute", "memory")).to_numpy() & targeted
        frame.loc[rebound, "bound"] = memory_bound[rebound]
    return frame.drop(index=folded).reset_index(drop=True)


def _fold(columns: dict, read_bytes: np.ndarray, count: list, flops: list, read: int, body: list[int]) -> None:
    """Row `read`'s bytes and times onto the `body` rows, per call, in proportion to their FLOPs x count."""
    weights = np.array([flops[target] * count[target] for target in body])
    for target, weight in zip(body, weights / weights.sum()):
        per_call = weight * count[read] / count[target]
        for column, values in columns.items():
            if column != "time_share":
                values[target] += per_call * values[read]
        read_bytes[target] += per_call * columns["bytes"][read]
        if "time_share" in columns and not np.isnan(columns["time_share"][read]):
            columns["time_share"][target] += weight * columns["time_share"][read]
