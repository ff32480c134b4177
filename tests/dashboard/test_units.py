"""dashboard.units: each value in the unit that suits it, three significant digits, never exponent notation."""

from __future__ import annotations

import math

import pytest

from dashboard.units import duration, energy, gigabytes, memory_card, significant
from dashboard.views.overview import as_sentences


@pytest.mark.parametrize("seconds, text", [
    (16704.59115, "4.64 h"),           # the "16704591.15 ms": 16,704.6 s / 3,600
    (298.4, "4.97 min"),               # 298.4 / 60
    (59.94, "59.9 s"),
    (9.769239, "9.77 s"),
    (0.049965, "50 ms"),
    (0.00738, "7.38 ms"),
    (0.0009999, "1 ms"),               # rounds up into the next unit, not "1,000 µs"
    (43.66e-6, "43.7 µs"),
    (0.5e-6, "0.5 µs"),
    (0.0, "0 µs"),
    (None, "—"),
    (math.nan, "—"),
])
def test_duration_picks_the_unit_per_value(seconds, text):
    assert duration(seconds) == text


@pytest.mark.parametrize("joules, text", [
    (3980.0, "3.98 kJ"),               # the "3.98e+03 J"
    (6088.0, "6.09 kJ"),
    (1.23e7, "12.3 MJ"),
    (248.3, "248 J"),
    (0.04767, "47.7 mJ"),
    (2.1e-7, "210 nJ"),
    (None, "—"),
])
def test_energy_picks_the_unit_per_value(joules, text):
    assert energy(joules) == text


@pytest.mark.parametrize("value, text", [
    (7.384, "7.38"), (0.01234, "0.0123"), (2.5, "2.5"), (100.7, "101"), (16704.6, "16,705"), (-3.14159, "-3.14"),
    (math.inf, "∞"),
])
def test_significant_digits_in_plain_notation(value, text):
    assert significant(value) == text and "e" not in text


def test_memory_card_is_short_enough_for_a_fifth_of_the_page():
    """The issue's cut-off card: 100.7 GB used of an H200's 141 GB."""
    assert memory_card(100.7e9, 141e9, True) == ("101 GB", "fits in 141 GB")
    assert memory_card(748.84e9, 80e9, False) == ("749 GB", "exceeds 80 GB")
    assert gigabytes(16.06e9) == "16.1 GB"


def test_messages_join_as_sentences():
    joined = as_sentences("one H100-SXM holds 80 GB: does not fit (largest batch that fits: 218)",
                          "No layout up to TP 8 x PP 64 fits this workload.", "")
    assert joined == ("one H100-SXM holds 80 GB: does not fit (largest batch that fits: 218). "
                      "No layout up to TP 8 x PP 64 fits this workload.")
