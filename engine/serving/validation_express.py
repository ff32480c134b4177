"""How a measured serving run (a row of engine.calibration.silicon.serving.read_serving_runs) is expressed as
serve() fields (engine/serving/validation.py scores them).

Layout: tp, pp as given; attention data parallelism (attention_dp replicas) is dp, with the experts over
moe_tp x moe_ep devices taken as one expert-parallel group of that many devices (whole experts each; the
expert tensor split is not modelled), which spans the replicas. Where moe_tp x moe_ep exceeds tp and the file
gives no attention_dp (19 vLLM Qwen3-235B runs on H200: tp 1 or 2, moe_tp 2 or 4), dp is taken as their
ratio, the data-parallel attention those engines run under a wider MoE group. A run whose tp divides neither
the heads nor the experts (DeepSeek-R1 on GB200 at tp 12..72, attention_dp 1) is refused with that reason.
The batch size is per attention-DP rank (aiconfigurator counts concurrency = batch_size x attention_dp_size) and
the clients are spread over the replicas; three recordings that the layout or the measurements read otherwise, as
attention_dp_reading says. TensorRT-LLM's runs whose experts are recorded tensor-parallel over their tp devices
(moe_tp = tp > 1, moe_ep 1, no attention DP) run their MoE layers without an all-to-all (moe_dispatch "all_reduce",
tensor_parallel_moe_dispatch; TENSOR_PARALLEL_MOE_BACKENDS): spliced on 2026-11-27 (h/serve13) leave-one-system-out
TPOT 11.9% / 38.9% -> 11.9% / 35.5%, TTFT 26.9% / 79.3% unchanged; read so for vLLM and SGLang too it scored worse
(docs/serving.md).

Precision (the run's gemm_quant_mode): none -> bf16 weights, activations and KV cache; fp8 and
fp8_block -> fp8 everywhere (the block scales are not counted); nvfp4 -> nvfp4 weights, nvfp4
activations on a device with an fp4 matrix rate and bf16 activations elsewhere (weight-only on
Hopper, as gpt-oss's MXFP4 experts run there), fp8 KV cache; int4_wo -> int4 weights, bf16 the rest.
The whole model takes one weight dtype by default, int4_wo runs excepted (CHECKPOINT_MODULES_ALWAYS). With
CHECKPOINT_MODULES (benchmarks/serving_accuracy.py --checkpoint-modules) the modules the run's checkpoint leaves
unquantized take bf16 weights and activations instead (Scenario.unquantized_modules,
engine/workload/module_dtypes.py): UNQUANTIZED_MODULES, by quantization and model family, from the public
checkpoints' exclusion lists (the package ships them under model_configs/). Not the default: scored on 2026-11-27
(h/serve10) it moved leave-one-system-out TPOT 12.2% / 40.6% -> 12.8% / 41.9% and TTFT 27.0% / 79.3% -> 26.3% /
80.2% (docs/serving.md): the nvfp4 series it slows were mostly slow already.

Speculative decoding: the file does not record it; the runs of benchmark series that ran MTP are read with it
(mtp_reading, MTP_SERIES).

Async scheduling (vLLM): on by default since vLLM 0.14.0 (January 2026), off before; a vLLM run of an earlier
version, or without a version and measured before ASYNC_SCHEDULING_SINCE, is read with it off
(async_scheduling_reading; engine/serving/backends.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from engine.serving.validation_versions import ASYNC_SCHEDULING_SINCE, async_scheduling_reading  # noqa: F401 (re-exported)

CATALOG_MODELS = {
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama/Llama-3.1-8B",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "meta-llama/Llama-3.1-8B",
    "meta-llama/Llama-3.1-70B": "meta-llama/Llama-3.1-70B",
    "openai/gpt-oss-120b": "openai/gpt-oss-120b",
    "deepseek-ai/DeepSeek-V3": "deepseek-ai/DeepSeek-V3",
}
# Runs named for a repository whose config.json the package does not ship: the same architecture's config
# (the precision comes from the run's gemm_quant_mode, not from the checkpoint).
CONFIG_ALIASES = {
    "zhipuai/GLM-5": "zai-org/GLM-5",
    "nvidia/DeepSeek-R1-NVFP4": "deepseek-ai/DeepSeek-R1",
    "nvidia/Qwen3-32B-NVFP4": "Qwen/Qwen3-32B",
}
# Series of measured runs that ran DeepSeek's MTP speculative decoding (silicon_sample.csv does not record it), by
# (backend, backend_version, measured date or None for every date). Their source is SemiAnalysis InferenceMAX
# (github.com/SemiAnalysisAI/InferenceX, .github/configs/nvidia-master.yaml and benchmarks/*_trt_mtp*.sh): its
# dsr1-{fp4,fp8}-b200-trt-mtp configs moved to TensorRT-LLM 1.2.0rc6.post3 on 2026-02-05/06 while the plain
# dsr1-*-b200-trt configs stayed on 1.2.0rc6.post2, an image no plain config used. Their scripts run
# num_nextn_predict_layers 3, or 1 with attention DP. The measurements agree: at the same layout the post3 series is
# 1.6-2.3x faster at 4 clients and 1.2-1.3x at 128-256 (tests/test_serving_validation_mtp.py).
MTP_SERIES = (("trtllm", "1.2.0rc6.post3", None),)
# Also likely MTP, not read by default: PR #392 (merged 2026-01-15) swept InferenceMAX's first MTP configs (B200, H200)
# with 1.1.0rc2.post2, the image of the plain configs too, so only the measured date (2026-01-14) tells them apart
# (plain: 2025-12-15; 1.6-2x slower at 4 clients). Read with it (MTP_SERIES + MTP_SERIES_BY_DATE) the held-out TPOT
# p90 gains 0.9 points more but TTFT p90 passes 80% through the folds' refitted host terms (docs/serving.md).
MTP_SERIES_BY_DATE = (("trtllm", "1.1.0rc2.post2", "2026-01-14"),)
# the draft tokens' acceptance, per position: aiconfigurator's default for DeepSeek's MTP (nextn_accept_rates
# 0.85, 0.3, 0, 0, 0), not fitted on these runs: E = 2.1 tokens per step with 3 drafted tokens, 1.85 with 1
MTP_ACCEPTANCE_RATES = (0.85, 0.3, 0.0)
# Modules a run's checkpoint keeps in bf16, by gemm_quant_mode and model family (family_of), read from the
# checkpoints' quantization configs in aiconfigurator's model_configs/: nvidia--DeepSeek-V3.1-NVFP4 excludes the MLA
# projections q_a, q_b, kv_a, kv_b (not o_proj) and lm_head; nvidia--Kimi-K2.5-NVFP4 and nvidia--MiniMax-M2.5-NVFP4
# the attention (and MiniMax its router) and lm_head; nvidia--Qwen3-235B-A22B-NVFP4 the router and lm_head; the
# Llama and dense Qwen3 NVFP4 exports ModelOpt's default, lm_head (as nvidia--Llama-3.1-70B-Instruct-FP8 does);
# gpt-oss-120b's MXFP4 checkpoint converts only the experts (modules_to_not_convert: attention, router, embedding,
# lm_head); moonshotai--Kimi-K2.5's int4 checkpoint only the routed experts (ignore: attention, shared experts,
# dense MLPs, lm_head). The embedding table and a router that is no Linear layer (DeepSeek's and Kimi's MoEGate) are
# never quantized. fp8 checkpoints (lm_head in bf16) are left as they were: every weight fp8.
_ALWAYS = ("router", "embedding", "lm_head")
UNQUANTIZED_MODULES = {
    ("nvfp4", "deepseek"): ("attention_qkv", *_ALWAYS),
    ("nvfp4", "kimi"): ("attention", *_ALWAYS),
    ("nvfp4", "minimax"): ("attention", *_ALWAYS),
    ("nvfp4", "gpt-oss"): ("attention", *_ALWAYS),
    ("nvfp4", "qwen3"): _ALWAYS,
    ("nvfp4", "llama"): _ALWAYS,
    ("int4_wo", "kimi"): ("attention", "shared_experts", "dense_mlp", *_ALWAYS),
}
CHECKPOINT_MODULES = False     # express() default: UNQUANTIZED_MODULES in bf16 (True) or every weight quantized
# ... except for these quantizations, whose checkpoint's unquantized modules are always read: weight-only int4 runs
# (Kimi-K2.5's int4 checkpoint quantizes only the routed experts). Since `realistic` times dense weight-only GEMMs as
# mixed-input kernels (engine/estimators/weight_only.py), reading that checkpoint's bf16 attention, shared experts and
# dense MLPs as int4 would charge those kernels to GEMMs the runs ran in bf16 (its 90 runs' TPOT +27% at the median,
# leave-one-system-out TPOT p90 34.5% -> 36.6%; read as the checkpoint: +3%, 34.5%; docs/accuracy.md, h/woship)
CHECKPOINT_MODULES_ALWAYS: tuple[str, ...] = ("int4_wo",)
# express() reads tp = moe_tp x moe_ep (moe_tp = moe_ep, attention_dp 1) beyond the device's scale-up domain as moe_ep
# devices (attention_dp_reading; benchmarks/serving_accuracy.py --no-squared-tp reads them as written). On since
# 2026-11-27: with TENSOR_PARALLEL_MOE_BACKENDS below, full leave-one-system-out run TPOT 11.9% / 35.5% -> 11.4% / 34.5%,
# TTFT 26.9% / 79.3% -> 27.6% / 79.6% (alone, before that reading: TTFT p90 80.1%; docs/serving.md)
SQUARED_TP_READING = True
# express() default: the backends whose runs with experts recorded tensor-parallel over their tp devices (moe_tp = tp >
# 1, moe_ep 1, no attention DP) are read without an all-to-all dispatch (moe_dispatch "all_reduce":
# tensor_parallel_moe_dispatch; benchmarks/serving_accuracy.py --tensor-parallel-moe overrides it)
TENSOR_PARALLEL_MOE_BACKENDS: tuple[str, ...] = ("trtllm",)
# express(): the measured runs' request lengths drawn uniformly from [L(1 - s), L(1 + s)] around the recorded ISL and
# OSL (ServingOptions.length_spread s), as the serving benchmarks' random datasets may draw them (vLLM's and SGLang's
# `--random-range-ratio`; 0.1 is a range 0.2 L wide, as InferenceMAX's 0.8 draws over [0.8 L, L], with the mean kept
# at the recorded length). Equal lengths keep a simulated closed loop in lock step, which under SGLang's prefill-first
# schedule never breaks (tests/test_serving_length_spread.py). Off (0) by default: measured on 2026-11-28 (h/ttft) it
# fixes the H200 SGLang runs (Llama-3.1-8B TTFT 160% / 362% -> 28% / 62%, DeepSeek 66% / 226% -> 8% / 40%, in-sample)
# but breaks the H100 Qwen3-32B SGLang runs, which match the lock step (TPOT +7% -> +48%), and held out it scores worse:
# 0.1 on every run TPOT 11.7% / 33.6% -> 12.0% / 35.1%, TTFT 27.7% / 79.6% -> 33.8% / 90.2%; on SGLang's runs alone
# 11.6% / 34.8%, 28.5% / 80.3%; on SGLang's runs except 0.5.1.post1 (H100 Qwen3-32B) 11.4% / 31.9%, 28.3% / 77.6%, an
# exception keyed on one group, not shipped (docs/serving.md). benchmarks/serving_accuracy.py --length-spread S sets it.
BENCHMARK_LENGTH_SPREAD = 0.0
# gpt-oss's checkpoint (openai/gpt-oss-120b: MXFP4 routed experts, everything else bf16) is recorded as gemm_quant_mode
# nvfp4; express() reads it as its frameworks run it when MXFP4_CHECKPOINTS is on: mxfp4 expert weights with mxfp8
# activations on fp4-rated matrix units (TensorRT-LLM's ModelConfig.get_mxfp4_quant_algo: W4A8_MXFP4_MXFP8 on sm >=
# 100 with its TRTLLM MoE backend, which InferenceMAX's gptoss_fp4_b200_trt.sh sets; its vLLM script
# gptoss_fp4_b200.sh exports VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1), bf16 activations elsewhere (W4A16_MXFP4 on
# Hopper; aiconfigurator's MoE tables hold w4a8_mxfp4_mxfp8 on Blackwell, w4a16_mxfp4 on Hopper for its shapes), and
# the modules its checkpoint leaves unconverted (UNQUANTIZED_MODULES: attention, router, embedding, lm_head) in bf16.
# Off: read so, the gpt-oss runs get slower where their B200 runs were already slow (TTFT bias +36-52%), and
# leave-one-system-out TTFT p90 79.6% -> 81.7% (TPOT 11.8% / 34.1%; h/fp4ship, docs/accuracy.md)
MXFP4_FAMILIES = ("gpt-oss",)
MXFP4_CHECKPOINTS = False
# TensorRT-LLM runs with attention data parallelism hold new prompts behind the attention-DP balance gate
# (ServingOptions.context_gate_iterations): InferenceMAX's TensorRT-LLM DeepSeek scripts (github.com/SemiAnalysisAI/
# InferenceX: benchmarks/dsr1_fp8_h200_trt.sh, dsr1_fp8_h200_trt_mtp.sh, dsr1_fp4_b200_trt.sh) write
# `attention_dp_config: {enable_balance: true, timeout_iters: 60, batching_wait_iters: 0}` whenever DP_ATTENTION is
# true. gptoss_fp4_b200_trt.sh
# writes `enable_balance: true` alone (TensorRT-LLM's default timeout_iters, 50), but its runs' measured TTFT (0.12-0.28
# s at 1k prompts on B200) shows no such wait, so only the scripts that write timeout_iters are read with it. The
# executor (pyexecutor, _balance_adp_requests) schedules context requests only once every rank has one or the timeout
# has passed (schedule_records.gate_open / gate_release model both ways out).
# Off by default (benchmarks/serving_accuracy.py --attention-dp-gate): measured on 2026-11-28 (h/h200trt) it takes the
# 60 DeepSeek attention-DP runs' TTFT bias from -54% (B200) / -66% (H200) to -43% / -49% in-sample, but the folds'
# refitted TensorRT-LLM terms move the rest: leave-one-system-out TPOT 11.3% / 33.7% -> 11.5% / 33.7%, TTFT 27.7% /
# 79.8% -> 27.7% / 81.6% (without gate_release: 11.8% / 35.3%, 26.4% / 81.2%; docs/serving.md)
ATTENTION_DP_GATE_READING = False
ATTENTION_DP_GATE_BACKENDS = ("trtllm",)
ATTENTION_DP_GATE_ITERATIONS = {"deepseek": 60}     # by model family: the scripts that write timeout_iters
QUANTIZATION = {"": ("bf16", "bf16", "bf16"), "fp8": ("fp8", "fp8", "fp8"), "fp8_block": ("fp8", "fp8", "fp8"),
                "int4_wo": ("int4", "bf16", "bf16")}


def model_configs_dir(root) -> Path:
    """aiconfigurator's model_configs/ beside its systems/ directory."""
    return Path(root).parent / "model_configs"


