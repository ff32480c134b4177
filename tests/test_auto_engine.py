"""The automatic decomposition wired into the engine: engine.load_any_model, engine.estimate, the CLI.

A tiny local config.json of a family the hand parser rejects (Phi-1/2's `phi`) stands for any
architecture without a hand model. Tests that trace need the optional `auto` extra and skip without it;
the messages without the extra are tested either way.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

import engine
import engine.decomposition.auto as auto
from engine.cli.entry import main
from engine.models import ModelConfig, ModelConfigError

HAS_EXTRA = auto.available()[0]
needs_extra = pytest.mark.skipif(not HAS_EXTRA, reason="the optional 'auto' extra (torch, transformers) is missing")

PHI = {"model_type": "phi", "architectures": ["PhiForCausalLM"], "hidden_size": 64, "intermediate_size": 256,
       "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 512, "max_position_embeddings": 256,
       "partial_rotary_factor": 0.5, "tie_word_embeddings": False}
SMALL = dict(batch=2, input_length=32, output_length=4)


@pytest.fixture()
def phi_path(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(PHI))
    with pytest.raises(ModelConfigError):
        ModelConfig.from_hf_config(PHI, name="phi")                     # no hand model for this family
    return path


@pytest.fixture()
def phi(phi_path):
    if not HAS_EXTRA:
        pytest.skip("the optional 'auto' extra (torch, transformers) is missing")
    return engine.load_any_model(str(phi_path))


def test_exports():
    for name in ("fewest_devices", "layout_sweep", "sweep", "roofline_ceilings", "load_any_model", "is_automatic"):
        assert callable(getattr(engine, name)) and name in engine.__all__
    assert engine.load_any_model is auto.load_any_model


def test_load_any_model_prefers_the_hand_model():
    model = engine.load_any_model("meta-llama/Llama-3.1-8B")
    assert isinstance(model, ModelConfig) and not engine.is_automatic(model)


def _without_transformers(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "transformers" else real_find_spec(name, *args))


def test_without_the_extra_the_error_says_what_it_would_add(phi_path, monkeypatch, capsys):
    _without_transformers(monkeypatch)
    with pytest.raises(ModelConfigError, match=r"automatic decomposition .*llm-roofline\[auto\]"):
        engine.load_any_model(str(phi_path))
    assert main(["model", "show", str(phi_path)]) == 2
    error = capsys.readouterr().err
    assert "model_type" in error and 'pip install "llm-roofline[auto]"' in error and "\n" == error[-1]


@needs_extra
def test_estimate_dispatches_to_the_traced_table(phi, devices):
    hardware = devices["H100-SXM"]
    assert engine.is_automatic(phi)
    scenario = engine.Scenario(phase="request", **SMALL)
    traced = auto.decompose_columns(phi, scenario)
    for method in ("roofline", "hierarchical", "realistic", "realistic-graph"):
        result = engine.estimate(hardware, phi, scenario, method=method)
        assert result.ttft_s > 0 and result.tpot_s > 0
        assert any(note.startswith("automatic decomposition (traced with transformers ") for note in result.notes)
        assert set(result.kernels["name"]) == set(traced["name"])
        assert "self_attn.q_proj" in set(result.kernels["name"])
    assert result.memory.weights_bytes == phi.params_total * 2
    assert result.experts_touched == {}
    # engine.decompose dispatches too
    assert set(engine.decompose(phi, scenario)["name"]) == set(traced["name"])


@needs_extra
@pytest.mark.parametrize("field, value", [("tp", 2), ("pp", 2), ("ep", 2), ("chunked_prefill", True),
                                          ("routing_skew", 1.0)])
def test_estimate_refuses_what_the_traced_table_does_not_model(phi, devices, field, value):
    extra = {"chunk_size": 64} if field == "chunked_prefill" else {}
    scenario = engine.Scenario(phase="request", **SMALL, **extra, **{field: value})
    with pytest.raises(engine.ScenarioError, match=field):
        engine.estimate(devices["H100-SXM"], phi, scenario)


@needs_extra
def test_estimate_refuses_the_seed_method(phi, devices):
    with pytest.raises(engine.ScenarioError, match="seed method"):
        engine.estimate(devices["H100-SXM"], phi, engine.Scenario(phase="prefill", **SMALL), method="seed")


@needs_extra
def test_data_parallel_replicas_multiply_the_throughput(phi, devices):
    one = engine.estimate(devices["H100-SXM"], phi, engine.Scenario(phase="request", **SMALL))
    two = engine.estimate(devices["H100-SXM"], phi, engine.Scenario(phase="request", dp=2, **SMALL))
    assert two.tpot_s == pytest.approx(one.tpot_s)
    assert two.tokens_per_s == pytest.approx(2 * one.tokens_per_s)
    assert two.memory.total_all_devices_bytes == pytest.approx(2 * one.memory.total_all_devices_bytes)


@needs_extra
def test_sweeps_and_fewest_devices_take_automatic_models(phi, devices):
    hardware = devices["H100-SXM"]
    scenario = engine.Scenario(phase="decode", **SMALL)
    frame = engine.sweep(hardware, phi, scenario, "batch", [1, 4])
    assert list(frame["value"]) == [1, 4]
    layouts = engine.layout_sweep(hardware, phi, scenario, "tp", (1, 2))
    assert layouts.loc[0, "error"] == "" and "tp=2" in layouts.loc[1, "error"]
    fit = engine.fewest_devices(hardware, phi, scenario)
    assert (fit.devices, fit.tp, fit.pp) == (1, 1, 1)


@needs_extra
def test_cli_model_show_and_estimate(phi_path, capsys):
    assert main(["model", "show", str(phi_path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["model_type"] == "phi" and shown["decomposition"].startswith("automatic")
    assert shown["params_total"] > 0 and shown["kv_cache_bytes_per_token"] > 0

    common = ["estimate", "--hardware", "H100-SXM", "--model", str(phi_path), "--input-len", "32",
              "--output-len", "4", "--batch", "2"]
    assert main(common + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tpot_s"] > 0 and data["experts_touched"] == {}
    assert any(note.startswith("automatic decomposition") for note in data["notes"])
    assert main(common) == 0
    assert "note: automatic decomposition (traced with transformers" in capsys.readouterr().out
    assert main(common + ["--tp", "2"]) == 2
    assert "tp=2" in capsys.readouterr().err
    assert main(common + ["--method", "seed"]) == 2
    assert "seed method" in capsys.readouterr().err


def test_cli_prints_experts_touched(capsys):
    common = ["estimate", "--hardware", "H100-SXM", "--model", "mistralai/Mixtral-8x7B-v0.1", "--phase", "decode",
              "--batch", "4"]
    assert main(common) == 0
    assert "experts      decode 5.47 of 8 routed experts read per MoE layer per step (top-2, uniform routing)" in \
        capsys.readouterr().out
    assert main(common + ["--routing-skew", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["scenario"]["routing_skew"] == 1.0 and 2 < data["experts_touched"]["decode"] < 5.46875
    with pytest.raises(SystemExit) as usage:         # a usage mistake: one line, status 2
        main(common + ["--routing-skew", "-1"])
    assert usage.value.code == 2 and "--routing-skew: expected a number >= 0" in capsys.readouterr().err
    assert main(["estimate", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--phase", "decode"]) == 0
    assert "experts " not in capsys.readouterr().out
