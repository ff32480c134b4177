"""Mixed weight dtypes (Scenario.unquantized_modules): a quantized checkpoint's excluded modules keep bf16 weights.

Oracles are hand arithmetic from the models' published shapes:
Llama-3.1-8B: hidden 4096, 32 query heads and 8 KV heads of 128, MLP 14336, vocabulary 128256, 32 layers.
DeepSeek-V3: hidden 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512, nope 128 / rope 64 / v 128 head dims,
256 routed experts of 2048, one shared expert of 2048, 3 dense layers of 18432, 61 layers.
nvfp4: 0.5 B per value + one 1-byte scale per 16 = 0.5625 B.
"""

from __future__ import annotations

import json

import pytest

import engine
from engine.results.memory import weights_per_device
from engine.workload.parallel import parallel_layout

H, Q, KV, HEAD, INTER, VOCAB, LAYERS = 4096, 32, 8, 128, 14336, 128256, 32
NVFP4 = 0.5 + 1 / 16


def _rows(model, **fields):
    table = engine.decompose(model, engine.Scenario(phase="decode", batch=1, input_length=1024, **fields))
    return table.set_index("name")


def test_llama_attention_and_head_stay_bf16_while_the_mlp_is_nvfp4(llama8b):
    rows = _rows(llama8b, weight_dtype="nvfp4", activation_dtype="nvfp4",
                 unquantized_modules=("attention", "lm_head"))
    qkv, out, up, head = (rows.loc[name] for name in ("Q/K/V*W", "O*W", "FFN_up", "LM_head"))
    assert qkv["weight_bytes"] == H * (Q + 2 * KV) * HEAD * 2 == 50_331_648
    assert qkv["activation_bytes"] == (H + (Q + 2 * KV) * HEAD) * 2      # one token in and out, bf16
    assert out["weight_bytes"] == H * H * 2
    assert qkv["dtype"] == out["dtype"] == head["dtype"] == "bf16"
    assert head["weight_bytes"] == H * VOCAB * 2
    assert up["dtype"] == "fp4"                                            # nvfp4 x nvfp4
    assert up["weight_bytes"] == pytest.approx(H * INTER * NVFP4, rel=1e-15)
    assert up["activation_bytes"] == pytest.approx((H + INTER) * NVFP4, rel=1e-15)


def test_unquantized_modules_multiply_in_the_wider_of_their_dtype_and_the_activations(llama8b):
    fp8 = _rows(llama8b, weight_dtype="nvfp4", activation_dtype="bf16", unquantized_modules="attention_output",
                unquantized_dtype="fp8")
    assert fp8.loc["O*W", "dtype"] == "bf16"                 # fp8 weights, bf16 activations: weight-only fp8
    assert fp8.loc["O*W", "weight_bytes"] == H * H * 1
    assert fp8.loc["Q/K/V*W", "weight_bytes"] == pytest.approx(H * (Q + 2 * KV) * HEAD * NVFP4, rel=1e-15)
    w8a8 = _rows(llama8b, weight_dtype="nvfp4", activation_dtype="nvfp4", unquantized_modules=["attention_output"],
                 unquantized_dtype="fp8")
    assert w8a8.loc["O*W", "dtype"] == "fp8" and w8a8.loc["O*W", "activation_bytes"] == 2 * H * 1


def test_listing_every_module_in_the_weight_dtype_changes_nothing(llama8b):
    every = ("attention", "dense_mlp", "shared_experts", "router", "embedding", "lm_head")
    plain = engine.decompose(llama8b, engine.Scenario(phase="decode", batch=4, weight_dtype="fp8",
                                                      activation_dtype="fp8"))
    listed = engine.decompose(llama8b, engine.Scenario(phase="decode", batch=4, weight_dtype="fp8",
                                                       activation_dtype="fp8", unquantized_modules=every,
                                                       unquantized_dtype="fp8"))
    assert plain.equals(listed)


@pytest.fixture(scope="module")
def deepseek():
    return engine.load_model("deepseek-ai/DeepSeek-V3")


