"""Numbers for people: three significant digits in the unit that suits each value (never "16704591.15 ms" nor
"3.98e+03 J"), short enough for a metric card or a CLI line. Pure functions; the dashboard's
dashboard/units.py re-exports them."""

from __future__ import annotations

import math

# (seconds per unit, unit): a value is shown in the largest unit it reaches
TIME_UNITS = ((1e-6, "µs"), (1e-3, "ms"), (1.0, "s"), (60.0, "min"), (3600.0, "h"))
ENERGY_UNITS = ((1e-9, "nJ"), (1e-6, "µJ"), (1e-3, "mJ"), (1.0, "J"), (1e3, "kJ"), (1e6, "MJ"), (1e9, "GJ"))
# decimal (SI, as the engine and the workbook's capacities) and binary (where a datasheet states KiB/MiB)
DECIMAL_BYTE_UNITS = ((1.0, "B"), (1e3, "kB"), (1e6, "MB"), (1e9, "GB"), (1e12, "TB"), (1e15, "PB"))
BINARY_BYTE_UNITS = ((1.0, "B"), (2.0**10, "KiB"), (2.0**20, "MiB"), (2.0**30, "GiB"), (2.0**40, "TiB"))
SI_PREFIXES = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T"), (1e15, "P"), (1e18, "E"))
COUNT_UNITS = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"))


def significant(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant digits in plain notation, trailing zeros dropped; whole numbers from
    10**digits up keep every digit; thousands separators throughout: 7.384 -> '7.38', 0.01234 -> '0.0123',
    2.50 -> '2.5', 16704.6 -> '16,705'."""
    if not math.isfinite(value):
        return "∞" if value > 0 else "-∞" if value < 0 else "n/a"
    if value == 0:
        return "0"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    if decimals <= 0:
        return f"{value:,.0f}"
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _scaled(value: float, units: tuple[tuple[float, str], ...], digits: int = 3, joint: str = " ") -> str:
    if not math.isfinite(value):
        return significant(value)
    magnitude = abs(value)
    factor, unit = units[0]
    for candidate_factor, candidate_unit in units:   # 999.96 ms shows as 1 s, not 1,000 ms (3 digits)
        if magnitude >= candidate_factor * (1 - 0.5 * 10.0 ** -digits):
            factor, unit = candidate_factor, candidate_unit
    return f"{significant(value / factor, digits)}{joint}{unit}".rstrip()


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


def data_size(size_bytes: float | None, binary: bool = False, digits: int = 3) -> str:
    """Bytes in B .. PB (decimal, as the engine and the workbook's capacities) or, `binary`, B .. TiB (where a
    datasheet states KiB/MiB): 100.7e9 -> '101 GB', 8192 binary -> '8 KiB', 1536 -> '1.54 kB'."""
    if size_bytes is None or (isinstance(size_bytes, float) and math.isnan(size_bytes)):
        return "—"
    return _scaled(size_bytes, BINARY_BYTE_UNITS if binary else DECIMAL_BYTE_UNITS, digits)


def with_prefix(value: float | None, unit: str, digits: int = 4) -> str:
    """A quantity with a decimal prefix (k .. E) before `unit`: 7.29e12, 'MAC' -> '7.29 TMAC'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return _scaled(value, tuple((factor, prefix + unit) for factor, prefix in SI_PREFIXES), digits)


def flop_count(flops: float | None, digits: int = 4) -> str:
    """FLOPs in FLOP .. EFLOP: 14576746233856 -> '14.58 TFLOP'."""
    return with_prefix(flops, "FLOP", digits)


def count(value: float | None, digits: int = 3) -> str:
    """A count or rate with k/M/G: 970 -> '970', 15_912 -> '15.9k', 2_500_000 -> '2.5M', 0.4 -> '0.4'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return _scaled(value, COUNT_UNITS, digits, joint="")
