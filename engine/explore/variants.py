"""Hardware variants of a sweep: a base device plus field changes, made into a Hardware only when needed.

A 100 x 100 sweep over memory bandwidth and matrix TFLOP/s has 10,000 devices, but its peaks take only
100 values and its energies one. A `Variant` keeps the base device and its SI changes; `on(attributes)`
gives a Hardware with only the changes among `attributes` applied, cached per distinct subset, so the
broadcast roofline (engine/explore/evaluation.py) computes each derived number (peaks, collective links, per-kernel
energies) once per distinct value instead of once per point.
"""

from __future__ import annotations

from typing import Iterable

from engine.hardware.device import Hardware

MATRIX_RATE_ATTRIBUTES = frozenset(name for name in Hardware.model_fields if name.startswith("matrix_macs_per_cycle"))
PEAK_ATTRIBUTES = MATRIX_RATE_ATTRIBUTES | {"num_cores", "clock_hz", "vector_flops_per_cycle_per_core"}
LINK_ATTRIBUTES = frozenset({"link_bandwidth_bytes_per_s", "num_links", "devices_per_node", "link_latency_s",
                             "inter_node_bandwidth_bytes_per_s", "inter_node_latency_s",
                             "clock_hz", "num_cores", "llc_capacity_bytes"})   # the fitted latencies' device scale
ENERGY_ATTRIBUTES = MATRIX_RATE_ATTRIBUTES | {name for name in Hardware.model_fields if "energy" in name} | \
    {"static_power_w"}


class Variant:
    """A base device with SI field changes ((attribute, value) pairs)."""

    __slots__ = ("base", "changes", "_cache")

    def __init__(self, base: Hardware, changes: Iterable[tuple[str, object]] = (), cache: dict | None = None):
        self.base, self.changes = base, tuple(sorted(changes))
        self._cache = {} if cache is None else cache     # shared by the variants of one sweep

    def get(self, attribute: str):
        """One field of the variant (SI)."""
        for name, value in self.changes:
            if name == attribute:
                return value
        return getattr(self.base, attribute)

    def on(self, attributes: Iterable[str] | None = None) -> Hardware:
        """The variant as a Hardware, with only the changes among `attributes` (None: all) applied."""
        subset = self.changes if attributes is None else tuple((k, v) for k, v in self.changes if k in attributes)
        if not subset:
            return self.base
        key = (id(self.base), subset)
        if key not in self._cache:
            self._cache[key] = self.base.model_copy(update=dict(subset))
        return self._cache[key]

    def key(self, attributes: Iterable[str]) -> tuple:
        """What the variant's numbers over `attributes` depend on (equal keys: equal numbers)."""
        return (id(self.base),) + tuple((k, v) for k, v in self.changes if k in attributes)


def as_variants(devices: list) -> list[Variant]:
    """Variants as they are; a Hardware becomes a variant without changes."""
    return [d if isinstance(d, Variant) else Variant(d) for d in devices]