class ModelSource:
    """Models of the measured runs, loaded once: the catalog, else the package's shipped config.json."""

    def __init__(self, root):
        self.directory = model_configs_dir(root)
        self.loaded: dict[str, object] = {}

    def get(self, model_path: str):
        """(model, None) or (None, reason)."""
        if model_path not in self.loaded:
            self.loaded[model_path] = self._load(model_path)
        found = self.loaded[model_path]
        return (None, found) if isinstance(found, str) else (found, None)

    def _load(self, model_path: str):
        from engine.models import load_model
        source = CATALOG_MODELS.get(model_path)
        if source is None:
            stem = CONFIG_ALIASES.get(model_path, model_path).replace('/', '--')
            path = self.directory / f"{stem}_config.json"
            if not path.is_file():
                return f"no config for {model_path} in the catalog or the package's model_configs"
            source = str(path)
        try:
            return load_model(source)
        except (ValueError, OSError) as error:
            return f"{model_path}: {str(error).splitlines()[0][:120]}"


def dtypes_of(quant, hardware) -> tuple[str, str, str] | None:
    """(weight, activation, kv) dtypes for a run's gemm_quant_mode, None when unknown."""
    key = "" if quant is None or (isinstance(quant, float) and np.isnan(quant)) or pd.isna(quant) else str(quant)
    if key == "nvfp4":
        activation = "nvfp4" if hardware.matrix_rate_dtype("fp4") == "fp4" else "bf16"
        return "nvfp4", activation, "fp8"
    return QUANTIZATION.get(key)


