"""Serving-engine profiles: the host-side times a serving engine adds to the kernels' time.

Scheduling: `mixed_prefill` says whether prompt chunks share an iteration with the decoding requests
(vLLM V1 and TensorRT-LLM do; SGLang runs prefill batches alone unless `--enable-mixed-chunk`);
`chunked_prefill` whether a prompt may be split over iterations to fill the token budget (vLLM V1 and SGLang
chunk; TensorRT-LLM runs whole prompts unless `enable_chunked_prefill`, off by default: with 8k prompts and an
8192-token budget a chunked prompt spills into a second iteration beside the decoding requests' tokens, and the
next client's prompt queues behind it, which the measured TTFTs do not show).

Scheduling terms (they change the schedule, so the validation simulates each candidate value):
- `arrival_jitter`: a client's next request reaches the scheduler 0..J iterations after its previous one
  finished (the front end's varying turnaround, beside the GPU's iterations): clients drift out of lock step.
  Fitted per backend from (0, 2, 4, 8), chosen per fold in the leave-one-system-out headline;
- `benchmark_requests`: requests a benchmark run sends in all; its start-up burst is C / N of what it measures.
  Assumed, not fitted: 1000, vLLM's and SGLang's benchmark `--num-prompts` default.

Three fitted host-side terms, each a software property, not a device's:
- `iteration_overhead_s`: per iteration (scheduling, sampling, output processing between forward passes);
- `request_overhead_s`: per request, on the client's clock (HTTP, tokenization, the first scheduling
  pass, detokenization of the first token): added to TTFT and to the request latency;
- `request_overhead_per_expert_layer_s`: a part of the request overhead per routed expert of each MoE layer
  (`routed_expert_layers`: num_moe_layers x num_experts, 0 for a dense model), fitted for TensorRT-LLM only
  (validation.EXPERT_LAYER_BACKENDS). Its measured fixed per-request time differs 5-10x between models and follows
  the expert count, not the layer count or the vocabulary: at 4-16 clients, beyond the modelled prefill, DeepSeek
  (58 x 256 = 14,848) 100-350 ms, Qwen3-235B (94 x 128 = 12,032) 70-180 ms, gpt-oss-120b (36 x 128 = 4,608)
  26-56 ms, the dense Llama-3.1-70B and Qwen3-32B 0-80 ms. Presumed mechanism (not isolated): host work per
  expert and MoE layer when a request's prompt first runs (its eager, non-graph prefill pass: the MoE plugin's
  per-expert grouped-GEMM problem setup and routing bookkeeping), or MoE prefill kernels slower than modelled;
- `graph_latency_overlap`: the share of every kernel's device latency (the workbook's `kernel_latency`, as
  `realistic` charges it per kernel) hidden in a CUDA-graph-replayed decode step: the engines fuse kernels
  (all-reduce + residual + norm, SwiGLU into the GEMM, RoPE into attention) and overlap each kernel's ramp-up
  with its predecessor's tail (programmatic dependent launch), so a decode step pays fewer latency floors than
  the per-kernel table counts. The device's own latency stays a workbook field; only the share is fitted.
- `iteration_overhead_per_request_s`: host time each decoding request adds to an iteration (the engine's Python
  loop samples, detokenizes and streams every request's token between forward passes), so the host time of an
  iteration is iteration_overhead_s + n x this for n decoding requests;
- `arrival_wait_share`: a later request reaches the scheduler while an iteration runs and waits for its end; its
  TTFT gains this share of that iteration (the iteration-level schedule starts it at the next boundary). The
  clients' first requests find the server idle.

One scheduling setting of the engine (not fitted; the user's `async_scheduling` option overrides it):
- `async_scheduling`: the engine schedules iteration k + 1 while iteration k runs on the device (vLLM's
  `--async-scheduling`, on by default since vLLM 0.14.0 of January 2026, off before), so a request that reaches
  the scheduler during iteration k cannot join k + 1, which is already scheduled: it waits for the rest of k and
  then for all of k + 1. Its TTFT gains one more iteration beside the `arrival_wait_share` of one (the simulation
  charges both on the iteration before the one that first schedules it). Measured on vLLM's runs (2026-11-28,
  h/llamattft): fitted alone, the runs of vLLM 0.15-0.19 (async by default) want a wait share of 0.75-1 and those of
  0.11-0.12 and the versionless ones of 2025 (off) want 0, at the top and the bottom of the 0-1 grid; with the
  iteration scheduled ahead counted for the former, one share for both fits at 0.5, the mean wait of an arrival
  uniform over the iteration in flight (docs/serving.md). The validation reads each vLLM run's setting from its
  version (validation_versions.async_scheduling_reading). TensorRT-LLM's and SGLang's overlap schedulers are not
  read this way: their fitted wait shares absorb them.

One layout term (not fitted):
- `moe_dispatch`: how a MoE layer whose experts spread over the tp devices (ep = tp > 1, no attention data
  parallelism) reaches them (Scenario.moe_dispatch; serve() takes the profile's unless the fields name it). Every
  profile ships "all_to_all" (each TP rank's token share dispatched to the experts' devices and combined back, then
  the all-reduce). SGLang's `--moe-a2a-backend` defaults to "none": its attention's all-reduce leaves every rank with
  all the tokens, each rank runs its own experts on those routed to them, and the MoE all-reduce over the tp group
  sums the outputs, with no all-to-all ("all_reduce"). Tried for SGLang on all 3,107 runs (2026-11-27, h/serve8):
  held out TPOT p90 40.5% -> 38.9% but TTFT p90 79.3% -> 80.3% through the folds' refitted terms
  (docs/serving.md), so not shipped yet.

One admission term, taken from the engines' documented allocators (not fitted):
- `kv_admitted_output_share`: the share of a request's output tokens whose KV cache counts against the cache from
  its admission on. TensorRT-LLM's guaranteed-no-evict capacity scheduler reserves the whole sequence (1.0); vLLM
  allocates KV blocks as tokens are generated and preempts when the cache is full, so in a steady state its running
  requests hold their prompt and on average half their output (0.5): it runs more requests at once than a
  whole-sequence reservation allows. SGLang allocates token by token as well and admits on an estimate of the
  remaining output that decays to a tenth of it (`new_token_ratio`): 0.5 too. generic keeps 1.0.

They are fitted on the measured serving runs of aiconfigurator-core 0.12.0 (`systems/silicon_sample.csv`,
the aggregated runs the workbook and catalog can express) by `benchmarks/serving_accuracy.py`, with the
`realistic` method: one set per backend over all systems (H100-SXM, H200-SXM, B200, B300, GB200 runs),
and `generic` over every backend. The benchmark prints, beside the values below, the leave-one-system-out scores (fit
without system X, score X), which are the accuracy to expect on a device without measurements. The
roofline-family methods are ideal and add none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BackendProfile:
    name: str
    iteration_overhead_s: float
    request_overhead_s: float
    description: str
    mixed_prefill: bool = True      # prompt chunks share iterations with decoding (False: prefill batches run alone)
    chunked_prefill: bool = True    # prompts split over iterations to fill the token budget (False: whole prompts)
    graph_latency_overlap: float = 0.0   # share of the kernels' device latency hidden in a graph-replayed decode step
    arrival_jitter: int = 0         # a client's next request arrives 0..J iterations after its previous one finished
    benchmark_requests: int | None = None   # requests a benchmark run sends in all (the first round's share: C / N)
    iteration_overhead_per_request_s: float = 0.0   # host time per decoding request per iteration (sampling, output)
    arrival_wait_share: float = 0.0  # share of the running iteration a later request waits before it is scheduled
    async_scheduling: bool = False  # the next iteration is scheduled while one runs (a later request waits one more)
    kv_admitted_output_share: float = 1.0   # share of the output's KV counted at admission (1: whole sequence)
    prefill_time_scale: float = 1.0  # the kernels' time of iterations with prompt chunks x this (1: as modelled)
    request_overhead_per_expert_layer_s: float = 0.0   # request overhead per routed expert of each MoE layer
    moe_dispatch: str = "all_to_all"    # MoE layers with ep = tp: Scenario.moe_dispatch (the engine's default path)
    moe_4bit_classes: bool = False  # time 4-bit MoE experts with this framework's fitted classes (backend_kernels.py)
    fp4_quantize_latency_s: float | None = None   # its nvfp4 activation-quantize kernel (None: the constants')


BENCHMARK_REQUESTS = 1000    # vLLM's and SGLang's benchmark `--num-prompts` default (assumed, not fitted)
BACKENDS: dict[str, BackendProfile] = {profile.name: profile for profile in (
    # values printed by benchmarks/serving_accuracy.py ("serving terms fitted on all runs"), 3,107 runs, 2026-11-26
    # (arrival jitter from 0, 2, 4, 8; iteration overhead on a 0.2 ms grid, per-decoding-request overhead 0-40 us,
    # arrival wait share 0-1 in quarters)
    # generic keeps the 2,354-run fit and the lock step (the benchmark now prints 1.0 ms, 95 ms, 0.55, jitter 4 for
    # it): the serving search's screen and its tests are built on it; refitting it is left to the search's owner
    BackendProfile("generic", 0.0001, 0.070, "fitted over the vLLM, SGLang and TensorRT-LLM runs together",
                   graph_latency_overlap=0.30, arrival_jitter=0, benchmark_requests=BENCHMARK_REQUESTS),
    # vLLM's wait: 0.5 of the iteration in flight plus, with async scheduling (its default since 0.14.0), the iteration
    # already scheduled, and a 30 ms request overhead: the fit on all runs once async scheduling is read per run
    # (before: 1.0 of one iteration for every run, 50 ms; 2026-11-28, h/llamattft, docs/serving.md)
    BackendProfile("vllm", 0.0, 0.030, "vLLM (runs of 0.12 - 0.19): a separate API server process hands requests "
                   "to the engine core", graph_latency_overlap=0.25, arrival_jitter=8,
                   benchmark_requests=BENCHMARK_REQUESTS, iteration_overhead_per_request_s=15e-6,
                   arrival_wait_share=0.5, kv_admitted_output_share=0.5, async_scheduling=True),
    # SGLang's nvfp4 quantize kernel (conditions.TABLE_QUANTIZE_LATENCY_S, fitted on its nvfp4 GEMM tables) and its
    # 4-bit MoE classes (h/fp4ship: leave-one-system-out TPOT 11.7 / 33.6 -> 11.7 / 34.0, TTFT 27.7 / 79.6 -> 27.5 /
    # 79.8; TensorRT-LLM's and vLLM's put a p90 over its target: docs/accuracy.md, "4-bit kernels in `serve`")
    BackendProfile("sglang", 0.0, 0.195, "SGLang (runs of 0.5.x): prefill batches run alone (enable_mixed_chunk "
                   "off by default), decoding waits for them", mixed_prefill=False, graph_latency_overlap=0.55,
                   arrival_jitter=2, benchmark_requests=BENCHMARK_REQUESTS, iteration_overhead_per_request_s=25e-6,
                   arrival_wait_share=0.5, kv_admitted_output_share=0.5, moe_4bit_classes=True,
                   fp4_quantize_latency_s=2.0e-6),
    # TensorRT-LLM's request overhead: 60 ms + 8 us per routed expert-layer (120 ms flat before; 2026-11-27, h/serve6:
    # the two refitted on all its runs with its other terms as shipped; every leave-one-system-out fold picks 8 us)
    BackendProfile("trtllm", 0.0004, 0.060, "TensorRT-LLM (runs of 1.0 - 1.3): fused all-reduce + norm kernels and "
                   "programmatic dependent launch hide the most kernel latency", graph_latency_overlap=0.50,
                   arrival_jitter=2, benchmark_requests=BENCHMARK_REQUESTS, iteration_overhead_per_request_s=15e-6,
                   arrival_wait_share=0.0, chunked_prefill=False, request_overhead_per_expert_layer_s=8e-6),
)}
IDEAL_METHODS = ("roofline", "hierarchical")


def backend_profile(name: str) -> BackendProfile:
    key = str(name).strip().lower()
    if key not in BACKENDS:
        raise ValueError(f"unknown serving backend {name!r}; expected one of {', '.join(BACKENDS)}")
    return BACKENDS[key]


def scheduling(options, method: str) -> tuple[int, int | None]:
    """(arrival jitter in iterations, requests of the benchmark run) for `options` under `method`: the options' values
    where given, else the backend's; the ideal methods keep the lock step and count every simulated request alike."""
    profile = backend_profile(options.backend)
    ideal = method in IDEAL_METHODS
    jitter = options.arrival_jitter if options.arrival_jitter is not None else (0 if ideal else profile.arrival_jitter)
    requests = options.benchmark_requests if options.benchmark_requests is not None else (
        None if ideal else profile.benchmark_requests)
    return jitter, requests


