"""`serve` scored against measured serving runs (a shipped subset of aiconfigurator-core's silicon_sample.csv):
runs expressed as serve() calls, cross-validated accuracy floors, and floors that a 15% change of a fitted
constant breaks."""

from pathlib import Path

import pandas as pd
import pytest

from engine.serving import validation
from engine.calibration.silicon.serving import read_serving_runs
from engine.hardware.specs import load_specs

SUBSET = Path(__file__).parent / "data" / "aiconfigurator_serving"
ROOT = SUBSET / "systems"       # no model_configs beside it: the subset's models are all in the catalog


@pytest.fixture(scope="module")
def runs():
    return read_serving_runs(path=SUBSET / "silicon_sample.csv")


@pytest.fixture(scope="module")
def scored(runs):
    return validation.score_runs(runs, load_specs(), ROOT)


def run_row(**fields):
    base = dict(device="H100-SXM", system="h100_sxm", mode="agg", attention_dp=pd.NA, model_path="openai/gpt-oss-120b",
                gemm_quant_mode="nvfp4", concurrency=16, max_batch=16, moe_ep=pd.NA, moe_tp=pd.NA, input_length=1024,
                output_length=512, tp=2, pp=1, backend="vllm")
    return next(pd.DataFrame([{**base, **fields}]).itertuples(index=False))   # as score_runs reads runs


def test_express_maps_precision_layout_and_refusals():
    devices, models = load_specs(), validation.ModelSource(ROOT)
    hardware, model, fields = validation.express(run_row(), devices, models)
    # Hopper has no fp4 matrix rate: nvfp4 runs there are weight-only (bf16 activations), fp8 KV cache
    assert (fields["weight_dtype"], fields["activation_dtype"], fields["kv_dtype"]) == ("nvfp4", "bf16", "fp8")
    assert (hardware.name, model.name, fields["concurrency"], fields["tp"], fields["ep"]) == \
        ("H100-SXM", "openai/gpt-oss-120b", 16, 2, 1)
    _, _, blackwell = validation.express(run_row(device="B200", system="b200_sxm"), devices, models)
    assert blackwell["activation_dtype"] == "nvfp4"
    _, _, llama = validation.express(run_row(model_path="meta-llama/Llama-3.1-70B", gemm_quant_mode=float("nan"),
                                             concurrency=pd.NA, max_batch=24), devices, models)
    assert (llama["weight_dtype"], llama["concurrency"]) == ("bf16", 24)     # no concurrency note: the batch size
    assert "no workbook device" in validation.express(run_row(device=None, system="l40s"), devices, models)
    assert "attention data parallelism" in validation.express(run_row(attention_dp=4), devices, models)
    # attention data parallelism over 4 replicas, experts over 2 x 4 devices: one expert-parallel group of 8
    _, _, wide = validation.express(run_row(tp=1, attention_dp=4, moe_tp=2, moe_ep=4, concurrency=64), devices,
                                    models)
    assert (wide["tp"], wide["dp"], wide["ep"]) == (1, 4, 8)
    # attention_dp = moe_tp x moe_ep with moe_tp = moe_ep (2 x 2): read as moe_ep ranks (validation.attention_dp_reading)
    _, _, square = validation.express(run_row(tp=1, attention_dp=4, moe_tp=2, moe_ep=2), devices, models)
    assert (square["tp"], square["dp"], square["ep"]) == (1, 2, 2)
    assert "no config" in validation.express(run_row(model_path="zhipuai/GLM-5"), devices, models)
    # a layout field written as 0 (15 Qwen3-32B runs on GB200 write attention_dp_size 0) means no split
    _, _, zero = validation.express(run_row(model_path="meta-llama/Llama-3.1-70B", attention_dp=0, moe_tp=0,
                                            moe_ep=0), devices, models)
    assert (zero["dp"], zero["ep"]) == (1, 1)


