"""Collective communication (all-reduce, all-gather, reduce-scatter, all-to-all, send/recv), costed
from the device's interconnect fields, and timed in one place for every estimation method.

A collective over a group of n devices on message M (the full tensor each device ends up with, or
sends for send/recv) takes a latency floor, a bandwidth term and the cost of pipelining the two:

    latency   = a_kind + hops x hop latency
    transfer  = link_bytes / (bandwidth x fraction_kind(n)),   fraction_kind(n) = e_kind x (1 - c / n)
    time      = latency + transfer + r x sqrt(latency x transfer)

| collective | link_bytes (ring) | hops (ring) | tree link_bytes | tree hops |
| --- | --- | --- | --- | --- |
| all-reduce | 2(n-1)/n x M | 2(n-1) | 2 M | 2 ceil(log2 n) |
| all-gather, reduce-scatter | (n-1)/n x M | n-1 | (n-1)/n x M | ceil(log2 n) |
| all-to-all | (n-1)/n x M | log2 n (pairwise exchanges overlap) | same | same |
| send/recv | M | 1 (time = M / bandwidth + one hop latency) | same | same |

a_kind (launch and synchronisation of the collective kernel), the hop latency when the workbook
has no link_latency, e_kind (the share of the scale-up bandwidth a collective reaches on large
messages), c (small groups reach less of it: fewer channels) and r (the cross term: a message cut
into chunks pays the latency of the pipeline fill) are fitted to NCCL's measured tables
(engine/calibration/silicon/collectives_fit.py, docs/parallelism.md); they are the same for every device: only
the workbook's fields differ. The fitted latencies (a_kind, and the hop where link_latency is blank) are
cycles of the whole device (clock x cores) and grow with its last-level cache:
x (1 GHz / clock) x (100 / cores) x (1 + s x LLC MiB / 100) (s fitted: Hopper's NCCL floor is ~35% under A100's
and Blackwell's, which the aggregate core cycles (A100: 108 SMs at 1.41 GHz) and the L2 (Blackwell's 126 MB over
two dies) tell apart; with the clock alone A100 left out was 17% off, with the cores too 6%).

Inside one node (n <= devices_per_node) a group uses the scale-up links (link_bandwidth x
num_links, link_latency per hop). A group spanning N = n / d nodes of d devices (d: the largest
divisor of n up to devices_per_node, an equal share per node) is hierarchical: the node's d devices reduce-scatter / all-gather over scale-up while each device
exchanges its 1/d share with its peers in the other nodes over its NIC (inter_node_bandwidth,
capped at scale-up, reached at e_kind: no small-group loss, an assumption as no multi-node table
exists; inter_node_latency per hop), all-reduce across nodes taking the faster of a
ring (2(N-1) hops, 2(N-1)/N x M/d bytes) and a tree (2 ceil(log2 N) hops, 2 M/d bytes); all-gather
and reduce-scatter ring over the nodes (N-1 hops, (N-1)/N x M/d bytes); all-to-all sends (n-d)/n x M
over the NIC while (d-1)/n x M crosses scale-up (the slower bounds it). Pipeline send/recv hops
cross a node boundary when the stage boundary does (stages hold tp devices each); each hop is
charged at the mean over the pp - 1 boundaries. No published latency: DEFAULT_LINK_LATENCY_S (the
fitted hop latency) / DEFAULT_INTER_NODE_LATENCY_S (an assumption, noted).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from engine.common.arrays import any_true
from engine.hardware.device import Hardware
from engine.kernels.table import column_equals
from engine.kernels.collective_kinds import KIND_BY_PREFIX, KINDS, bandwidth_factor, hops, kind_of  # noqa: F401  (re-exported)

COMMUNICATION_BOUND = "communication"


@dataclass(frozen=True)
class CollectiveConstants:
    """The fitted constants of the timing model (module docstring); per kind in FITTED_KINDS order."""

    base_latency_s: tuple[float, float, float, float]      # a_kind: launch + synchronisation
    hop_latency_s: float                                    # one scale-up hop when link_latency is blank
    bandwidth_fraction: tuple[float, float, float, float]  # e_kind: share of the link bandwidth, large n
    small_group_loss: float                                 # c: fraction_kind(n) = e_kind x (1 - c / n)
    pipeline_cross: float                                   # r: time = lat + transfer + r sqrt(lat x transfer)
    custom_latency_s: float = 5.32e-6                       # a_custom: one-shot custom all-reduce floor
    custom_fraction: float = 0.458                          # e_custom: share of NVLink its peer reads reach
    # the fitted latencies (a_kind, and the hop where link_latency is blank) scale with the device:
    # x (1 GHz / clock) ** latency_clock_exponent x (100 / cores) ** latency_cores_exponent
    # x (1 + latency_llc_share x last-level cache MiB / 100)
    # (a_kind and hop are then per 1 GHz clock, 100 cores and no cache; exponents 0, share 0: alike on every device)
    latency_clock_exponent: float = 0.0
    latency_llc_share: float = 0.0
    latency_cores_exponent: float = 0.0

    def latency_scale(self, fields) -> np.ndarray:
        """The device factor on the latency, from the fields' clock_hz, cores and llc_mib (NaN: factor 1)."""
        clock = np.asarray(fields.clock_hz, dtype=float)
        cores = np.asarray(fields.cores, dtype=float)
        llc = np.nan_to_num(np.asarray(fields.llc_mib, dtype=float))
        with np.errstate(invalid="ignore", divide="ignore"):
            by_clock = np.where(np.isnan(clock), 1.0, (1e9 / clock) ** self.latency_clock_exponent)
            by_cores = np.where(np.isnan(cores) | (cores <= 0), 1.0, (100.0 / cores) ** self.latency_cores_exponent)
        return by_clock * by_cores * (1.0 + self.latency_llc_share * llc / 100.0)

    def base(self, kind: str) -> float:
        return self.base_latency_s[FITTED_KINDS.index(kind)]

    def fraction(self, kind: str, n) -> np.ndarray:
        n = np.maximum(np.asarray(n, dtype=float), 1.0)
        return self.bandwidth_fraction[FITTED_KINDS.index(kind)] * (1.0 - self.small_group_loss / n)


