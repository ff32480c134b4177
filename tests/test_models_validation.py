"""One validation for both decompositions: the hand parser and the automatic (traced) path refuse the same
bad config.json fields, name the field, and nothing from a library escapes as a traceback."""

from __future__ import annotations

import json
import time

import pytest
from pydantic import ValidationError

from engine.decomposition.auto import AutoDecompositionError, available, load_any_model
from engine.models import ModelConfig, ModelConfigError, ModelLoadError, catalog_ids, load_catalog_config, load_model
from engine.models.validation import (MAX_CONFIG_BYTES, MAX_JSON_DEPTH, SIZE_LIMITS, check_config_fields,
                                      parse_config_json)

TINY_LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
              "intermediate_size": 172, "num_hidden_layers": 3, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 100, "max_position_embeddings": 128}
TINY_MIXTRAL = {**TINY_LLAMA, "model_type": "mixtral", "architectures": ["MixtralForCausalLM"],
                "num_local_experts": 4, "num_experts_per_tok": 2}
DELETE = object()
needs_auto = pytest.mark.skipif(not available()[0], reason="the 'auto' extra (torch, transformers) is not installed")


def config(base=TINY_LLAMA, **changes) -> dict:
    data = {**base, **changes}
    return {key: value for key, value in data.items() if value is not DELETE}


# (config, field the error must name, words it must contain)
BAD_CONFIGS = [
    (config(hidden_size=DELETE), "hidden_size", "missing"),
    (config(num_key_value_heads=8), "num_key_value_heads", "multiple"),
    (config(num_key_value_heads=3), "num_key_value_heads", "multiple"),
    (config(num_attention_heads=5, num_key_value_heads=5), "num_attention_heads", "does not divide"),
    (config(hidden_size=10**18), "hidden_size", "1,048,576"),
    (config(num_hidden_layers=1_000_000), "num_hidden_layers", "10,000"),
    (config(num_hidden_layers=10**18), "num_hidden_layers", "10,000"),
    (config(num_hidden_layers=2**63), "num_hidden_layers", "10,000"),
    (config(num_hidden_layers=1e18), "num_hidden_layers", "decimal"),
    (config(hidden_size="64"), "hidden_size", "string"),
    (config(vocab_size=[100]), "vocab_size", "list"),
    (config(num_attention_heads=True), "num_attention_heads", "true/false"),
    (config(max_position_embeddings=2**40), "max_position_embeddings", "10 million"),
    (config(TINY_MIXTRAL, num_experts_per_tok=0), "num_experts_per_tok", "positive"),
    (config(TINY_MIXTRAL, num_experts_per_tok=5), "num_experts_per_tok", "more than the 4 routed experts"),
    (config(TINY_MIXTRAL, num_local_experts=10**9), "num_local_experts", "65,536"),
    (config(layer_types=["sliding_attention"] * 3, sliding_window=None), "sliding_window", "window"),
    (config(layer_types=["full_attention"] * 2), "layer_types", "one per layer"),
    (config(layer_types="sliding_attention"), "layer_types", "list"),
]


def assert_names(error: BaseException, field: str, words: str) -> None:
    message = str(error)
    assert f"'{field}'" in message, message
    assert words in message, message


@pytest.mark.parametrize("data, field, words", BAD_CONFIGS)
def test_hand_parser_names_the_field(data, field, words):
    with pytest.raises(ModelConfigError) as caught:
        ModelConfig.from_hf_config(data, name="bad")
    assert_names(caught.value, field, words)


@needs_auto
@pytest.mark.parametrize("data, field, words", BAD_CONFIGS)
def test_automatic_path_refuses_the_same_configs_naming_the_same_field(data, field, words):
    from engine.decomposition.auto import AutoModel
    with pytest.raises(ModelConfigError) as caught:
        AutoModel(data, name="bad")
    assert_names(caught.value, field, words)


@needs_auto
def test_load_any_model_does_not_fall_back_to_tracing_a_bad_config(tmp_path):
    """The hand parser rejects it; the automatic path used to build it with transformers' default width."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config(hidden_size=DELETE)))
    with pytest.raises(ModelConfigError, match="'hidden_size' is missing"):
        load_any_model(str(path))
    path.write_text(json.dumps(config(TINY_MIXTRAL, num_experts_per_tok=0)))   # used to divide by zero
    with pytest.raises(ModelConfigError, match="'num_experts_per_tok' is 0"):
        load_any_model(str(path))


@needs_auto
def test_sliding_layers_without_a_window_name_the_field_not_a_transformers_attribute():
    """transformers' LlamaConfig has no sliding_window: the trace used to raise AttributeError."""
    from engine.decomposition.auto import AutoModel
    with pytest.raises(ModelConfigError, match="'sliding_window' is missing"):
        AutoModel(config(layer_types=["sliding_attention"] * 3), name="bad")