def test_express_infers_attention_dp_and_names_layouts_that_cannot_run(tmp_path):
    devices, models = load_specs(), validation.ModelSource(ROOT)
    # experts over moe_tp 4 devices, tp 1, no attention_dp written: 4 data-parallel attention replicas
    _, _, wide = validation.express(run_row(tp=1, moe_tp=4, moe_ep=1), devices, models)
    assert (wide["tp"], wide["dp"], wide["ep"]) == (1, 4, 4)
    _, _, plain = validation.express(run_row(tp=2, moe_tp=2, moe_ep=1), devices, models)
    assert (plain["dp"], plain["ep"]) == (1, 2)
    # DeepSeek-V3 shapes (128 heads, 256 experts) at tp 36, moe_tp 36, attention_dp 1 (GB200 runs of the file)
    reason = validation.express(run_row(model_path="deepseek-ai/DeepSeek-V3", tp=36, moe_tp=36, moe_ep=1,
                                        attention_dp=1), devices, models)
    assert isinstance(reason, str) and "tp=36" in reason and "128 heads" in reason and "256 experts" in reason
    # a run named for a checkpoint the package has no config for reads its architecture's config
    from engine.models import load_catalog_config
    import json
    (tmp_path / "model_configs").mkdir()
    (tmp_path / "model_configs" / "deepseek-ai--DeepSeek-R1_config.json").write_text(
        json.dumps(load_catalog_config("deepseek-ai/DeepSeek-V3")))
    aliased = validation.ModelSource(tmp_path / "systems")
    _, model, _ = validation.express(run_row(model_path="nvidia/DeepSeek-R1-NVFP4", tp=8, moe_tp=1, moe_ep=8),
                                     devices, aliased)
    assert model.attention_kind == "mla" and model.num_experts == 256


def test_every_subset_run_is_scored_or_says_why(scored, runs):
    assert len(scored) == len(runs)
    assert (scored["reason"] == "").sum() >= 50
    assert scored.loc[scored["reason"] != "", "reason"].str.len().gt(10).all()
    ok = scored[scored["reason"] == ""]
    assert (ok["ttft_s"] > 0).all() and (ok["tpot_s"] > 0).all()


def test_cross_validated_floors(scored):
    # host-side times fitted without the scored system (per backend), then scored on it
    held_out = validation.summary(validation.errors(validation.leave_one_system_out(scored))).iloc[0]
    # 0.096 since the per-decoding-request iteration overhead and the arrival wait are fitted per fold too (0.145
    # before; 0.110 before the MoE grouped-GEMM weight-stream efficiency 0.85 slowed the subset's MoE decode steps).
    # 0.1025 with the kernel-generation decode attention form shipped (0.076 before it: decode attention on A100 and
    # Hopper got slower, serving terms refitted per fold; on the 441-run benchmark TPOT median went 13.0% -> 13.2%,
    # p90 44.3% -> 43.0%, docs/accuracy.md): floor 0.10 -> 0.105, re-measured, not a target. 0.108 with h/moe3's MoE
    # form (the MoE tables' weight stream at the full achievable fraction, 0.90 -> 1.0, makes the subset's MoE decode
    # steps faster; without the new top-k and grouped-launch cycles it would be 0.118): floor 0.105 -> 0.11.
    # h/dattn5's decode stream (per-pair stream time added, the split's ramp, Hopper's 8-bit MHA conversion): 0.1066
    # -> 0.1149 held out (re-measured side by side; in-sample 0.1012 -> 0.1024, bias +0.0444 -> +0.0419, per system
    # within 0.1 point: the per-fold refit of the serving terms on 56 runs moves): floor 0.11 -> 0.12
    assert held_out["tpot_median"] <= 0.12
    # 0.279 with them (0.308 before: the start-up burst weighed as C / 1000, clients drifting apart; 0.557 before
    # that; docs/serving.md); 0.314 after h/kernacc's prefill-attention refit made prefills slower (the serving terms
    # are not yet refitted on the new kernels); 0.234 after h/gemm2's GEMM model condition (TPOT 0.076); with the fits
    # weighing the p90 beside the median (TAIL_WEIGHT 0.25 TPOT, 0.5 TTFT; h/serve2: 0.262 on the kernels before
    # h/gemm2 and the decode attention form) 0.252 with all three merged (TPOT 0.1025 either way). Re-measured on
    # h/serve5 (2026-11-27): 0.2644 (TPOT 0.1066) on main's kernels before it; 0.2720 (TPOT 0.1024) with TensorRT-LLM's
    # prompts run whole (its 24 subset runs; on all 3,107 runs TensorRT-LLM's held-out TTFT median went 35.2% -> 32.0%,
    # docs/serving.md); 0.194 (TPOT 0.0905) with the prefill time scale fitted per fold from 0.8, 0.9, 1
    # (validation.PREFILL_SCALE_GRID): floor 0.27 -> 0.24, re-measured, not a target
    # Merged with h/dattn5 (2026-11-27): 0.194 (TPOT 0.0889)
    # h/serve6 (merged with h/dattn6, 2026-11-27): TensorRT-LLM's folds fit a request overhead part per routed
    # expert-layer and keep the prefill time scale at 1 (validation.backend_grids): 0.264 (TPOT 0.093); its 24 subset
    # runs' folds pick 0.8 when allowed (0.182, TPOT 0.090; without the expert-layer part 0.194), its 1,293 runs' folds
    # chose 1 in every full run: floor 0.24 -> 0.27, re-measured, not a target
    assert held_out["ttft_median"] <= 0.27


