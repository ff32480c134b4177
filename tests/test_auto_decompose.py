"""Automatic decomposition (engine/decomposition/auto): traced on meta tensors, checked against the hand decomposition.

The cross-check: for every catalog model the hand decomposition handles, the automatic and hand kernel
tables agree on total FLOPs within 1% and on weight bytes within 0.5%, for prefill and for decode
(docs/auto.md explains the remaining, systematic differences); MLA models decode in the hand model's naive
form there (Scenario.mla_decode="naive"), the form transformers runs. Tests that need the optional `auto`
extra (PyTorch + transformers) skip without it; the no-extra behaviour is tested either way.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from engine.kernels.table import KERNEL_COLUMNS
from engine.workload.scenario import Scenario

import engine.decomposition.auto as auto

HAS_EXTRA = auto.available()[0]
needs_extra = pytest.mark.skipif(not HAS_EXTRA, reason="the optional 'auto' extra (torch, transformers) is missing")

# the dense models hand-modelled when the automatic decomposition was written: all must be cross-checked
REQUIRED = ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-70b-hf", "meta-llama/Llama-3.1-8B",
            "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-405B", "mistralai/Mistral-7B-v0.1",
            "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-72B", "openai-community/gpt2", "EleutherAI/pythia-1b",
            "facebook/opt-1.3b")
# MLA decode: transformers expands the cached latent through kv_b_proj every step (the naive form), so the
# hand decomposition is cross-checked with Scenario(mla_decode="naive"); docs/auto.md
CROSS_CHECK_SETTINGS = {"mla_decode": "naive"}


def _total(table, column: str, phase: str) -> float:
    rows = table["phase"] == phase
    return float((table[column][rows] * table["count"][rows]).sum())


def _gap(traced, hand, column: str, phase: str) -> float:
    """Relative difference of the traced total from the hand decomposition's."""
    return _total(traced, column, phase) / _total(hand, column, phase) - 1


# ------------------------------------------------------------------------------ without the extra

def test_available_says_what_the_extra_adds():
    ok, reason = auto.available()
    assert isinstance(ok, bool) and reason
    if not ok:
        assert "llm-roofline[auto]" in reason


def test_without_the_extra_the_entry_points_name_it(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "torch" else real_find_spec(name, *args))
    ok, reason = auto.available()
    assert not ok
    assert 'pip install "llm-roofline[auto]"' in reason and "torch is not installed" in reason
    with pytest.raises(auto.AutoDecompositionUnavailable, match=r"llm-roofline\[auto\]"):
        auto.decompose_auto("meta-llama/Llama-3.1-8B", Scenario(phase="prefill"))
    with pytest.raises(ImportError):   # AutoDecompositionUnavailable is an ImportError
        auto.load_auto_model({"model_type": "phi"})


# ------------------------------------------------------------------------------ cross-check

# every catalog model is hand-modelled, so every one is cross-checked; a model added to the catalog must be
# named here (or in NOT_CROSS_CHECKED with the reason), so none drops out of the cross-check unnoticed
CROSS_CHECKED = (*REQUIRED, "deepseek-ai/DeepSeek-V3", "google/gemma-2-9b", "google/gemma-3-27b-pt",
                 "microsoft/Phi-3-mini-4k-instruct", "mistralai/Mixtral-8x7B-v0.1", "openai/gpt-oss-20b",
                 "openai/gpt-oss-120b", "Qwen/Qwen3-8B", "Qwen/Qwen3-30B-A3B")
NOT_CROSS_CHECKED: dict[str, str] = {}          # catalog id -> why the hand decomposition cannot be compared


def test_the_cross_checked_set_is_the_catalog():
    from engine.models import catalog_ids

    assert len(set(CROSS_CHECKED)) == len(CROSS_CHECKED)
    assert set(CROSS_CHECKED) | set(NOT_CROSS_CHECKED) == set(catalog_ids())
    assert "deepseek-ai/DeepSeek-V3" in CROSS_CHECKED          # MLA too, decoding in the naive form


@pytest.mark.parametrize("model_id", CROSS_CHECKED)
def test_every_cross_checked_model_has_a_hand_decomposition(model_id):
    """Without the extra too: the hand side of the cross-check exists (no model skipped on an exception)."""
    from engine.decomposition.transformer import decompose
    from engine.models import load_model

    table = decompose(load_model(model_id), Scenario(phase="prefill", batch=1, input_length=8))
    assert _total(table, "flops", "prefill") > 0


