"""RowGroups.per_row by pieces and IndexRuns.sums / least (fast path, issue 15) against numpy's own answers:
fancy indexing, np.bincount (bit for bit) and np.minimum.at."""

import numpy as np
import pytest

from engine.common.index_runs import IndexRuns
from engine.estimators.row_groups import RowGroups


def _objects(count):
    values = np.empty(count, dtype=object)
    for index in range(count):
        values[index] = (index, "tuple") if index % 2 else object()
    return values


@pytest.mark.parametrize("seed", range(40))
def test_per_row_matches_fancy_indexing(seed):
    rng = np.random.default_rng(seed)
    groups = int(rng.integers(1, 40))
    lengths = rng.choice([1, 1, 1, 3, 50], size=groups)
    ids = np.repeat(np.arange(groups), lengths)
    row_groups = RowGroups({"op": np.array([f"op{i}" for i in ids]), "group": ids})
    for values in (rng.random(groups), rng.random(groups) > 0.5, np.array([f"s{i}" for i in range(groups)]),
                   _objects(groups)):
        got, expected = row_groups.per_row(values), values[ids]
        assert got.dtype == expected.dtype and got.shape == expected.shape and got.flags.writeable
        assert all(a is b or a == b for a, b in zip(got.tolist(), expected.tolist()))
    assert row_groups.strings("op").tolist() == [f"op{i}" for i in ids]


@pytest.mark.parametrize("seed", range(20))
def test_index_runs_sums_and_least(seed):
    rng = np.random.default_rng(seed)
    width = int(rng.integers(1, 300))
    index = np.concatenate([np.arange(int(rng.integers(1, width + 1))) for _ in range(int(rng.integers(1, 8)))])
    weights = rng.normal(size=index.size) * 10.0 ** rng.integers(-20, 20, size=index.size)
    runs = IndexRuns(index)
    assert runs.runs is not None
    length = int(index.max()) + 1 + int(rng.integers(0, 3))
    assert runs.sums(weights, length).tobytes() == np.bincount(index, weights=weights, minlength=length).tobytes()
    keys = rng.integers(0, 10**6, size=index.size)
    least = np.full(int(index.max()) + 1, np.iinfo(np.int64).max)
    np.minimum.at(least, index, keys)
    assert runs.least(keys).tolist() == least.tolist()
