"""Scenario.moe_dispatch: expert parallelism over the tp devices without an all-to-all (SGLang's default
`--moe-a2a-backend none`), by hand.

Mixtral-8x7B (config.json, typed here): hidden 4096, 32 layers, 8 experts of inner width 14336 (SwiGLU), 2 experts
per token; bf16 (2 bytes per value).
"""

from __future__ import annotations

import pytest

import engine
from engine.serving.backends import backend_profile

H, LAYERS, INTER, EXPERTS, TOP_K = 4096, 32, 14336, 8, 2


@pytest.fixture(scope="module")
def mixtral():
    return engine.load_model("mistralai/Mixtral-8x7B-v0.1")


def rows(model, **fields):
    return engine.decompose(model, engine.Scenario(phase="decode", **fields)).set_index("name")


def test_all_reduce_form_runs_the_local_experts_on_the_replicated_tokens(mixtral):
    """tp = ep = 2, 16 tokens: every rank routes all 16 (router m = 16, not 8), holds 4 whole experts and runs the
    16 x 2 x 4 / 8 = 16 (token, expert) pairs that reach them; no all-to-all; the MoE all-reduce sums the two ranks'
    outputs over the 16 tokens (ring: 2 x (2 - 1) / 2 x 16 x 4096 x 2 bytes)."""
    table = rows(mixtral, batch=16, tp=2, ep=2, moe_dispatch="all_reduce")
    assert "AllToAll_dispatch" not in table.index and "AllToAll_combine" not in table.index
    assert table.loc["MoE_router", "m"] == 16
    assert table.loc["Expert_up", "macs"] == pytest.approx(16 * TOP_K * 4 / EXPERTS * H * INTER)
    touched = 4 * (1 - (1 - TOP_K / EXPERTS) ** 16)          # the 16 tokens can reach this rank's 4 experts
    assert table.loc["Expert_up", "weight_bytes"] == pytest.approx(touched * H * INTER * 2)
    assert table.loc["AllReduce_moe", "link_bytes"] == 2 * (2 - 1) / 2 * 16 * H * 2
    assert table.loc["AllReduce_moe", "count"] == LAYERS


def test_all_reduce_form_does_the_same_expert_work_as_the_dispatch(mixtral):
    """With ep = tp the two forms put as many (token, expert) pairs on a device (16 / 2 x 2 = 16 x 2 x 4 / 8) and
    touch as many experts; only the router's tokens and the all-to-alls differ."""
    dispatched = rows(mixtral, batch=16, tp=2, ep=2)
    replicated = rows(mixtral, batch=16, tp=2, ep=2, moe_dispatch="all_reduce")
    for name in ("Expert_up", "Expert_gate", "Expert_down"):
        for column in ("macs", "weight_bytes", "m", "batch"):
            assert replicated.loc[name, column] == pytest.approx(dispatched.loc[name, column])
    assert dispatched.loc["MoE_router", "m"] == 8 and "AllToAll_dispatch" in dispatched.index


def test_wider_expert_groups_still_dispatch(mixtral):
    """ep = 4 over tp = 2 x dp = 2 (attention data parallelism): the replicas hold different tokens, so the
    all_reduce form does not apply: each rank routes its 16 / 2 tokens and sends 8 x 2 pairs x (4 - 1) / 4."""
    table = rows(mixtral, batch=16, tp=2, dp=2, ep=4, moe_dispatch="all_reduce")
    assert table.loc["MoE_router", "m"] == 8
    assert table.loc["AllToAll_dispatch", "link_bytes"] == (4 - 1) / 4 * 8 * TOP_K * H * 2


def test_ep_one_is_unchanged(mixtral):
    """ep = 1 (experts split over tp): no all-to-all either way, the same table."""
    plain = rows(mixtral, batch=16, tp=2)
    replicated = rows(mixtral, batch=16, tp=2, moe_dispatch="all_reduce")
    assert list(plain.index) == list(replicated.index)
    assert (plain["macs"] == replicated["macs"]).all() and (plain["link_bytes"] == replicated["link_bytes"]).all()


def test_serve_takes_the_backend_profiles_moe_dispatch(devices, mixtral, monkeypatch):
    """serve() takes the backend profile's moe_dispatch unless the fields name it: a profile with 'all_reduce' gives
    the same TPOT as naming it, and a faster decode step than the all-to-alls (every shipped profile: 'all_to_all')."""
    import dataclasses
    from engine.serving import backends
    assert all(profile.moe_dispatch == "all_to_all" for profile in backends.BACKENDS.values())
    fields = dict(concurrency=4, input_length=256, output_length=32, tp=2, ep=2, backend="sglang")
    dispatched = engine.serve(devices["H100-SXM"], mixtral, **fields)
    named = engine.serve(devices["H100-SXM"], mixtral, moe_dispatch="all_reduce", **fields)
    monkeypatch.setitem(backends.BACKENDS, "sglang", dataclasses.replace(backend_profile("sglang"),
                                                                          moe_dispatch="all_reduce"))
    default = engine.serve(devices["H100-SXM"], mixtral, **fields)
    assert default.tpot_s == named.tpot_s
    assert default.tpot_s < dispatched.tpot_s
