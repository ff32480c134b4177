"""Numbers for people in the dashboard: the engine's formatters (engine/common/readable.py: each value in the unit that
suits it, never "16704591.15 ms" nor "3.98e+03 J") and the metric cards built from them. No Streamlit."""

from __future__ import annotations

from engine import readable

# the engine's formatters, re-exported for the pages
BINARY_BYTE_UNITS, DECIMAL_BYTE_UNITS = readable.BINARY_BYTE_UNITS, readable.DECIMAL_BYTE_UNITS
ENERGY_UNITS, TIME_UNITS = readable.ENERGY_UNITS, readable.TIME_UNITS
count, data_size, duration, energy = readable.count, readable.data_size, readable.duration, readable.energy
flop_count, gigabytes, significant, with_prefix = (readable.flop_count, readable.gigabytes, readable.significant,
                                                   readable.with_prefix)


def memory_card(used_bytes: float, capacity_bytes: float, fits: bool) -> tuple[str, str]:
    """(value, delta) of the memory metric card: the use, then the capacity and the verdict, each short
    enough not to be cut off in a fifth of a 1440 px page: ('101 GB', 'fits in 141 GB')."""
    capacity = data_size(capacity_bytes)
    return data_size(used_bytes), (f"fits in {capacity}" if fits else f"exceeds {capacity}")
