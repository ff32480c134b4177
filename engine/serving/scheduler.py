"""The closed-loop continuous-batching scheduler, at iteration level, in tokens (no times yet).

C clients each send a request, wait for its last token and send the next one at once (a closed loop,
as serving benchmarks run at a fixed concurrency); all C send their first request together. The
server runs iterations (one forward pass each):

1. every running request (prompt done, tokens left to generate) decodes one token;
2. waiting requests are admitted in arrival order while fewer than `max_batch` are admitted and the
   KV cache can hold what each reserves at admission: by default its whole sequence (prompt + output, as
   TensorRT-LLM's guaranteed-no-evict policy does, so no request is ever preempted); `kv_bytes_admitted`
   reserves less (vLLM allocates blocks as tokens are generated: in a steady state the running requests
   hold their prompt and on average half their output, so it admits more of them; its preemptions when
   the cache runs full are not simulated);
3. the rest of the `token_budget` goes to admitted prompts in arrival order (chunked prefill: a prompt
   may be split over iterations; one iteration may finish one prompt and start the next). Without chunked
   prefill (`chunk_prompts` False, TensorRT-LLM's default) prompts run whole: a prompt that does not fit what
   is left of the budget waits for the next iteration, and the first prompt of an iteration always runs (the
   engine's token limit is set to hold a prompt and the decoding batch).

A prompt whose last chunk runs in iteration i yields its first token at the end of i (TTFT); the
request then decodes one token per iteration and finishes with its last one. Its client's next
request arrives at that moment and can be scheduled from the next iteration on.

Nothing here depends on time: which tokens run in which iteration follows from token counts alone, so
the schedule is computed first and timed afterwards in one vectorized call (engine/serving/cost.py).
Iterations that only decode and admit nothing are fast-forwarded as one `DecodeSegment` (up to the
next finish), so the loop runs about once per prompt chunk and once per finish.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from engine.serving.schedule_fast import whole_step_loop
from engine.serving.schedule_records import DecodeSegment, MixedIteration, gate_length, gate_open, gate_release


class ServingCapacityError(ValueError):
    """A request that can never run (its KV cache alone exceeds the cache's capacity)."""


@dataclass
class Schedule:
    """The whole run: every iteration either mixed (prompt chunks) or in a decode-only segment."""

    iterations: int
    mixed: list[MixedIteration]
    segments: list[DecodeSegment]
    requests: dict[str, np.ndarray]    # per request: client, sequence, input/output length, iterations
    kv_capacity_bytes: float          # per device
    peak_kv_bytes: float = 0.0        # the most the admitted requests reserved at once
    notes: list[str] = field(default_factory=list)
    tokens_per_step: float = 1.0      # tokens a decoding request advances per iteration (speculative decoding: E)

    def decoding_requests(self) -> np.ndarray:
        """Requests decoding in each iteration."""
        counts = np.zeros(self.iterations)
        for it in self.mixed:
            counts[it.index] = len(it.decode_priors)
        for seg in self.segments:
            counts[seg.start:seg.start + seg.length] = len(seg.priors)
        return counts

    def decode_tokens(self) -> np.ndarray:
        """Decode tokens generated per iteration (decoding requests x tokens_per_step; with speculative
        decoding a request's last step counts E tokens although it may need fewer)."""
        return self.decoding_requests() * self.tokens_per_step

    def prefill_tokens(self) -> np.ndarray:
        tokens = np.zeros(self.iterations)
        if self.mixed:
            chunks = [len(it.chunk_tokens) for it in self.mixed]
            row = np.repeat(np.arange(len(chunks)), chunks)
            flat = np.concatenate([it.chunk_tokens for it in self.mixed]).astype(float)
            tokens[[it.index for it in self.mixed]] = np.bincount(row, weights=flat, minlength=len(chunks))
        return tokens


@dataclass
class _Running:
    """Requests decoding, as parallel numpy arrays: id, cached tokens before the next decode step, tokens left
    (floats: with speculative decoding a step advances a fractional expected number of tokens)."""

    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    priors: np.ndarray = field(default_factory=lambda: np.zeros(0))
    left: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tokens_per_step: float = 1.0

    def add(self, requests: list[int], prompts: np.ndarray, outputs: np.ndarray) -> None:
        """Requests whose prompt just finished: their first token is out, its K/V not yet cached."""
        self.ids = np.concatenate([self.ids, requests])
        self.priors = np.concatenate([self.priors, prompts[requests]])
        self.left = np.concatenate([self.left, outputs[requests] - 1])

    def step(self, iterations: int = 1) -> None:
        self.priors += iterations * self.tokens_per_step
        self.left -= iterations * self.tokens_per_step

    def steps_to_next_finish(self) -> int:
        return max(1, int(np.ceil(self.left.min() / self.tokens_per_step - 1e-9)))

    def keep(self, mask: np.ndarray) -> None:
        self.ids, self.priors, self.left = self.ids[mask], self.priors[mask], self.left[mask]


@dataclass(frozen=True)
class _Limits:
    """What bounds one iteration: tokens, admitted requests, KV bytes per device, and how decoding shares it."""

    token_budget: int
    max_batch: int
    kv_capacity_bytes: float
    verify_tokens: int = 1
    mix_decode: bool = True
    chunk_prompts: bool = True
    gate: int = 1                   # while requests decode, prompts are admitted at every gate-th iteration only
    gate_release: int = 0           # ... or once this many wait (0: never; schedule_records.gate_release)


@dataclass
class _Book:
    """Per request (arrival order), what the loop records: lengths, KV reserve, arrival delay (inputs) and the
    client, the iterations it was sent, arrived, got its first token and finished (-1: not yet)."""

    isl: np.ndarray
    osl: np.ndarray
    reserve: np.ndarray
    delays: np.ndarray
    client: np.ndarray
    sent: np.ndarray
    arrival: np.ndarray
    first_token: np.ndarray
    finish: np.ndarray
    next_request: int            # the next request a client sends (arrival order)

    @classmethod
    def start(cls, isl: np.ndarray, osl: np.ndarray, reserve: np.ndarray, delays: np.ndarray,
              concurrency: int) -> "_Book":
        """The first `concurrency` requests, one per client, arrive at iteration 0."""
        total = len(isl)
        first = min(concurrency, total)
        arrival = np.full(total, -1, dtype=np.int64)
        arrival[:first] = 0
        client = np.full(total, -1, dtype=np.int64)
        client[:first] = np.arange(first)
        return cls(isl, osl, reserve, delays, client, arrival.copy(), arrival, np.full(total, -1, dtype=np.int64),
                   np.full(total, -1, dtype=np.int64), first)

    def send_next(self, previous: int, i: int) -> tuple[int, int] | None:
        """The client of `previous` (finished before iteration `i`) sends its next request, if any is left:
        (arrival iteration, request), or None when there is none."""
        request = self.next_request
        if request >= len(self.isl):
            return None
        self.sent[request] = i
        self.arrival[request] = i + self.delays[request]
        self.client[request] = self.client[previous]
        self.next_request += 1
        return int(self.arrival[request]), request

    def table(self) -> dict[str, np.ndarray]:
        """Schedule.requests, with each request's place among its client's requests (0, 1, 2, ...)."""
        total = len(self.isl)
        order = np.argsort(self.client, kind="stable")      # each client's requests in arrival order
        sorted_clients = self.client[order]
        sequence = np.empty(total, dtype=np.int64)
        sequence[order] = np.arange(total) - np.searchsorted(sorted_clients, sorted_clients, side="left")
        return {"request": np.arange(total), "client": self.client, "sequence": sequence,
                "input_length": self.isl, "output_length": self.osl, "sent_iteration": self.sent,
                "arrival_iteration": self.arrival, "first_token_iteration": self.first_token,
                "finish_iteration": self.finish}


@dataclass
class _Server:
    """The server's queues: arrived and waiting (arrival order), sent but not arrived ((arrival iteration,
    request), sorted), admitted and prefilling ([request, prompt tokens done]), decoding; KV bytes reserved."""

    waiting: deque
    running: _Running
    pending: list[tuple[int, int]] = field(default_factory=list)
    prefilling: list[list[int]] = field(default_factory=list)
    used_kv: float = 0.0
    peak_kv: float = 0.0

    def receive(self, i: int) -> int:
        """The iteration the next one starts at (an idle server waits for the next arrival); arrived requests
        join the waiting queue."""
        if self.pending and not self.waiting and not self.prefilling and not len(self.running.ids):
            i = max(i, self.pending[0][0])
        while self.pending and self.pending[0][0] <= i:
            self.waiting.append(self.pending.pop(0)[1])
        return i

    def admit(self, reserve: np.ndarray, limits: _Limits, i: int = 0) -> None:
        """Waiting requests in arrival order while the batch and the KV cache (whole sequences) have room (at a
        gate opening: gate_open)."""
        if not gate_open(i, limits.gate, bool(len(self.running.ids) or self.prefilling), len(self.waiting),
                         limits.gate_release):
            return
        while self.waiting and len(self.running.ids) + len(self.prefilling) < limits.max_batch and \
                self.used_kv + reserve[self.waiting[0]] <= limits.kv_capacity_bytes:
            request = self.waiting.popleft()
            self.used_kv += reserve[request]
            self.prefilling.append([request, 0])
        self.peak_kv = max(self.peak_kv, self.used_kv)

    def decode_segment(self, i: int, gate: int = 1) -> DecodeSegment:
        """Decode only, from `i` until the next finish (or the next arrival, or the next gate opening)."""
        length = self.running.steps_to_next_finish()
        if self.pending:
            length = max(1, min(length, self.pending[0][0] - i))
        length = gate_length(i, length, gate, bool(self.waiting))
        segment = DecodeSegment(i, length, self.running.priors.copy())
        self.running.step(length)
        return segment

    def mixed_iteration(self, i: int, book: _Book, limits: _Limits) -> MixedIteration:
        """Iteration `i` with prompt chunks: the token budget left after decoding goes to prompts in order;
        prompts that finish yield their first token and start decoding."""
        budget = limits.token_budget - (len(self.running.ids) * limits.verify_tokens if limits.mix_decode else 0)
        new, prior, completed = [], [], []
        for entry in self.prefilling:
            request, done = entry
            if not limits.chunk_prompts and new and int(book.isl[request]) - done > budget:
                break   # whole prompts only: one that does not fit what is left waits for the next iteration
            if budget <= 0 and (limits.chunk_prompts or new):
                break
            take = min(int(book.isl[request]) - done, budget) if limits.chunk_prompts else int(book.isl[request]) - done
            new.append(take)
            prior.append(done)
            entry[1] += take
            budget -= take
            if entry[1] == book.isl[request]:
                completed.append(request)
        del self.prefilling[:len(completed)]    # prompts finish in order: the finished ones lead the list
        running = self.running
        decoding = running.priors.copy() if limits.mix_decode else running.priors[:0].copy()
        iteration = MixedIteration(i, decoding, np.array(new, dtype=float), np.array(prior, dtype=float),
                                   len(completed))
        if limits.mix_decode:
            running.step()
        if completed:
            book.first_token[completed] = i
            running.add(np.array(completed, dtype=np.int64), book.isl, book.osl)
        return iteration

    def retire(self, i: int, book: _Book) -> int:
        """Requests whose last token came out before iteration `i` leave and free their KV cache; their
        clients send their next requests at once. Returns how many finished."""
        done = self.running.left <= 1e-9
        if not done.any():
            return 0
        for request in self.running.ids[done]:
            book.finish[request] = i - 1
            self.used_kv -= book.reserve[request]
            sent = book.send_next(request, i)
            if sent is not None:
                if book.delays[sent[1]] > 0:
                    self.pending.append(sent)
                else:
                    self.waiting.append(sent[1])
        self.running.keep(~done)
        self.pending.sort()
        return int(done.sum())


def _check_fits(isl: np.ndarray, osl: np.ndarray, reserve: np.ndarray, kv_capacity_bytes: float) -> None:
    if reserve.max() > kv_capacity_bytes:
        worst = int(reserve.argmax())
        raise ServingCapacityError(
            f"one request of {isl[worst]} input + {osl[worst]} output tokens needs {reserve[worst] / 1e9:.3g} GB of KV "
            f"cache per device, but the memory left for the KV cache is {kv_capacity_bytes / 1e9:.3g} GB: shorten the "
            "request, use a smaller kv dtype or more devices (tp/pp)")


def schedule(input_lengths: np.ndarray, output_lengths: np.ndarray, concurrency: int, token_budget: int,
             max_batch: int, kv_capacity_bytes: float, kv_bytes_per_request: np.ndarray,
             tokens_per_step: float = 1.0, verify_tokens: int = 1, mix_decode: bool = True,
             arrival_delays: np.ndarray | None = None, kv_bytes_admitted: np.ndarray | None = None,
             chunk_prompts: bool = True, step_by_step: bool = False, context_gate: int = 1,
             gate_ranks: int = 1) -> Schedule:
    """Run the closed loop over `len(input_lengths)` requests, numbered in arrival order (the first
    `concurrency` are the clients' first requests); lengths and the KV bytes (per device) each reserves are per request.

    Speculative decoding (engine/serving/speculative.py): a decoding request advances `tokens_per_step` tokens
    per iteration and takes `verify_tokens` tokens of the iteration's token budget.
    `mix_decode` False: an iteration with prompt chunks runs no decode tokens (SGLang's default: prefill batches
    run alone and take the whole token budget; the decoding requests wait for them).
    `arrival_delays` (per request, whole iterations, default 0): a client's next request reaches the scheduler that
    many iterations after its previous one finished (the client's and the server front end's turnaround, which
    runs beside the GPU's iterations); the first requests arrive at iteration 0 regardless.
    `kv_bytes_admitted` (per request, default `kv_bytes_per_request`): the KV bytes a request holds in the
    admission count from its admission to its finish (a lazily allocating engine's steady-state footprint); every
    request must still fit whole (`kv_bytes_per_request`) on its own. `chunk_prompts` False: prompts are never split
    (step 3 above). `context_gate` P > 1: while requests decode or prefill, waiting prompts are admitted only at
    iterations that are multiples of P, or once as many wait as make every one of `gate_ranks` attention-DP ranks
    likely to hold one (gate_open, gate_release; options.context_gate_iterations). Whole-token decode steps
    (`tokens_per_step` 1) run the same loop in scalars
    (engine/serving/schedule_fast.py, the same Schedule to the bit); `step_by_step` True runs the plain loop below."""
    isl = np.asarray(input_lengths, dtype=np.int64)
    osl = np.asarray(output_lengths, dtype=np.int64)
    reserve = np.asarray(kv_bytes_per_request, dtype=float)
    _check_fits(isl, osl, reserve, kv_capacity_bytes)
    if kv_bytes_admitted is not None:
        reserve = np.minimum(np.asarray(kv_bytes_admitted, dtype=float), reserve)
    total = len(isl)
    delays = np.zeros(total, dtype=np.int64) if arrival_delays is None else np.asarray(arrival_delays, dtype=np.int64)
    limits = _Limits(token_budget, max_batch, kv_capacity_bytes, verify_tokens, mix_decode, chunk_prompts,
                     max(1, int(context_gate)), gate_release(gate_ranks) if context_gate > 1 else 0)
    if float(tokens_per_step) == 1.0 and not step_by_step:
        run = whole_step_loop(isl, osl, reserve, delays, concurrency, limits)
        book = _Book(isl, osl, reserve, delays, *(np.array(values, dtype=np.int64) for values in run.book),
                     run.next_request)
        return Schedule(run.iterations, run.mixed, run.segments, book.table(), kv_capacity_bytes, run.peak_kv)
    book = _Book.start(isl, osl, reserve, delays, concurrency)
    server = _Server(deque(range(book.next_request)), _Running(tokens_per_step=float(tokens_per_step)))
    mixed, segments, i, unfinished = [], [], 0, total
    while unfinished:
        i = server.receive(i)
        server.admit(reserve, limits, i)
        if not server.prefilling:
            segments.append(server.decode_segment(i, limits.gate))
            i += segments[-1].length
        else:
            mixed.append(server.mixed_iteration(i, book, limits))
            i += 1
        unfinished -= server.retire(i, book)
    return Schedule(i, mixed, segments, book.table(), kv_capacity_bytes, server.peak_kv,
                    tokens_per_step=float(tokens_per_step))