def _scenario_below_windows(config: dict, phase: str) -> Scenario:
    """Batch 2, 512-token prompts (decode: 512 cached), kept below any sliding window so that the hand
    decomposition (full attention everywhere) and the traced one (windowed layers) count alike. MLA
    decodes in the naive form, as transformers does (CROSS_CHECK_SETTINGS)."""
    windows = [w for w in (config.get("sliding_window"), (config.get("text_config") or {}).get("sliding_window"))
               if isinstance(w, int) and w > 0]
    length = min([512] + [w // 2 for w in windows])
    return Scenario(phase=phase, batch=2, input_length=length, output_length=8, **CROSS_CHECK_SETTINGS)


@needs_extra
@pytest.mark.parametrize("model_id", CROSS_CHECKED)
def test_automatic_and_hand_decompositions_agree(model_id):
    from engine.decomposition.transformer import decompose
    from engine.models import load_catalog_config, load_model

    hand_model, automatic = load_model(model_id), auto.load_auto_model(model_id)
    config = load_catalog_config(model_id)
    for phase in ("prefill", "decode"):
        scenario = _scenario_below_windows(config, phase)
        traced, hand = automatic.decompose(scenario), decompose(hand_model, scenario)
        assert list(traced.columns) == list(KERNEL_COLUMNS)
        flops, weights, matrix = (_gap(traced, hand, c, phase) for c in ("flops", "weight_bytes", "matrix_flops"))
        print(f"{model_id} {phase}: FLOPs {flops:+.2e} (matrix {matrix:+.2e}), weight bytes {weights:+.2e}")
        assert abs(flops) < 0.01, f"{model_id} {phase}: total FLOPs differ by {flops:+.3%}"
        assert abs(weights) < 0.005, f"{model_id} {phase}: weight bytes differ by {weights:+.3%}"


@needs_extra
@pytest.mark.parametrize("model_id", ["meta-llama/Llama-3.1-405B", "deepseek-ai/DeepSeek-V3",
                                      "mistralai/Mixtral-8x7B-v0.1", "openai/gpt-oss-20b", "google/gemma-3-27b-pt"])
def test_parameters_counted_on_meta_match_the_hand_count(model_id):
    """Independent of any op mapping: transformers' parameters on meta vs the hand tensor-by-tensor count."""
    from engine.models import load_model

    hand_model, automatic = load_model(model_id), auto.load_auto_model(model_id)
    # DeepSeek-V3's e_score_correction_bias (256 per MoE layer) is a buffer in transformers, a weight by hand
    assert automatic.params_total == pytest.approx(hand_model.params_total, rel=1e-6)
    assert automatic.params_active == pytest.approx(hand_model.params_active, rel=1e-6)
    assert automatic.kv_cache_bytes_per_token("fp8") == pytest.approx(hand_model.kv_cache_bytes_per_token("fp8"))


# ------------------------------------------------------------------------------ tracing a few layers

@needs_extra
@pytest.mark.parametrize("model_id", ["meta-llama/Llama-3.1-405B", "openai-community/gpt2", "google/gemma-2-9b",
                                      "Qwen/Qwen3-30B-A3B"])
def test_tracing_representative_layers_equals_tracing_every_layer(model_id):
    """Layers built alike run the same ops: tracing two per kind and scaling equals tracing all of them."""
    few = auto.load_auto_model(model_id)                       # default: 2 layers per kind of layer
    every = auto.load_auto_model(model_id, traced_layers=None)
    assert few._prepared.layers_traced < every._prepared.layers_traced == few.num_layers
    phases = ("prefill", "decode") if model_id != "meta-llama/Llama-3.1-405B" else ("prefill",)
    for phase in phases:
        scenario = Scenario(phase=phase, batch=2, input_length=256)
        a, b = few.decompose(scenario), every.decompose(scenario)
        assert a[["name", "type", "op", "unit", "dtype"]].equals(b[["name", "type", "op", "unit", "dtype"]])
        for column in ("m", "k", "n", "batch", "count", "flops", "weight_bytes", "activation_bytes", "kv_bytes"):
            np.testing.assert_allclose(a[column], b[column], rtol=1e-12, err_msg=f"{model_id} {phase} {column}")


# ------------------------------------------------------------------------------ no hand model

TINY = {
    "phi": {"model_type": "phi", "architectures": ["PhiForCausalLM"], "hidden_size": 64, "intermediate_size": 256,
            "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 512, "max_position_embeddings": 256,
            "partial_rotary_factor": 0.5, "tie_word_embeddings": False},
    "falcon": {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
               "vocab_size": 512, "new_decoder_architecture": False, "multi_query": True, "parallel_attn": True,
               "bias": False},
    "bloom": {"model_type": "bloom", "hidden_size": 64, "n_layer": 2, "n_head": 4, "vocab_size": 512},
}


@needs_extra
@pytest.mark.parametrize("family", sorted(TINY))
def test_architecture_without_a_hand_model(family):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from engine.hardware.dtypes import bytes_per_value
    from engine.models import ModelConfig, ModelConfigError

    config = TINY[family]
    with pytest.raises(ModelConfigError):
        ModelConfig.from_hf_config(config, name=family)            # no hand model for this family
    data = dict(config)
    with torch.device("meta"):
        reference = AutoModelForCausalLM.from_config(AutoConfig.for_model(data.pop("model_type"), **data))
    parameters = sum(p.numel() for p in reference.parameters())     # counted independently of the op mapping
    tables = [m for m in reference.modules() if isinstance(m, torch.nn.Embedding)]
    head = reference.get_output_embeddings()
    tied = [t for t in tables if head is not None and head.weight is t.weight]

    model = auto.load_auto_model(config)
    assert model.params_total == parameters
    for phase, tokens in (("prefill", 2 * 16), ("decode", 2)):
        scenario = Scenario(phase=phase, batch=2, input_length=16, context_length=16, weight_dtype="int4")
        table = auto.decompose_auto(model, scenario)
        assert len(table) > 0 and list(table.columns) == list(KERNEL_COLUMNS)
        assert _total(table, "flops", phase) > 0 and (table["flops"] >= 0).all()
        # every parameter is read once per forward pass, except that a lookup table is read only at the
        # rows the tokens pick (a table tied to the LM head is also read whole by the head)
        expected = parameters + sum(tokens * t.embedding_dim for t in tables) \
            - sum(t.weight.numel() for t in tables if t not in tied)
        assert _total(table, "weight_bytes", phase) == pytest.approx(expected * bytes_per_value("int4"), rel=1e-12)


@needs_extra
def test_multi_query_model_reports_the_kv_heads_its_cache_stores():
    """Falcon with multi_query: 4 query heads share one K/V head; the summary (the sidebar card) says 1, as the
    KV bytes do: 2 layers x (K + V) x 1 head x head dim 16 (64 / 4) x 2 B (bf16) = 128 B per token."""
    model = auto.load_auto_model(TINY["falcon"])
    assert model.num_attention_heads == 4 and model.num_key_value_heads == 1
    assert model.summary()["num_key_value_heads"] == 1
    assert model.kv_cache_bytes_per_token("bf16") == 2 * 2 * 1 * 16 * 2


# ------------------------------------------------------------------------------ conventions

@needs_extra
def test_kernel_names_types_and_causal_attention():
    table = auto.decompose_auto("meta-llama/Llama-3.1-8B", Scenario(phase="prefill", batch=1, input_length=1024))
    by_name = table.set_index("name")
    assert {"embed_tokens", "input_layernorm", "self_attn.q_proj", "self_attn.Q*gK", "mlp.down_proj",
            "lm_head"} <= set(by_name.index)
    q_proj = by_name.loc["self_attn.q_proj"]
    assert (q_proj["type"], q_proj["op"], q_proj["m"], q_proj["k"], q_proj["n"], q_proj["count"]) == \
        ("Ma_Mw", "gemm", 1024, 4096, 4096, 32)
    assert by_name.loc["lm_head", "m"] == 1                      # logits for the last position only
    scores = by_name.loc["self_attn.Q*gK"]
    assert scores["macs"] == 32 * 128 * 1024 * 1025 / 2           # causal: L(L+1)/2 pairs per head
    assert by_name.loc["input_layernorm", "type"] == "Norm"


@needs_extra
def test_dtypes_rescale_the_bytes():
    model = auto.load_auto_model("Qwen/Qwen2.5-7B")
    bf16 = model.decompose(Scenario(phase="decode", batch=4, input_length=512))
    small = model.decompose(Scenario(phase="decode", batch=4, input_length=512, weight_dtype="int4",
                                     activation_dtype="fp8", kv_dtype="fp8"))
    assert _total(small, "weight_bytes", "decode") == pytest.approx(_total(bf16, "weight_bytes", "decode") / 4)
    assert _total(small, "kv_bytes", "decode") == pytest.approx(_total(bf16, "kv_bytes", "decode") / 2)
    assert _total(small, "flops", "decode") == _total(bf16, "flops", "decode")


@needs_extra
def test_request_decode_steps_follow_the_context():
    """A request's decode steps cost what single decode steps at those contexts cost."""
    model = auto.load_auto_model("meta-llama/Llama-3.1-8B")
    request = model.decompose(Scenario(phase="request", batch=2, input_length=300, output_length=5))
    steps = [model.decompose(Scenario(phase="decode", batch=2, input_length=300, context_length=300 + j))
             for j in range(4)]
    for column in ("flops", "kv_bytes", "weight_bytes", "activation_bytes"):
        assert _total(request, column, "decode") == pytest.approx(sum(_total(s, column, "decode") for s in steps))


@needs_extra
def test_work_that_grows_with_the_context_besides_attention():
    """transformers' DeepSeek attention expands the cached latent every step (kv_b_proj over the context):
    traced at two contexts, extended linearly, it matches a trace at the scenario's own context."""
    config = {"model_type": "deepseek_v3", "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32,
              "num_hidden_layers": 2, "first_k_dense_replace": 1, "num_attention_heads": 4,
              "num_key_value_heads": 4, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_group": 2,
              "topk_group": 1, "n_shared_experts": 1, "q_lora_rank": 32, "kv_lora_rank": 16,
              "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "vocab_size": 256,
              "max_position_embeddings": 4096}
    model = auto.load_auto_model(config)
    table = model.decompose(Scenario(phase="decode", batch=3, input_length=16, context_length=1000))
    expansion = table[table["name"] == "self_attn.kv_b_proj"].iloc[0]
    assert expansion["m"] == 3 * 1001                         # every cached token, every step
    direct = model._trace(3, 1, 1000, 1)
    traced_rows = [e for e in direct.events if getattr(e, "gemm", None) is not None
                   and e.site.module.endswith("kv_b_proj")]
    assert traced_rows[0].gemm.m == expansion["m"]


@needs_extra
def test_estimators_run_on_the_automatic_table(devices):
    from engine.estimators import get_method

    model = auto.load_auto_model("microsoft/Phi-3-mini-4k-instruct")
    scenario = Scenario(phase="request", batch=4, input_length=256, output_length=4)
    table = auto.decompose_columns(model, scenario)
    hardware = devices["H100-SXM"] if isinstance(devices, dict) else devices.get("H100-SXM")
    for method in ("roofline", "hierarchical", "realistic", "realistic-graph"):
        out = get_method(method).estimate(table, hardware, scenario)
        assert np.all(np.asarray(out["time_s"], dtype=float) > 0), method


@needs_extra
def test_scenario_settings_it_does_not_model_are_named():
    model = auto.load_auto_model("meta-llama/Llama-3.1-8B")
    if "tp" not in Scenario.model_fields:
        pytest.skip("this Scenario has no tensor parallelism")
    with pytest.raises(auto.AutoDecompositionError, match="tp=2"):
        model.decompose(Scenario(phase="prefill", tp=2))


@needs_extra
def test_load_any_model_prefers_the_hand_model(tmp_path):
    import json

    assert not auto.is_automatic(auto.load_any_model("meta-llama/Llama-3.1-8B"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY["phi"]))
    model = auto.load_any_model(str(path))
    assert auto.is_automatic(model) and model.params_total > 0 and model.summary()["model_type"] == "phi"


def test_load_any_model_without_the_extra_names_it(tmp_path, monkeypatch):
    import json

    from engine.models import ModelConfigError

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "transformers" else real_find_spec(name, *args))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY["phi"]))
    with pytest.raises(ModelConfigError, match=r"llm-roofline\[auto\]"):
        auto.load_any_model(str(path))


