"""Iteration times of a serving schedule, from the kernel table, in two vectorized estimator calls.

- Iterations with prompt chunks (`MixedIteration`) are timed exactly: one row per distinct iteration
  (identical decode contexts and chunks, as the rounds of a lock-step run repeat, are timed once) in a
  pass whose rows are iterations (the decomposition of engine/decomposition/transformer.py takes per-row arrays), with the decode
  part and the prefill part built from the iteration's own requests and chunks.
- Decode-only iterations are many (one per generated token) and alike: they are timed on a grid of
  (decode batch n, mean cached tokens p) rows and interpolated, linearly in p (attention reads grow
  with the context) and in n between grid batches. The grid takes every decode batch that occurs
  when there are at most MAX_GRID_BATCHES of them (else the most frequent ones, the smallest and
  the largest) and GRID_CONTEXTS contexts spanning the run.

Both calls go through the chosen method's estimator, so every method (roofline, hierarchical,
realistic) times serving the way it times a request. `graph_decode` times decode-only iterations
with CUDA-graph launch (as vLLM, SGLang and TensorRT-LLM capture decode), iterations with prompt
chunks with eager launch.
"""

from __future__ import annotations

import numpy as np

from engine.decomposition.passes import AttentionPart, ForwardPass, ListedSequences
from engine.decomposition.transformer import add_forward_pass
from engine.kernels.table import KernelTableBuilder
from engine.decomposition.chunked import pass_row_times
from engine.serving.scheduler import Schedule

MAX_GRID_BATCHES = 16
GRID_CONTEXTS = 8


def _part(prefix: str, matrix_type: str, row, rows, new, prior) -> AttentionPart:
    return AttentionPart.from_listed(prefix, matrix_type, ListedSequences(row, rows, new, prior))


def mixed_columns(mixed: list) -> dict[str, np.ndarray]:
    """The iterations' contents as flat arrays: per iteration its decode count, chunk count and completions; the
    decode priors, chunk tokens and chunk priors of all iterations concatenated in order (floats)."""
    def flat(name: str) -> np.ndarray:
        return np.concatenate([getattr(it, name) for it in mixed] or [np.zeros(0)]).astype(float)
    return {"decodes": np.array([len(it.decode_priors) for it in mixed], dtype=np.int64),
            "chunks": np.array([len(it.chunk_tokens) for it in mixed], dtype=np.int64),
            "completions": np.array([it.completions for it in mixed], dtype=np.int64),
            "decode_priors": flat("decode_priors"), "chunk_tokens": flat("chunk_tokens"),
            "chunk_priors": flat("chunk_priors")}