def model_and_dtypes(run, hardware, models: ModelSource):
    """(model, (weight, activation, KV dtypes)) of a measured run, or the reason it has none (a sentence)."""
    model, reason = models.get(run.model_path)
    if model is None:
        return reason
    dtypes = mxfp4_dtypes(run, hardware) or dtypes_of(run.gemm_quant_mode, hardware)
    if dtypes is None:
        return f"gemm_quant_mode {run.gemm_quant_mode!r} has no dtype mapping"
    return model, dtypes


def mxfp4_checkpoint(run) -> bool:
    """Whether `run` is of an MXFP4 checkpoint read as its frameworks run it (MXFP4_CHECKPOINTS, MXFP4_FAMILIES)."""
    return (MXFP4_CHECKPOINTS and run.gemm_quant_mode == "nvfp4"
            and family_of(str(run.model_path)) in MXFP4_FAMILIES)


def mxfp4_dtypes(run, hardware) -> tuple[str, str, str] | None:
    """(mxfp4, mxfp8 on fp4-rated matrix units else bf16, fp8) for an MXFP4 checkpoint's run (mxfp4_checkpoint),
    else None."""
    if not mxfp4_checkpoint(run):
        return None
    return "mxfp4", "mxfp8" if hardware.matrix_rate_dtype("fp4") == "fp4" else "bf16", "fp8"


