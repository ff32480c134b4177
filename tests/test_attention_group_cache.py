"""The kept fused-attention group ids (engine/estimators/attention_group_cache.py) and IndexRuns
(engine/common/index_runs.py) give what the uncached ranking and numpy's fancy indexing give."""

import numpy as np
import pytest

import engine
from engine.common.index_runs import IndexRuns
from engine.estimators import attention_group_cache
from engine.estimators.fused_attention import attention_groups
from engine.estimators.realistic import launches_per_row
from engine.estimators.row_groups import RowGroups
from engine.decomposition.transformer import decompose_columns


@pytest.mark.parametrize("model_name", ["meta-llama/Llama-3.1-70B", "google/gemma-2-9b"])
def test_kept_groups_equal_the_ranking_over_a_prompt_sweep(model_name):
    model = engine.load_model(model_name)
    attention_group_cache.clear()
    hits = 0
    for input_length in (100, 101, 517):
        for output_length in (3, 40):
            table = decompose_columns(model, engine.Scenario(phase="request", batch=2, input_length=input_length,
                                                             output_length=output_length))
            before = len(attention_group_cache._KEPT)
            kept, launches = attention_group_cache.kept_attention_groups(table, RowGroups(table), launches_per_row)
            hits += len(attention_group_cache._KEPT) == before
            np.testing.assert_array_equal(kept, attention_groups(table, RowGroups(table)))
            assert kept.dtype == np.int64
            np.testing.assert_array_equal(launches, launches_per_row(attention_groups(table, RowGroups(table))))
    assert hits >= 2          # a repeated structure was served from the cache


@pytest.mark.parametrize("index", [np.arange(5, 40), np.r_[0:3, 7:19, 19:25, 2:9, 40:41], np.array([4, 4, 4, 1]),
                                   np.array([3, 1, 0, 2] * 10), np.zeros(0, dtype=np.int64)])
def test_index_runs_match_fancy_indexing(index):
    rng = np.random.default_rng(1)
    values = rng.normal(size=64)
    runs = IndexRuns(index)
    np.testing.assert_array_equal(runs.take(values), values[index])
    expected, got = np.zeros(64), np.zeros(64)
    written = rng.normal(size=index.size)
    if len(set(index.tolist())) == index.size:
        expected[index] = written
        runs.put(got, written)
        np.testing.assert_array_equal(got, expected)