FITTED_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
# Fitted to aiconfigurator-core 0.12.0's NCCL tables (7 devices, 2-8 GPUs, 512 B - 512 MB;
# engine/calibration/silicon/collectives_fit.py, benchmarks/collectives_accuracy.py; docs/parallelism.md)
FITTED = CollectiveConstants(base_latency_s=(6.43e-6, 6.58e-6, 6.34e-6, 7.90e-6), hop_latency_s=0.931e-6,
                             bandwidth_fraction=(1.0, 0.894, 0.871, 0.880), small_group_loss=0.680,
                             pipeline_cross=1.282, custom_latency_s=5.34e-6, custom_fraction=0.471,
                             latency_clock_exponent=1.0, latency_llc_share=1.910, latency_cores_exponent=1.0)
# one NVLink hop incl. NCCL step overhead for point-to-point sends (pipeline stages, KV transfer): the hop fitted
# before the device scale above (collectives scale FITTED.hop_latency_s by the device instead)
DEFAULT_LINK_LATENCY_S = 0.953e-6
DEFAULT_INTER_NODE_LATENCY_S = 5e-6    # assumption: one InfiniBand/RoCE hop incl. NCCL step overhead


class InterconnectError(ValueError):
    """The device lacks an interconnect field the layout needs (names the workbook row)."""


@dataclass(frozen=True)
class Link:
    """What a device sees of a group's links: per-direction bandwidth and one hop's latency."""

    bandwidth_bytes_per_s: float
    hop_latency_s: float
    spans_nodes: bool


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


@dataclass(frozen=True)
class LinkFields:
    """The workbook link fields the model reads (scalars, or arrays of one value per measurement).

    up_bandwidth: link_bandwidth x num_links (B/s per direction); up_latency: link_latency (NaN:
    blank); per_node: devices_per_node; net_bandwidth / net_latency: inter_node_bandwidth /
    inter_node_latency (NaN: blank; needed only by groups spanning nodes)."""

    up_bandwidth: object
    up_latency: object
    per_node: object
    net_bandwidth: object = np.nan
    net_latency: object = np.nan
    clock_hz: object = np.nan           # the device clock (Hz), last-level cache (MiB) and cores scale the latency
    llc_mib: object = np.nan
    cores: object = np.nan


