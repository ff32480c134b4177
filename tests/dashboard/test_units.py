"""dashboard.units: each value in the unit that suits it, three significant digits, never exponent notation."""

from __future__ import annotations

import math

import pytest

from dashboard.units import count, data_size, duration, energy, flop_count, gigabytes, memory_card, significant
from dashboard.views.overview import as_sentences, sentence


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
    """The issue's '...fits: 218) No layout up to...': each part a sentence, capitalised, full stop, one space."""
    joined = as_sentences("one H100-SXM holds 80 GB: does not fit (largest batch that fits: 218)",
                          "No layout up to TP 8 x PP 64 fits this workload.", "")
    assert joined == ("One H100-SXM holds 80 GB: does not fit (largest batch that fits: 218). "
                      "No layout up to TP 8 x PP 64 fits this workload.")
    assert as_sentences("meta-llama/Llama-3.1-8B is large", "tp=2 splits it") == (
        "meta-llama/Llama-3.1-8B is large. tp=2 splits it.")          # names keep their case
    assert sentence("energy unavailable: T4 has no per-operation energies") == (
        "Energy unavailable: T4 has no per-operation energies.")


@pytest.mark.parametrize("size, binary, text", [
    (100.7e9, False, "101 GB"),        # the cut-off memory card
    (16.06e9, False, "16.1 GB"),
    (1536, False, "1.54 kB"),          # 1,536 / 1,000
    (999.6e9, False, "1 TB"),          # rounds into the next unit
    (2.4e12, False, "2.4 TB"),
    (512, False, "512 B"),
    (8192, True, "8 KiB"),             # Falcon-7B's KV cache per token: 32 layers x 2 x 64 x 2 B
    (1536, True, "1.5 KiB"),           # 1,536 / 1,024
    (80 * 2**30, True, "80 GiB"),
    (3 * 2**40, True, "3 TiB"),
    (None, False, "—"),
])
def test_data_size_picks_decimal_or_binary_units(size, binary, text):
    assert data_size(size, binary=binary) == text


@pytest.mark.parametrize("flops, text", [
    (14576746233856, "14.58 TFLOP"),   # the raw table number: 14.5767e12 to four digits
    (2 * 4096 * 4096 * 4096, "137.4 GFLOP"),   # one 4096^3 GEMM: 137,438,953,472 FLOP
    (512, "512 FLOP"),
    (0, "0 FLOP"),
])
def test_flop_count_in_tera_and_giga(flops, text):
    assert flop_count(flops) == text


@pytest.mark.parametrize("value, text", [
    (970.4, "970"), (15_912.0, "15.9k"), (2_500_000, "2.5M"), (999_700, "1M"), (0.4, "0.4"), (None, "—"),
])
def test_count_uses_k_and_m(value, text):
    assert count(value) == text


def test_memory_card_of_a_small_model_is_in_megabytes():
    """A 2-layer test model uses 12.3 MB: '12.3 MB', not '0.0123 GB'."""
    assert memory_card(12.3e6, 80e9, True) == ("12.3 MB", "fits in 80 GB")


@pytest.mark.parametrize("value, unit, text", [
    (3350, "GB/s", "3,350 GB/s"), (16384, "", "16,384"), (39800.0, "J", "39,800 J"), (0.0125, "s", "0.0125 s"),
    ("H100-SXM", "", "H100-SXM"),
])
def test_explore_field_values_never_use_exponents(value, unit, text):
    from dashboard.charts.explore_fields import format_value
    assert format_value(value, unit) == text


@pytest.mark.parametrize("value, digits, text", [
    (6716.0, 4, "6,716"), (0.0022599, 4, "0.00226"), (12_345_678.0, 6, "12,345,678"), (6716.5, 6, "6,716.5"),
    (None, 4, "—"),
])
def test_inverse_design_cards_never_use_exponents(value, digits, text):
    """The inverse-design cards once wrote 1,234,567 as '1.23457e+06' (Python's ',.6g')."""
    from dashboard.views.explore_design import number
    assert number(value, digits) == text
