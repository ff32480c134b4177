"""Tensor, pipeline and data parallelism: per-device kernel tables and metrics against hand arithmetic.

Llama-3.1-8B and -70B dimensions are typed from their config.json files, not read from the code.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.workload.parallel import ParallelismError

# Llama-3.1-8B
H8, INTER8, LAYERS8, QH8, KVH8, D, VOCAB = 4096, 14336, 32, 32, 8, 128, 128256
# Llama-3.1-70B
H70, INTER70, LAYERS70, QH70, KVH70 = 8192, 28672, 80, 64, 8
NVLINK, NVLINK_HOP = 18 * 25e9, 0.953e-6     # 0.953 us: the fitted hop latency (docs/parallelism.md)


def rows(kernels):
    return kernels.set_index("name")


def gemm_weight_bytes(table) -> float:
    gemms = table[table["op"] == "gemm"]
    return float((gemms["weight_bytes"] * gemms["count"]).sum())


# ---- tensor parallelism ------------------------------------------------------------------------

def test_tp2_halves_every_sharded_weight_exactly(llama8b):
    """KV heads (8) divide by 2, so every projection, the LM head and the embedding lookup halve."""
    one = engine.decompose(llama8b, engine.Scenario(phase="decode", batch=4))
    two = engine.decompose(llama8b, engine.Scenario(phase="decode", batch=4, tp=2))
    assert gemm_weight_bytes(two) * 2 == gemm_weight_bytes(one)
    hand = 2 * (LAYERS8 * (H8 * (QH8 + 2 * KVH8) * D + QH8 * D * H8 + 3 * H8 * INTER8) + H8 * VOCAB) / 2
    assert gemm_weight_bytes(two) == hand
    assert rows(two).loc["Embedding", "weight_bytes"] * 2 == rows(one).loc["Embedding", "weight_bytes"]
    # per-device shapes: heads and MLP columns split, O and FFN_down split along k
    r = rows(two)
    assert r.loc["Q/K/V*W", "n"] == (QH8 // 2 + 2 * KVH8 // 2) * D
    assert (r.loc["O*W", "k"], r.loc["O*W", "n"]) == (QH8 // 2 * D, H8)
    assert (r.loc["FFN_up", "n"], r.loc["FFN_down", "k"]) == (INTER8 // 2, INTER8 // 2)
    assert r.loc["LM_head", "n"] == VOCAB // 2
    assert r.loc["KVCache_Read", "n"] == 2 * KVH8 // 2


def test_tp2_memory_halves_all_but_the_replicated_norms(devices, llama8b):
    s = engine.Scenario(phase="decode", batch=1, context_length=1000)
    one = engine.estimate(devices["H100-SXM"], llama8b, s).memory
    two = engine.estimate(devices["H100-SXM"], llama8b, s.model_copy(update={"tp": 2})).memory
    norms = (2 * LAYERS8 + 1) * H8                                   # two per layer + the final norm, replicated
    params = LAYERS8 * (H8 * (QH8 + 2 * KVH8) * D + QH8 * D * H8 + 3 * H8 * INTER8 + 2 * H8) + 2 * VOCAB * H8 + H8
    assert one.weights_bytes == params * 2
    assert two.weights_bytes == ((params - norms) / 2 + norms) * 2
    assert two.kv_cache_bytes * 2 == one.kv_cache_bytes
    assert two.total_all_devices_bytes == pytest.approx(2 * two.total_bytes)


def test_kv_heads_are_replicated_when_fewer_than_tp(llama8b):
    table = rows(engine.decompose(llama8b, engine.Scenario(phase="decode", batch=1, tp=16)))
    assert table.loc["Q/K/V*W", "n"] == (QH8 // 16 + 2 * 1) * D      # 2 query heads and 1 K/V head per device
    assert table.loc["Q*gK", "m"] == 2                              # GQA group of the device: 2 query heads


@pytest.mark.parametrize("layout, field", [(dict(tp=3), "num_attention_heads"), (dict(pp=200), "num_layers"),
                                           (dict(ep=2), "mixture-of-experts")])
def test_a_layout_the_model_cannot_take_names_the_field(llama8b, layout, field):
    with pytest.raises(ParallelismError, match=field):
        engine.decompose(llama8b, engine.Scenario(phase="decode", **layout))


def test_two_all_reduces_per_layer_with_the_activation_bytes(llama70b):
    tokens, tp = 6 * 512, 4
    table = engine.decompose(llama70b, engine.Scenario(phase="prefill", batch=6, input_length=512, tp=tp))
    collectives = table[table["op"] == "collective"]
    per_layer = collectives[collectives["count"] == LAYERS70]
    assert list(per_layer["name"]) == ["AllReduce_attn", "AllReduce_ffn"]
    message = tokens * H70 * 2                                       # bf16 activations
    assert (per_layer["link_bytes"] == 2 * (tp - 1) / tp * message).all()
    assert (per_layer["group_size"] == tp).all()
    names = list(table["name"])                                      # right after their producers
    assert names[names.index("O*W") + 1] == "AllReduce_attn"
    assert names[names.index("FFN_down") + 1] == "AllReduce_ffn"
    gather = rows(table).loc["AllGather_logits"]
    assert gather["link_bytes"] == (tp - 1) / tp * 6 * VOCAB * 2     # the last position's logits of 6 prompts


# ---- pipeline parallelism ----------------------------------------------------------------------

def _per_row_times(devices, model, scenario):
    kernels = engine.estimate(devices["H100-SXM"], model, scenario).kernels
    per_pass = kernels["name"].isin(["Embedding", "Norm_final", "LM_head"])
    layer = kernels[~per_pass & (kernels["op"] != "collective")]
    return float(layer["time_s"].sum()), float(kernels[per_pass]["time_s"].sum())


def test_prefill_pipeline_bubble_by_hand(devices, llama8b):
    """pp = 4 stages, batch 8 in m = 4 micro-batches of 2 prompts (the default: largest divisor <= pp).
    One micro-batch takes t = 8 layers x t_layer + 3/4 x t_send on a stage (3 of 4 stages send); the
    last one leaves after (m + pp - 1) t; the embedding / LM head run once per micro-batch."""
    scenario = engine.Scenario(phase="prefill", batch=8, input_length=512, pp=4)
    assert scenario.prefill_micro_batches == 4
    layer, per_pass = _per_row_times(devices, llama8b, engine.Scenario(phase="prefill", batch=2, input_length=512))
    send = 2 * 512 * H8 * 2 / NVLINK + NVLINK_HOP                     # hidden states of 2 prompts, one hop
    stage = LAYERS8 / 4 * layer + 3 / 4 * send
    expected = (4 + 4 - 1) * stage + 4 * per_pass
    result = engine.estimate(devices["H100-SXM"], llama8b, scenario)
    assert result.ttft_s == pytest.approx(expected, rel=1e-9)
    bubble = rows(result.kernels).loc["Pipeline_bubble"]
    assert bubble["time_s"] == pytest.approx((4 - 1) * stage, rel=1e-9)          # (pp - 1) / m of 4 stages' work
    assert bubble["time_s"] / (bubble["time_s"] + 4 * stage) == pytest.approx(3 / 7)   # (pp-1)/(m+pp-1)
    assert bubble["bound"] == "pipeline_bubble"


def test_decode_step_passes_every_stage_in_turn(devices, llama70b):
    """Decode: TPOT = all 80 layers in sequence + one send per stage boundary (here 1)."""
    base = engine.Scenario(phase="decode", batch=8, tp=4)
    one = engine.estimate(devices["H100-SXM"], llama70b, base)
    two = engine.estimate(devices["H100-SXM"], llama70b, base.model_copy(update={"pp": 2}))
    send = 8 * H70 * 2 / NVLINK + NVLINK_HOP
    assert two.tpot_s == pytest.approx(one.tpot_s + send, rel=1e-9)
    assert rows(two.kernels).loc["FFN_up", "count"] == LAYERS70 / 2              # one device holds half the layers
    # the last stage (40 layers, LM-head shard, final norm) is the most loaded device
    sharded = H70 * (QH70 + 2 * KVH70) * D + QH70 * D * H70 + 3 * H70 * INTER70
    last_stage = 40 * (sharded / 4 + 2 * H70) + VOCAB * H70 / 4 + H70
    assert two.memory.weights_bytes == last_stage * 2


# ---- data parallelism and device counts --------------------------------------------------------

def test_data_parallel_multiplies_throughput_not_latency(devices, llama8b):
    base = engine.Scenario(phase="request", batch=4, input_length=256, output_length=32)
    one = engine.estimate(devices["H100-SXM"], llama8b, base)
    four = engine.estimate(devices["H100-SXM"], llama8b, base.model_copy(update={"dp": 4}))
    assert (four.ttft_s, four.tpot_s, four.e2e_s) == (one.ttft_s, one.tpot_s, one.e2e_s)
    assert four.tokens_per_s == pytest.approx(4 * one.tokens_per_s)
    assert four.tokens_per_s_per_device == pytest.approx(one.tokens_per_s_per_device)
    assert four.devices == 4 and four.memory.total_bytes == one.memory.total_bytes
    assert four.memory.total_all_devices_bytes == pytest.approx(4 * one.memory.total_bytes)


def test_devices_are_inferred_only_when_unambiguous():
    assert engine.Scenario(devices=8, tp=2, pp=2).dp == 2
    assert (engine.Scenario(devices=8, tp=8).pp, engine.Scenario(devices=8, tp=8).dp) == (1, 1)
    assert engine.Scenario(tp=4, dp=2).device_count == 8
    with pytest.raises(ValueError, match="ambiguous"):
        engine.Scenario(devices=8)
    with pytest.raises(ValueError, match="tp x pp x dp"):
        engine.Scenario(devices=8, tp=2, pp=2, dp=1)
    with pytest.raises(ValueError, match="micro_batches"):
        engine.Scenario(batch=6, pp=4, micro_batches=4)


def test_estimate_keyword_updates_recompute_devices(devices, llama8b):
    scenario = engine.Scenario(phase="decode", tp=2)
    assert engine.estimate(devices["H100-SXM"], llama8b, scenario, tp=4).devices == 4


def test_seed_method_stays_single_device(devices, llama8b):
    with pytest.raises(engine.ScenarioError, match="seed"):
        engine.estimate(devices["NVL-AX"], llama8b, phase="decode", tp=2, method="seed")
    with_replicas = engine.estimate(devices["NVL-AX"], llama8b, phase="decode", batch=2, dp=3, method="seed")
    alone = engine.estimate(devices["NVL-AX"], llama8b, phase="decode", batch=2, method="seed")
    assert with_replicas.tpot_s == alone.tpot_s and with_replicas.tokens_per_s == pytest.approx(3 * alone.tokens_per_s)


def test_tokens_per_device_and_json_keys(devices, llama70b):
    result = engine.estimate(devices["H100-SXM"], llama70b, phase="request", batch=4, input_length=128,
                             output_length=16, tp=4, dp=2)
    data = result.to_dict()
    assert data["devices"] == 8
    assert data["tokens_per_s_per_device"] == pytest.approx(data["tokens_per_s"] / 8)
    assert data["parallelism"]["tp"] == 4 and data["parallelism"]["dp"] == 2
    assert data["memory_total_bytes"] == pytest.approx(8 * data["memory"]["total_bytes"])
    names = {k["name"] for k in data["kernels"]}
    assert {"AllReduce_attn", "AllReduce_ffn", "AllGather_logits"} <= names
    assert {"link_bytes", "group_size", "communication_time_s", "hidden_time_s"} <= set(data["kernels"][0])
    assert np.isclose(data["phases"]["decode"]["communication_time_s"],
                      data["phases"]["decode"]["communication_bound_time_s"])


def test_layout_sweep_rows_match_single_estimates(devices, llama70b):
    from engine.explore.layouts import layout_sweep
    scenario = engine.Scenario(phase="request", batch=4, input_length=256, output_length=16)
    frame = layout_sweep(devices["H100-SXM"], llama70b, scenario, "tp", (1, 3, 4))
    assert list(frame["tp"]) == [1, 3, 4]
    assert "num_attention_heads" in frame.loc[1, "error"] and np.isnan(frame.loc[1, "tpot_s"])
    direct = engine.estimate(devices["H100-SXM"], llama70b, scenario, tp=4)
    row = frame.loc[2]
    assert (row["tpot_s"], row["tokens_per_s_per_device"], row["fits"]) == (
        direct.tpot_s, direct.tokens_per_s_per_device, direct.memory.fits)
    assert 0 < row["communication_share"] < 1 and frame.loc[0, "communication_share"] == 0


@pytest.mark.parametrize("method", ["realistic", "hierarchical"])
def test_collectives_and_bubble_keep_every_methods_bookkeeping(devices, llama70b, method):
    scenario = engine.Scenario(phase="request", batch=4, input_length=256, output_length=8, tp=4, pp=2)
    result = engine.estimate(devices["H100-SXM"], llama70b, scenario, method=method)
    k, phases = result.kernels, result.phases
    assert k["time_s"].notna().all() and (k["time_s"] >= 0).all()
    if method == "realistic":
        gaps = k[["gap_tile_quantization_s", "gap_wave_quantization_s", "gap_efficiency_s", "gap_overhead_s"]].sum(axis=1)
        np.testing.assert_allclose(k["ideal_time_s"] + gaps, k["time_s"], rtol=1e-9, atol=1e-15)
    bound_columns = [c for c in phases.columns if c.endswith("_bound_time_s")]
    assert {"communication_bound_time_s", "pipeline_bubble_bound_time_s"} <= set(bound_columns)
    np.testing.assert_allclose(phases[bound_columns].sum(axis=1), phases["time_s"], rtol=1e-12)
    per_phase = (k["count"] * k["time_s"]).groupby(k["phase"]).sum().reindex(phases.index)
    np.testing.assert_allclose(per_phase, phases["time_s"], rtol=1e-12)
