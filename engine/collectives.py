"""Collective communication (all-reduce, all-gather, reduce-scatter, all-to-all, send/recv), costed
from the device's interconnect fields, and timed in one place for every estimation method.

A collective over a group of n devices moves `link_bytes` = factor x M bytes out of each device
(M = the message: the full tensor each device ends up with, or sends for send/recv) and takes

    time = link_bytes / bandwidth + hops x hop latency

| collective | ring factor | ring hops | tree factor | tree hops |
| --- | --- | --- | --- | --- |
| all-reduce | 2(n-1)/n | 2(n-1) | 2 (double binary tree: reduce up, broadcast down) | 2 ceil(log2 n) |
| all-gather, reduce-scatter | (n-1)/n | n-1 | (n-1)/n (recursive doubling) | ceil(log2 n) |
| all-to-all | (n-1)/n | n-1 | (n-1)/n | n-1 (pairwise; no tree form) |
| send/recv | 1 | 1 | 1 | 1 |

Bandwidth and latency (per device, per direction): a group inside one node (n devices placed
next to each other, n <= devices_per_node) uses the scale-up links, link_bandwidth x num_links and
link_latency per hop; a group spanning nodes is limited by the slowest link of its ring, the
scale-out NIC: min(scale-up, inter_node_bandwidth) and inter_node_latency per hop (ring steps are
synchronous). Pipeline send/recv hops cross a node boundary when the stage boundary does (stages
hold tp devices each); each hop is charged at the mean over the pp - 1 boundaries.
No published latency: DEFAULT_LINK_LATENCY_S / DEFAULT_INTER_NODE_LATENCY_S (assumptions, noted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.hardware import Hardware

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
KIND_BY_PREFIX = {"AllReduce_": "all_reduce", "AllGather_": "all_gather", "ReduceScatter_": "reduce_scatter",
                  "AllToAll_": "all_to_all", "SendRecv_": "send_recv"}
DEFAULT_LINK_LATENCY_S = 1e-6          # assumption: one NVLink/ICI hop incl. NCCL step overhead
DEFAULT_INTER_NODE_LATENCY_S = 5e-6    # assumption: one InfiniBand/RoCE hop incl. NCCL step overhead
COMMUNICATION_BOUND = "communication"


class InterconnectError(ValueError):
    """The device lacks an interconnect field the layout needs (names the workbook row)."""


@dataclass(frozen=True)
class Link:
    """What a device sees of a group's links: per-direction bandwidth and one hop's latency."""

    bandwidth_bytes_per_s: float
    hop_latency_s: float
    spans_nodes: bool


def kind_of(name: str) -> str:
    """The collective a kernel-table row is, from its name (AllReduce_attn -> all_reduce)."""
    for prefix, kind in KIND_BY_PREFIX.items():
        if name.startswith(prefix):
            return kind
    raise ValueError(f"{name!r} is not a collective name (expected one of {', '.join(KIND_BY_PREFIX)}...)")


def bandwidth_factor(kind: str, n: int, algorithm: str = "ring") -> float:
    """Bytes each device sends over its links per byte of message M (table above)."""
    if n <= 1 and kind != "send_recv":
        return 0.0
    if kind == "send_recv":
        return 1.0
    if kind == "all_reduce":
        return 2.0 if algorithm == "tree" else 2.0 * (n - 1) / n
    return (n - 1) / n


def hops(kind: str, n: int, algorithm: str = "ring") -> int:
    """Sequential link steps (each pays one hop latency)."""
    if n <= 1 and kind != "send_recv":
        return 0
    if kind == "send_recv":
        return 1
    depth = math.ceil(math.log2(n))
    if kind == "all_reduce":
        return 2 * depth if algorithm == "tree" else 2 * (n - 1)
    if kind in ("all_gather", "reduce_scatter"):
        return depth if algorithm == "tree" else n - 1
    return n - 1


def _need(hardware: Hardware, attribute: str, row: str, why: str):
    value = getattr(hardware, attribute)
    if value is None:
        raise InterconnectError(f"{why} needs the interconnect, but {hardware.name} has no {row} "
                                f"(hardware sheet row '{row}'); fill it in the workbook or use one device")
    return value


def scale_up_link(hardware: Hardware, why: str) -> Link:
    bandwidth = _need(hardware, "link_bandwidth_bytes_per_s", "link_bandwidth", why)
    links = _need(hardware, "num_links", "num_links", why)
    _need(hardware, "devices_per_node", "devices_per_node", why)
    latency = hardware.link_latency_s if hardware.link_latency_s is not None else DEFAULT_LINK_LATENCY_S
    return Link(bandwidth * links, latency, False)


def scale_out_link(hardware: Hardware, why: str) -> Link:
    up = scale_up_link(hardware, why)
    bandwidth = _need(hardware, "inter_node_bandwidth_bytes_per_s", "inter_node_bandwidth", why)
    latency = hardware.inter_node_latency_s
    latency = DEFAULT_INTER_NODE_LATENCY_S if latency is None else latency
    return Link(min(bandwidth, up.bandwidth_bytes_per_s), max(latency, up.hop_latency_s), True)


def group_link(hardware: Hardware, group_size: int, why: str = "a collective") -> Link:
    """The link a group of `group_size` neighbouring devices communicates over."""
    up = scale_up_link(hardware, why)
    if group_size <= hardware.devices_per_node:
        return up
    return scale_out_link(hardware, why)


def collective_time(kind: str, message_bytes: float, n: int, link: Link, algorithm: str = "ring") -> float:
    """Seconds for one collective: factor x M / bandwidth + hops x latency."""
    return bandwidth_factor(kind, n, algorithm) * message_bytes / link.bandwidth_bytes_per_s \
        + hops(kind, n, algorithm) * link.hop_latency_s


def stage_hop_link(hardware: Hardware, tp: int, pp: int) -> tuple[float, float]:
    """(mean seconds per byte, mean latency) of a pipeline hop, over the pp - 1 stage boundaries.

    Stage s holds devices s*tp ... (s+1)*tp - 1; the boundary before stage b crosses a node when
    devices b*tp - 1 and b*tp sit in different nodes.
    """
    why = f"pp={pp}"
    up = scale_up_link(hardware, why)
    per_node = hardware.devices_per_node
    boundaries = np.arange(1, pp) * tp
    crosses = (boundaries - 1) // per_node != boundaries // per_node
    if crosses.any():
        out = scale_out_link(hardware, why)
    else:
        out = up
    share = float(crosses.mean()) if len(crosses) else 0.0
    seconds_per_byte = (1 - share) / up.bandwidth_bytes_per_s + share / out.bandwidth_bytes_per_s
    latency = (1 - share) * up.hop_latency_s + share * out.hop_latency_s
    return seconds_per_byte, latency


def check_interconnect(hardware: Hardware, scenario) -> list[str]:
    """Raise InterconnectError when the layout needs a field the device lacks; return notes on assumed latencies."""
    notes = []
    groups = {"tp": scenario.tp, "ep": scenario.ep}
    for label, size in groups.items():
        if size > 1:
            link = group_link(hardware, size, f"{label}={size}")
            notes.append(_latency_note(hardware, link.spans_nodes))
    if scenario.pp > 1:
        stage_hop_link(hardware, scenario.tp, scenario.pp)
        notes.append(_latency_note(hardware, scenario.tp * scenario.pp > hardware.devices_per_node))
    return [n for n in dict.fromkeys(notes) if n]


def _latency_note(hardware: Hardware, spans_nodes: bool) -> str:
    if spans_nodes and hardware.inter_node_latency_s is None:
        return (f"{hardware.name} publishes no inter_node_latency: {DEFAULT_INTER_NODE_LATENCY_S * 1e6:g} us "
                "per scale-out hop assumed")
    if hardware.link_latency_s is None:
        return f"{hardware.name} publishes no link_latency: {DEFAULT_LINK_LATENCY_S * 1e6:g} us per link hop assumed"
    return ""


# ---- timing the collective rows of a kernel table (every method calls this once) --------------

COLLECTIVE_COLUMNS = ("communication_time_s", "hidden_time_s")


def collective_coefficients(names, sizes, hardware: Hardware, scenario) -> tuple[np.ndarray, np.ndarray]:
    """Per collective row: seconds per link byte and fixed latency (time = link_bytes x per_byte + latency)."""
    algorithm = getattr(scenario, "collective_algorithm", "ring")
    names, sizes = np.asarray(names).astype(str), np.asarray(sizes, dtype=float)
    per_byte, latency = np.zeros(names.size), np.zeros(names.size)
    for name, size in dict.fromkeys(zip(names, sizes)):
        mine = (names == name) & (sizes == size)
        kind, n = kind_of(name), int(size)
        if kind == "send_recv":
            per_byte[mine], latency[mine] = stage_hop_link(hardware, scenario.tp, scenario.pp)
        else:
            link = group_link(hardware, n, f"{name} over {n} devices")
            per_byte[mine] = 1.0 / link.bandwidth_bytes_per_s
            latency[mine] = hops(kind, n, algorithm) * link.hop_latency_s
    return per_byte, latency


def time_collectives(out: dict, hardware: Hardware, scenario) -> dict:
    """Set time_s, bound and the method's own columns of every `collective` row; add
    communication_time_s (the collective's full time) and hidden_time_s (the part hidden behind its
    producer kernel when scenario.overlap_communication; time_s = communication_time_s - hidden_time_s).
    Non-collective rows get 0 in both."""
    rows_total = len(out["time_s"])
    out["communication_time_s"] = np.zeros(rows_total)
    out["hidden_time_s"] = np.zeros(rows_total)
    op = np.asarray(out["op"])
    rows = np.flatnonzero(op == "collective") if rows_total else np.zeros(0, dtype=int)
    if rows.size == 0:
        return out
    per_byte, latency = collective_coefficients(np.asarray(out["name"])[rows], out["group_size"][rows], hardware,
                                                scenario)
    seconds = out["link_bytes"][rows].astype(float) * per_byte + latency
    hidden = np.zeros(rows.size)
    if getattr(scenario, "overlap_communication", False):
        hidden = np.minimum(seconds, _producer_times(out, rows))
    exposed = seconds - hidden
    out["communication_time_s"][rows] = seconds
    out["hidden_time_s"][rows] = hidden
    out["time_s"] = out["time_s"].astype(float)
    out["time_s"][rows] = exposed
    for column in ("compute_time_s", "memory_time_s", "gap_tile_quantization_s", "gap_wave_quantization_s",
                   "gap_efficiency_s", "gap_overhead_s", "hbm_time_s", "llc_time_s", "sram_time_s"):
        if column in out:
            out[column] = out[column].astype(float)
            out[column][rows] = 0.0
    for column in ("ideal_time_s", "kernel_time_s"):
        if column in out:
            out[column] = out[column].astype(float)
            out[column][rows] = exposed
    bound = np.asarray(out["bound"], dtype=object).copy()
    bound[rows] = COMMUNICATION_BOUND
    out["bound"] = bound
    return out


def _producer_times(out: dict, rows: np.ndarray) -> np.ndarray:
    """Time of the kernel each collective row hides behind; 0 where there is none."""
    index, has = producer_rows(out, rows)
    return np.where(has, out["time_s"].astype(float)[index], 0.0)


def producer_rows(out: dict, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per collective row: the row of its `overlap_group` at the same position within the group (the
    same decode step / iteration), and whether it has one."""
    groups = out["group"]
    producer = out["overlap_group"][rows].astype(int)
    position = rows - np.searchsorted(groups, groups[rows], side="left")
    first = np.searchsorted(groups, np.maximum(producer, 0), side="left")
    size = np.searchsorted(groups, np.maximum(producer, 0), side="right") - first
    index = first + np.minimum(position, np.maximum(size - 1, 0))
    return np.clip(index, 0, len(groups) - 1), producer >= 0


def interconnect_ceilings(hardware: Hardware) -> dict[str, float | None]:
    """Per-device link bandwidths (B/s, per direction) for a communication ceiling in a roofline chart:
    scale-up (link_bandwidth x num_links) and scale-out (inter_node_bandwidth); None where unpublished."""
    up = (hardware.link_bandwidth_bytes_per_s * hardware.num_links
          if hardware.link_bandwidth_bytes_per_s is not None and hardware.num_links is not None else None)
    return {"scale_up_bytes_per_s": up, "scale_out_bytes_per_s": hardware.inter_node_bandwidth_bytes_per_s,
            "devices_per_node": hardware.devices_per_node}
