"""The balanced routing of aiconfigurator's MoE tables (engine/calibration/silicon/moe_routing.py), against counts
worked by hand from the collector's rule: stride = ceil(E / k); token i picks (i + j x stride) mod E when
tokens >= stride, else floor(i x stride / tokens + j x stride) mod E; the measured rank holds experts 0 .. E/ep-1."""

from __future__ import annotations

import numpy as np

from engine.calibration.silicon.moe_routing import balanced_loads, balanced_routing
from engine.decomposition.moe import expected_active_experts


def test_one_token_on_a_wide_expert_parallel_group_still_reaches_expert_zero():
    # token 0 picks experts 0, 16, ..., 112: rank 0 of 128 holds expert 0 only, and gets that one pair
    assert balanced_loads(1, 128, 8, 128) == (1, 1, 1)
    assert balanced_loads(1, 128, 8, 1) == (8, 8, 1)
    assert balanced_loads(1, 128, 8, 8) == (1, 1, 1)          # experts 0..15: only expert 0 of 0, 16, 32, ...


def test_few_tokens_spread_over_distinct_experts():
    # 16 tokens < stride 32: token i picks 2i + 32j, 128 distinct experts of 256, one pair each
    assert balanced_loads(16, 256, 8, 1) == (128, 128, 1)
    # 32 tokens = stride: i + 32j covers all 256 experts once; random routing would reach ~161
    assert balanced_loads(32, 256, 8, 1) == (256, 256, 1)
    assert float(expected_active_experts(256, 256, 8, 32)) < 170


def test_many_tokens_are_balanced_to_within_one_pair():
    # 1000 tokens, top-8 of 128 (stride 16): expert e gets #{i < 1000: i = e mod 16} = 63 (e mod 16 < 8) or 62
    assert balanced_loads(1000, 128, 8, 1) == (8000, 128, 63)
    assert balanced_loads(1000, 128, 8, 2) == (4000, 64, 63)  # experts 0..63: 4 x (8 x 63 + 8 x 62)


def test_vectorised_form_matches_per_row():
    pairs, active, largest = balanced_routing(np.array([1, 32, 1000]), np.array([128, 256, 128]), np.array([8, 8, 8]),
                                              np.array([128, 1, 2]))
    assert pairs.tolist() == [1, 256, 4000] and active.tolist() == [1, 256, 64] and largest.tolist() == [1, 1, 63]
