"""A fast first estimate of serve()'s metrics, to screen thousands of configurations before simulating few.

serve() simulates every iteration of a closed-loop run; a search that did that at every configuration
would spend 10-80 ms on each. The screen instead takes the run's steady cycle in closed form and times
three or four representative iterations per configuration, all configurations of a layout in two estimator
calls (the iterations with prompt chunks, the decode-only ones), iterations alike between configurations once:

- a clients of a replica run at once: a = min(clients, max_batch, requests the KV cache holds); the
  others wait a whole cycle (closed loop);
- one prompt's prefill takes P = ceil(I / max(B - a, 1)) iterations (token budget B less the decode
  tokens), then it decodes O - 1 tokens, one per iteration: a client's cycle is L = O - 1 + P iterations,
  unless the budget cannot hold the cycle's tokens, a (I + O - 1) / B iterations (prefill-bound: prompts
  queue);
- of those L iterations m = min(L, max(a I / max(B - a, 1), ceil(a / g))) carry prompt chunks, where g
  prompts (as many as the budget takes) start together as in the start-up burst (mixed, timed with their mean
  prompt tokens, and when prompts span iterations a / m of them holding the end of one prompt and the start of
  the next and the clients still decoding), the rest decode only (timed at the mean decode batch
  a (O - 1) / L); both at the mean context I + O / 2;
- TPOT = cycle time / L; output tokens/s = a O / cycle time; TTFT = P mixed iterations (plus the queueing
  of a prefill-bound run or of clients beyond a), and for each client's first request the start-up burst
  (all clients send at t = 0: the mean prompt waits for half of the ceil(C I / B) burst iterations),
  weighed as serve() weighs them (min(1, C / N) of the measured requests for a benchmark of N requests);
- speculative decoding (k drafted tokens, E tokens per step): O - 1 tokens take ceil((O - 1) / E) decode
  steps, each decoding request takes k + 1 tokens of the budget and of the target's verification rows, the
  draft's passes are added to each representative iteration as serve() adds them (over the prompt chunks and
  k - 1 one-token passes in a mixed iteration, k one-token passes in a decode-only one), and the KV budget
  holds the draft's weights and KV cache.

The screen's error against serve() is printed by benchmarks/serving_search_speed.py; serving_search()
re-simulates with serve()'s exact evaluation every configuration that reaches the front or the best
(engine/serving/search.py), so the numbers reported there are serve()'s.
"""

from __future__ import annotations

import math

import numpy as np

from engine.serving import cost
from engine.serving.backends import admitted_tokens
from engine.serving.options import ServingOptions
from engine.serving.scheduler import MixedIteration, ServingCapacityError
from engine.serving.search_eval import LayoutSetup, _pair_pass, options_at