def kv_admitted_share(options) -> float:
    """Share of a request's output tokens whose KV cache counts at its admission: the options' value where given, else
    the backend's (an engine's allocation policy, the same under every method)."""
    share = options.kv_admitted_output_share
    return share if share is not None else backend_profile(options.backend).kv_admitted_output_share


def admitted_tokens(input_lengths, output_lengths, share: float):
    """Tokens a request's KV holds in the admission count: its prompt and `share` of its output (rounded up)."""
    return np.asarray(input_lengths) + np.ceil(share * np.asarray(output_lengths)).astype(np.int64)


def host_terms(options, method: str) -> tuple[float, float]:
    """(host seconds per decoding request per iteration, share of the running iteration a later request waits) for
    `options` under `method`: the options' values where given, else the backend's; none for the ideal methods."""
    profile = backend_profile(options.backend)
    ideal = method in IDEAL_METHODS
    per_request = options.iteration_overhead_per_request_s
    share = options.arrival_wait_share
    return (per_request if per_request is not None else (0.0 if ideal else profile.iteration_overhead_per_request_s),
            share if share is not None else (0.0 if ideal else profile.arrival_wait_share))


def scheduled_ahead(options, method: str) -> bool:
    """Whether the engine schedules the next iteration while one runs (`async_scheduling`): the options' value where
    given, else the backend's; never for the ideal methods (no host-side waits), unless the options say so."""
    if options.async_scheduling is not None:
        return bool(options.async_scheduling)
    return False if method in IDEAL_METHODS else backend_profile(options.backend).async_scheduling