def test_shipped_constants_floor_breaks_with_a_15_percent_change(runs, scored):
    floor = 0.115     # TPOT median with the shipped constants (0.112 when written; 0.105 after merging h/kernacc's and
    # h/decode's kernel refits, 0.138 with the change below)
    assert validation.summary(validation.errors(scored)).iloc[0]["tpot_median"] <= floor
    # the achievable memory-bandwidth fraction (fitted per device on measured kernels) 15% lower: decode steps,
    # which stream weights and KV cache, slow down by 1/0.85 and the floor no longer holds
    changed = {name: hw.model_copy(update={"achievable_memory_bandwidth_fraction": 0.85 * (
        hw.achievable_memory_bandwidth_fraction or 0.815)}) for name, hw in load_specs().items()}
    worse = validation.summary(validation.errors(validation.score_runs(runs, changed, ROOT))).iloc[0]
    assert worse["tpot_median"] > floor


def test_refit_host_side_times_move_ttft_and_tpot_as_stated(scored):
    ok = scored[scored["reason"] == ""]
    shifted = validation.with_overheads(ok, ok["iteration_overhead_s"] + 1e-3, ok["request_overhead_s"] + 0.05)
    assert (shifted["tpot_s"] - ok["tpot_s"]).to_numpy() == pytest.approx(1e-3)
    assert (shifted["ttft_s"] - ok["ttft_s"]).to_numpy() == pytest.approx(
        (0.05 + 1e-3 * ok["first_token_iterations"]).to_numpy())


