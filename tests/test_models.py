"""ModelConfig: parsing of Hugging Face config.json files and parameter / KV-cache accounting.

Oracles are published figures (model cards, safetensors totals), not this code's own output.
"""

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.models import ModelConfig, ModelConfigError, catalog_ids, load_catalog_config


def model(repo_id: str) -> ModelConfig:
    return ModelConfig.from_hf_config(load_catalog_config(repo_id), name=repo_id)


def parse(data: dict, name: str = "test/model") -> ModelConfig:
    return ModelConfig.from_hf_config(data, name=name)


def llama_like(**overrides) -> dict:
    """A small valid Llama config to edit field by field."""
    data = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256,
            "intermediate_size": 688, "num_hidden_layers": 2, "num_attention_heads": 8,
            "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 512}
    data.update(overrides)
    return data


# ------------------------------------------------------------------ parameter counts vs published totals

PUBLISHED_PARAMS = [
    # repo id, published total, source of the published figure
    ("meta-llama/Llama-3.1-8B", 8.03e9, "model card: 8.03B"),
    ("meta-llama/Llama-3.1-70B", 70.6e9, "model card: 70.6B"),
    ("meta-llama/Llama-3.1-405B", 405.85e9, "safetensors total 405.85B (card: 405B)"),
    ("meta-llama/Llama-2-7b-hf", 6.74e9, "safetensors total 6.74B"),
    ("meta-llama/Llama-2-70b-hf", 68.98e9, "safetensors total 68.98B"),
    ("mistralai/Mistral-7B-v0.1", 7.24e9, "safetensors total 7.24B"),
    ("Qwen/Qwen2.5-7B", 7.62e9, "safetensors total 7.62B (card: 7.61B)"),
    ("Qwen/Qwen2.5-72B", 72.7e9, "model card: 72.7B"),
    ("openai-community/gpt2", 124.4e6, "124M; safetensors 124,439,808"),
    ("EleutherAI/pythia-1b", 1.01e9, "Pythia paper / card: 1.01B incl. untied embed_out"),
    ("facebook/opt-1.3b", 1.32e9, "Hub safetensors: 1.32B (the name and OPT paper round to 1.3B)"),
]


@pytest.mark.parametrize("repo_id, published, source", PUBLISHED_PARAMS)
def test_params_total_matches_published(repo_id, published, source):
    assert model(repo_id).params_total == pytest.approx(published, rel=0.005), source


def test_llama_2_7b_exact_hand_count():
    # embed 32000*4096 + 32 layers * (4 * 4096^2 attention + 3 * 4096*11008 MLP + 2 * 4096 norms)
    # + final norm 4096 + untied lm_head 32000*4096
    embed = 32000 * 4096
    per_layer = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
    assert embed + 32 * per_layer + 4096 + embed == 6_738_415_616
    llama = model("meta-llama/Llama-2-7b-hf")
    assert llama.params_per_layer == per_layer
    assert llama.params_total == 6_738_415_616


@pytest.mark.parametrize("repo_id, exact", [
    ("openai-community/gpt2", 124_439_808),      # HF safetensors parameter count
    ("EleutherAI/pythia-1b", 1_011_781_632),     # HF safetensors parameter count
    ("meta-llama/Llama-3.1-8B", 8_030_261_248),  # HF safetensors parameter count
    ("mistralai/Mistral-7B-v0.1", 7_241_732_096),
    ("meta-llama/Llama-2-70b-hf", 68_976_648_192),
])
def test_exact_safetensors_counts(repo_id, exact):
    assert model(repo_id).params_total == exact


def test_params_active_equals_total_for_dense():
    dense = [model(repo_id) for repo_id in catalog_ids() if not model(repo_id).is_moe]
    assert len(dense) >= 15
    for m in dense:
        assert m.params_active == m.params_total


def test_tied_embeddings_drop_lm_head():
    untied = parse(llama_like())
    tied = parse(llama_like(tie_word_embeddings=True))
    assert untied.params_total - tied.params_total == 1000 * 256
    assert tied.params_lm_head == 0


def test_per_tensor_breakdown_qwen2_biases():
    # Qwen2: bias on q, k, v; none on o_proj or the MLP
    qwen = model("Qwen/Qwen2.5-7B")
    parts = qwen.params_per_layer_breakdown()
    assert parts["q_proj"] == 3584 * 3584 + 3584
    assert parts["k_proj"] == parts["v_proj"] == 3584 * 512 + 512
    assert parts["o_proj"] == 3584 * 3584
    assert parts["mlp_gate"] == parts["mlp_up"] == 3584 * 18944
    assert parts["attention_norm"] == parts["mlp_norm"] == 3584
    assert (qwen.qkv_bias, qwen.attention_output_bias, qwen.mlp_bias) == (True, False, False)