def unquantized_modules_of(run) -> tuple[str, ...]:
    """The module groups the run's checkpoint keeps in bf16 (UNQUANTIZED_MODULES; () where it says nothing)."""
    quant = run.gemm_quant_mode if isinstance(run.gemm_quant_mode, str) else ""
    return UNQUANTIZED_MODULES.get((quant, family_of(run.model_path)), ())


def modules_kept_unquantized(run, checkpoint_modules: bool) -> tuple[str, ...]:
    """unquantized_modules_of(run) when `checkpoint_modules` or the run's quantization is in CHECKPOINT_MODULES_ALWAYS,
    else () (every weight in the run's weight dtype)."""
    always = (isinstance(run.gemm_quant_mode, str) and run.gemm_quant_mode in CHECKPOINT_MODULES_ALWAYS
              or mxfp4_checkpoint(run))
    return unquantized_modules_of(run) if checkpoint_modules or always else ()


def express(run, devices: dict, models: ModelSource, checkpoint_modules: bool | None = None):
    """(hardware, model, serve() fields) for a measured run, or a string saying why it cannot be expressed.
    `checkpoint_modules` (None: CHECKPOINT_MODULES): the checkpoint's unquantized modules in bf16
    (unquantized_modules_of), else every weight in the run's weight dtype (modules_kept_unquantized: weight-only runs
    always as their checkpoint)."""
    hardware = devices.get(run.device) if isinstance(run.device, str) else None
    if hardware is None:
        return f"system {run.system} has no workbook device"
    if run.mode != "agg":
        return "disaggregated run (scored with disaggregated serving)"
    found = model_and_dtypes(run, hardware, models)
    if isinstance(found, str):
        return found
    model, dtypes = found
    moe = getattr(model, "is_moe", False)
    ep = _whole(run.moe_ep) * _whole(run.moe_tp) if moe else 1
    dp, tp = _whole(run.attention_dp), int(run.tp)
    if moe:
        tp, dp, ep = attention_dp_reading(run, tp, dp, ep, hardware.devices_per_node if SQUARED_TP_READING else None)
    if moe and dp == 1 and ep > tp and ep % tp == 0:
        dp = ep // tp   # experts over more devices than tp: the file leaves out the attention DP that spans them
    if dp == 1 and moe and model.num_attention_heads % tp and model.num_experts % tp:
        return (f"tp={tp} (moe_tp x moe_ep = {ep}, attention_dp 1) splits neither the {model.num_attention_heads} "
                f"heads nor the {model.num_experts} experts evenly: as recorded the layout cannot run; an "
                "attention-DP, wide-EP deployment with redundant experts is likely, which is not modelled")
    if dp > 1 and ep <= tp:
        return "attention data parallelism without an expert-parallel group spanning the replicas"
    fields = dict(concurrency=int(concurrency_of(run)), input_length=int(run.input_length),
                  output_length=int(run.output_length), tp=tp, pp=_whole(run.pp), dp=dp, ep=ep,
                  weight_dtype=dtypes[0], activation_dtype=dtypes[1], kv_dtype=dtypes[2])
    if BENCHMARK_LENGTH_SPREAD:
        fields["length_spread"] = BENCHMARK_LENGTH_SPREAD
    if checkpoint_modules is None:
        checkpoint_modules = CHECKPOINT_MODULES
    unquantized = modules_kept_unquantized(run, checkpoint_modules)
    if unquantized:
        fields.update(unquantized_modules=unquantized, unquantized_dtype="bf16")
    dispatch = tensor_parallel_moe_dispatch(run, tp, dp, ep) if moe else None
    if dispatch is not None:
        fields["moe_dispatch"] = dispatch
    ahead = async_scheduling_reading(run)
    if ahead is not None:
        fields["async_scheduling"] = ahead
    gate = attention_dp_gate(run, attention_dp=dp > 1)
    if gate is not None:
        fields["context_gate_iterations"] = gate
    speculative = mtp_reading(run, model, attention_dp=dp > 1)
    if speculative is not None:
        fields["speculative"] = speculative
    return hardware, model, fields