def in_bounds(summary) -> bool:
    """The shipped serving terms' accuracy on the subset: TPOT median and bias, TTFT median and bias (values
    when written: 0.112, +0.0199, 0.499, +0.442; a 15% change moves TPOT bias to +0.040 / -0.000 (graph latency
    overlap) and +0.0174 / +0.0233 (per-decoding-request overhead), TTFT bias to +0.408 / +0.501 (request overhead)
    and +0.417 / +0.471 (arrival wait share)). The request overheads fitted on all 3,107 runs (SGLang 195 ms,
    TensorRT-LLM 120 ms) are long for this subset's runs: its held-out TTFT median, refitted per fold, is 0.279."""
    # After merging h/kernacc's and h/decode's kernel refits (the serving terms not refitted on them): 0.105,
    # +0.018, 0.550, +0.443; 15% off moves TPOT to 0.120 / 0.091 (bias +0.037 / -0.004, graph latency overlap),
    # 0.091 / 0.109 (bias +0.0156 / +0.0225, per-decoding-request overhead), TTFT to 0.459 / 0.566 (bias +0.432 /
    # +0.529, request overhead) and 0.514 / 0.567 (bias +0.426 / +0.483, arrival wait share).
    # After h/gemm2's GEMM model condition (fp8 GEMMs in the clock-and-power efficiency with the activation-quantize
    # kernel, the chip-level power cap; bf16 as before), re-measured because GEMM constants changed: 0.1076, +0.0342,
    # 0.531, +0.464 (held-out TPOT 0.090 -> 0.076, TTFT 0.314 -> 0.234); 15% off moves TPOT to 0.120 / 0.086 (bias
    # +0.050 / +0.016, graph latency overlap), 0.100 / 0.112 (bias +0.029 / +0.037, per-decoding-request overhead),
    # TTFT to 0.463 / 0.576 (bias +0.447 / +0.523, request overhead) and 0.484 / 0.582 (bias +0.434 / +0.483,
    # arrival wait share).
    # After shipping the kernel-generation decode attention form (decode attention constants changed), re-measured:
    # 0.1046, +0.0369, 0.533, +0.465; 15% off moves TPOT to 0.119 / 0.091 (bias +0.054 / +0.025, graph latency
    # overlap), 0.099 / 0.113 (bias +0.033 / +0.042, per-decoding-request overhead), TTFT to 0.466 / 0.575 (bias
    # +0.447 / +0.523, request overhead) and 0.487 / 0.585 (bias +0.434 / +0.483, arrival wait share): TPOT median
    # 0.109 -> 0.107, TPOT bias band 0.032-0.036 -> 0.035-0.039 so that each of the eight changes still breaks it.
    # After the decode form's fifth step (stream cap, wide groups' fragments, Hopper's 8-bit kernel), re-measured:
    # 0.1068, +0.0423, 0.531, +0.465; 15% off moves TPOT to 0.121 / 0.084 (bias +0.054 / +0.029, graph latency
    # overlap), 0.098 / 0.113 (bias +0.037 / +0.045, per-decoding-request overhead), TTFT as before (request overhead
    # 0.462 / 0.575, bias +0.446 / +0.522; arrival wait share 0.485 / 0.582, +0.434 / +0.483): TPOT bias band
    # 0.035-0.039 -> 0.040-0.045.
    # With h/moe3's MoE form merged on top (top-k selection, experts held, fused quantize), re-measured: 0.1012,
    # +0.0439, 0.531, +0.465; 15% off moves TPOT bias to +0.060 / +0.029 (graph latency overlap), +0.033 / +0.047
    # (per-decoding-request overhead), TTFT bias to +0.447 / +0.504 (request overhead) and +0.434 / +0.483 (arrival
    # wait share): TPOT bias band -> 0.040-0.046.
    # With h/kern6's prefill attention form (the softmax's per-score work and CTA share, efficiency 0.76 -> 0.81; fp8
    # caches' prefills at the fp8 rate), re-measured: 0.1012, +0.0444, 0.533, +0.476 (TTFT bias +0.465 -> +0.476:
    # 16-bit prompts' attention slower); 15% off moves TTFT bias to +0.453 / +0.506 (request overhead) and +0.442 /
    # +0.495 (arrival wait share), TPOT bias to +0.034 / +0.047 (per-decoding-request overhead), TPOT to 0.118 / 0.078
    # (bias +0.060 / +0.030, graph latency overlap): TTFT bias band 0.455-0.47 -> 0.46-0.485.
    # With h/dattn5's decode stream, re-measured: 0.1024, +0.0419, 0.534, +0.476; 15% off moves TPOT bias to +0.057 /
    # +0.027 (graph latency overlap), +0.030 / +0.0450 (per-decoding-request overhead), TTFT bias to +0.452 / +0.504
    # (request overhead) and +0.442 / +0.495 (arrival wait share): TPOT bias band 0.040-0.046 -> 0.040-0.044.
    # With TensorRT-LLM's prompts run whole (no chunked prefill; h/serve5), re-measured: 0.1047, +0.0462, 0.4915, +0.4256
    # (TTFT bias +0.476 -> +0.426: the subset's TensorRT-LLM prompts no longer spill into a second iteration); 15% off
    # moves TPOT to 0.123 / 0.083 (bias +0.060 / +0.032, graph latency overlap), 0.102 / 0.108 (bias +0.036 / +0.052,
    # per-decoding-request overhead), TTFT bias to +0.367 / +0.475 (request overhead) and +0.401 / +0.436 (arrival
    # wait share): TPOT bias band -> 0.040-0.048, TTFT bias band -> 0.415-0.43.
    # Merged (h/dattn5 + h/serve5, 2026-11-27), re-measured: 0.1047, +0.0453, 0.4915, +0.4257; 15% off moves TPOT bias to
    # +0.059 / +0.031 (graph latency overlap), +0.032 / +0.0488 (per-decoding-request overhead), TTFT bias to +0.367 /
    # +0.476 (request overhead) and +0.401 / +0.436 (arrival wait share): h/serve5's bands hold.
    # With TensorRT-LLM's request overhead as 60 ms + 8 us per routed expert-layer (120 ms flat before; h/serve6),
    # re-measured: 0.1047, +0.0453, 0.4208, +0.3530 (its 24 subset runs' TTFT bias +0.332 -> +0.207); 15% off moves TTFT
    # to 0.380 / 0.498 (bias +0.271 / +0.404, request overhead) and bias +0.337 / +0.374 (arrival wait share), TPOT as
    # above (bias +0.059 / +0.031, graph latency overlap; +0.032 / +0.049, per-decoding-request overhead): TTFT bias band
    # 0.415-0.43 -> 0.345-0.36, TTFT median bound 0.54 -> 0.45.
    # With TensorRT-LLM's runs recorded with tensor-parallel experts read without an all-to-all (h/serve13,
    # validation_express.TENSOR_PARALLEL_MOE_BACKENDS), re-measured: 0.1022, +0.0427, 0.407, +0.353; 15% off moves TPOT
    # bias to +0.056 / +0.029 (graph latency overlap) and +0.031 / +0.0467 (per-decoding-request overhead), TTFT bias to
    # +0.265 / +0.404 (request overhead) and +0.337 / +0.374 (arrival wait share): TPOT bias band 0.040-0.048 ->
    # 0.040-0.046 (+0.0467 was inside the old one).
    # With vLLM's async scheduling read per run (h/llamattft: the subset's 9 versionless vLLM Llama-3.1-70B runs of
    # 2025 wait half the running iteration, its 15 of 0.15-0.18 that and the iteration scheduled ahead; the profile's
    # request overhead 50 -> 30 ms), re-measured: 0.1022, +0.0427, 0.334, +0.212 (TTFT 0.407 / +0.353 before); 15% off
    # moves TTFT bias to +0.187 / +0.254 (request overhead) and +0.197 / +0.228 (arrival wait share), TPOT as before:
    # TTFT bias band 0.345-0.36 -> 0.205-0.22, TTFT median bound 0.45 -> 0.36.
    # With session 21's monotone decode split (decode_split.py, split refitted), re-measured: 0.1022, +0.0417, 0.334,
    # +0.212; 15% off moves TPOT bias to +0.057 / +0.028 (graph latency overlap) and +0.032 / +0.0455
    # (per-decoding-request overhead), TTFT as before: TPOT bias band 0.040-0.046 -> 0.040-0.045.
    return (summary["tpot_median"] <= 0.107 and 0.040 <= summary["tpot_bias"] <= 0.045
            and summary["ttft_median"] <= 0.36 and 0.205 <= summary["ttft_bias"] <= 0.22)


