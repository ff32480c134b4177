"""The closed-loop continuous-batching scheduler, at iteration level, in tokens (no times yet).

C clients each send a request, wait for its last token and send the next one at once (a closed loop,
as serving benchmarks run at a fixed concurrency); all C send their first request together. The
server runs iterations (one forward pass each):

1. every running request (prompt done, tokens left to generate) decodes one token;
2. waiting requests are admitted in arrival order while fewer than `max_batch` are admitted and the
   KV cache can hold their whole sequence (prompt + output: the cache is reserved at admission, as
   TensorRT-LLM's guaranteed-no-evict policy does, so no request is ever preempted);
3. the rest of the `token_budget` goes to admitted prompts in arrival order (chunked prefill: a prompt
   may be split over iterations; one iteration may finish one prompt and start the next).

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


class ServingCapacityError(ValueError):
    """A request that can never run (its KV cache alone exceeds the cache's capacity)."""


@dataclass
class MixedIteration:
    """An iteration with prompt chunks: its decoding requests' cached tokens, its chunks (new, prior)."""

    index: int
    decode_priors: np.ndarray      # tokens in the cache before each decode token (prompt + generated - 1)
    chunk_tokens: np.ndarray       # prompt tokens of each chunk
    chunk_priors: np.ndarray       # prompt tokens of the same request already prefilled
    completions: int               # prompts that finish in this iteration (they sample their first token)


@dataclass
class DecodeSegment:
    """`length` iterations from `start` in which the same requests decode and nothing else runs."""

    start: int
    length: int
    priors: np.ndarray             # cached tokens of each decoding request in the first iteration


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
        for it in self.mixed:
            tokens[it.index] = it.chunk_tokens.sum()
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


def schedule(input_lengths: np.ndarray, output_lengths: np.ndarray, concurrency: int, token_budget: int,
             max_batch: int, kv_capacity_bytes: float, kv_bytes_per_request: np.ndarray,
             tokens_per_step: float = 1.0, verify_tokens: int = 1, mix_decode: bool = True,
             arrival_delays: np.ndarray | None = None) -> Schedule:
    """Run the closed loop over `len(input_lengths)` requests, numbered in arrival order (the first
    `concurrency` are the clients' first requests); lengths and the KV bytes (per device) each reserves are per request.

    Speculative decoding (engine/serving/speculative.py): a decoding request advances `tokens_per_step` tokens
    per iteration and takes `verify_tokens` tokens of the iteration's token budget.
    `mix_decode` False: an iteration with prompt chunks runs no decode tokens (SGLang's default: prefill batches
    run alone and take the whole token budget; the decoding requests wait for them).
    `arrival_delays` (per request, whole iterations, default 0): a client's next request reaches the scheduler that
    many iterations after its previous one finished (the client's and the server front end's turnaround, which
    runs beside the GPU's iterations); the first requests arrive at iteration 0 regardless."""
    isl = np.asarray(input_lengths, dtype=np.int64)
    osl = np.asarray(output_lengths, dtype=np.int64)
    reserve = np.asarray(kv_bytes_per_request, dtype=float)
    total = len(isl)
    if reserve.max() > kv_capacity_bytes:
        worst = int(reserve.argmax())
        raise ServingCapacityError(
            f"one request of {isl[worst]} input + {osl[worst]} output tokens needs {reserve[worst] / 1e9:.3g} GB of KV "
            f"cache per device, but the memory left for the KV cache is {kv_capacity_bytes / 1e9:.3g} GB: shorten the "
            "request, use a smaller kv dtype or more devices (tp/pp)")
    first_token = np.full(total, -1, dtype=np.int64)
    finish = np.full(total, -1, dtype=np.int64)
    arrival = np.full(total, -1, dtype=np.int64)
    arrival[:min(concurrency, total)] = 0
    sent = arrival.copy()                            # the iteration at whose start the client sent it
    client = np.full(total, -1, dtype=np.int64)
    client[:min(concurrency, total)] = np.arange(min(concurrency, total))
    delays = np.zeros(total, dtype=np.int64) if arrival_delays is None else np.asarray(arrival_delays, dtype=np.int64)
    waiting = deque(range(min(concurrency, total)))  # arrived, not admitted (arrival order)
    pending: list[tuple[int, int]] = []              # (arrival iteration, request): sent, not arrived yet
    prefilling: list[list[int]] = []                 # admitted: [request, prompt tokens done]
    running = _Running(tokens_per_step=float(tokens_per_step))
    mixed, segments = [], []
    next_request, used_kv, peak_kv, i, unfinished = min(concurrency, total), 0.0, 0.0, 0, total
    while unfinished:
        if pending and not waiting and not prefilling and not len(running.ids):
            i = max(i, pending[0][0])        # the server idles until the next request arrives
        while pending and pending[0][0] <= i:
            waiting.append(pending.pop(0)[1])
        while waiting and len(running.ids) + len(prefilling) < max_batch and \
                used_kv + reserve[waiting[0]] <= kv_capacity_bytes:
            request = waiting.popleft()
            used_kv += reserve[request]
            prefilling.append([request, 0])
        peak_kv = max(peak_kv, used_kv)
        if not prefilling:     # decode only until the next finish
            length = running.steps_to_next_finish()
            if pending:
                length = max(1, min(length, pending[0][0] - i))
            segments.append(DecodeSegment(i, length, running.priors.copy()))
            running.step(length)
            i += length
        else:
            budget = token_budget - (len(running.ids) * verify_tokens if mix_decode else 0)
            new, prior, completed = [], [], []
            for entry in prefilling:
                if budget <= 0:
                    break
                request, done = entry
                take = min(int(isl[request]) - done, budget)
                new.append(take)
                prior.append(done)
                entry[1] += take
                budget -= take
                if entry[1] == isl[request]:
                    completed.append(request)
            del prefilling[:len(completed)]    # prompts finish in order: the finished ones lead the list
            decoding = running.priors.copy() if mix_decode else running.priors[:0].copy()
            mixed.append(MixedIteration(i, decoding, np.array(new, dtype=float),
                                        np.array(prior, dtype=float), len(completed)))
            if mix_decode:
                running.step()
            if completed:
                first_token[completed] = i
                running.add(np.array(completed, dtype=np.int64), isl, osl)
            i += 1
        done = running.left <= 1e-9
        if not done.any():
            continue
        unfinished -= int(done.sum())
        for request in running.ids[done]:
            finish[request] = i - 1
            used_kv -= reserve[request]
            if next_request < total:          # the client sends its next request at once
                sent[next_request] = i
                arrival[next_request] = i + delays[next_request]
                client[next_request] = client[request]
                if delays[next_request] > 0:
                    pending.append((int(arrival[next_request]), next_request))
                else:
                    waiting.append(next_request)
                next_request += 1
        running.keep(~done)
        pending.sort()
    order = np.argsort(client, kind="stable")      # each client's requests in arrival order: 0, 1, 2, ...
    sorted_clients = client[order]
    sequence = np.empty(total, dtype=np.int64)
    sequence[order] = np.arange(total) - np.searchsorted(sorted_clients, sorted_clients, side="left")
    requests = {"request": np.arange(total), "client": client, "sequence": sequence,
                "input_length": isl, "output_length": osl,
                "sent_iteration": sent, "arrival_iteration": arrival, "first_token_iteration": first_token, "finish_iteration": finish}
    return Schedule(i, mixed, segments, requests, kv_capacity_bytes, peak_kv, tokens_per_step=float(tokens_per_step))