# ------------------------------------------------------------------------------ beyond the sliding windows

BEYOND_WINDOWS = {   # model -> (prefill prompt, decode context): past every window, within max positions
    "openai/gpt-oss-20b": (512, 1000),                 # window 128
    "openai/gpt-oss-120b": (300, 2000),                # window 128
    "google/gemma-2-9b": (8000, 6000),                 # window 4096, 8192 positions
    "google/gemma-3-27b-pt": (4096, 8192),             # window 1024
    "mistralai/Mistral-7B-v0.1": (6000, 8192),         # every layer slides, window 4096
    "microsoft/Phi-3-mini-4k-instruct": (3000, 3000),  # every layer slides, window 2047
}


@needs_extra
@pytest.mark.parametrize("model_id", sorted(BEYOND_WINDOWS))
def test_automatic_and_hand_decompositions_agree_beyond_the_windows(model_id):
    """The hand decomposition bounds sliding layers by their window (pairs, KV reads) as the traced one does."""
    from engine.decomposition.transformer import decompose
    from engine.models import load_model

    hand_model, automatic = load_model(model_id), auto.load_auto_model(model_id)
    prompt, context = BEYOND_WINDOWS[model_id]
    assert min(prompt, context) > hand_model.sliding_window
    for phase, scenario in (("prefill", Scenario(phase="prefill", batch=2, input_length=prompt)),
                            ("decode", Scenario(phase="decode", batch=2, context_length=context))):
        traced, hand = automatic.decompose(scenario), decompose(hand_model, scenario)
        flops, weights, kv = (_gap(traced, hand, c, phase) for c in ("flops", "weight_bytes", "kv_bytes"))
        print(f"{model_id} {phase}: FLOPs {flops:+.2e}, weight bytes {weights:+.2e}, KV bytes {kv:+.2e}")
        assert abs(flops) < 0.01, f"{model_id} {phase}: total FLOPs differ by {flops:+.3%}"
        assert abs(weights) < 0.005, f"{model_id} {phase}: weight bytes differ by {weights:+.3%}"
        assert abs(kv) < 0.01, f"{model_id} {phase}: KV bytes differ by {kv:+.3%}"
        assert _total(traced, "matrix_flops", phase) == pytest.approx(_total(hand, "matrix_flops", phase), rel=1e-9)


