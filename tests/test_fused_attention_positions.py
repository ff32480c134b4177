"""engine/estimators/fused_attention.py's position of a row within its block (its builder group) agrees with
np.unique's first occurrences, for blocks in the builder's order and shuffled."""

from __future__ import annotations

import numpy as np

from engine.estimators.fused_attention import _position_in_block


def test_position_in_block_counts_rows_from_the_block_start():
    rng = np.random.default_rng(3)
    for trial in range(300):
        block = np.repeat(np.sort(rng.choice(100, rng.integers(1, 8), replace=False)), rng.integers(1, 6))
        if trial % 2:
            block = rng.permutation(block)
        expected = [int(np.sum(block[:row] == block[row])) if trial % 2 == 0 else
                    row - int(np.flatnonzero(block == block[row])[0]) for row in range(block.size)]
        assert _position_in_block(block).tolist() == expected


def test_dense_ranks_and_least_per_id_match_np_unique_and_lexsort():
    from engine.estimators.row_groups import dense_ranks, least_per_id
    rng = np.random.default_rng(5)
    for trial in range(300):
        rows = int(rng.integers(1, 300))
        keys = rng.integers(0, int(rng.choice([5, 50, 5000, 10**7])), rows)
        assert dense_ranks(keys).tolist() == np.unique(keys, return_inverse=True)[1].tolist()
        ids = np.unique(keys, return_inverse=True)[1]
        assert least_per_id(ids).tolist() == np.unique(ids, return_index=True)[1].tolist()
        scores, matrix = rng.random(rows) < 0.5, rng.random(rows) < 0.5
        order = np.lexsort((~scores, ~matrix, ids))          # fused_group_inputs' lead rows, as they were chosen
        expected = order[np.unique(ids[order], return_index=True)[1]]
        priority = 2 * (~matrix).astype(np.int64) + (~scores).astype(np.int64)
        assert (least_per_id(ids, priority * rows + np.arange(rows)) % rows).tolist() == expected.tolist()
