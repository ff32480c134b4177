"""MLA's two "a" projections as one GEMM (engine/decomposition/mla.py FUSED_A_PROJECTION), checked by hand on
DeepSeek-V3's shapes from its config.json: hidden 7168, q_lora_rank 1536, kv_lora_rank 512, qk_rope_head_dim 64,
61 layers."""

from __future__ import annotations

import pytest

import engine
from engine.decomposition import mla

HIDDEN, Q_RANK, RANK, ROPE, LAYERS = 7168, 1536, 512, 64, 61


@pytest.fixture(scope="module")
def deepseek():
    return engine.load_model("deepseek-ai/DeepSeek-V3")


def decode_rows(model, fused: bool, monkeypatch, **fields):
    monkeypatch.setattr(mla, "FUSED_A_PROJECTION", fused)
    table = engine.decompose(model, engine.Scenario(phase="decode", batch=4, context_length=1024, **fields))
    return table.set_index("name")


def test_fused_a_projection_is_one_gemm_of_both_widths(deepseek, monkeypatch):
    rows = decode_rows(deepseek, True, monkeypatch, tp=8)
    assert "Q_a*W" not in rows.index and "KV_a*W" not in rows.index
    fused = rows.loc["QKV_a*W"]
    assert (fused["m"], fused["k"], fused["n"]) == (4, HIDDEN, Q_RANK + RANK + ROPE)   # n = 2112
    assert fused["count"] == LAYERS
    assert fused["weight_bytes"] == HIDDEN * 2112 * 2                 # bf16, replicated over tp (not split by 8)
    assert fused["macs"] == 4 * HIDDEN * 2112


def test_fused_a_projection_keeps_weights_and_macs_and_drops_one_kernel(deepseek, monkeypatch):
    split = decode_rows(deepseek, False, monkeypatch)
    fused = decode_rows(deepseek, True, monkeypatch)
    for column in ("weight_bytes", "macs"):
        assert fused.loc["QKV_a*W", column] == split.loc["Q_a*W", column] + split.loc["KV_a*W", column]
        assert float((fused[column] * fused["count"]).sum()) == float((split[column] * split["count"]).sum())
    assert float(fused["count"].sum()) == float(split["count"].sum()) - LAYERS       # one GEMM fewer per layer