TERM_ARGUMENTS = {"graph_latency_overlap": "latency_overlap", "request_overhead_s": "request_s",
                  "iteration_overhead_per_request_s": "per_request_s", "arrival_wait_share": "wait_share"}


@pytest.mark.parametrize("factor", [0.85, 1.15])
@pytest.mark.parametrize("term", list(TERM_ARGUMENTS))
def test_a_15_percent_change_of_a_fitted_serving_term_breaks_the_floor(scored, term, factor):
    ok = scored[scored["reason"] == ""]
    assert in_bounds(validation.summary(validation.errors(ok)).iloc[0])
    # every backend's fitted term 15% off (re-timed as the leave-one-system-out refit does): TPOT moves by the
    # change x the decode step's kernel latency or x the decoding requests per iteration, TTFT by the change in
    # request overhead, in per-request time before the first token, or x the iteration a later request waits for
    terms = {argument: ok[column] for column, argument in TERM_ARGUMENTS.items()}
    terms[TERM_ARGUMENTS[term]] = terms[TERM_ARGUMENTS[term]] * factor
    changed = validation.with_overheads(ok, ok["iteration_overhead_s"], **terms)
    assert not in_bounds(validation.summary(validation.errors(changed)).iloc[0])


def test_graph_latency_overlap_retimes_tpot_by_the_kernel_latency(scored):
    ok = scored[scored["reason"] == ""]
    assert (ok["decode_kernel_latency_s"] > 0).all() and (ok["graph_latency_overlap"] > 0).all()
    shifted = validation.with_overheads(ok, ok["iteration_overhead_s"], ok["request_overhead_s"],
                                        ok["graph_latency_overlap"] + 0.1)
    assert (ok["tpot_s"] - shifted["tpot_s"]).to_numpy() == pytest.approx(0.1 * ok["decode_kernel_latency_s"].to_numpy())
    assert (shifted["ttft_s"] == ok["ttft_s"]).all()