def tensor_parallel_moe_dispatch(run, tp: int, dp: int, ep: int, backends=None) -> str | None:
    """"all_reduce" for a mixture-of-experts run of one of `backends` (None: TENSOR_PARALLEL_MOE_BACKENDS) whose file
    records its experts split over the tp devices alone (moe_tp = tp > 1, moe_ep 1) and no attention data parallelism;
    else None (the backend profile's dispatch). Such a layout never moves tokens between devices: attention's
    all-reduce leaves every device with every token, each computes its share of the experts and the MoE all-reduce
    sums them, so the all-to-all dispatch and combine that expressing it as an expert-parallel group (ep = moe_tp x
    moe_ep = tp) charges do not run. Scenario.moe_dispatch "all_reduce" is that form with whole experts per device
    (the same bytes and pairs per device on average as experts at 1/tp width, and the wide prefill GEMMs the kernel
    model was calibrated on; reading them as tensor-parallel experts was tried: docs/serving.md)."""
    if run.backend not in (TENSOR_PARALLEL_MOE_BACKENDS if backends is None else backends):
        return None
    if dp == 1 and tp > 1 and ep == tp and _whole(run.moe_tp) == tp and _whole(run.moe_ep) == 1:
        return "all_reduce"
    return None


def attention_dp_gate(run, attention_dp: bool) -> int | None:
    """The attention-DP balance gate (iterations) a measured run ran behind, or None: a run of
    ATTENTION_DP_GATE_BACKENDS with attention data parallelism recorded as such (attention_dp > 1, as InferenceMAX's
    scripts write it; not the Dynamo recordings attention_dp_reading reads as attention DP over tp), while
    ATTENTION_DP_GATE_READING is on (module constants: those scripts enable the balance for every such run)."""
    if not (ATTENTION_DP_GATE_READING and attention_dp and run.backend in ATTENTION_DP_GATE_BACKENDS
            and _whole(run.attention_dp) > 1):
        return None
    return ATTENTION_DP_GATE_ITERATIONS.get(family_of(str(run.model_path)))


