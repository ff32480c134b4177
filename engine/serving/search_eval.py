"""serve() over many (concurrency, token budget) points of one parallel layout, sharing the work.

A design-space search runs serve() at hundreds of configurations that differ only in the concurrency
and the token budget. Done one by one that costs two estimator calls, a schedule and a pandas request
table per point (~10-40 ms). `LayoutEvaluator` gives the same numbers (tests/test_serving_search.py
holds them to serve() to 1e-9) by sharing:

- schedules: the schedule depends on token counts only, so it is computed once per (clients of a
  replica, token budget, admission limit) and shared by every layout whose KV cache can hold all of its
  clients' sequences at once (then the KV capacity never limits admission); layouts whose cache can limit
  admission get their own schedule;
- iteration costs: every distinct prompt-chunk iteration of every schedule of a layout is timed in ONE
  estimator call, and every (decode batch, mean context) grid point that serve()'s interpolation grids
  need in another (the row times of a pass do not depend on the other rows, so this equals timing each
  schedule on its own); each schedule's decode iterations are then interpolated on its own grid exactly
  as engine/serving/cost.py does;
- the statistics: numpy arrays instead of serve()'s request DataFrame;
- speculative decoding: the schedules advance E tokens per step and take k + 1 of the token budget per
  decoding request, the target's verification rows (mixed and grid) take k + 1 query tokens, the KV budget
  holds the draft's weights and KV, and the draft's passes are timed as serve() times them
  (engine/serving/speculative.py draft_times), for all schedules of a layout in two more estimator calls.

Anything serve() supports that this does not reproduce (drawn lengths, options added later) falls back
to serve() itself, point by point (`needs_serve`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.results.run import check_fits_model
from engine.estimators import get_method
from engine.workload.parallel import parallel_layout
from engine.serving import cost
from engine.serving.backend_kernels import backend_method
from engine.serving.backends import (admitted_tokens, backend_profile, host_terms, kv_admitted_share, overheads,
                                     scheduled_ahead, scheduling)
from engine.serving.options import ServingOptions
from engine.serving.scheduler import schedule
from engine.serving.simulate import _check_supported, _draft, _mean, _quantile, host_times, kv_budget, request_arrays
from engine.workload.scenario import Scenario

# ServingOptions fields this module reproduces; any other field set away from its default -> serve()
SHARED_OPTION_FIELDS = frozenset({"concurrency", "input_length", "output_length", "length_spread", "seed",
                                  "token_budget", "max_batch", "requests_per_client", "warmup_requests", "backend",
                                  "iteration_overhead_s", "request_overhead_s", "stagger_start", "graph_decode",
                                  "kv_cache_fraction", "speculative", "mixed_prefill", "graph_latency_overlap",
                                  "arrival_jitter", "benchmark_requests", "iteration_overhead_per_request_s",
                                  "arrival_wait_share", "async_scheduling", "kv_admitted_output_share"})


def needs_serve(options: ServingOptions) -> bool:
    """True when the shared evaluation cannot reproduce serve() for these options (point-by-point serve())."""
    if options.length_spread > 0:      # lengths drawn per concurrency: the cost scenario changes with it
        return True
    defaults = ServingOptions.model_fields
    return any(name not in SHARED_OPTION_FIELDS and getattr(options, name) != defaults[name].default
               for name in type(options).model_fields)


@dataclass
class _Plan:
    """A schedule and what the statistics need from it that does not depend on time."""

    schedule: object
    produced: np.ndarray      # output tokens produced in each iteration (decode tokens + first tokens)
    mixed_keys: list          # per mixed iteration: its content key (for the shared timing)
    decode: tuple | None      # (iteration index, batch, mean prior, grid batches, grid contexts)


def _mixed_key(it) -> bytes:
    return b"|".join((np.sort(it.decode_priors).tobytes(), it.chunk_tokens.tobytes(), it.chunk_priors.tobytes(),
                      bytes([min(it.completions, 255)])))


def _plan(plan) -> _Plan:
    produced = plan.decode_tokens() + np.bincount(plan.requests["first_token_iteration"], minlength=plan.iterations)
    decode = None
    if plan.segments:
        index, batch, mean_prior = cost.decode_iterations(plan)
        decode = (index, batch, mean_prior, *cost.decode_grid(batch, mean_prior))
    return _Plan(plan, produced, [_mixed_key(it) for it in plan.mixed], decode)


class ScheduleCache:
    """Schedules shared by the layouts of one search (same lengths and options apart from the layout)."""

    def __init__(self):
        self.plans: dict = {}

    def get(self, options: ServingOptions, clients: int, capacity: float, per_request, mix: bool = True,
            jitter: int = 0, admitted_share: float = 1.0) -> _Plan:
        spec = options.speculative
        step, verify = (spec.tokens_per_step, spec.verify_tokens) if spec is not None else (1.0, 1)
        isl, osl = options.lengths(clients)
        reserve = per_request(isl + osl)
        admitted = per_request(admitted_tokens(isl, osl, admitted_share)) if admitted_share < 1 else reserve
        limit = options.batch_limit(clients)
        # at most `clients` requests are ever in flight: if the cache holds the largest `clients` of them,
        # the capacity never refuses an admission and the schedule is the same for every layout
        unlimited = float(np.sort(admitted)[-clients:].sum()) * (1 + 1e-9) <= capacity
        if unlimited and reserve.max() > capacity:
            unlimited = False       # one request alone does not fit: schedule() says so
        key = (clients, options.token_budget, limit, step, verify, mix, jitter) + \
            (() if unlimited else (capacity, reserve.tobytes(), admitted.tobytes()))
        if key not in self.plans:
            plan = schedule(isl, osl, clients, options.token_budget, limit,
                            np.inf if unlimited else capacity, np.zeros_like(reserve) if unlimited else reserve,
                            tokens_per_step=step, verify_tokens=verify, mix_decode=mix,
                            arrival_delays=options.arrival_delays(clients, jitter),
                            kv_bytes_admitted=None if unlimited or admitted_share >= 1 else admitted)
            self.plans[key] = _plan(plan)
        return self.plans[key]


class LayoutSetup:
    """What serve() settles before its schedule, for one layout: the cost scenario, the replica whose kernel
    table times the iterations, the estimators, the host-side times and the KV budget per token budget."""

    def __init__(self, hardware, model, method: str, base: ServingOptions, scenario_fields: dict):
        self.hardware, self.model, self.base = hardware, model, base
        base_fields = dict(phase="request", batch=1, chunked_prefill=False, micro_batches=None, **scenario_fields)
        base_fields.update(input_length=base.input_length, output_length=base.output_length, devices=None)
        self.scenario = Scenario.model_validate(base_fields)
        self.method = backend_method(get_method(method), base.backend)     # as serve(): the backend's 4-bit kernels
        _check_supported(model, self.scenario, self.method.name, hardware, base.backend)
        check_fits_model(model, self.scenario)
        graphed = self.method.name == "realistic" and base.graph_decode
        self.graph = backend_method(get_method("realistic-graph"), base.backend) if graphed else self.method
        profile = backend_profile(base.backend)          # as serve(): prefill mixed into decode, hidden latency
        self.mix = profile.mixed_prefill if base.mixed_prefill is None else base.mixed_prefill
        self.overlap = (profile.graph_latency_overlap if base.graph_latency_overlap is None
                        else base.graph_latency_overlap) if graphed else 0.0
        self.jitter, self.benchmark_requests = scheduling(base, self.method.name)
        self.admitted_share = kv_admitted_share(base)
        fitted = overheads(base.backend, self.method.name)
        self.overhead = fitted[0] if base.iteration_overhead_s is None else base.iteration_overhead_s
        self.request_overhead = fitted[1] if base.request_overhead_s is None else base.request_overhead_s
        per_decoding, wait_share = host_terms(base, self.method.name)
        self.host_options = base.model_copy(update={"iteration_overhead_s": self.overhead,
                                                    "iteration_overhead_per_request_s": per_decoding,
                                                    "arrival_wait_share": wait_share,
                                                    "async_scheduling": scheduled_ahead(base, self.method.name)})
        s = self.scenario
        # replicas are independent unless the expert-parallel group spans them (attention data parallelism)
        self.replica = s if s.ep > s.tp else Scenario.model_validate({**s.model_dump(), "dp": 1, "devices": None})
        self.layout = parallel_layout(model, self.replica)   # ParallelismError when the model does not divide
        self.speculative = base.speculative
        self.draft = _draft(base.speculative, model, self.replica)   # (draft model, scenario, layout) or None
        self.verify_tokens = base.speculative.verify_tokens if base.speculative is not None else 1
        self._budgets: dict = {}

    def kv(self, token_budget: int):
        """(KV capacity per device, bytes per request) at this token budget (ServingCapacityError: no room)."""
        if token_budget not in self._budgets:
            options = self.base.model_copy(update={"token_budget": token_budget})
            self._budgets[token_budget] = kv_budget(self.model, self.replica, self.hardware, options, self.layout,
                                                    self.draft)
        return self._budgets[token_budget]


class LayoutEvaluator(LayoutSetup):
    """serve()'s metrics at many (concurrency, token budget) points of one layout (module docstring)."""

    def __init__(self, hardware, model, method: str, base: ServingOptions, scenario_fields: dict,
                 schedules: ScheduleCache | None = None):
        super().__init__(hardware, model, method, base, scenario_fields)
        self.schedules = schedules or ScheduleCache()

    def evaluate(self, points: list[tuple[int, int]]) -> list[dict | Exception]:
        """Per (concurrency, token budget): serve()'s metrics dict, or the exception serve() would raise."""
        runs_per_point, plans = [], {}
        for concurrency, budget in points:
            try:
                options = options_at(self.base, concurrency, budget)
                capacity, per_request = self.kv(budget)
                runs = []
                for clients, replicas in options.replica_concurrencies(self.scenario.dp).items():
                    plan = self.schedules.get(options, clients, capacity, per_request, self.mix, self.jitter,
                                              self.admitted_share)
                    plans[id(plan)] = plan
                    runs.append((replicas, plan))
                runs_per_point.append((options, runs))
            except ValueError as error:    # ServingCapacityError, an invalid option (budget < batch), ...
                runs_per_point.append(error)
        times = self._time(list(plans.values()))
        return [entry if isinstance(entry, Exception) else self._metrics(entry[0], entry[1], times)
                for entry in runs_per_point]

    def _time(self, plans: list[_Plan]) -> dict:
        """{id(plan): seconds of each iteration, host overhead included}: two estimator calls for all plans."""
        mixed, seen = [], {}
        for plan in plans:
            for it, key in zip(plan.schedule.mixed, plan.mixed_keys):
                if key not in seen:
                    seen[key] = len(mixed)
                    mixed.append(it)
        mixed_times = cost.time_pass(cost.mixed_pass(mixed, self.verify_tokens), len(mixed), self.model,
                                     self.replica, self.hardware, self.method, self.layout) if mixed else np.zeros(0)
        pairs = {}
        for plan in plans:
            if plan.decode is not None:
                batches, contexts = plan.decode[3], plan.decode[4]
                for n in batches:
                    for p in contexts:
                        pairs.setdefault((float(n), float(p)), len(pairs))
        grid_times = np.zeros(0)
        if pairs:
            n, p = (np.array(values) for values in zip(*pairs))
            grid_times = cost.time_pass(_pair_pass(n, p, self.verify_tokens), len(n), self.model, self.replica,
                                        self.hardware, self.graph, self.layout, self.overlap)
        draft = self._draft_times(plans, mixed, seen) if self.draft is not None else {}
        out = {}
        for plan in plans:
            sched = plan.schedule
            times = np.zeros(sched.iterations)
            if sched.mixed:
                index = np.array([it.index for it in sched.mixed])
                times[index] = mixed_times[[seen[key] for key in plan.mixed_keys]]
            if plan.decode is not None:
                index, batch, mean_prior, batches, contexts = plan.decode
                grid = grid_times[[pairs[(float(n), float(p))] for n in batches for p in contexts]]
                times[index] = cost.interpolate_grid(grid, batches, contexts, batch, mean_prior)
            if self.draft is not None:
                times = times + draft[id(plan)]
            out[id(plan)] = times + host_times(sched, self.host_options)
        return out

    def _draft_times(self, plans: list[_Plan], mixed: list, seen: dict) -> dict:
        """{id(plan): seconds the draft adds to each iteration}, as speculative.draft_times gives them plan by plan,
        in two estimator calls for all plans: the draft over the distinct mixed iterations, and every grid point of
        the plans' one-token draft passes."""
        drafter, scenario, layout = self.draft
        k = self.speculative.draft_tokens
        mixed_times = cost.time_pass(cost.mixed_pass(mixed), len(mixed), drafter, scenario, self.hardware,
                                     self.method, layout) if mixed else np.zeros(0)
        passes, pairs = {}, {}
        for plan in plans:
            sched = plan.schedule
            index, batch, prior = cost.decode_iterations(sched) if sched.segments else \
                (np.zeros(0, int), np.zeros(0), np.zeros(0))
            count = np.full(len(index), float(k))
            decoding = [it for it in sched.mixed if len(it.decode_priors)]
            if decoding and k > 1:
                index = np.concatenate([index, [it.index for it in decoding]]).astype(np.int64)
                batch = np.concatenate([batch, [float(len(it.decode_priors)) for it in decoding]])
                prior = np.concatenate([prior, [float(np.mean(it.decode_priors)) for it in decoding]])
                count = np.concatenate([count, np.full(len(decoding), float(k - 1))])
            grid = None
            if len(index):
                prior = prior + (k - 1) / 2.0      # the draft's passes attend to p, p + 1, ..., p + k - 1 tokens
                grid = cost.decode_grid(batch, prior)
                for n in grid[0]:
                    for p in grid[1]:
                        pairs.setdefault((float(n), float(p)), len(pairs))
            passes[id(plan)] = (index, batch, prior, count, grid)
        grid_times = np.zeros(0)
        if pairs:
            n, p = (np.array(values) for values in zip(*pairs))
            grid_times = cost.time_pass(_pair_pass(n, p), len(n), drafter, scenario, self.hardware, self.graph, layout)
        out = {}
        for plan in plans:
            sched = plan.schedule
            times = np.zeros(sched.iterations)
            if sched.mixed:
                times[np.array([it.index for it in sched.mixed])] = mixed_times[[seen[key] for key in plan.mixed_keys]]
            index, batch, prior, count, grid = passes[id(plan)]
            if grid is not None:
                batches, contexts = grid
                table = grid_times[[pairs[(float(n), float(p))] for n in batches for p in contexts]]
                np.add.at(times, index, count * cost.interpolate_grid(table, batches, contexts, batch, prior))
            out[id(plan)] = times
        return out

    def _metrics(self, options: ServingOptions, runs: list, times: dict) -> dict:
        """serve()'s metrics (engine/serving/simulate.py _result) from numpy arrays."""
        tokens_per_s, parts = 0.0, []
        for replicas, plan in runs:
            r = plan.schedule.requests
            a = request_arrays(plan.schedule, times[id(plan)], options, self.request_overhead or 0.0,
                               self.benchmark_requests, wait_share=self.host_options.arrival_wait_share,
                               ahead=self.host_options.async_scheduling)
            measured, osl = a["measured"], r["output_length"].astype(float)
            last = r["sequence"] == np.bincount(r["client"])[r["client"]] - 1
            start, stop = float(a["arrival_s"][measured].min()), float(a["finish_s"][last].min())
            ends = np.cumsum(times[id(plan)])
            inside = (ends > start) & (ends <= stop)
            tokens_per_s += replicas * float(plan.produced[inside].sum()) / (stop - start)
            parts.append((a["ttft_s"], a["tpot_s"], a["e2e_s"], osl, measured, replicas, a["weight"]))
        ttft, tpot, e2e, osl = (np.concatenate([p[i][p[4]] for p in parts]) for i in range(4))
        weights = np.concatenate([p[6][p[4]] * float(p[5]) for p in parts])
        mean_tpot = _mean(tpot, weights)
        devices = self.scenario.device_count
        metrics = {
            "ttft_s": _mean(ttft, weights), "ttft_p50_s": _quantile(ttft, weights, 0.5),
            "ttft_p90_s": _quantile(ttft, weights, 0.9), "ttft_p99_s": _quantile(ttft, weights, 0.99),
            "tpot_s": mean_tpot, "tpot_p50_s": _quantile(tpot, weights, 0.5),
            "tpot_p90_s": _quantile(tpot, weights, 0.9),
            "e2e_s": _mean(e2e, weights), "e2e_p90_s": _quantile(e2e, weights, 0.9),
            "tokens_per_s": tokens_per_s, "tokens_per_s_per_device": tokens_per_s / devices,
            "tokens_per_s_per_user": 1.0 / mean_tpot if mean_tpot and np.isfinite(mean_tpot) else float("nan"),
        }
        metrics["requests_per_s"] = tokens_per_s / float(np.average(osl, weights=weights))
        return metrics


def options_at(base: ServingOptions, concurrency: int, token_budget: int) -> ServingOptions:
    """`base` at one point, validated (a token budget below the decode batch x verify tokens is refused); the
    speculative option (a draft ModelConfig) is passed on as it is, not re-read from its name."""
    return ServingOptions(**{**dict(base), "concurrency": concurrency, "token_budget": token_budget})


def _pair_pass(n: np.ndarray, p: np.ndarray, decode_tokens: int = 1):
    """Decode rows at arbitrary (batch, mean cached tokens) pairs, built as cost.grid_pass builds its rows
    (`decode_tokens` query tokens per sequence: k + 1 in a speculative verification pass)."""
    rows = len(n)
    per_sequence = np.repeat(np.arange(rows), n.astype(np.int64))
    priors = np.repeat(p, n.astype(np.int64))
    part = cost._part("", "Va_Mqa", per_sequence, rows, np.full_like(priors, float(decode_tokens)), priors)
    return cost.ForwardPass("serve", n * decode_tokens, n * decode_tokens, 1, (part,))
