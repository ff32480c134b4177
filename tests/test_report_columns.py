"""engine/results/columns.py's numpy helpers against pandas, the library whose arithmetic they stand in for."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.results.columns import KernelColumns, finite, first_seen_codes, group_sums


@pytest.mark.parametrize("contiguous", (True, False))
def test_group_sums_add_like_pandas_groupby_sum(contiguous):
    rng = np.random.default_rng(7)
    for trial in range(300):
        rows = int(rng.integers(1, 120))
        values = rng.random(rows) * 10.0 ** rng.integers(-12, 3, size=rows)
        if trial % 4 == 0:
            values[rng.integers(0, rows)] = np.nan
        phase = rng.choice(["prefill", "decode", "chunked"], size=rows)
        if contiguous:
            phase = np.sort(phase)
        expected = pd.DataFrame({"phase": phase, "t": values}).groupby("phase", sort=False)["t"].transform("sum")
        codes, labels = first_seen_codes(phase)
        assert np.array_equal(group_sums(codes, values, len(labels))[codes], expected.to_numpy())


def test_first_seen_codes_match_pandas_factorize():
    values = np.array(["decode", "prefill", "decode", "chunked", "prefill"], dtype=object)
    codes, labels = first_seen_codes(values)
    expected_codes, expected_labels = pd.factorize(values)
    assert codes.tolist() == expected_codes.tolist() and labels == list(expected_labels)


def test_finite_is_nan_to_num():
    values = np.array([1.5, np.nan, np.inf, -np.inf, 0.0])
    assert np.array_equal(finite(values), np.nan_to_num(values))
    clean = np.array([1.0, 2.0])
    assert finite(clean) is clean


def test_kernel_columns_read_kept_rows_and_build_the_frame_in_order():
    columns = KernelColumns({"name": np.array(["a", "b", "c"], dtype=object), "count": np.array([1.0, 0.0, 2.0])},
                            keep=np.array([True, False, True]))
    columns.add("total_time_s", np.array([0.5, 0.25]))
    assert columns["name"].tolist() == ["a", "c"] and len(columns) == 2 and "total_time_s" in columns
    frame = columns.frame()
    assert list(frame.columns) == ["name", "count", "total_time_s"]
    assert frame["count"].tolist() == [1.0, 2.0] and frame.index.tolist() == [0, 1]


def test_step_means_are_computed_when_read_and_read_only_once_frozen():
    from engine.results.columns import combine_steps
    table = {"phase": np.array(["decode"] * 3, dtype=object), "name": np.array(["Q*gK", "Q*gK", "O*W"], dtype=object),
             "group": np.array([0, 0, 1]), "count": np.array([2.0, 1.0, 3.0]), "m": np.array([1.0, 4.0, 5.0]),
             "time_s": np.array([1.0, 3.0, 2.0]), "flops": np.array([8.0, 2.0, 6.0]),
             "bytes": np.array([4.0, 0.0, 3.0]), "bound": np.array(["memory", "compute", "memory"], dtype=object)}
    columns = combine_steps(table)
    assert not any(value is columns.source._values["m"] for value in columns.source.computed())
    assert columns["m"].tolist() == [(2 * 1.0 + 1 * 4.0) / 3, 5.0]             # count-weighted means per kernel
    assert columns["count"].tolist() == [3.0, 3.0] and columns["bound"].tolist() == ["compute", "memory"]
    columns.freeze()
    intensity = columns["intensity"]                                             # computed after freeze
    assert intensity.tolist() == [(2 * 8.0 + 2.0) / 3 / ((2 * 4.0) / 3), 2.0] and not intensity.flags.writeable
    assert list(columns.frame().columns) == list(table) + ["intensity"]
