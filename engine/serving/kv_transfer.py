"""Moving a request's KV cache from the prefill pool to the decode pool (disaggregated serving).

    bytes per request  = model.kv_cache_bytes(tokens, kv_dtype)      (sliding windows and MLA latents included)
    transfer time      = latency + max(bytes each prefill device sends / its link bandwidth,
                                       bytes each decode device receives / its link bandwidth)

A prefill worker holds the request's cache spread over its devices (tp splits the K/V heads, pp the
layers: engine/results/memory.py kv_share_per_device); every device sends its share at once over its own link,
and every decode device receives the share its layout holds. An MLA latent is replicated over tp, so
each decode device receives the whole latent of its stage's layers.

The link (`KVLink`): given by the user, or taken from the workbook (`workbook_link`):
- scale-up (link_bandwidth x num_links per direction, link_latency; blank latency: the collectives'
  fitted hop latency) when prefill and decode run on the same device kind and all their devices fit in
  one scale-up domain (devices_per_node; a GB200 NVL72 rack holds 72);
- otherwise scale-out: the NIC (inter_node_bandwidth; the slower of the two devices' NICs, the larger
  latency; blank latency: DEFAULT_INTER_NODE_LATENCY_S, an assumption).
A blank field the link needs raises InterconnectError naming the workbook row; give `link=KVLink(...)`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from engine.estimators.collectives import (DEFAULT_INTER_NODE_LATENCY_S, DEFAULT_LINK_LATENCY_S, InterconnectError,
                                scale_up_link)
from engine.results.memory import kv_share_per_device


class KVLink(BaseModel):
    """A link the KV cache crosses: per-device, per-direction bandwidth (B/s) and one-way latency (s)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bandwidth_bytes_per_s: float = Field(gt=0.0, le=1e14)
    latency_s: float = Field(0.0, ge=0.0, le=1.0)
    description: str = "given"

    def seconds(self, sent_bytes_per_device: float, received_bytes_per_device: float | None = None) -> float:
        """latency + the larger of the bytes one device sends or receives over the bandwidth."""
        received = sent_bytes_per_device if received_bytes_per_device is None else received_bytes_per_device
        return self.latency_s + max(sent_bytes_per_device, received) / self.bandwidth_bytes_per_s


def as_link(link) -> KVLink | None:
    """A KVLink from a KVLink, a (bandwidth B/s, latency s) pair or a dict of KVLink fields (None stays None)."""
    if link is None or isinstance(link, KVLink):
        return link
    if isinstance(link, dict):
        return KVLink(**link)
    if isinstance(link, (tuple, list)) and len(link) == 2:
        return KVLink(bandwidth_bytes_per_s=float(link[0]), latency_s=float(link[1]))
    raise TypeError(f"link: expected KVLink(bandwidth_bytes_per_s=..., latency_s=...) or a (bandwidth B/s, "
                    f"latency s) pair, got {link!r}")


def kv_bytes_per_request(model, tokens: int, kv_dtype: str) -> float:
    """Bytes of KV cache a sequence of `tokens` tokens holds over all layers (the whole replica)."""
    if hasattr(model, "kv_cache_bytes"):
        return float(model.kv_cache_bytes(int(tokens), kv_dtype))
    return float(tokens) * float(model.kv_cache_bytes_per_token(kv_dtype))


def _scale_out(hardware, why: str) -> tuple[float, float]:
    scale_up_link(hardware, why)      # names a blank scale-up row first, as the collectives do
    bandwidth = hardware.inter_node_bandwidth_bytes_per_s
    if bandwidth is None:
        raise InterconnectError(f"{why} needs the scale-out link, but {hardware.name} has no inter_node_bandwidth "
                                "(hardware sheet row 'inter_node_bandwidth'); fill it in the workbook or give "
                                "link=KVLink(bandwidth_bytes_per_s=..., latency_s=...)")
    latency = hardware.inter_node_latency_s
    return bandwidth, DEFAULT_INTER_NODE_LATENCY_S if latency is None else latency


def workbook_link(prefill_hardware, decode_hardware, total_devices: int) -> KVLink:
    """The link the workbook gives between the two pools (module docstring)."""
    why = "the KV-cache transfer of disaggregated serving"
    same = prefill_hardware.name == decode_hardware.name
    per_node = prefill_hardware.devices_per_node
    if same and per_node is not None and total_devices <= per_node:
        up = scale_up_link(prefill_hardware, why)
        latency = prefill_hardware.link_latency_s
        return KVLink(bandwidth_bytes_per_s=up.bandwidth_bytes_per_s,
                      latency_s=DEFAULT_LINK_LATENCY_S if latency is None else latency,
                      description=f"scale-up ({prefill_hardware.name}, {total_devices} devices in one "
                                  f"{per_node}-device domain)")
    (bw_p, lat_p), (bw_d, lat_d) = _scale_out(prefill_hardware, why), _scale_out(decode_hardware, why)
    where = "different devices" if not same else f"{total_devices} devices > {per_node} per scale-up domain"
    return KVLink(bandwidth_bytes_per_s=min(bw_p, bw_d), latency_s=max(lat_p, lat_d),
                  description=f"scale-out ({where})")


def transfer_seconds(model, tokens: int, kv_dtype: str, link: KVLink, prefill_layout, decode_layout) -> float:
    """Seconds to move one request's KV cache of `tokens` tokens over `link` (module docstring); the layouts
    are engine.workload.parallel.ParallelLayout of one prefill and one decode replica."""
    total = kv_bytes_per_request(model, tokens, kv_dtype)
    return link.seconds(total * kv_share_per_device(model, prefill_layout),
                        total * kv_share_per_device(model, decode_layout))
