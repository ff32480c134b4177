"""calibration/torch_llama.py, the plain-PyTorch decoder used for decode-step timing, checked against transformers."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parent.parent


def _load_module():
    spec = importlib.util.spec_from_file_location("torch_llama", REPO / "calibration" / "torch_llama.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tl = _load_module()

TINY = {
    "model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 97, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0, "max_position_embeddings": 256, "tie_word_embeddings": False,
}
LLAMA3 = {**TINY, "rope_theta": 500000.0, "rope_scaling": {
    "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    "original_max_position_embeddings": 16}}
QWEN2 = {**TINY, "model_type": "qwen2", "rope_theta": 1000000.0, "rms_norm_eps": 1e-6}
TIED = {**TINY, "tie_word_embeddings": True}


def _hf_and_ours(config, seed=0):
    torch.manual_seed(seed)
    fields = {k: v for k, v in config.items() if k != "model_type"}
    if config["model_type"] == "qwen2":
        hf = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**fields))
    else:
        hf = transformers.LlamaForCausalLM(transformers.LlamaConfig(**fields))
    hf = hf.float().eval()
    if config["model_type"] == "qwen2":  # transformers initialises biases to zero; make them count
        with torch.no_grad():
            for layer in hf.model.layers:
                for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                    proj.bias.normal_(0.0, 0.5)
    ours = tl.from_hf_state_dict(config, hf.state_dict(), dtype=torch.float32, device="cpu")
    return hf, ours


def _tokens(batch, seq, vocab=97, seed=1):
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _hf_logits(hf, tokens):
    with torch.no_grad():
        return hf(input_ids=tokens, use_cache=False).logits


ORACLES = {"llama": TINY, "llama3-rope": LLAMA3, "qwen2-bias": QWEN2, "tied": TIED}


@pytest.mark.parametrize("name", list(ORACLES))
def test_prefill_matches_transformers(name):
    config = ORACLES[name]
    hf, ours = _hf_and_ours(config)
    tokens = _tokens(2, 40)  # longer than original_max_position_embeddings = 16, so llama3 scaling matters
    expected = _hf_logits(hf, tokens)
    got = ours.prefill(tokens, ours.new_cache(2, 48))
    assert got.shape == (2, 40, 97)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(ORACLES))
def test_prefill_then_decode_matches_transformers(name):
    config = ORACLES[name]
    hf, ours = _hf_and_ours(config)
    tokens = _tokens(2, 40)
    expected = _hf_logits(hf, tokens)
    cache = ours.new_cache(2, 48)
    ours.prefill(tokens[:, :-3], cache)
    for position in (37, 38, 39):  # several decode steps, each attending over the whole cache so far
        got = ours.decode_step(tokens[:, position:position + 1], cache, position)
        assert got.shape == (2, 1, 97)
        torch.testing.assert_close(got[:, 0], expected[:, position], rtol=1e-4, atol=1e-5)
    # the cache was written exactly up to the last position and nowhere beyond it
    assert cache[0][:, :, :, :40].abs().sum(-1).gt(0).all()
    assert cache[0][:, :, :, 40:].eq(0).all() and cache[1][:, :, :, 40:].eq(0).all()


def test_llama3_scaling_changes_the_rotary_frequencies():
    plain = tl._inv_freq(tl._parse({**LLAMA3, "rope_scaling": None}))
    scaled = tl._inv_freq(tl._parse(LLAMA3))
    assert not torch.equal(plain, scaled)
    # the lowest frequencies are divided by the factor; none is raised
    assert torch.isclose(scaled[-1], plain[-1] / 8) and (scaled <= plain).all()


def test_tied_embeddings_share_storage():
    model = tl.from_config(TIED, dtype=torch.float32)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert tl.parameter_count(TIED) == tl.parameter_count(TINY) - 97 * 64


def test_llama_3_1_8b_parameter_count_from_the_catalog():
    config = json.loads((REPO / "engine/models/catalog/meta-llama--Llama-3.1-8B.json").read_text())
    config = config.get("config", config)  # tolerate a wrapped entry
    assert tl.parameter_count(config) == 8_030_261_248


@pytest.mark.parametrize("config", [TINY, LLAMA3, QWEN2, TIED], ids=["llama", "llama3", "qwen2", "tied"])
def test_from_config_parameter_bytes(config):
    for dtype in (torch.float32, torch.bfloat16):
        model = tl.from_config(config, dtype=dtype)
        assert model.parameter_bytes() == tl.parameter_count(config) * torch.tensor([], dtype=dtype).element_size()
        assert sum(p.numel() for p in model.parameters()) == tl.parameter_count(config)
        assert all(p.dtype == dtype for p in model.parameters())
    assert tl.parameter_count(config, num_layers=1) < tl.parameter_count(config)
    assert tl.from_config(config, num_layers=1).parameter_bytes() == tl.parameter_count(config, num_layers=1) * 2


def test_from_config_is_seeded_and_runs():
    a = tl.from_config(TINY, dtype=torch.float32, seed=3)
    b = tl.from_config(TINY, dtype=torch.float32, seed=3)
    c = tl.from_config(TINY, dtype=torch.float32, seed=4)
    for (name, pa), pb, pc in zip(a.named_parameters(), b.parameters(), c.parameters()):
        assert torch.equal(pa, pb)
        if name.endswith("norm.weight"):
            assert pa.eq(1).all()
        else:
            assert not torch.equal(pa, pc) and abs(pa.std().item() - 0.02) < 0.005
    cache = a.new_cache(3, 8)
    assert cache[0].shape == (2, 3, 2, 8, 16) and cache[0].dtype == torch.float32
    a.prefill(_tokens(3, 5), cache)
    logits = a.decode_step(_tokens(3, 1), cache, 5)
    assert logits.shape == (3, 1, 97) and torch.isfinite(logits).all()


def test_missing_field_is_named():
    config = {k: v for k, v in TINY.items() if k != "hidden_size"}
    with pytest.raises(ValueError, match="hidden_size"):
        tl.from_config(config)
    with pytest.raises(ValueError, match="hidden_size"):
        tl.parameter_count(config)


@pytest.mark.parametrize("extra, field", [
    ({"num_local_experts": 8, "num_experts_per_tok": 2}, "num_local_experts"),
    ({"model_type": "qwen2_moe", "num_experts": 60}, "model_type"),
    ({"hidden_act": "gelu"}, "hidden_act"),
    ({"model_type": "mistral", "sliding_window": 4096}, "sliding_window"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "rope_scaling"),
])
def test_unsupported_configs_raise(extra, field):
    with pytest.raises(ValueError, match=field):
        tl.from_config({**TINY, **extra})


def test_catalog_configs_that_parse():
    qwen = json.loads((REPO / "engine/models/catalog/Qwen--Qwen2.5-7B.json").read_text())
    qwen = qwen.get("config", qwen)
    # sliding_window is present but use_sliding_window is false: plain full attention, with q/k/v biases
    parsed = tl._parse(qwen)
    assert parsed.qkv_bias and not parsed.o_bias and parsed.head_dim == 128
    assert tl.parameter_count(qwen) == 7_615_616_512


def test_decode_step_reads_no_tensor_value_on_the_host():
    """.item(), bool(tensor) and data-dependent Python control flow all go through aten._local_scalar_dense (a
    host sync on a GPU, which CUDA-graph capture forbids); decode_step must call none of them."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class RecordOps(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.add(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    model = tl.from_config(LLAMA3, dtype=torch.bfloat16)
    cache = model.new_cache(2, 16)
    model.prefill(_tokens(2, 7), cache)
    with RecordOps() as recorder:
        model.decode_step(_tokens(2, 1), cache, 7)
    assert any("attention" in op for op in recorder.ops)  # the recorder did see the step's operators
    assert not any("_local_scalar_dense" in op or "nonzero" in op for op in recorder.ops), sorted(recorder.ops)