class LayoutScreen(LayoutSetup):
    """Screened metrics of many (concurrency, token budget) points of one layout (module docstring)."""

    def __init__(self, hardware, model, method: str, base: ServingOptions, scenario_fields: dict):
        super().__init__(hardware, model, method, base, scenario_fields)
        self.request_overhead = self.request_overhead or 0.0
        self._kv: dict = {}

    def _admitted(self, budget: int) -> int:
        """Requests the KV cache holds at once at this token budget (ServingCapacityError when none)."""
        if budget not in self._kv:
            capacity, per_request = self.kv(budget)
            need = float(per_request(np.array([self.base.input_length + self.base.output_length]))[0])
            if need > capacity:
                raise ServingCapacityError(
                    f"one request of {self.base.input_length} input + {self.base.output_length} output tokens needs "
                    f"{need / 1e9:.3g} GB of KV cache per device, but the memory left for the KV cache is "
                    f"{capacity / 1e9:.3g} GB: shorten the request, use a smaller kv dtype or more devices (tp/pp)")
            held = need if self.admitted_share >= 1 else float(per_request(admitted_tokens(
                np.array([self.base.input_length]), np.array([self.base.output_length]), self.admitted_share))[0])
            self._kv[budget] = int(capacity // held) if held > 0 else 10**9
        return self._kv[budget]

    def _share_kv(self, budgets: list[int], clients: int) -> None:
        """The largest budget leaves the least room for the KV cache (the largest activations): when even that
        room holds every client's request, no budget limits admission and one kv_budget() call serves all."""
        top = max(budgets, default=0)
        try:
            admitted = self._admitted(top) if top else 0
        except ValueError:
            return
        if admitted >= clients:
            for budget in budgets:
                self._kv.setdefault(budget, admitted)

    def evaluate(self, points: list[tuple[int, int]]) -> list[dict | Exception]:
        """Per (concurrency, token budget): screened metrics, or the exception serve() would raise."""
        I, O, R = self.base.input_length, self.base.output_length, self.base.requests_per_client
        V, steps = self.verify_tokens, self._decode_steps()
        self._share_kv([b for _, b in points], max((c for c, _ in points), default=1))
        plans, mixed, decode = [], {}, {}     # rows to time: {key: position}, shared by the points alike
        for concurrency, budget in points:
            try:
                limit = self.base.max_batch or budget // V     # as ServingOptions.batch_limit
                if budget < min(limit or concurrency, concurrency) * V:   # ServingOptions refuses it: its message
                    options_at(self.base, concurrency, budget)
                admitted = self._admitted(budget)
                kinds = []
                for clients, replicas in _replica_concurrencies(concurrency, self.scenario.dp):
                    a = max(1, min(clients, limit or clients, admitted))
                    free = max(budget - a * V, 1)
                    prefill_its = math.ceil(I / free)
                    cycle = max(steps + prefill_its, a * (I + V * steps) / budget)
                    group = max(1, min(a, free // I) // (self.jitter + 1))   # prompts that finish prefill
                    # together (in lock step; clients drifting apart by 0..J iterations spread them over J + 1)
                    mixed_its = min(cycle, max(a * I / free, math.ceil(a / group)))
                    prompt_tokens = a * I / max(mixed_its, 1e-9)
                    decoding_mix = max(min(a - prompt_tokens / I, a * steps / cycle), 0.0)
                    burst_its = math.ceil(clients * I / max(budget - a * V / 2, 1))
                    steady_row = _row_index(mixed, _mixed_key(prompt_tokens, decoding_mix))
                    # prompts longer than an iteration's prompt tokens: a of the mixed iterations hold the end of
                    # one prompt and the start of the next (two chunks), the others one chunk inside a prompt
                    boundary = min(1.0, a / max(mixed_its, 1e-9)) if prompt_tokens < I else 0.0
                    boundary_row = _row_index(mixed, _mixed_key(prompt_tokens, decoding_mix, True)) \
                        if boundary else steady_row
                    burst_row = _row_index(mixed, _mixed_key(min(max(budget - a * V / 2, 1), clients * I), a / 2))
                    decode_row = _row_index(decode, (max(1, round(a * steps / cycle)), I + O / 2))
                    kinds.append(dict(clients=clients, replicas=replicas, a=a, cycle=cycle, mixed_its=mixed_its,
                                      prefill_its=prefill_its, burst_its=burst_its, mix=steady_row, burst=burst_row,
                                      boundary_row=boundary_row, boundary=boundary,
                                      dec=decode_row))
                plans.append(kinds)
            except ValueError as error:
                plans.append(error)
        mixed_t, decode_t = self._time(mixed, decode)
        return [p if isinstance(p, Exception) else self._metrics(p, mixed_t, decode_t, O, R, c)
                for p, (c, _) in zip(plans, points)]

    def _decode_steps(self) -> int:
        """Decode iterations after a request's first token: O - 1, or ceil((O - 1) / E) with speculative decoding
        (E tokens per verification step, as the scheduler steps a request until its tokens are out)."""
        left = self.base.output_length - 1
        step = self.speculative.tokens_per_step if self.speculative is not None else 1.0
        return max(int(math.ceil(left / step - 1e-9)), 0) if left > 0 else 0

    def _time(self, mixed: dict, decode: dict) -> tuple[np.ndarray, np.ndarray]:
        I, O, V = self.base.input_length, self.base.output_length, self.verify_tokens
        rows = [_mixed_row(tokens, decoding, I, O, boundary) for tokens, decoding, boundary in mixed]
        mixed_t = cost.time_pass(cost.mixed_pass(rows, V), len(rows), self.model, self.replica, self.hardware,
                                 self.method, self.layout) + self.overhead if rows else np.zeros(0)
        decode_t = np.zeros(0)
        if decode:
            n, p = (np.array(values, dtype=float) for values in zip(*decode))
            decode_t = cost.time_pass(_pair_pass(n, p, V), len(n), self.model, self.replica, self.hardware,
                                      self.graph, self.layout, self.overlap) + self.overhead
        if self.draft is not None:
            mixed_t, decode_t = self._draft_time(rows, decode, mixed_t, decode_t)
        return mixed_t, decode_t

    def _draft_time(self, rows: list, decode: dict, mixed_t: np.ndarray, decode_t: np.ndarray):
        """The draft's share, as speculative.draft_times adds it: over a mixed iteration's chunks and one token per
        decoding request, then k - 1 one-token passes; k one-token passes per decode-only iteration; the one-token
        passes at the context + (k - 1) / 2."""
        drafter, scenario, layout = self.draft
        k = self.speculative.draft_tokens
        if rows:
            mixed_t = mixed_t + cost.time_pass(cost.mixed_pass(rows), len(rows), drafter, scenario, self.hardware,
                                               self.method, layout)
        decoding = [(position, row) for position, row in enumerate(rows) if len(row.decode_priors) and k > 1]
        pairs = [(float(len(row.decode_priors)), float(np.mean(row.decode_priors))) for _, row in decoding] + \
            [(float(n), float(p)) for n, p in decode]
        if pairs:
            n, p = (np.array(values) for values in zip(*pairs))
            one = cost.time_pass(_pair_pass(n, p + (k - 1) / 2.0), len(n), drafter, scenario, self.hardware,
                                 self.graph, layout)
            if decoding:
                mixed_t = mixed_t.copy()
                mixed_t[[position for position, _ in decoding]] += (k - 1) * one[:len(decoding)]
            if decode:
                decode_t = decode_t + k * one[len(decoding):]
        return mixed_t, decode_t

    def _metrics(self, kinds: list, mixed_t, decode_t, O: int, R: int, concurrency: int) -> dict:
        steps = self._decode_steps()
        step = self.speculative.tokens_per_step if self.speculative is not None else 1.0
        total_tokens_per_s, weights, ttfts, tpots = 0.0, [], [], []
        for k in kinds:
            t_mix = (1 - k["boundary"]) * mixed_t[k["mix"]] + k["boundary"] * mixed_t[k["boundary_row"]]
            t_burst, t_dec = mixed_t[k["burst"]], decode_t[k["dec"]]
            cycle_s = k["mixed_its"] * t_mix + (k["cycle"] - k["mixed_its"]) * t_dec
            tpot = cycle_s / k["cycle"] * steps / max(O - 1, 1)      # O - 1 tokens in `steps` iterations
            queue_its = max(k["cycle"] - steps - k["prefill_its"], 0.0)
            waiting = (k["clients"] / k["a"] - 1) * cycle_s         # clients beyond those admitted at once
            steady = (k["prefill_its"] + queue_its) * t_mix + waiting
            first = t_burst * (k["burst_its"] + 1) / 2 + waiting
            # the first requests' share of the measured ones: 1 / (R - 1) as simulated, min(1, C / N) for a
            # benchmark of N requests in all (engine/serving/simulate.py request_weights)
            share = 1.0 / max(R - 1, 1) if not self.benchmark_requests or R < 3 else \
                min(1.0, concurrency / self.benchmark_requests)
            ttfts.append(share * first + (1.0 - share) * steady + self.request_overhead)
            tpots.append(tpot if O > 1 else float("nan"))
            weights.append(k["clients"] * k["replicas"])
            # as serve() counts them: the first token and E per decode step (O without speculation)
            total_tokens_per_s += k["replicas"] * k["a"] * (1 + steps * step) / cycle_s
        total = float(sum(weights))
        ttft = sum(w * t for w, t in zip(weights, ttfts)) / total
        tpot = sum(w * t for w, t in zip(weights, tpots)) / total
        e2e = ttft + (O - 1) * (tpot if O > 1 else 0.0)
        return {"ttft_s": ttft, "ttft_p90_s": float("nan"), "tpot_s": tpot, "tpot_p90_s": float("nan"), "e2e_s": e2e,
                "tokens_per_s": total_tokens_per_s,
                "tokens_per_s_per_device": total_tokens_per_s / self.scenario.device_count,
                "tokens_per_s_per_user": 1.0 / tpot if tpot > 0 and np.isfinite(tpot) else float("nan"),
                "requests_per_s": total_tokens_per_s / O}


def _row_index(rows: dict, key) -> int:
    return rows.setdefault(key, len(rows))


def _mixed_key(prompt_tokens: float, decoding: float, boundary: bool = False) -> tuple[int, int, bool]:
    """A mixed row as _mixed_row builds it: whole prompt tokens, decoding requests, a prompt boundary or not."""
    return max(int(round(prompt_tokens)), 1), max(int(round(decoding)), 0), boundary


def _replica_concurrencies(concurrency: int, dp: int) -> list[tuple[int, int]]:
    """ServingOptions.replica_concurrencies without building the options: [(clients of a replica, replicas)]."""
    base, extra = divmod(concurrency, dp)
    return [(clients, replicas) for clients, replicas in ((base + 1, extra), (base, dp - extra))
            if clients > 0 and replicas > 0]


def _mixed_row(prompt_tokens: int, decoding: int, I: int, O: int, boundary: bool = False) -> MixedIteration:
    """A mixed iteration with `prompt_tokens` of prompts and `decoding` requests at the mean context I + O / 2.
    Prompt tokens: whole prompts of I tokens from the start and the rest as one chunk half-way into a prompt; or,
    at a `boundary`, the last half of them ending one prompt and the first half starting the next."""
    whole, rest = divmod(prompt_tokens, I)
    if boundary:
        tail = prompt_tokens // 2
        chunks, priors, whole = [float(tail), float(prompt_tokens - tail)], [float(I - tail), 0.0], 1
    else:
        chunks = [float(I)] * whole + ([float(rest)] if rest else [])
        priors = [0.0] * whole + ([float(max(I - rest, 0) // 2)] if rest else [])
    return MixedIteration(0, np.full(decoding, float(I + O // 2 - 1)), np.array(chunks), np.array(priors), whole)
