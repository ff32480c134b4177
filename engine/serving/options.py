"""What a serving benchmark sets: the clients, the request lengths and the server's scheduler limits."""

from __future__ import annotations

from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.serving.speculative import SpeculativeDecoding


class ServingOptions(BaseModel):
    """A closed-loop serving run (engine/serving/scheduler.py).

    - `concurrency`: clients, each with one request in flight (spread over dp replicas: replica r of
      d serves concurrency // d clients, plus one for the first concurrency % d replicas).
    - `input_length`, `output_length`: tokens per request; with `length_spread` s > 0 each request draws
      its lengths uniformly from [L(1 - s), L(1 + s)] (vLLM benchmark's `--random-range-ratio`), from `seed`.
    - `token_budget`: tokens one iteration may run (vLLM `max_num_batched_tokens`, TensorRT-LLM
      `max_num_tokens`, SGLang's chunked prefill size); `max_batch`: requests admitted at once
      (`max_num_seqs`, `max_batch_size`; None: as many as the token budget decodes in one iteration, and the KV
      cache holds; clients beyond it wait).
    - `requests_per_client`: requests each client sends. Left out of the statistics: each client's last
      request (the run winds down around it), its first `warmup_requests` and, when there are warm-up
      requests, those arriving before the last warm-up prompt has run. The default counts the others
      from the start, as serving benchmarks do: all clients send at t = 0, so every round begins with a
      burst of prompts (which the measured TTFTs of public benchmark runs show).
    - `stagger_start`: the clients' first (warm-up) requests ask for 1/C, 2/C, ..., C/C of the output
      length, so the clients are out of step when measurement starts: a desynchronized steady state in
      which prompts arrive one by one and share iterations with decoding requests (as in a long run whose
      timing jitter has spread the clients). In a deterministic simulation a lock-step start stays in
      lock step. Needs warmup_requests >= 1.
    - `backend`: the serving engine whose fitted host-side times apply (engine/serving/backends.py:
      generic, vllm, sglang, trtllm); `iteration_overhead_s` (per iteration) and `request_overhead_s`
      (per request, added to TTFT and latency) override them. Ideal methods (roofline, hierarchical)
      add none unless given.
    - `mixed_prefill`: iterations with prompt chunks also decode the running requests (vLLM and TensorRT-LLM
      by default); False: prefill batches run alone and decoding waits (SGLang's default, `enable_mixed_chunk`
      off). None: the backend's default (engine/serving/backends.py).
    - `chunked_prefill`: a prompt may be split over iterations to fill the token budget (vLLM and SGLang); False:
      prompts run whole, one that does not fit what is left of the budget waits, an iteration's first prompt always
      runs (TensorRT-LLM's default, chunked context off). None: the backend's default.
    - `graph_latency_overlap`: share of each kernel's device latency hidden in a CUDA-graph-replayed decode
      step (the engine's fused kernels and programmatic dependent launch overlap a kernel's ramp-up with
      its predecessor's tail); None: the backend's fitted value. Only under `realistic` with `graph_decode`.
    - `graph_decode`: decode-only iterations are CUDA-graph launched (no per-kernel host launch cost).
    - `kv_cache_fraction`: share of the memory left after weights, activations and workspace that
      holds the KV cache.
    - `arrival_jitter` J: each client's next request reaches the scheduler 0..J iterations (uniform, from `seed`)
      after its previous one finished, not in the same iteration: the turnaround of the client and of the server's
      front end (HTTP, tokenization, the hand-over to the engine's scheduler) runs beside the GPU's iterations and
      varies from request to request, so clients that finished together drift apart. None: the backend's value
      (engine/serving/backends.py); 0: the deterministic lock step.
    - `benchmark_requests` N: requests the benchmark run sends in all (vLLM's and SGLang's `--num-prompts`, 1000 by
      default). Its clients' first requests arrive together, a burst that is min(1, C / N) of the requests it
      measures; the simulation sends `requests_per_client` per client, so the statistics weigh the measured first
      requests (sequence 0) as min(1, C / N) of the total and the later ones as the rest. None: the backend's
      value; no value: every measured request counts alike. Needs warmup_requests = 0 to apply.
    - `iteration_overhead_per_request_s`: host time each decoding request adds to an iteration (sampling, detokenizing
      and streaming its token), beside the fixed `iteration_overhead_s`; None: the backend's value.
    - `arrival_wait_share`: a later request reaches the server while an iteration runs and is scheduled only after it:
      its TTFT (and latency) gains this share of that iteration (0.5: arrivals uniform over the iteration); the
      clients' first requests find the server idle. None: the backend's value.
    - `async_scheduling`: the engine schedules the next iteration while one runs (vLLM's `--async-scheduling`, its
      default since 0.14.0): a later request that reaches the server during an iteration waits for it and for the
      one already scheduled, one more iteration in its TTFT than `arrival_wait_share` alone. None: the backend's
      default (engine/serving/backends.py; off for the ideal methods).
    - `kv_admitted_output_share`: share of a request's output tokens whose KV cache counts against the cache from its
      admission (1: the whole sequence is reserved, TensorRT-LLM's no-evict policy; 0.5: vLLM's blocks allocated as
      tokens are generated, their steady-state mean); None: the backend's value (engine/serving/backends.py).
    - `prefill_time_scale`: the kernels' time of every iteration with prompt chunks x this (the host time not);
      None: the backend's value under `realistic` (engine/serving/backends.py), 1 for the ideal methods.
    - `context_gate_iterations` P: while requests decode, waiting prompts are admitted only at every P-th iteration
      (TensorRT-LLM's attention-DP balance, `attention_dp_config: enable_balance` with `timeout_iters` P: a rank holds
      its context requests until every rank has one or P iterations have passed; the simulated replica stands for all
      ranks, so the gate opens on the timeout, the usual case when each rank's clients return seconds apart). An idle
      server admits at once. None: no gate.
    - `speculative`: speculative decoding (engine/serving/speculative.py: a draft model or MTP layers, k drafted
      tokens, acceptance rate); None: none.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    concurrency: int = Field(1, ge=1, le=100_000)
    input_length: int = Field(1024, ge=1, le=10_000_000)
    output_length: int = Field(256, ge=1, le=10_000_000)
    length_spread: float = Field(0.0, ge=0.0, lt=1.0)
    seed: int = 0
    token_budget: int = Field(8192, ge=1, le=10_000_000)
    max_batch: Optional[int] = Field(None, ge=1, le=1_000_000)
    requests_per_client: int = Field(8, ge=2, le=1000)
    warmup_requests: int = Field(0, ge=0, le=100)
    backend: str = "generic"
    iteration_overhead_s: Optional[float] = Field(None, ge=0.0, le=10.0)
    request_overhead_s: Optional[float] = Field(None, ge=0.0, le=100.0)
    stagger_start: bool = False
    mixed_prefill: Optional[bool] = None
    chunked_prefill: Optional[bool] = None
    graph_latency_overlap: Optional[float] = Field(None, ge=0.0, le=1.0)
    graph_decode: bool = True
    kv_cache_fraction: float = Field(1.0, gt=0.0, le=1.0)
    speculative: Optional[SpeculativeDecoding] = None
    arrival_jitter: Optional[int] = Field(None, ge=0, le=10_000)
    benchmark_requests: Optional[int] = Field(None, ge=1, le=100_000_000)
    iteration_overhead_per_request_s: Optional[float] = Field(None, ge=0.0, le=1.0)
    arrival_wait_share: Optional[float] = Field(None, ge=0.0, le=1.0)
    async_scheduling: Optional[bool] = None
    kv_admitted_output_share: Optional[float] = Field(None, ge=0.0, le=1.0)
    prefill_time_scale: Optional[float] = Field(None, gt=0.0, le=10.0)
    request_overhead_per_expert_layer_s: Optional[float] = Field(None, ge=0.0, le=1e-3)
    context_gate_iterations: Optional[int] = Field(None, ge=1, le=100_000)

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        from engine.serving.backends import backend_profile
        return backend_profile(value).name

    @model_validator(mode="after")
    def _consistent(self) -> "ServingOptions":
        if self.warmup_requests + 1 >= self.requests_per_client:
            raise ValueError(f"requests_per_client={self.requests_per_client} leaves no measured request after "
                             f"warmup_requests={self.warmup_requests} and the last one: use "
                             f"requests_per_client={self.warmup_requests + 2} or more")
        if self.stagger_start and self.warmup_requests < 1:
            raise ValueError("stagger_start needs warmup_requests >= 1 (the staggered first requests are warm-up)")
        per_request = self.speculative.verify_tokens if self.speculative is not None else 1
        if self.token_budget < per_request:
            raise ValueError(f"token_budget={self.token_budget} is less than the {per_request} token(s) each decoding "
                             f"request runs per iteration: use token_budget={per_request} or more")
        batch = min(self.max_batch, self.concurrency) if self.max_batch is not None else 0
        if self.token_budget < batch * per_request:    # vLLM refuses max_num_batched_tokens < max_num_seqs too
            raise ValueError(f"token_budget={self.token_budget} is less than max_batch={self.max_batch} requests x "
                             f"{per_request} token(s) each decodes per iteration: raise token_budget to "
                             f"{batch * per_request} or lower max_batch to {self.token_budget // per_request}")
        return self

    def batch_limit(self, clients: int) -> int:
        """Requests one replica of `clients` clients runs at once: max_batch, or when it is not given as many as the
        token budget decodes in one iteration (the other clients wait, as a serving engine's queue)."""
        per_request = self.speculative.verify_tokens if self.speculative is not None else 1
        return self.max_batch or min(clients, self.token_budget // per_request)

    def batch_notes(self, dp: int) -> list[str]:
        """A note when the token budget, not max_batch, keeps some clients of a replica waiting."""
        clients = max(self.replica_concurrencies(dp))
        if self.max_batch is not None or self.batch_limit(clients) >= clients:
            return []
        return [f"at most {self.batch_limit(clients):,} of a replica's {clients:,} clients run at once "
                f"(token_budget={self.token_budget} decodes that many and max_batch is not given): the others wait"]

    def measured_rule(self) -> str:
        """In words: which requests the statistics leave out (ServingOptions' `requests_per_client`)."""
        rule = "each client's last request is left out (the run winds down around it)"
        if self.warmup_requests:
            rule += (f", and its first {self.warmup_requests} (warm-up) with the requests arriving before the last "
                     "warm-up prompt has run")
        elif self.benchmark_requests and self.requests_per_client > 2:     # request_weights: first and later ones
            share = min(1.0, self.concurrency / self.benchmark_requests)
            rule += (f"; the clients' first requests (the start-up burst) carry {share:.1%} of the statistics' "
                     f"weight, as in a benchmark of {self.benchmark_requests:,} requests")
        return rule

    def replica_concurrencies(self, dp: int) -> dict[int, int]:
        """{clients of a replica: replicas with that many} over `dp` replicas (no replica without clients)."""
        base, extra = divmod(self.concurrency, dp)
        counts = {base + 1: extra, base: dp - extra}
        return {clients: replicas for clients, replicas in counts.items() if clients > 0 and replicas > 0}

    def arrival_delays(self, clients: int, jitter: int) -> np.ndarray:
        """Iterations each request of `clients` clients (arrival order) reaches the scheduler after its client's
        previous request finished: 0 for the first `clients` (they arrive together), uniform 0..`jitter` after."""
        requests = self.requests_per_client * clients
        delays = np.zeros(requests, dtype=np.int64)
        if jitter > 0:
            delays[clients:] = np.random.default_rng([self.seed, 1]).integers(0, jitter + 1, requests - clients)
        return delays

    def lengths(self, clients: int) -> tuple[np.ndarray, np.ndarray]:
        """(input, output) lengths of the requests of `clients` clients in arrival order (the first
        `clients` are the clients' first requests)."""
        requests = self.requests_per_client * clients
        if self.length_spread == 0:
            inputs = np.full(requests, self.input_length, dtype=np.int64)
            outputs = np.full(requests, self.output_length, dtype=np.int64)
        else:
            rng = np.random.default_rng(self.seed)

            def draw(length):
                low = max(1, int(round(length * (1 - self.length_spread))))
                high = max(low, int(round(length * (1 + self.length_spread))))
                return rng.integers(low, high + 1, requests)
            inputs, outputs = draw(self.input_length), draw(self.output_length)
        if self.stagger_start:
            share = np.arange(1, clients + 1) / clients
            outputs[:clients] = np.maximum(1, np.round(share * outputs[:clients])).astype(np.int64)
        return inputs, outputs
