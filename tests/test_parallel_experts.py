"""Mixture-of-experts layers and expert parallelism: per-device expert work, dispatch and weights by hand.

Mixtral-8x7B (config.json, typed here): hidden 4096, 32 layers, 32 query / 8 K/V heads of 128,
8 experts of inner width 14336 (SwiGLU), 2 experts per token, vocabulary 32000.
"""

from __future__ import annotations

import pytest

import engine
from engine.workload.parallel import ParallelismError

H, LAYERS, QH, KVH, D, INTER, EXPERTS, TOP_K, VOCAB = 4096, 32, 32, 8, 128, 14336, 8, 2, 32000


@pytest.fixture(scope="module")
def mixtral():
    return engine.load_model("mistralai/Mixtral-8x7B-v0.1")


def by_name(table):
    return table.set_index("name")


def test_one_token_reads_only_its_two_experts(mixtral):
    rows = by_name(engine.decompose(mixtral, engine.Scenario(phase="decode", batch=1)))
    # expected experts touched: 8 x (1 - (1 - 2/8)^1) = 2
    assert rows.loc["Expert_up", "weight_bytes"] == pytest.approx(2 * H * INTER * 2)
    assert rows.loc["Expert_down", "macs"] == TOP_K * INTER * H
    assert rows.loc["MoE_router", "n"] == EXPERTS and rows.loc["MoE_router", "weight_bytes"] == H * EXPERTS * 2
    assert "FFN_up" not in rows.index                      # every Mixtral layer is MoE


def test_a_large_batch_touches_every_expert(mixtral):
    rows = by_name(engine.decompose(mixtral, engine.Scenario(phase="decode", batch=64)))
    touched = EXPERTS * (1 - (1 - TOP_K / EXPERTS) ** 64)
    assert touched == pytest.approx(8, abs=1e-6)
    assert rows.loc["Expert_gate", "weight_bytes"] == pytest.approx(touched * H * INTER * 2)
    assert rows.loc["Expert_gate", "m"] * rows.loc["Expert_gate", "batch"] == pytest.approx(64 * TOP_K)


def test_prefill_macs_per_token_are_the_active_parameters(mixtral):
    tokens = 512
    table = engine.decompose(mixtral, engine.Scenario(phase="prefill", input_length=tokens))
    gemms = table[(table["op"] == "gemm") & (table["name"] != "LM_head")]
    per_layer = H * (QH + 2 * KVH) * D + QH * D * H + H * EXPERTS + TOP_K * 3 * H * INTER
    assert (gemms["macs"] * gemms["count"]).sum() == pytest.approx(tokens * LAYERS * per_layer, rel=1e-12)


def test_expert_parallel_dispatch_and_combine(mixtral):
    """tp = 2, ep = 2: each rank routes half of the 16 tokens (8 x 2 = 16 assignments), holds 4 whole
    experts and exchanges (ep-1)/ep of the dispatched hidden states both ways."""
    rows = by_name(engine.decompose(mixtral, engine.Scenario(phase="decode", batch=16, tp=2, ep=2)))
    assignments = 16 / 2 * TOP_K
    for name in ("AllToAll_dispatch", "AllToAll_combine"):
        assert rows.loc[name, "link_bytes"] == (2 - 1) / 2 * assignments * H * 2
        assert rows.loc[name, "group_size"] == 2 and rows.loc[name, "count"] == LAYERS
    touched = 4 * (1 - (1 - TOP_K / EXPERTS) ** (8 * 2))   # 16 tokens of the group can reach this rank
    assert rows.loc["Expert_up", "weight_bytes"] == pytest.approx(touched * H * INTER * 2)
    assert rows.loc["Expert_up", "n"] == INTER                # whole experts, not split over tp
    assert rows.loc["AllReduce_moe", "link_bytes"] == 2 * (2 - 1) / 2 * 16 * H * 2


def test_expert_weights_in_memory(devices, mixtral):
    expert = 3 * H * INTER
    tp = engine.estimate(devices["H100-SXM"], mixtral, phase="decode", tp=2).memory
    ep = engine.estimate(devices["H100-SXM"], mixtral, phase="decode", tp=2, ep=2).memory
    # without ep every device holds every expert split over tp; with ep = 2 half the experts whole: the same bytes
    assert tp.weights_bytes == pytest.approx(ep.weights_bytes, rel=1e-12)
    one = engine.estimate(devices["H100-SXM"], mixtral, phase="decode", dp=8, ep=8).memory
    alone = engine.estimate(devices["H100-SXM"], mixtral, phase="decode").memory
    assert alone.weights_bytes - one.weights_bytes == pytest.approx(LAYERS * (EXPERTS - 1) * expert * 2, rel=1e-12)


def test_dense_and_moe_layers_are_counted_apart(devices):
    deepseek = engine.load_model("deepseek-ai/DeepSeek-V3")       # 3 dense layers, then 58 MoE layers
    rows = by_name(engine.decompose(deepseek, engine.Scenario(phase="decode", batch=4, tp=8)))
    assert rows.loc["FFN_up", "count"] == 3 and rows.loc["Expert_up", "count"] == 58
    assert rows.loc["Shared_up", "n"] == 2048 // 8                 # one shared expert, split over tp


@pytest.mark.parametrize("layout, field", [(dict(tp=1, dp=3, ep=3), "num_experts"),
                                           (dict(tp=2, ep=4), "tp x dp")])
def test_impossible_expert_layouts_name_the_reason(mixtral, layout, field):
    with pytest.raises(ParallelismError, match=field):
        engine.decompose(mixtral, engine.Scenario(phase="decode", **layout))
