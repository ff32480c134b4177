"""The closed loop of engine/serving/scheduler.py, in Python scalars, for whole-token decode steps.

`schedule()` runs this loop when every decoding request advances one token per iteration (no speculative
decoding): the rules are the plain loop's (scheduler.py's docstring) and so is the Schedule, to the bit
(tests/test_schedule_fast.py compares the two). What differs is the bookkeeping, which the plain loop does
with numpy arrays touched every iteration (a thousand iterations of a long-prompt run cost ~20 ms there):

- the decoding requests are not stepped one by one: a counter of decode steps runs for all of them, and a
  request that started decoding when the counter read s0 holds prompt + (steps - s0) cached tokens and
  finishes when the counter reaches s0 + output - 1 (whole numbers: exact in floats, as the plain loop's
  repeated additions of 1.0 are);
- they sit in slots in the order they started (the plain loop's order); the next finish is the top of a
  heap of finish steps, so an iteration in which nobody finishes checks one number;
- queues and the per-request book are Python lists (numpy arrays at the end).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np

from engine.serving.schedule_records import DecodeSegment, MixedIteration, gate_length, gate_open


class _Decoding:
    """Requests decoding, in slots numbered in the order they started: slot s holds base[s] + steps cached
    tokens before the next decode step; `heap` has (decode step at which it finishes, slot)."""

    def __init__(self, total: int):
        self.base = np.zeros(total)
        self.alive = np.zeros(total, dtype=bool)
        self.request = [0] * total
        self.heap: list[tuple[int, int]] = []
        self.low = self.high = self.count = self.steps = 0

    def priors(self) -> np.ndarray:
        """Cached tokens of every decoding request before its next step, in start order."""
        window = self.base[self.low:self.high]
        if self.high - self.low != self.count:
            window = window[self.alive[self.low:self.high]]
        return window + self.steps

    def add(self, request: int, prompt: int, output: int) -> None:
        """A request whose prompt just finished: its first token is out, its K/V not yet cached."""
        slot = self.high
        self.base[slot] = prompt - self.steps
        self.alive[slot] = True
        self.request[slot] = request
        heapq.heappush(self.heap, (self.steps + output - 1, slot))
        self.high += 1
        self.count += 1

    def steps_to_next_finish(self) -> int:
        return max(1, self.heap[0][0] - self.steps)

    def finished(self) -> list[int]:
        """Requests whose last token is out (start order), taken out of the slots."""
        heap, slots = self.heap, []
        while heap and heap[0][0] <= self.steps:
            slots.append(heapq.heappop(heap)[1])
        slots.sort()
        for slot in slots:
            self.alive[slot] = False
        self.count -= len(slots)
        while self.low < self.high and not self.alive[self.low]:
            self.low += 1
        return [self.request[slot] for slot in slots]


class _FastServer:
    """scheduler._Server and _Book in scalars: queues as in the plain loop, KV bytes and the book in lists."""

    def __init__(self, isl, osl, reserve, delays, concurrency: int, limits):
        total = len(isl)
        first = min(concurrency, total)
        self.isl, self.osl = isl.tolist(), osl.tolist()
        self.reserve, self.delays = reserve.tolist(), delays.tolist()
        self.limits = limits
        self.client = list(range(first)) + [-1] * (total - first)
        self.arrival = [0] * first + [-1] * (total - first)
        self.sent = list(self.arrival)
        self.first_token, self.finish = [-1] * total, [-1] * total
        self.next_request = first
        self.waiting, self.pending, self.prefilling = deque(range(first)), [], []
        self.decoding = _Decoding(total)
        self.used_kv = self.peak_kv = 0.0

    def receive(self, i: int) -> int:
        """scheduler._Server.receive; `pending` is a heap of (arrival iteration, request)."""
        pending = self.pending
        if pending and not self.waiting and not self.prefilling and not self.decoding.count:
            i = max(i, pending[0][0])
        while pending and pending[0][0] <= i:
            self.waiting.append(heapq.heappop(pending)[1])
        return i

    def admit(self, i: int = 0) -> None:
        waiting, reserve, limits = self.waiting, self.reserve, self.limits
        busy = bool(self.decoding.count or self.prefilling)
        if not gate_open(i, limits.gate, busy, len(waiting), limits.gate_release):
            return
        while waiting and self.decoding.count + len(self.prefilling) < limits.max_batch and \
                self.used_kv + reserve[waiting[0]] <= limits.kv_capacity_bytes:
            request = waiting.popleft()
            self.used_kv += reserve[request]
            self.prefilling.append([request, 0])
        self.peak_kv = max(self.peak_kv, self.used_kv)

    def decode_segment(self, i: int) -> DecodeSegment:
        decoding = self.decoding
        length = decoding.steps_to_next_finish()
        if self.pending:
            length = max(1, min(length, self.pending[0][0] - i))
        length = gate_length(i, length, self.limits.gate, bool(self.waiting))
        segment = DecodeSegment(i, length, decoding.priors())
        decoding.steps += length
        return segment

    def mixed_iteration(self, i: int) -> MixedIteration:
        """scheduler._Server.mixed_iteration."""
        limits, isl, decoding = self.limits, self.isl, self.decoding
        chunk, mix = limits.chunk_prompts, limits.mix_decode
        budget = limits.token_budget - (decoding.count * limits.verify_tokens if mix else 0)
        new, prior, completed = [], [], []
        for entry in self.prefilling:
            request, done = entry
            left = isl[request] - done
            if not chunk and new and left > budget:
                break
            if budget <= 0 and (chunk or new):
                break
            take = min(left, budget) if chunk else left
            new.append(take)
            prior.append(done)
            entry[1] += take
            budget -= take
            if take == left:
                completed.append(request)
        del self.prefilling[:len(completed)]
        iteration = MixedIteration(i, decoding.priors() if mix else np.zeros(0), np.array(new, dtype=float),
                                   np.array(prior, dtype=float), len(completed))
        if mix:
            decoding.steps += 1
        for request in completed:
            self.first_token[request] = i
            decoding.add(request, isl[request], self.osl[request])
        return iteration

    def retire(self, i: int) -> int:
        """scheduler._Server.retire: finished requests free their KV cache, their clients send the next ones."""
        decoding = self.decoding
        if not decoding.heap or decoding.heap[0][0] > decoding.steps:
            return 0
        finished = decoding.finished()
        for request in finished:
            self.finish[request] = i - 1
            self.used_kv -= self.reserve[request]
            following = self.next_request
            if following >= len(self.isl):
                continue
            self.next_request += 1
            self.sent[following] = i
            self.arrival[following] = i + self.delays[following]
            self.client[following] = self.client[request]
            if self.delays[following] > 0:
                heapq.heappush(self.pending, (self.arrival[following], following))
            else:
                self.waiting.append(following)
        return len(finished)


@dataclass
class WholeStepRun:
    """What the loop leaves: the iterations, mixed ones and decode segments, the peak KV bytes and, per request,
    the book's lists (client, sent, arrival, first token and finish iterations) and the next request to send."""

    iterations: int
    mixed: list[MixedIteration]
    segments: list[DecodeSegment]
    peak_kv: float
    book: tuple[list[int], ...]
    next_request: int


def whole_step_loop(isl: np.ndarray, osl: np.ndarray, reserve: np.ndarray, delays: np.ndarray, concurrency: int,
                    limits) -> WholeStepRun:
    """scheduler.schedule's loop for tokens_per_step 1, on its validated inputs (int64 lengths and delays, float
    reserves already limited to what a request holds at admission) and its _Limits."""
    server = _FastServer(isl, osl, reserve, delays, concurrency, limits)
    mixed, segments, i, unfinished = [], [], 0, len(isl)
    heap = server.decoding.heap
    while unfinished:
        if server.pending:          # (without requests in transit, receive and admit change nothing unless
            i = server.receive(i)   # some wait; retire nothing unless a request's last step is done)
        if server.waiting:
            server.admit(i)
        if not server.prefilling:
            segments.append(server.decode_segment(i))
            i += segments[-1].length
        else:
            mixed.append(server.mixed_iteration(i))
            i += 1
        if heap and heap[0][0] <= server.decoding.steps:
            unfinished -= server.retire(i)
    return WholeStepRun(i, mixed, segments, server.peak_kv,
                        (server.client, server.sent, server.arrival, server.first_token, server.finish),
                        server.next_request)