def prefill_scale(options, method: str) -> float:
    """The factor on the kernels' time of iterations with prompt chunks: the options' value where given, else the
    backend's; 1 for the ideal methods."""
    if options.prefill_time_scale is not None:
        return options.prefill_time_scale
    return 1.0 if method in IDEAL_METHODS else backend_profile(options.backend).prefill_time_scale


def routed_expert_layers(model) -> int:
    """Routed experts summed over the MoE layers (num_moe_layers x num_experts; 0 for a dense model): what the
    per-request host time `request_overhead_per_expert_layer_s` scales with."""
    return int(model.num_moe_layers * model.num_experts) if model.num_experts else 0


def request_overhead(options, method: str, model) -> tuple[float, float]:
    """(request overhead in seconds, its part per routed expert-layer) for `options` under `method`: the options'
    request_overhead_s where given (the whole per-request time), else the backend's fixed part plus its per
    expert-layer part x routed_expert_layers(model); none for the ideal methods."""
    per_expert = options.request_overhead_per_expert_layer_s
    if per_expert is None:
        per_expert = 0.0 if method in IDEAL_METHODS else backend_profile(options.backend).request_overhead_per_expert_layer_s
    if options.request_overhead_s is not None:
        return options.request_overhead_s, per_expert
    return overheads(options.backend, method)[1] + per_expert * routed_expert_layers(model), per_expert