def test_express_reads_tp_written_as_the_square_of_the_expert_group_on_a_node(monkeypatch):
    # DeepSeek on an 8-device B200 node written tp 64, moe_tp 8, moe_ep 8 (run ids say tp8_ep8; they repeat tp 8 runs
    # to the last digit): 8 devices, experts over them (validation_express.attention_dp_reading), the reading on by default
    from engine.serving import validation_express
    devices, models = load_specs(), validation.ModelSource(ROOT)
    squared = run_row(device="B200", system="b200_sxm", model_path="deepseek-ai/DeepSeek-V3", tp=64, moe_tp=8, moe_ep=8,
                      attention_dp=1)
    _, _, fields = validation.express(squared, devices, models)
    assert (fields["tp"], fields["dp"], fields["ep"]) == (8, 1, 8)                  # on by default
    monkeypatch.setattr(validation_express, "SQUARED_TP_READING", False)
    _, _, written = validation.express(run_row(device="B200", system="b200_sxm", model_path="deepseek-ai/DeepSeek-V3",
                                               tp=64, moe_tp=8, moe_ep=8, attention_dp=1), devices, models)
    assert (written["tp"], written["dp"], written["ep"]) == (64, 1, 64)           # off: as written
    monkeypatch.setattr(validation_express, "SQUARED_TP_READING", True)
    # on GB200 (one NVL72 domain of 72 devices) tp 64 can be real: kept as written
    _, _, rack = validation.express(run_row(device="GB200", system="gb200", model_path="deepseek-ai/DeepSeek-V3",
                                            tp=64, moe_tp=8, moe_ep=8, attention_dp=1), devices, models)
    assert (rack["tp"], rack["dp"], rack["ep"]) == (64, 1, 64)
