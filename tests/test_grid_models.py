"""Sweeps over several models (engine/explore/model_axis.py) and the weights-per-device column.

Oracles: published parameter counts (GPT-2 124,439,808 from its Hugging Face model card / `num_parameters()`;
Llama-3.1-8B 8,030,261,248 from its safetensors index) times bytes per value (bf16 2, fp8 1), and, under
tensor parallelism, the architecture's replicated tensors counted by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine
from engine.explore.grid import METRIC_COLUMNS, GridError, sweep_grid, sweep_points

H100 = engine.load_hardware("H100-SXM")
GPT2_ID, LLAMA_ID = "openai-community/gpt2", "meta-llama/Llama-3.1-8B"
GPT2, LLAMA = engine.load_model(GPT2_ID), engine.load_model(LLAMA_ID)
GPT2_PARAMS = 124_439_808          # published; the LM head is tied to the token embedding
LLAMA_PARAMS = 8_030_261_248       # published (safetensors metadata)
DECODE = engine.Scenario(phase="decode", batch=1, input_length=128, output_length=1)


def gpt2_params_per_device_at_tp2() -> float:
    """GPT-2 (12 layers, hidden 768, vocab 50,257, 1,024 positions) on one of two tensor-parallel ranks:
    the learned position table and the layer norms (weight + bias) stay whole on every rank; the token
    embedding is split by vocabulary rows (ceil(50,257 / 2) = 25,129 rows each); everything else halves."""
    hidden, layers = 768, 12
    positions = 1024 * hidden
    norms = layers * 2 * (2 * hidden) + 2 * hidden          # ln_1, ln_2 per layer + ln_f
    embedding = 50_257 * hidden
    split = GPT2_PARAMS - positions - norms - embedding
    return split / 2 + positions + norms + math.ceil(50_257 / 2) * hidden


def llama_params_per_device_at_tp2() -> float:
    """Llama-3.1-8B over two ranks: its RMSNorm weights (2 per layer x 32 + the final one, 4,096 each)
    stay whole; the rest halves (8 KV heads and 128,256 vocabulary rows divide evenly)."""
    norms = (2 * 32 + 1) * 4096
    return (LLAMA_PARAMS - norms) / 2 + norms


@pytest.mark.parametrize("tp, dtype, expected_bytes", [
    (1, "bf16", GPT2_PARAMS * 2),
    (2, "bf16", None),
    (1, "fp8", GPT2_PARAMS * 1),
])
def test_weights_per_device_of_gpt2_are_its_published_parameters_times_bytes_per_value(tp, dtype, expected_bytes):
    expected = gpt2_params_per_device_at_tp2() * 2 if expected_bytes is None else expected_bytes
    frame = sweep_grid(GPT2, DECODE, {"tp": [tp], "weight_dtype": [dtype]}, hardware=H100)
    assert frame["error"].iloc[0] == ""
    assert frame["weights_per_device_bytes"].iloc[0] == pytest.approx(expected, rel=1e-12)


def test_weights_per_device_of_llama_at_tp1_and_tp2_on_the_fast_and_point_by_point_paths():
    expected = {1: LLAMA_PARAMS * 2, 2: llama_params_per_device_at_tp2() * 2}
    for scenario in (DECODE, DECODE.model_copy(update={"phase": "chunked", "input_length": 512})):
        frame = sweep_grid(LLAMA, scenario, {"tp": [1, 2]}, hardware=H100)   # chunked runs point by point
        assert (frame["error"] == "").all(), frame["error"].tolist()
        for tp, bytes_ in expected.items():
            got = frame.loc[frame["tp"] == tp, "weights_per_device_bytes"].iloc[0]
            assert got == pytest.approx(bytes_, rel=1e-12), (scenario.phase, tp)
        assert (frame["weights_per_device_bytes"] < frame["memory_per_device_bytes"]).all()


def test_weights_per_device_is_a_metric_column_next_to_the_memory_total():
    assert "weights_per_device_bytes" in METRIC_COLUMNS
    assert METRIC_COLUMNS.index("weights_per_device_bytes") + 1 == METRIC_COLUMNS.index("memory_per_device_bytes")


@pytest.mark.parametrize("models", [{GPT2_ID: GPT2, LLAMA_ID: LLAMA}, [GPT2_ID, LLAMA_ID], [GPT2, LLAMA]])
def test_several_models_are_a_model_axis_that_multiplies_the_points(models):
    grid = {"batch": [1, 4, 16], "tp": [1, 2]}
    frame = sweep_grid(models, DECODE, grid, hardware=H100)
    assert len(frame) == 2 * 3 * 2
    assert list(frame.columns[:3]) == ["model", "batch", "tp"]          # the model axis first (slowest)
    assert frame["model"].tolist() == [GPT2_ID] * 6 + [LLAMA_ID] * 6
    assert (frame["error"] == "").all()
    for name, model in ((GPT2_ID, GPT2), (LLAMA_ID, LLAMA)):   # each model's rows are that model's own sweep
        alone = sweep_grid(model, DECODE, grid, hardware=H100)
        mine = frame[frame["model"] == name].reset_index(drop=True)
        for column in ("tpot_s", "weights_per_device_bytes", "memory_per_device_bytes", "fits"):
            np.testing.assert_allclose(mine[column].astype(float), alone[column].astype(float), rtol=1e-12)
    weights = frame.groupby("model")["weights_per_device_bytes"].max()
    assert weights[LLAMA_ID] > 30 * weights[GPT2_ID]                    # 16 GB against 0.25 GB at tp=1


def test_a_grid_that_names_the_model_field_picks_from_the_mapping():
    frame = sweep_grid({"small": GPT2, "large": LLAMA}, DECODE, {"batch": [1], "model": ["large"]}, hardware=H100)
    assert frame["model"].tolist() == ["large"]
    assert frame["weights_per_device_bytes"].iloc[0] == pytest.approx(LLAMA_PARAMS * 2, rel=1e-12)


def test_a_model_axis_with_a_device_axis_gives_every_pair():
    frame = sweep_grid([GPT2_ID, LLAMA_ID], DECODE, {"device": ["H100-SXM", "A100-80GB-SXM"]})
    assert sorted(zip(frame["model"], frame["device"])) == sorted(
        (m, d) for m in (GPT2_ID, LLAMA_ID) for d in ("H100-SXM", "A100-80GB-SXM"))
    a100 = frame[(frame["model"] == LLAMA_ID) & (frame["device"] == "A100-80GB-SXM")]
    h100 = frame[(frame["model"] == LLAMA_ID) & (frame["device"] == "H100-SXM")]
    assert a100["tpot_s"].iloc[0] > h100["tpot_s"].iloc[0]              # less memory bandwidth, slower decode


@pytest.mark.parametrize("models", [[GPT2_ID, "nobody/no-such-model"], {"gpt2": GPT2}])
def test_an_unknown_model_id_names_itself(models, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    grid = {"batch": [1]} if isinstance(models, list) else {"model": ["gpt2", "nobody/no-such-model"]}
    with pytest.raises(GridError, match=r"grid field 'model': model 'nobody/no-such-model'"):
        sweep_grid(models, DECODE, grid, hardware=H100)


@pytest.mark.parametrize("models, expected", [({}, "empty mapping"), ([], "empty list")])
def test_an_empty_set_of_models_says_so(models, expected):
    with pytest.raises(GridError, match=expected):
        sweep_grid(models, DECODE, {"batch": [1]}, hardware=H100)


def test_explicit_points_with_several_models_need_a_model_column():
    import pandas as pd
    with pytest.raises(GridError, match="'model' column"):
        sweep_points({"a": GPT2, "b": LLAMA}, DECODE, pd.DataFrame({"batch": [1, 2]}), hardware=H100)
    frame = sweep_points({"a": GPT2, "b": LLAMA}, DECODE, pd.DataFrame({"model": ["b", "a"], "batch": [1, 2]}),
                         hardware=H100)
    assert frame["weights_per_device_bytes"].tolist() == pytest.approx([LLAMA_PARAMS * 2, GPT2_PARAMS * 2])
