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
