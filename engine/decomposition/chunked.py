"""Chunked-prefill serving schedule: a batch of requests run iteration by iteration.

`batch` requests of `input_length` prompt tokens and `output_length` output tokens arrive
together. Every iteration is one forward pass of at most `chunk_size` tokens (Sarathi-Serve /
vLLM chunked prefill):

1. every running request that has its first token decodes one token (decode first);
2. the rest of the budget takes the next prompt tokens in arrival order: a prompt may be split
   over iterations, and one iteration may finish one prompt and start the next.

A prompt whose last chunk runs in iteration c yields its first token at the end of c (TTFT); it
then decodes in iterations c+1 ... c+output_length-1, one token each, and finishes at the end of
c + output_length - 1. With chunk_size >= batch there is always room for a prompt token while
prompts remain. The seed's single-average chunk stays available as phase `chunked`.

The schedule is computed per segment of iterations with the same number of decode tokens (a
segment ends when a prompt finishes or a request's last decode is done), so a Python loop runs at
most 2 x batch times; every per-iteration quantity is then built with numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.decomposition.passes import AttentionPart, ForwardPass
from engine.kernels.attention_window import prefix_pairs
from engine.workload.parallel import PER_PASS_KERNELS


@dataclass(frozen=True)
class ChunkedSchedule:
    """Per iteration (arrays of length `iterations`) and per request (`first_token_iteration`)."""

    batch: int
    input_length: int
    output_length: int
    chunk_size: int
    prefill_tokens: np.ndarray        # prompt tokens in the iteration
    decode_tokens: np.ndarray         # requests decoding one token in the iteration
    prefill_sequences: np.ndarray     # prompts with a chunk in the iteration
    prefill_pairs: np.ndarray         # causal (query, key) pairs per head over those chunks
    prefill_context_sum: np.ndarray   # context attended by each chunk's last token, summed over chunks
    prefill_cache_tokens: np.ndarray  # K/V tokens a continuing prompt reads back from the cache
    prefill_fresh_tokens: np.ndarray  # tokens of chunks that start a prompt (their K/V come from the projection)
    completions: np.ndarray           # prompts whose last chunk runs in the iteration (they sample a token)
    decode_context_sum: np.ndarray    # context attended by the decode tokens, summed
    first_token_iteration: np.ndarray # per request: the iteration of its last prompt chunk
    prompt_stream_start: np.ndarray   # position in the concatenated prompts where the iteration's chunk starts

    @property
    def iterations(self) -> int:
        return len(self.prefill_tokens)

    @property
    def tokens(self) -> np.ndarray:
        return self.prefill_tokens + self.decode_tokens

    @property
    def logit_rows(self) -> np.ndarray:
        """Rows through the LM head: one per decode token and per finished prompt."""
        return self.decode_tokens + self.completions


    def windowed(self, window: int | None) -> dict[str, np.ndarray]:
        """The attention totals for layers attending to at most `window` keys (None: as computed):
        prefill_pairs, prefill_context_sum, prefill_cache_tokens and decode_context_sum."""
        if window is None:
            return {"prefill_pairs": self.prefill_pairs, "prefill_context_sum": self.prefill_context_sum,
                    "prefill_cache_tokens": self.prefill_cache_tokens, "decode_context_sum": self.decode_context_sum}
        prompt, w = self.input_length, float(window)
        start, end = self.prompt_stream_start, self.prompt_stream_start + self.prefill_tokens
        has_prefill = self.prefill_tokens > 0
        pairs = np.where(has_prefill, _triangle(end, prompt, window) - _triangle(start, prompt, window), 0.0)
        # a continuing prompt's first chunk attends min(offset, w - 1) cached tokens, not all `offset`
        offset = start - np.floor(start / prompt) * prompt
        trimmed = np.where(has_prefill, offset - np.minimum(offset, w - 1.0), 0.0)
        cache = np.where(self.prefill_cache_tokens > 0, self.prefill_cache_tokens - trimmed, 0.0)
        # decode token of request r in iteration i attends min(input + i - c_r, w) keys
        ordered = np.sort(self.first_token_iteration)
        prefix = np.concatenate([[0], np.cumsum(ordered)])
        index = np.arange(self.iterations)
        upper = np.searchsorted(ordered, index, side="left")
        lower = np.searchsorted(ordered, index - self.output_length + 1, side="left")
        capped_end = np.clip(np.searchsorted(ordered, index + prompt - w, side="right"), lower, upper)
        decode = ((capped_end - lower) * w + (upper - capped_end) * (prompt + index)
                  - (prefix[upper] - prefix[capped_end]))
        return {"prefill_pairs": pairs, "prefill_context_sum": self.prefill_context_sum - trimmed,
                "prefill_cache_tokens": cache, "decode_context_sum": decode.astype(float)}


def _triangle(stream_position: np.ndarray, prompt: int, window: int | None = None) -> np.ndarray:
    """Causal pairs of the prompt stream up to a position: whole prompts r * P(P+1)/2 plus u(u+1)/2
    for the u tokens of the current one (G in docs/parallelism.md); with a sliding window w each
    query counts at most w keys (engine/kernels/attention_window.py prefix_pairs)."""
    whole, part = np.divmod(stream_position, prompt)
    return whole * prefix_pairs(prompt, window) + prefix_pairs(part, window)


def chunked_schedule(batch: int, input_length: int, output_length: int, chunk_size: int) -> ChunkedSchedule:
    """Simulate the schedule (module docstring). Requires chunk_size >= batch."""
    if chunk_size < batch:
        raise ValueError(f"chunk_size={chunk_size} must be at least batch={batch} for the chunked schedule")
    first_token, segments = _segments(batch, input_length, output_length, chunk_size)
    return _per_iteration(batch, input_length, output_length, chunk_size, first_token, segments)


def _segments(batch: int, prompt: int, out: int, budget: int) -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
    """(per request: the iteration of its last prompt chunk, the segments as (first iteration, iterations,
    prompt tokens per iteration, position in the concatenated prompts where the segment starts))."""
    total = batch * prompt
    first_token = np.full(batch, -1, dtype=np.int64)
    seg_start, seg_length, seg_budget, seg_stream = [], [], [], []
    iteration, consumed, done = 0, 0, 0
    while consumed < total:
        finished_prompts = first_token[:done]
        decoding = (finished_prompts < iteration) & (iteration <= finished_prompts + out - 1)
        room = budget - int(decoding.sum())
        request = consumed // prompt
        until_prompt_done = math.ceil(((request + 1) * prompt - consumed) / room)
        later_finishes = finished_prompts + out
        later_finishes = later_finishes[later_finishes > iteration]
        length = until_prompt_done if later_finishes.size == 0 else min(until_prompt_done,
                                                                        int(later_finishes.min()) - iteration)
        length = max(length, 1)
        seg_start.append(iteration)
        seg_length.append(length)
        seg_budget.append(room)
        seg_stream.append(consumed)
        after = min(consumed + length * room, total)
        ends = (np.arange(done, batch) + 1) * prompt
        new = ends[ends <= after]
        first_token[done:done + new.size] = iteration + np.ceil((new - consumed) / room).astype(np.int64) - 1
        done += new.size
        consumed = after
        iteration += length
    return first_token, list(zip(seg_start, seg_length, seg_budget, seg_stream))


def _per_iteration(batch: int, prompt: int, out: int, budget: int, first_token: np.ndarray,
                   segments: list[tuple[int, int, int, int]]) -> ChunkedSchedule:
    """Every per-iteration quantity of the schedule, from its segments (numpy over the iterations)."""
    total = batch * prompt
    iterations = int(first_token.max()) + out
    index = np.arange(iterations)

    # prompt tokens per iteration: each segment takes `room` tokens an iteration from the stream
    start_stream = np.full(iterations, float(total))
    room = np.zeros(iterations)
    for start, length, size, stream in segments:
        start_stream[start:start + length] = stream + size * np.arange(length)
        room[start:start + length] = size
    prefill = np.clip(total - start_stream, 0.0, room)
    end_stream = start_stream + prefill
    has_prefill = prefill > 0
    first_prompt = np.floor(start_stream / prompt)
    last_prompt = np.floor((end_stream - 1) / prompt)
    sequences = np.where(has_prefill, last_prompt - first_prompt + 1, 0.0)
    offset = start_stream - first_prompt * prompt               # tokens of the first prompt already done
    continuing = has_prefill & (offset > 0)
    first_end = np.minimum(offset + prefill, prompt)            # the first chunk's last position + 1
    context_sum = np.where(has_prefill, (sequences - 1) * prompt + (end_stream - last_prompt * prompt), 0.0)
    context_sum = np.where(sequences == 1, first_end, context_sum)
    cache_tokens = np.where(continuing, first_end, 0.0)
    fresh = prefill - np.where(continuing, first_end - offset, 0.0)
    pairs = np.where(has_prefill, _triangle(end_stream, prompt) - _triangle(start_stream, prompt), 0.0)
    completions = np.floor(end_stream / prompt) - np.floor(start_stream / prompt)

    # decode tokens: request r decodes in iterations c_r + 1 ... c_r + out - 1, attending to input + i - c_r
    ordered = np.sort(first_token)
    prefix = np.concatenate([[0], np.cumsum(ordered)])
    upper = np.searchsorted(ordered, index, side="left")                  # c_r < i
    lower = np.searchsorted(ordered, index - out + 1, side="left")        # c_r >= i - out + 1
    decode = (upper - lower).astype(float)
    decode_context = decode * (prompt + index) - (prefix[upper] - prefix[lower])
    return ChunkedSchedule(batch, prompt, out, budget, prefill, decode, sequences, pairs, context_sum,
                           cache_tokens, fresh, completions, decode_context, first_token, start_stream)


def chunked_request_pass(s):
    """The `request` phase with chunked_prefill as one ForwardPass with a row per iteration."""
    plan = chunked_schedule(s.batch, s.input_length, s.output_length, s.chunk_size)
    return ForwardPass("chunked", plan.tokens, plan.logit_rows, 1, _attention_parts(plan, None))


def _attention_parts(plan: ChunkedSchedule, window: int | None) -> tuple:
    """(decode part, prefill part) of every iteration, for layers with `window` (None: full attention)."""
    totals = plan.windowed(window)
    zeros = np.zeros(plan.iterations)
    decode_sum = totals["decode_context_sum"]
    rebuild = lambda index: lambda w: _attention_parts(plan, w)[index]   # noqa: E731
    decode = AttentionPart("d", "Va_Mqa", plan.decode_tokens, plan.decode_tokens,
                           decode_sum / np.maximum(plan.decode_tokens, 1.0), decode_sum, decode_sum, zeros,
                           per_row_count=True, window=window, window_builder=rebuild(0))
    prefill = AttentionPart("p", "Ma_Mqa", plan.prefill_sequences, plan.prefill_tokens,
                            _prefill_context(plan, totals, window),
                            totals["prefill_pairs"], totals["prefill_cache_tokens"], plan.prefill_fresh_tokens,
                            per_row_count=True, window=window, window_builder=rebuild(1))
    return decode, prefill


def _prefill_context(plan: ChunkedSchedule, totals: dict, window: int | None) -> np.ndarray:
    """Per iteration, the prefill row's context (its shape's n, from which the fused attention estimate recovers the
    queries per sequence: engine/estimators/flash_prefill.py query_tokens): the mean key span of its sequences; where
    a chunk holds the end of one prompt and the start of the next (two sequences of unequal chunks), without a window,
    the span n = pairs / q + (q - 1) / 2 that gives its exact pairs at q = tokens / sequences (as passes.py's listed
    sequences do). The mean span there (1,040 keys for 211 queries after 1,820 tokens beside 49 new ones) is shorter
    than its mean keys per query (1,566): q was recovered as 1, its tiles padded 128-fold (a Qwen3-8B iteration on
    A100 155 ms instead of 20 ms), and a request with more output tokens could finish sooner."""
    sequences = np.maximum(plan.prefill_sequences, 1.0)
    mean = totals["prefill_context_sum"] / sequences
    if window is not None:
        return mean
    q = np.maximum(plan.prefill_tokens / sequences, 1.0)
    consistent = np.maximum(totals["prefill_pairs"] / sequences / q + (q - 1.0) / 2.0, q)
    return np.where(plan.prefill_sequences > 1, consistent, mean)


def pass_row_times(per_step: dict, rows: int, pp: int = 1) -> np.ndarray:
    """Time of each row (iteration) of a pass whose kernels have one row per iteration, from the timed
    columns: the sum of count x time_s at that position within each kernel's `group`. With a pipeline
    an iteration also waits (pp - 1) x its per-layer work (engine/workload/parallel.py)."""
    group = per_step["group"]
    position = np.arange(len(group)) - np.searchsorted(group, group, side="left")
    work = per_step["count"].astype(float) * per_step["time_s"].astype(float)
    times = np.bincount(position, weights=work, minlength=rows)
    if pp > 1:
        stage = ~np.isin(np.asarray(per_step["name"]).astype(str), PER_PASS_KERNELS)
        times += (pp - 1) * np.bincount(position[stage], weights=work[stage], minlength=rows)
    return times


def request_latencies(plan: ChunkedSchedule, iteration_times: np.ndarray) -> dict[str, np.ndarray]:
    """Per request: time to first token, finish time and time per output token (seconds)."""
    ends = np.cumsum(iteration_times)
    first = ends[plan.first_token_iteration]
    finish = ends[plan.first_token_iteration + plan.output_length - 1]
    per_token = (finish - first) / (plan.output_length - 1) if plan.output_length > 1 else np.full(plan.batch, np.nan)
    return {"ttft_s": first, "e2e_s": finish, "tpot_s": per_token}