def test_llama_attention_bias_and_mlp_bias_switches():
    plain = parse(llama_like())
    biased = parse(llama_like(attention_bias=True, mlp_bias=True))
    assert (plain.qkv_bias, plain.attention_output_bias, plain.mlp_bias) == (False, False, False)
    assert (biased.qkv_bias, biased.attention_output_bias, biased.mlp_bias) == (True, True, True)
    kv_width = 2 * 32
    assert biased.params_per_layer - plain.params_per_layer == (256 + 2 * kv_width + 256) + (688 + 688 + 256)


# ------------------------------------------------------------------ family-specific parsing

def test_gpt2_fields():
    gpt2 = model("openai-community/gpt2")
    assert (gpt2.hidden_size, gpt2.num_layers, gpt2.num_attention_heads, gpt2.head_dim) == (768, 12, 12, 64)
    assert gpt2.intermediate_size == 4 * 768  # n_inner is absent -> 4 * n_embd
    assert gpt2.position_embedding == "learned" and gpt2.num_position_embeddings == 1024
    assert gpt2.rotary_dim == 0
    assert gpt2.tie_word_embeddings and not gpt2.gated_mlp and gpt2.norm_type == "layernorm"
    assert gpt2.params_embedding == (50257 + 1024) * 768
    assert gpt2.hidden_act == "gelu_new"


def test_gpt2_explicit_n_inner():
    data = copy.deepcopy(load_catalog_config("openai-community/gpt2"))
    data["n_inner"] = 1000
    assert parse(data).intermediate_size == 1000


def test_pythia_partial_rotary_and_parallel_residual():
    pythia = model("EleutherAI/pythia-1b")
    assert pythia.head_dim == 256 and pythia.rotary_dim == 64  # rotary_pct 0.25
    assert pythia.parallel_residual
    assert not pythia.tie_word_embeddings
    assert pythia.qkv_bias and pythia.attention_output_bias and pythia.mlp_bias
    assert pythia.params_lm_head == 50304 * 2048


def test_pythia_attention_bias_false_keeps_the_mlp_biases():
    """GPT-NeoX's `attention_bias` switches the q, k, v and o biases only (the MLP keeps its biases)."""
    data = copy.deepcopy(load_catalog_config("EleutherAI/pythia-1b"))
    data["attention_bias"] = False
    pythia = parse(data)
    assert (pythia.qkv_bias, pythia.attention_output_bias, pythia.mlp_bias) == (False, False, True)
    assert model("EleutherAI/pythia-1b").params_per_layer - pythia.params_per_layer == 3 * 2048 + 2048


def test_opt_learned_positions_have_offset_rows():
    opt = model("facebook/opt-1.3b")
    assert opt.num_position_embeddings == 2048 + 2
    assert opt.tie_word_embeddings and opt.hidden_act == "relu" and not opt.gated_mlp
    assert opt.params_total == 1_315_758_080  # OPT-1.3b safetensors total


def test_opt_word_embed_proj_dim_must_match_hidden():
    data = copy.deepcopy(load_catalog_config("facebook/opt-1.3b"))
    data["word_embed_proj_dim"] = 512
    with pytest.raises(ModelConfigError, match="word_embed_proj_dim"):
        parse(data)


def test_opt_enable_bias_false_removes_biases():
    data = copy.deepcopy(load_catalog_config("facebook/opt-1.3b"))
    data["enable_bias"] = False
    opt = parse(data)
    assert not (opt.qkv_bias or opt.attention_output_bias or opt.mlp_bias)
    assert model("facebook/opt-1.3b").params_per_layer - opt.params_per_layer == 4 * 2048 + 8192 + 2048


def test_mistral_sliding_window_is_stored():
    assert model("mistralai/Mistral-7B-v0.1").sliding_window == 4096
    data = copy.deepcopy(load_catalog_config("mistralai/Mistral-7B-v0.1"))
    data["sliding_window"] = None
    assert parse(data).sliding_window is None


def test_llama_3_1_fields():
    llama = model("meta-llama/Llama-3.1-8B")
    assert llama.name == "meta-llama/Llama-3.1-8B" and llama.model_type == "llama"
    assert llama.architectures == ("LlamaForCausalLM",)
    assert llama.norm_type == "rmsnorm" and llama.gated_mlp and llama.hidden_act == "silu"
    assert llama.position_embedding == "rotary" and llama.num_position_embeddings == 0
    assert llama.max_position_embeddings == 131072