@needs_auto
def test_gpt2_spelling_is_required_by_the_name_the_architecture_reads():
    from engine.decomposition.auto import AutoModel
    gpt2 = {"model_type": "gpt2", "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 64}
    with pytest.raises(ModelConfigError, match="'n_embd' is missing"):
        AutoModel(gpt2, name="bad")
    assert AutoModel({**gpt2, "n_embd": 64}, name="ok").hidden_size == 64


def test_every_bundled_config_passes_the_shared_checks():
    """Published configs of real models (the catalog) sit inside every bound."""
    for repo_id in catalog_ids():
        check_config_fields(load_catalog_config(repo_id))


@pytest.mark.parametrize("field", ["hidden_size", "num_hidden_layers", "vocab_size", "num_local_experts"])
def test_bounds_are_inclusive(field):
    limit = SIZE_LIMITS[field]
    check_config_fields({field: limit.high})
    with pytest.raises(ModelConfigError, match=f"'{field}'"):
        check_config_fields({field: limit.high + 1})


def test_nested_text_config_is_checked_with_its_prefix():
    with pytest.raises(ModelConfigError, match=r"'text_config\.hidden_size'"):
        check_config_fields({"model_type": "gemma3", "text_config": {"hidden_size": -1}})


def test_model_config_built_directly_is_bounded_without_allocating_per_layer_lists():
    fields = load_model("meta-llama/Llama-3.1-8B").model_dump()
    started = time.perf_counter()
    with pytest.raises(ValidationError, match="num_layers"):
        ModelConfig(**{**fields, "num_layers": 10**18, "moe_layers": (), "layer_attention": ()})
    assert time.perf_counter() - started < 1.0


# ------------------------------------------------------------------------------------ the file itself

def test_deep_nesting_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("[" * 10_000 + "]" * 10_000)
    with pytest.raises(ModelLoadError, match=f"config.json.*nested deeper than {MAX_JSON_DEPTH}"):
        load_model(str(path))
    path.write_text(json.dumps(config(rope_scaling=json.loads("[" * 50 + "]" * 50))))  # parses, still too deep
    with pytest.raises(ModelLoadError, match="nested deeper"):
        load_model(str(path))


def test_oversized_file_is_refused_before_reading(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config(padding="x" * MAX_CONFIG_BYTES)))
    with pytest.raises(ModelLoadError, match=r"bytes: a config.json is at most 4,194,304 bytes"):
        load_model(str(path))


@pytest.mark.parametrize("content, words", [
    (b'{"hidden_size": ' + b"9" * 5000 + b"}", "cannot be read as JSON"),   # Python's 4300-digit limit
    (b'{"model_type": "llama\xff"}', "cannot be read as JSON"),
    (b"[1, 2]", "JSON object, not a list"),
    (b"{", "not valid JSON"),
])
def test_malformed_content_names_the_file(content, words):
    with pytest.raises(ModelConfigError, match=words) as caught:
        parse_config_json(content, "'mine.json'")
    assert "'mine.json'" in str(caught.value)


@pytest.mark.parametrize("source", ["x" * 5000, "bad\x00name", "~no-such-user-here/config.json"])
def test_impossible_paths_are_a_load_error_not_an_os_error(source):
    with pytest.raises(ModelLoadError):
        load_model(source, offline=True)


def test_local_files_false_never_reads_a_path(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    path = tmp_path / "org"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(TINY_LLAMA))
    monkeypatch.chdir(tmp_path)
    assert load_model("org").hidden_size == 64                       # the Python API reads local paths
    with pytest.raises(ModelLoadError) as with_file:
        load_model("org", offline=True, local_files=False)
    with pytest.raises(ModelLoadError) as without_file:
        load_model("nofile", offline=True, local_files=False)
    assert "64" not in str(with_file.value)
    assert str(with_file.value).replace("'org'", "X") == str(without_file.value).replace("'nofile'", "X")