def in_mtp_series(run, series=None) -> bool:
    """Whether a measured run belongs to a series that ran MTP speculative decoding (`series`, default MTP_SERIES)."""
    measured = getattr(run, "measured_at", None)
    day = None if measured is None or pd.isna(measured) else pd.Timestamp(measured).strftime("%Y-%m-%d")
    return any(run.backend == backend and str(run.backend_version) == version and (date is None or day == date)
               for backend, version, date in (MTP_SERIES if series is None else series))


def mtp_reading(run, model, attention_dp: bool):
    """The speculative decoding a measured run ran, or None: MTP with 3 drafted tokens (1 under attention DP) and
    MTP_ACCEPTANCE_RATES for a run of MTP_SERIES whose model has MTP layers (module docstring)."""
    layers = int(getattr(model, "multi_token_prediction_layers", 0) or 0)
    if not layers or not in_mtp_series(run):
        return None
    from engine.serving.speculative import SpeculativeDecoding
    tokens = 1 if attention_dp else 3
    return SpeculativeDecoding(mtp_layers=1, draft_tokens=tokens, acceptance_rates=MTP_ACCEPTANCE_RATES[:tokens])


def attention_dp_reading(run, tp: int, dp: int, ep: int, domain: int | None = None) -> tuple[int, int, int]:
    """(tp, dp, ep) of a mixture-of-experts run read as aiconfigurator counts its concurrency: batch_size x
    attention_dp_size clients, the batch per attention-DP rank (sdk/backends/base_backend.py). Three recordings that
    state it otherwise:
    - no attention_dp written, tp > 1 and the concurrency exactly batch x tp: attention DP over the tp devices (one
      rank each, experts over all of them), as Dynamo's `--enable-attention-dp` sets attention_dp_size = tp (13 runs
      of TensorRT-LLM through Dynamo: DeepSeek-R1/V3.1 NVFP4, gpt-oss on H100);
    - tp 1 and attention_dp = moe_tp x moe_ep with moe_tp = moe_ep > 1 (attention_dp 16 or 64): moe_ep ranks. 22 of
      the 38 such DeepSeek runs repeat, to the last digit of TTFT and TPOT, a run of the same system, lengths and
      concurrency recorded as attention_dp = moe_ep, moe_tp 1 (4 or 8 devices): the square is a recording slip;
    - the same square as tp: attention_dp 1, tp = moe_tp x moe_ep with moe_tp = moe_ep > 1 and tp beyond the device's
      scale-up domain `domain` (the workbook's devices_per_node: tp 16 or 64 on an 8-GPU node): moe_ep devices, tp
      and experts over them. Of the 257 such runs (DeepSeek-R1/V3, Qwen3.5-397B, gpt-oss; B200, B300, H200) the 145
      whose run id names a layout all name tp = moe_ep (`..._tp8_ep8_...` for tp 64, `tp4_ep4` for tp 16), and 83
      repeat, to the last digit of TTFT and TPOT, a run of the same system, engine, model, precision, lengths and
      concurrency recorded as tp = moe_ep, attention_dp 1. Read as written they simulated a tensor-parallel group
      of 16 or 64 devices whose all-reduces cross nodes: up to 2x slow at 4 clients (TPOT bias +12%, h/serve12).
    And one that the measurements read otherwise: vLLM runs with tp > 1, attention_dp = tp and an expert group of tp
    squared devices (97 runs: MiniMax-M2.5 tp 2 and 4, Kimi-K2.5 tp 4) are one group of tp devices holding every
    client (experts over the tp devices). Two Kimi-K2.5 runs on B200 appear both so and as tp 4, attention_dp 1,
    moe_ep 4 with the same TTFT and TPOT, and as tp x attention_dp devices all 97 simulate 20-40% fast (TPOT bias
    -28%, h/serve3); read as one group their TPOT error is +4% (docs/serving.md)."""
    concurrency, batch = run.concurrency, run.max_batch
    moe_tp, moe_ep = _whole(run.moe_tp), _whole(run.moe_ep)
    if dp == 1 and moe_tp > 1 and moe_tp == moe_ep and tp == moe_tp * moe_ep and domain and tp > domain:
        return moe_ep, 1, moe_ep
    if dp == 1 and tp > 1 and pd.notna(concurrency) and pd.notna(batch) and int(concurrency) == int(batch) * tp \
            and int(concurrency) > int(batch):
        return 1, tp, tp
    if tp == 1 and moe_tp > 1 and moe_tp == moe_ep and dp == moe_tp * moe_ep:
        return 1, moe_ep, moe_ep
    if getattr(run, "backend", None) == "vllm" and tp > 1 and dp == tp and ep == tp * tp:
        return tp, 1, tp
    return tp, dp, ep


def _whole(value) -> int:
    """A layout field of a run (1 where the file leaves it empty or writes 0, as 15 Qwen3-32B runs on GB200 do)."""
    return max(1, int(value)) if pd.notna(value) else 1


def concurrency_of(run) -> int:
    """The run's client concurrency (from its source note), else its batch size (19 runs of 0.12.0 say no more)."""
    return int(run.concurrency if pd.notna(run.concurrency) else run.max_batch)


def family_of(model_path: str) -> str:
    name = model_path.lower()
    for family in ("llama", "qwen3", "deepseek", "gpt-oss", "minimax", "kimi", "glm"):
        if family in name:
            return family
    return "other"