def overheads(backend: str, method: str) -> tuple[float, float]:
    """(iteration, request) overhead in seconds for `backend` under `method` (none for ideal methods)."""
    if method in IDEAL_METHODS:
        return 0.0, 0.0
    profile = backend_profile(backend)
    return profile.iteration_overhead_s, profile.request_overhead_s


# Serving engines that run on one vendor's devices only (the workbook's `vendor` field; a `hypothetical` device
# may take any): TensorRT-LLM builds CUDA engines.
VENDOR_ONLY = {"trtllm": ("NVIDIA", "TensorRT-LLM")}


def check_backend_device(backend: str, hardware) -> None:
    """ValueError when `backend` cannot run on `hardware` (VENDOR_ONLY), naming both and what would run."""
    name = backend_profile(backend).name
    if name not in VENDOR_ONLY or hardware.kind.strip().lower() == "hypothetical":
        return
    vendor, label = VENDOR_ONLY[name]
    if hardware.vendor.strip().lower() != vendor.lower():
        others = [repr(b) for b in BACKENDS if b not in VENDOR_ONLY]
        raise ValueError(f"backend={name!r} ({label}) runs only on {vendor} devices, and {hardware.name} is made by "
                         f"{hardware.vendor} (the workbook's vendor): use backend={', '.join(others[:-1])} or "
                         f"{others[-1]}")