# ------------------------------------------------------------------ heads: explicit head_dim, GQA, MQA

def test_head_dim_derived_when_absent():
    assert parse(llama_like()).head_dim == 256 // 8


def test_head_dim_explicit_wins():
    m = parse(llama_like(head_dim=64))
    assert m.head_dim == 64 and m.q_width == 8 * 64 and m.kv_width == 2 * 64
    # q_proj is hidden -> heads*head_dim, o_proj back; not hidden x hidden
    assert m.params_per_layer_breakdown()["q_proj"] == 256 * 512
    assert m.params_per_layer_breakdown()["o_proj"] == 512 * 256


def test_head_dim_null_falls_back_to_derived():
    assert parse(llama_like(head_dim=None)).head_dim == 32


def test_gqa_group_size():
    assert model("meta-llama/Llama-3.1-70B").q_heads_per_kv_head == 8
    assert model("Qwen/Qwen2.5-7B").q_heads_per_kv_head == 7
    assert model("meta-llama/Llama-2-7b-hf").q_heads_per_kv_head == 1


def test_mqa_parses():
    mqa = parse(llama_like(num_key_value_heads=1))
    assert mqa.num_key_value_heads == 1 and mqa.q_heads_per_kv_head == 8
    assert mqa.kv_cache_bytes_per_token() == 2 * 2 * 1 * 32 * 2


def test_missing_kv_heads_means_mha():
    data = llama_like()
    del data["num_key_value_heads"]
    assert parse(data).num_key_value_heads == 8


# ------------------------------------------------------------------ KV cache

def test_kv_cache_bytes_per_token():
    assert model("meta-llama/Llama-3.1-8B").kv_cache_bytes_per_token("bf16") == 2 * 32 * 8 * 128 * 2 == 131072
    assert model("meta-llama/Llama-2-7b-hf").kv_cache_bytes_per_token() == 524288
    assert model("meta-llama/Llama-3.1-8B").kv_cache_bytes_per_token("fp8") == 65536
    assert model("meta-llama/Llama-2-7b-hf").kv_cache_bytes_per_token("fp32") == 2 * 524288


def test_kv_cache_rejects_unknown_dtype():
    with pytest.raises(ValueError, match="bf17"):
        model("meta-llama/Llama-3.1-8B").kv_cache_bytes_per_token("bf17")


def test_summary_has_the_contract_keys():
    summary = model("meta-llama/Llama-3.1-8B").summary()
    for key in ("params_total", "params_active", "num_layers", "hidden_size", "num_attention_heads",
                "num_key_value_heads", "head_dim", "kv_cache_bytes_per_token", "model_type", "name"):
        assert key in summary
    assert summary["kv_cache_bytes_per_token"] == 131072
    assert summary["params_total"] == 8_030_261_248


def test_model_is_frozen():
    m = model("meta-llama/Llama-3.1-8B")
    with pytest.raises(ValueError):
        m.hidden_size = 1


# ------------------------------------------------------------------ errors name the field

SUPPORTED_LIST = ("llama, mistral, qwen2, gpt2, gpt_neox, opt, mixtral, qwen2_moe, qwen3, qwen3_moe, "
                  "deepseek_v2, deepseek_v3, gemma2, gemma3, gemma3_text, phi3, gpt_oss, kimi_k2, kimi_k25, minimax_m2")


@pytest.mark.parametrize("model_type", ["t5", "jamba", "bert", "mamba", "deepseek_v4"])
def test_unsupported_model_type_names_field_and_value(model_type):
    with pytest.raises(ModelConfigError) as caught:
        parse(llama_like(model_type=model_type))
    message = str(caught.value)
    assert "'model_type'" in message and repr(model_type) in message
    assert f"supported: {SUPPORTED_LIST}" in message


def test_unsupported_message_exact():
    with pytest.raises(ModelConfigError) as caught:
        parse(llama_like(model_type="jamba"))
    assert str(caught.value) == ("config.json field 'model_type' is 'jamba': not supported yet; "
                                 f"supported: {SUPPORTED_LIST}")


@pytest.mark.parametrize("field, value", [
    ("num_local_experts", 8), ("n_routed_experts", 256), ("q_lora_rank", 1536), ("num_experts", 64),
])
def test_moe_and_mla_fields_are_rejected(field, value):
    with pytest.raises(ModelConfigError, match=f"'{field}' is {value}"):
        parse(llama_like(**{field: value}))