def test_mla_projections_stay_bf16_and_the_output_projection_and_experts_take_nvfp4(deepseek):
    rows = _rows(deepseek, tp=8, ep=8, weight_dtype="nvfp4", activation_dtype="nvfp4", kv_dtype="fp8",
                 unquantized_modules=("attention_qkv", "router", "lm_head"))
    heads = 128 // 8
    # q_a and kv_a as one GEMM (mla.FUSED_A_PROJECTION), replicated over tp
    assert rows.loc["QKV_a*W", "weight_bytes"] == 7168 * (1536 + 512 + 64) * 2
    assert rows.loc["Q_b*W", "weight_bytes"] == 1536 * heads * (128 + 64) * 2
    assert rows.loc["Q*W_UK", "weight_bytes"] == heads * 128 * 512 * 2          # kv_b_proj's W_UK, absorbed
    assert rows.loc["O*W_UV", "weight_bytes"] == heads * 512 * 128 * 2
    assert rows.loc["MoE_router", "weight_bytes"] == (7168 + 1) * 256 * 2      # + the score-correction bias
    assert {rows.loc[name, "dtype"] for name in ("QKV_a*W", "Q_b*W", "Q*W_UK", "MoE_router")} == {"bf16"}
    assert rows.loc["O*W", "weight_bytes"] == pytest.approx(heads * 128 * 7168 * NVFP4, rel=1e-15)
    assert rows.loc["Shared_up", "weight_bytes"] == pytest.approx(7168 * 2048 / 8 * NVFP4, rel=1e-15)
    assert {rows.loc[name, "dtype"] for name in ("O*W", "Shared_up", "Expert_up", "FFN_up")} == {"fp4"}


def test_weights_in_memory_count_each_module_at_its_size(llama8b):
    layout = parallel_layout(llama8b, engine.Scenario(phase="decode"))
    attention = LAYERS * (H * (Q + 2 * KV) * HEAD + Q * HEAD * H)
    mlp = LAYERS * 3 * H * INTER
    norms = (2 * LAYERS + 1) * H
    embedding = head = VOCAB * H
    device, every = weights_per_device(llama8b, layout, "nvfp4", ("attention", "embedding", "lm_head"), "bf16")
    expected = (attention + embedding + head) * 2 + (mlp + norms) * NVFP4
    assert device == pytest.approx(expected, rel=1e-12) and every == pytest.approx(expected, rel=1e-12)
    memory = engine.estimate(engine.load_specs()["H100-SXM"], llama8b, phase="decode", weight_dtype="nvfp4",
                             unquantized_modules=("attention", "embedding", "lm_head")).memory
    assert memory.weights_bytes == pytest.approx(expected, rel=1e-12)


def test_bf16_attention_makes_a_decode_step_slower_than_all_nvfp4(devices, llama8b):
    hardware = devices["B200"]
    fields = dict(phase="decode", batch=8, input_length=2048, weight_dtype="nvfp4", activation_dtype="nvfp4",
                  kv_dtype="fp8")
    quantized = engine.estimate(hardware, llama8b, **fields)
    mixed = engine.estimate(hardware, llama8b, unquantized_modules="attention,lm_head", **fields)
    assert mixed.tpot_s > quantized.tpot_s
    assert any("keep bf16 weights" in note for note in mixed.notes)


def test_bad_modules_and_dtypes_are_named():
    with pytest.raises(ValueError, match="'experts' is not a module group.*attention_qkv"):
        engine.Scenario(unquantized_modules=("experts",))
    with pytest.raises(ValueError, match="unquantized_dtype 'fp5' is not a known dtype"):
        engine.Scenario(unquantized_modules=("attention",), unquantized_dtype="fp5")
    assert engine.Scenario(unquantized_modules="attention, lm_head").unquantized_modules == (
        "attention_output", "attention_qkv", "lm_head")


def test_serve_takes_the_unquantized_modules(devices, llama8b):
    fields = dict(concurrency=4, input_length=512, output_length=64, weight_dtype="nvfp4",
                  activation_dtype="nvfp4", kv_dtype="fp8")
    quantized = engine.serve(devices["B200"], llama8b, **fields)
    mixed = engine.serve(devices["B200"], llama8b, unquantized_modules=("attention", "lm_head"), **fields)
    assert mixed.tpot_s > quantized.tpot_s
    assert mixed.kv_capacity_bytes < quantized.kv_capacity_bytes          # bigger weights, less room for the cache