@needs_extra
def test_deepseek_v3_naive_decode_agrees_and_absorbed_differs_by_the_absorption():
    """Prefill: both run MLA's naive (decompressed) form and agree, with the same compressed KV store.
    Decode: transformers decompresses the whole cached latent through kv_b_proj every step; the hand
    model's naive form (mla_decode="naive") does the same and agrees (FLOPs within 1%, weight bytes within
    0.5%, matrix FLOPs exactly), at short and long contexts. The default absorbed form reads the same
    weights, and its MACs differ from the trace's by exactly the two forms' difference (docs/methods.md)."""
    from engine.decomposition.transformer import decompose
    from engine.models import load_model

    model_id = "deepseek-ai/DeepSeek-V3"
    hand_model, automatic = load_model(model_id), auto.load_auto_model(model_id)
    prefill = Scenario(phase="prefill", batch=2, input_length=512)
    traced, hand = automatic.decompose(prefill), decompose(hand_model, prefill)
    assert _total(traced, "flops", "prefill") == pytest.approx(_total(hand, "flops", "prefill"), rel=0.01)
    assert _total(traced, "matrix_flops", "prefill") == pytest.approx(_total(hand, "matrix_flops", "prefill"),
                                                                      rel=1e-9)
    assert _total(traced, "weight_bytes", "prefill") == pytest.approx(_total(hand, "weight_bytes", "prefill"),
                                                                      rel=0.005)
    stores = [t[t["op"] == "kv_store"] for t in (traced, hand)]     # the same compressed cache: 576 per token
    assert _total(stores[0], "kv_bytes", "prefill") == _total(stores[1], "kv_bytes", "prefill") == 61 * 1024 * 576 * 2
    for context, batch in ((512, 2), (8191, 1)):
        traced = automatic.decompose(Scenario(phase="decode", batch=batch, context_length=context))
        naive = decompose(hand_model, Scenario(phase="decode", batch=batch, context_length=context, mla_decode="naive"))
        absorbed = decompose(hand_model, Scenario(phase="decode", batch=batch, context_length=context))
        flops, weights = (_gap(traced, naive, c, "decode") for c in ("flops", "weight_bytes"))
        print(f"{model_id} decode, {context} cached: FLOPs {flops:+.2e}, weight bytes {weights:+.2e}")
        assert abs(flops) < 0.01 and abs(weights) < 0.005
        assert _total(traced, "matrix_flops", "decode") == pytest.approx(_total(naive, "matrix_flops", "decode"),
                                                                         rel=1e-9)
        assert _total(traced, "weight_bytes", "decode") == pytest.approx(_total(absorbed, "weight_bytes", "decode"),
                                                                         rel=0.005)
        keys = context + 1
        naive_macs = keys * 512 * 128 * (128 + 128) + 128 * (128 + 64) * keys + 128 * 128 * keys
        absorbed_macs = 128 * 128 * 512 + 128 * 512 * 128 + 128 * (512 + 64 + 512) * keys
        difference = _total(traced, "macs", "decode") - _total(absorbed, "macs", "decode")
        assert difference == pytest.approx(61 * batch * (naive_macs - absorbed_macs), rel=1e-9)