def link_fields(hardware: Hardware, group_size: int, why: str = "a collective") -> LinkFields:
    """The device's link fields; raises InterconnectError naming a blank row the group needs."""
    up = scale_up_link(hardware, why)
    latency = np.nan if hardware.link_latency_s is None else hardware.link_latency_s
    net_bandwidth, net_latency = np.nan, np.nan
    if group_size > hardware.devices_per_node:
        out = scale_out_link(hardware, why)
        net_bandwidth, net_latency = out.bandwidth_bytes_per_s, out.hop_latency_s
    llc = np.nan if hardware.llc_capacity_bytes is None else hardware.llc_capacity_bytes / 2 ** 20
    return LinkFields(up.bandwidth_bytes_per_s, latency, hardware.devices_per_node, net_bandwidth, net_latency,
                      hardware.clock_hz, llc, hardware.num_cores or np.nan)


def _flat(kind, message, n, bandwidth, hop, constants, algorithm="ring"):
    """(hop latency, transfer seconds) of a flat collective over n devices on one kind of link."""
    transfer = bandwidth_factor(kind, n, algorithm) * message / (bandwidth * constants.fraction(kind, n))
    return hops(kind, n, algorithm) * hop, transfer


def ranks_per_node(n, per_node) -> np.ndarray:
    """Of a group of n devices spanning nodes of `per_node`, the devices each node holds: the largest divisor of n up
    to per_node (hierarchical collectives place an equal share on each node: a group of 4 over nodes of 3 runs as
    2 + 2, as over nodes of 2; with ceil(n / per_node) nodes of per_node, 3 + 1, a larger node was slower)."""
    n, per_node = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(per_node, dtype=float))
    out = per_node.copy()
    uneven = np.isfinite(n) & np.isfinite(per_node) & (per_node >= 1) & (n > per_node) & (np.mod(n, per_node) != 0)
    for size, limit in {(int(a), int(b)) for a, b in zip(n[uneven], per_node[uneven])}:
        out[uneven & (n == size) & (per_node == limit)] = max(d for d in range(1, limit + 1) if size % d == 0)
    return out


def _across_nodes(kind, message, n, fields: LinkFields, up_hop, constants, algorithm):
    """(hop latency, transfer seconds) of a group spanning nodes: hierarchical (module docstring), ranks_per_node
    devices on each of n / that nodes."""
    d = ranks_per_node(n, fields.per_node)
    nodes = np.ceil(n / d)
    nic = dataclasses.replace(constants, small_group_loss=0.0)     # the NIC part: e_kind, no small-group loss
    net_bw, net_hop = fields.net_bandwidth, fields.net_latency
    if kind == "all_to_all":
        latency = np.log2(d) * up_hop + np.log2(nodes) * net_hop
        inside = (d - 1) / n * message / (fields.up_bandwidth * constants.fraction(kind, d))
        outside = (n - d) / n * message / (net_bw * nic.fraction(kind, nodes))
        return latency, np.maximum(inside, outside)
    hop_in, transfer_in = _flat(kind, message, d, fields.up_bandwidth, up_hop, constants)
    hop_out, transfer_out = _flat(kind, message / d, nodes, net_bw, net_hop, nic, algorithm)
    return hop_in + hop_out, transfer_in + transfer_out


def _total(kind, latency_hops, transfer, constants, scale=1.0):
    latency = constants.base(kind) * scale + latency_hops
    return latency + transfer + constants.pipeline_cross * np.sqrt(latency * transfer)


def custom_all_reduce_seconds(message_bytes, n, fields: LinkFields, constants: CollectiveConstants = FITTED):
    """The serving frameworks' one-shot custom all-reduce inside a node (TensorRT-LLM, vLLM, SGLang):
    each device reads its n - 1 peers' whole messages over scale-up: a_custom + (n-1) M / (B e_custom)."""
    n = np.asarray(n, dtype=float)
    return constants.custom_latency_s + (n - 1) * np.asarray(message_bytes, dtype=float) / (
        np.asarray(fields.up_bandwidth, dtype=float) * constants.custom_fraction)