@pytest.mark.parametrize("field", ["hidden_size", "intermediate_size", "num_hidden_layers",
                                   "num_attention_heads", "vocab_size", "max_position_embeddings"])
def test_missing_required_field_is_named(field):
    data = llama_like()
    del data[field]
    with pytest.raises(ModelConfigError, match=f"'{field}' is missing"):
        parse(data)


@pytest.mark.parametrize("field, value", [
    ("hidden_size", "big"), ("hidden_size", -4096), ("hidden_size", 0), ("hidden_size", 4096.5),
    ("num_hidden_layers", True), ("vocab_size", None), ("intermediate_size", [1]), ("head_dim", 0),
])
def test_wrong_type_or_value_is_named(field, value):
    with pytest.raises(ModelConfigError) as caught:
        parse(llama_like(**{field: value}))
    assert f"'{field}'" in str(caught.value)


def test_heads_not_divisible_by_kv_heads():
    with pytest.raises(ModelConfigError, match="'num_key_value_heads' is 3"):
        parse(llama_like(num_key_value_heads=3))


def test_more_kv_heads_than_heads():
    with pytest.raises(ModelConfigError, match="num_key_value_heads"):
        parse(llama_like(num_key_value_heads=16))


def test_hidden_not_divisible_by_heads_without_head_dim():
    with pytest.raises(ModelConfigError, match="'num_attention_heads' is 7"):
        parse(llama_like(num_attention_heads=7, num_key_value_heads=7))


def test_bad_boolean_is_named():
    with pytest.raises(ModelConfigError, match="'tie_word_embeddings' is 'yes'"):
        parse(llama_like(tie_word_embeddings="yes"))


def test_gpt2_missing_field_uses_gpt2_names():
    data = copy.deepcopy(load_catalog_config("openai-community/gpt2"))
    del data["n_embd"]
    with pytest.raises(ModelConfigError, match="'n_embd' is missing: required for model_type 'gpt2'"):
        parse(data)


def test_rotary_pct_out_of_range():
    data = copy.deepcopy(load_catalog_config("EleutherAI/pythia-1b"))
    data["rotary_pct"] = 1.5
    with pytest.raises(ModelConfigError, match="'rotary_pct' is 1.5"):
        parse(data)


def test_qwen2_sliding_window_layers_rejected():
    data = copy.deepcopy(load_catalog_config("Qwen/Qwen2.5-7B"))
    data["use_sliding_window"] = True
    with pytest.raises(ModelConfigError, match="'use_sliding_window'"):
        parse(data)


def test_mixed_layer_types_rejected():
    with pytest.raises(ModelConfigError, match="'layer_types'"):
        parse(llama_like(layer_types=["sliding_attention", "full_attention"]))
    assert parse(llama_like(layer_types=["full_attention", "full_attention"])).num_layers == 2


def test_model_type_inferred_from_architectures():
    data = llama_like()
    del data["model_type"]
    assert parse(data).model_type == "llama"
    del data["architectures"]
    with pytest.raises(ModelConfigError, match="'model_type' is missing"):
        parse(data)


def test_not_a_dict():
    with pytest.raises(ModelConfigError, match="JSON object"):
        ModelConfig.from_hf_config(["not", "a", "dict"], name="x")


def test_errors_are_value_errors():
    assert issubclass(ModelConfigError, ValueError)


# ------------------------------------------------------------------ properties over random shapes

@given(hidden_per_head=st.integers(1, 16), heads_per_group=st.integers(1, 8), groups=st.integers(1, 8),
       layers=st.integers(1, 6), inner=st.integers(1, 512), vocab=st.integers(1, 5000), tied=st.booleans())
def test_param_count_is_the_sum_of_its_parts(hidden_per_head, heads_per_group, groups, layers, inner, vocab, tied):
    heads = heads_per_group * groups
    hidden = hidden_per_head * heads
    m = parse(llama_like(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=groups,
                         num_hidden_layers=layers, intermediate_size=inner, vocab_size=vocab,
                         tie_word_embeddings=tied))
    attention = hidden * hidden * 2 + 2 * hidden * (groups * hidden_per_head)
    mlp = 3 * hidden * inner
    expected = vocab * hidden * (1 if tied else 2) + layers * (attention + mlp + 2 * hidden) + hidden
    assert m.params_total == expected
    assert m.kv_cache_bytes_per_token("fp8") * 2 == m.kv_cache_bytes_per_token("bf16")