def test_the_validation_table_agrees_with_the_shipped_deepseek_nvfp4_exclusions():
    """nvidia/DeepSeek-V3.1-NVFP4's hf_quant_config (aiconfigurator's model_configs) excludes the MLA's input
    projections and lm_head, not o_proj: the DeepSeek nvfp4 runs are expressed so."""
    pytest.importorskip("aiconfigurator_core")
    from engine.calibration.silicon.package import resolve_root
    from engine.serving.validation_express import UNQUANTIZED_MODULES, model_configs_dir
    path = model_configs_dir(resolve_root()) / "nvidia--DeepSeek-V3.1-NVFP4_hf_quant_config.json"
    if not path.is_file():
        pytest.skip(f"{path} not shipped by this package version")
    excluded = json.loads(path.read_text())["quantization"]["exclude_modules"]
    layer = [name.rsplit(".", 1)[-1] for name in excluded if name.startswith("model.layers.3.")]
    assert sorted(layer) == ["kv_a_proj_with_mqa", "kv_b_proj", "q_a_proj", "q_b_proj"]
    assert "lm_head" in excluded
    modules = UNQUANTIZED_MODULES[("nvfp4", "deepseek")]
    assert "attention_qkv" in modules and "lm_head" in modules and "attention_output" not in modules


def test_the_cli_takes_the_modules_and_names_a_bad_one(capsys):
    from engine.cli.entry import main
    args = ["estimate", "--hardware", "B200", "--model", "meta-llama/Llama-3.1-8B", "--phase", "decode",
            "--weight-dtype", "nvfp4", "--act-dtype", "nvfp4", "--json"]
    assert main(args) == 0
    quantized = json.loads(capsys.readouterr().out)
    assert main([*args, "--unquantized-modules", "attention,lm_head"]) == 0
    mixed = json.loads(capsys.readouterr().out)
    assert mixed["memory"]["weights_bytes"] > quantized["memory"]["weights_bytes"]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--unquantized-modules", "attention,experts"])
    assert exit_info.value.code == 2
    assert "'experts' is not a module group" in capsys.readouterr().err


def test_express_keeps_the_checkpoints_unquantized_modules_only_when_asked():
    """gpt-oss-120b's MXFP4 checkpoint converts only its experts (modules_to_not_convert: attention, router,
    embedding, lm_head): with checkpoint_modules the run's serve() fields say so; by default every weight is nvfp4."""
    import pandas as pd
    from pathlib import Path
    from engine.serving import validation_express
    root = Path(__file__).parent / "data" / "aiconfigurator_serving" / "systems"
    run = next(pd.DataFrame([dict(device="B200", system="b200_sxm", mode="agg", attention_dp=pd.NA,
                                  model_path="openai/gpt-oss-120b", gemm_quant_mode="nvfp4", concurrency=16,
                                  max_batch=16, moe_ep=pd.NA, moe_tp=pd.NA, input_length=1024, output_length=512,
                                  tp=2, pp=1, backend="vllm")]).itertuples(index=False))
    devices, models = engine.load_specs(), validation_express.ModelSource(root)
    _, _, plain = validation_express.express(run, devices, models)
    assert "unquantized_modules" not in plain and plain["weight_dtype"] == "nvfp4"
    _, model, mixed = validation_express.express(run, devices, models, checkpoint_modules=True)
    assert set(mixed["unquantized_modules"]) == {"attention", "router", "embedding", "lm_head"}
    assert engine.Scenario(unquantized_modules=mixed["unquantized_modules"]).unquantized_modules == (
        "attention_output", "attention_qkv", "embedding", "lm_head", "router")
    served = engine.serve(devices["B200"], model, **{**mixed, "concurrency": 2, "output_length": 32})
    assert served.tpot_s > 0


def test_weight_only_runs_are_always_read_as_their_checkpoint():
    """Kimi-K2.5's int4 checkpoint quantizes only the routed experts: its int4_wo runs keep attention, shared experts,
    dense MLPs, router, embedding and lm_head in bf16 by default (validation_express.CHECKPOINT_MODULES_ALWAYS), so
    no dense GEMM of theirs is timed as a weight-only kernel; an nvfp4 run only when asked."""
    import pandas as pd
    from engine.serving import validation_express
    rows = pd.DataFrame([dict(model_path="moonshotai/Kimi-K2.5", gemm_quant_mode=quant) for quant in ("int4_wo", "nvfp4")])
    int4, nvfp4 = rows.itertuples(index=False)
    assert set(validation_express.modules_kept_unquantized(int4, False)) == {
        "attention", "shared_experts", "dense_mlp", "router", "embedding", "lm_head"}
    assert validation_express.modules_kept_unquantized(nvfp4, False) == ()
    assert set(validation_express.modules_kept_unquantized(nvfp4, True)) == {"attention", "router", "embedding",
                                                                               "lm_head"}