def collective_seconds(kind: str, message_bytes, n, fields: LinkFields, algorithm: str = "ring",
                       constants: CollectiveConstants = FITTED, custom_all_reduce: bool = True) -> np.ndarray:
    """Seconds for one collective of `kind` (not send_recv) on message M over n devices (module docstring).

    message_bytes, n and the fields may be arrays (broadcast together); n <= 1 takes no time. An
    all-reduce inside one node takes the faster of NCCL and the custom all-reduce (custom_all_reduce=False:
    NCCL only)."""
    message, n = np.asarray(message_bytes, dtype=float), np.asarray(n, dtype=float)
    scale = constants.latency_scale(fields)
    up_hop = np.where(np.isnan(np.asarray(fields.up_latency, dtype=float)), constants.hop_latency_s * scale,
                      fields.up_latency)
    with np.errstate(invalid="ignore", divide="ignore"):
        seconds = _total(kind, *_flat(kind, message, n, fields.up_bandwidth, up_hop, constants, algorithm), constants,
                         scale)
        spans = n > np.asarray(fields.per_node, dtype=float)
        if np.any(spans):
            inter = ("ring", "tree") if kind == "all_reduce" and algorithm != "tree" else (algorithm,)
            across = np.min([_total(kind, *_across_nodes(kind, message, n, fields, up_hop, constants, way),
                                    constants, scale) for way in inter], axis=0)
            seconds = np.where(spans, across, seconds)
        if kind == "all_reduce" and custom_all_reduce:
            custom = custom_all_reduce_seconds(message, n, fields, constants)
            seconds = np.where(spans, seconds, np.minimum(seconds, custom))
    return np.where(n > 1, seconds, 0.0)


def collective_time(kind: str, message_bytes: float, n: int, hardware: Hardware, algorithm: str = "ring") -> float:
    """Seconds for one collective on `hardware` (send_recv: one hop between two neighbouring devices)."""
    if kind == "send_recv":
        link = scale_up_link(hardware, "send/recv")
        return message_bytes / link.bandwidth_bytes_per_s + link.hop_latency_s
    return float(collective_seconds(kind, message_bytes, n, link_fields(hardware, n), algorithm))


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
        return (f"{hardware.name} publishes no link_latency: {DEFAULT_LINK_LATENCY_S * 1e6:g} us per link hop "
                "(fitted to NCCL measurements) assumed")
    return ""


# ---- timing the collective rows of a kernel table (every method calls this once) --------------

COLLECTIVE_COLUMNS = ("communication_time_s", "hidden_time_s")


def collective_row_seconds(names, sizes, link_bytes, hardware: Hardware, scenario) -> np.ndarray:
    """Seconds of each collective row from its name, group size and link_bytes (= factor x M, so the
    message M = link_bytes / bandwidth_factor; send/recv: link_bytes / B + one hop latency)."""
    algorithm = getattr(scenario, "collective_algorithm", "ring")
    names, sizes = np.asarray(names).astype(str), np.asarray(sizes, dtype=float)
    link_bytes = np.asarray(link_bytes, dtype=float)
    seconds = np.zeros(names.size)
    for name, size in dict.fromkeys(zip(names, sizes)):
        mine = (names == name) & (sizes == size)
        kind, n = kind_of(name), int(size)
        if kind == "send_recv":
            per_byte, latency = stage_hop_link(hardware, scenario.tp, scenario.pp)
            seconds[mine] = link_bytes[mine] * per_byte + latency
            continue
        fields = link_fields(hardware, n, f"{name} over {n} devices")
        factor = bandwidth_factor(kind, n, algorithm)
        message = link_bytes[mine] / factor if factor > 0 else np.zeros(int(mine.sum()))
        seconds[mine] = collective_seconds(kind, message, n, fields, algorithm)
    return seconds


def time_collectives(out: dict, hardware: Hardware, scenario) -> dict:
    """Set time_s, bound and the method's own columns of every `collective` row; add
    communication_time_s (the collective's full time) and hidden_time_s (the part hidden behind its
    producer kernel when scenario.overlap_communication; time_s = communication_time_s - hidden_time_s).
    Non-collective rows get 0 in both."""
    rows_total = len(out["time_s"])
    out["communication_time_s"] = np.zeros(rows_total)
    out["hidden_time_s"] = np.zeros(rows_total)
    collective = column_equals(out, "op", "collective") if rows_total else None
    if collective is None or not any_true(collective):      # no collective row (one device): nothing to time
        return out
    rows = np.flatnonzero(collective)
    seconds = collective_row_seconds(np.asarray(out["name"])[rows], out["group_size"][rows], out["link_bytes"][rows],
                                     hardware, scenario)
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