def descending_within(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """`values` (rows of `counts` values, concatenated) with each row sorted in descending order. Rows already in
    that order (the decode priors of requests that started one after another) are kept as they are."""
    starts = np.cumsum(counts) - counts
    rises = np.flatnonzero(np.diff(values) > 0) + 1            # a value above the one before it ...
    rows = np.searchsorted(starts, rises, side="right") - 1
    unsorted = np.unique(rows[rises != starts[rows]])           # ... in the same row
    if not len(unsorted):
        return values
    values = values.copy()
    for start, stop in zip(starts[unsorted].tolist(), (starts + counts)[unsorted].tolist()):
        values[start:stop] = np.sort(values[start:stop])[::-1]
    return values


def distinct_mixed(schedule: Schedule) -> tuple[list, np.ndarray]:
    """The mixed iterations with distinct contents (the same decode contexts and the same chunks take the same
    time: rounds of a lock-step run repeat), and for every mixed iteration the index of its distinct one."""
    columns = mixed_columns(schedule.mixed)
    decodes, chunks = columns["decodes"], columns["chunks"]
    decode_bytes = descending_within(columns["decode_priors"], decodes).tobytes()   # a multiset's one order
    token_bytes, prior_bytes = columns["chunk_tokens"].tobytes(), columns["chunk_priors"].tobytes()
    decode_ends, chunk_ends = 8 * np.cumsum(decodes), 8 * np.cumsum(chunks)
    seen: dict[tuple, int] = {}
    which = np.array([seen.setdefault((decode_bytes[d - 8 * nd:d], token_bytes[c - 8 * nc:c],
                                       prior_bytes[c - 8 * nc:c], min(done, 255)), len(seen))
                      for d, nd, c, nc, done in zip(decode_ends.tolist(), decodes.tolist(), chunk_ends.tolist(),
                                                    chunks.tolist(), columns["completions"].tolist())],
                     dtype=np.int64)
    first = np.unique(which, return_index=True)[1]      # distinct ones are numbered in order of appearance
    return [schedule.mixed[position] for position in first.tolist()], which


def mixed_pass(mixed: list, decode_tokens: int = 1) -> ForwardPass:
    """One row per iteration with prompt chunks: its decode tokens and its chunks, exactly. `decode_tokens`:
    query tokens per decoding request (k + 1 in a speculative verification pass; still decode attention,
    Va_Mqa: engines verify with their decode kernels, which take a few queries per sequence, and MLA stays in
    the absorbed form)."""
    rows = len(mixed)
    columns = mixed_columns(mixed)
    decode_row = np.repeat(np.arange(rows), columns["decodes"])
    chunk_row = np.repeat(np.arange(rows), columns["chunks"])
    decode_priors = columns["decode_priors"]
    decode = _part("d", "Va_Mqa", decode_row, rows,
                   np.full_like(decode_priors, float(decode_tokens)), decode_priors)
    prefill = _part("p", "Ma_Mqa", chunk_row, rows, columns["chunk_tokens"], columns["chunk_priors"])
    tokens = decode.query_tokens + prefill.query_tokens
    logit_rows = decode.query_tokens + columns["completions"].astype(float)
    return ForwardPass("serve", tokens, logit_rows, 1, (decode, prefill))


def decode_iterations(schedule: Schedule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(iteration index, decode batch, mean cached tokens) of every decode-only iteration."""
    segments = schedule.segments
    lengths = np.array([seg.length for seg in segments], dtype=np.int64)
    starts = np.repeat([seg.start for seg in segments], lengths)
    offset = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    batch = np.repeat([len(seg.priors) for seg in segments], lengths).astype(float)
    mean_prior = np.repeat([seg.priors.mean() for seg in segments], lengths) + offset * schedule.tokens_per_step
    return starts + offset, batch, mean_prior


def decode_grid(batch: np.ndarray, mean_prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The grid's decode batches and contexts (module docstring)."""
    values, counts = np.unique(batch, return_counts=True)
    if len(values) > MAX_GRID_BATCHES:
        frequent = values[np.argsort(counts)[::-1][:MAX_GRID_BATCHES - 2]]
        values = np.unique(np.concatenate([frequent, values[[0, -1]]]))
    low, high = float(mean_prior.min()), float(mean_prior.max())
    contexts = np.unique(np.round(np.linspace(low, high, GRID_CONTEXTS)))
    return values, contexts


def grid_pass(batches: np.ndarray, contexts: np.ndarray, decode_tokens: int = 1) -> ForwardPass:
    """Rows: every (batch, context) pair of the grid, batch-major; `decode_tokens` query tokens per sequence."""
    n = np.repeat(batches, len(contexts))
    p = np.tile(contexts, len(batches))
    rows = len(n)
    per_sequence = np.repeat(np.arange(rows), n.astype(np.int64))
    priors = np.repeat(p, n.astype(np.int64))
    part = _part("", "Va_Mqa", per_sequence, rows,
                 np.full_like(priors, float(decode_tokens)), priors)
    return ForwardPass("serve", n * decode_tokens, n * decode_tokens, 1, (part,))


def time_pass(forward_pass: ForwardPass, rows: int, model, scenario, hardware, method, layout,
              latency_overlap: float = 0.0, latencies: list | None = None) -> np.ndarray:
    """Seconds of each row of `forward_pass` on one device (with the pipeline's wait when pp > 1).
    `latency_overlap`: the share of every kernel's device latency (the realistic `gap_overhead_s`) hidden
    behind its neighbours (a graph-replayed step of a serving engine: fused kernels, programmatic dependent
    launch); `latencies`, when given, receives each row's summed kernel latency."""
    builder = KernelTableBuilder()
    add_forward_pass(builder, model, scenario, forward_pass, layout)
    timed = method.estimate(builder.build_columns(), hardware, scenario)
    times = pass_row_times(timed, rows, scenario.pp)
    if latency_overlap or latencies is not None:
        gaps = timed.get("gap_overhead_s", np.zeros(len(timed["time_s"])))
        floor = pass_row_times({**timed, "time_s": np.asarray(gaps, dtype=float)}, rows, scenario.pp)
        if latencies is not None:
            latencies.append(floor)
        times = times - latency_overlap * floor
    return times


def interpolate_grid(times: np.ndarray, batches: np.ndarray, contexts: np.ndarray, batch: np.ndarray,
                     mean_prior: np.ndarray) -> np.ndarray:
    """Bilinear interpolation of the grid's row times at (batch, mean_prior)."""
    table = times.reshape(len(batches), len(contexts))
    at_context = np.stack([np.interp(mean_prior, contexts, table[b]) for b in range(len(batches))])
    upper = np.clip(np.searchsorted(batches, batch), 1, max(len(batches) - 1, 1))
    if len(batches) == 1:
        return at_context[0]
    lower = upper - 1
    weight = np.clip((batch - batches[lower]) / (batches[upper] - batches[lower]), 0.0, 1.0)
    columns = np.arange(len(batch))
    return (1 - weight) * at_context[lower, columns] + weight * at_context[upper, columns]


def iteration_times(schedule: Schedule, model, scenario, hardware, method, layout, graph_method=None,
                    decode_tokens: int = 1, latency_overlap: float = 0.0, latencies: list | None = None) -> np.ndarray:
    """Seconds of every iteration of `schedule` (before per-iteration host overhead); `decode_tokens` query
    tokens per decoding request (k + 1 when the target verifies k drafted tokens). `latency_overlap` and
    `latencies` apply to the decode-only iterations (time_pass)."""
    times = np.zeros(schedule.iterations)
    if schedule.mixed:
        index = np.array([it.index for it in schedule.mixed])
        distinct, which = distinct_mixed(schedule)
        times[index] = time_pass(mixed_pass(distinct, decode_tokens), len(distinct), model, scenario, hardware, method,
                                 layout)[which]
    if schedule.segments:
        index, batch, mean_prior = decode_iterations(schedule)
        batches, contexts = decode_grid(batch, mean_prior)
        grid = time_pass(grid_pass(batches, contexts, decode_tokens), len(batches) * len(contexts), model, scenario,
                         hardware, graph_method or method, layout, latency_overlap, latencies)
        times[index] = interpolate_grid(grid, batches, contexts, batch, mean_prior)
    return times
