"""Numbers for people: three significant digits in the unit that suits each value (never "16704591.15 ms" nor
"3.98e+03 J"), short enough for a metric card. Pure functions, no Streamlit."""

from __future__ import annotations

import math

# (seconds per unit, unit): a value is shown in the largest unit it reaches
TIME_UNITS = ((1e-6, "µs"), (1e-3, "ms"), (1.0, "s"), (60.0, "min"), (3600.0, "h"))
ENERGY_UNITS = ((1e-9, "nJ"), (1e-6, "µJ"), (1e-3, "mJ"), (1.0, "J"), (1e3, "kJ"), (1e6, "MJ"), (1e9, "GJ"))


def significant(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant digits in plain notation, trailing zeros dropped; whole numbers from
    10**digits up keep every digit, with thousands separators: 7.384 -> '7.38', 0.01234 -> '0.0123',
    2.50 -> '2.5', 16704.6 -> '16,705'."""
    if not math.isfinite(value):
        return "∞" if value > 0 else "-∞" if value < 0 else "n/a"
    if value == 0:
        return "0"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    if decimals <= 0:
        return f"{value:,.0f}"
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _scaled(value: float, units: tuple[tuple[float, str], ...]) -> str:
    magnitude = abs(value)
    factor, unit = units[0]
    for candidate_factor, candidate_unit in units:
        if magnitude >= candidate_factor * (1 - 5e-4):     # 999.96 ms shows as 1 s, not 1,000 ms
            factor, unit = candidate_factor, candidate_unit
    return f"{significant(value / factor)} {unit}"


def duration(seconds: float | None) -> str:
    """Seconds in µs, ms, s, min or h: 0.00738 -> '7.38 ms', 16704.59 -> '4.64 h', None -> '—'."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "—"
    return _scaled(seconds, TIME_UNITS)


def energy(joules: float | None) -> str:
    """Joules in nJ .. GJ: 3980 -> '3.98 kJ', 0.0123 -> '12.3 mJ', None -> '—'."""
    if joules is None or (isinstance(joules, float) and math.isnan(joules)):
        return "—"
    return _scaled(joules, ENERGY_UNITS)


def gigabytes(size_bytes: float) -> str:
    """Bytes in GB (decimal, like the specs workbook's capacities): 100.7e9 -> '101 GB', 16.06e9 -> '16.1 GB'."""
    return f"{significant(size_bytes / 1e9)} GB"


def memory_card(used_bytes: float, capacity_bytes: float, fits: bool) -> tuple[str, str]:
    """(value, delta) of the memory metric card: the use, then the capacity and the verdict, each short
    enough not to be cut off in a fifth of a 1440 px page: ('101 GB', 'fits in 141 GB')."""
    capacity = gigabytes(capacity_bytes)
    return gigabytes(used_bytes), (f"fits in {capacity}" if fits else f"exceeds {capacity}")
