"""One forward pass's records: which tokens run through the layers and which sequences attend within it.

`ForwardPass` is one step (or iteration) of a phase; `AttentionPart` the attention work in it, as totals
per row, built from sequences that all attend alike (`AlikeSequences`) or from sequences listed one by
one (`ListedSequences`: a serving iteration's requests and chunks).
engine/decomposition/phases.py builds the passes of a scenario (the hand and the automatic decomposition
share them), engine/decomposition/chunked.py those of the chunked-prefill schedule, and
engine/decomposition/transformer.py turns them into kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from engine.kernels.attention_window import causal_pairs, key_span

_PLAIN_NUMBERS = (int, float)


@dataclass(frozen=True)
class AlikeSequences:
    """`sequences` sequences attending alike: `new_tokens` each after `prior` cached tokens (one value per row).

    `sequences` and `new_tokens` are numbers, or arrays with one value per row (engine/explore/points.py)."""

    sequences: object
    new_tokens: object
    prior: np.ndarray


@dataclass(frozen=True)
class ListedSequences:
    """Sequences listed one by one: sequence i has `new_tokens[i]` new tokens after `prior[i]` cached ones and
    belongs to row `row[i]` of a part with `rows` rows (a serving iteration's decode requests or chunks)."""

    row: np.ndarray
    rows: int
    new_tokens: np.ndarray
    prior: np.ndarray

    def totals(self, window: int | None) -> dict[str, np.ndarray]:
        """Per row: sequences, query tokens, context (keys per sequence), pairs, cache and fresh tokens.

        A row stands for `sequences` alike sequences of q = query_tokens / sequences queries after a common
        prior (the fused attention estimate recovers q from the row's shape and MACs: engine/estimators/
        fused_attention.py query_tokens). Chunks of unequal length (the end of one prompt after 7k cached
        tokens beside the first 24 tokens of the next) have no such common prior at their mean key span, so
        without a window the row's context is the span n = pairs / q + (q - 1) / 2 that gives its exact pairs
        (MACs), n >= q. Rows of equal chunks keep their own span (the same number)."""
        new, prior = self.new_tokens, self.prior

        def total(values):
            return np.bincount(self.row, weights=values, minlength=self.rows)

        context = key_span(new, prior, window)
        from_cache = (new == 1) | (prior > 0)
        sequences = total(np.ones_like(new))
        pairs = total(causal_pairs(new, prior, window))
        keys = total(context) / np.maximum(sequences, 1.0)
        if window is None:
            q = total(new) / np.maximum(sequences, 1.0)
            consistent = pairs / np.maximum(sequences, 1.0) / np.maximum(q, 1.0) + (q - 1.0) / 2.0
            keys = np.where(sequences > 0, np.maximum(consistent, q), keys)
        return dict(sequences=sequences, query_tokens=total(new), context=keys,
                    pairs=pairs, cache_tokens=total(np.where(from_cache, context, 0.0)),
                    fresh_tokens=total(np.where(from_cache, 0.0, new)))


@dataclass(frozen=True)
class AttentionPart:
    """Sequences attending within one pass, as totals per row (one row per step or iteration).

    `pairs` counts causal (query, key) pairs per head summed over the sequences; `cache_tokens`
    the K (and V) tokens streamed from the KV cache; `fresh_tokens` the new tokens whose K/V the
    kernel takes straight from the projection (a prompt's first chunk). `context` is the mean
    number of keys a sequence's queries attend together (the shape's n: prior + new tokens, or
    min(prior, window - 1) + new tokens in a sliding-window layer). `window` is the sliding
    window these totals are for (None: full attention); `windowed(w)` gives the part for a window.
    `alike` describes the sequences of a part built by `uniform`, `listed` those of a part built by
    `from_listed`; a chunked schedule's part gives `window_builder`, which rebuilds it for a window.
    """

    prefix: str          # "" for plain prefill/decode, "p"/"d" for the two halves of a chunk
    matrix_type: str     # Ma_Mqa (many query tokens) or Va_Mqa (one query token)
    sequences: np.ndarray
    query_tokens: np.ndarray
    context: np.ndarray
    pairs: np.ndarray
    cache_tokens: np.ndarray
    fresh_tokens: np.ndarray
    per_row_count: bool = False   # True: each row is one step/iteration (count = layers), else counted `steps` times
    window: int | None = None
    alike: AlikeSequences | None = None
    listed: ListedSequences | None = None
    window_builder: Callable[[int], "AttentionPart"] | None = field(default=None, repr=False, compare=False)
    # a part of one row built from floats (`_one_row`): its six totals as those floats (attention.one_row reads them)
    floats: tuple | None = field(default=None, repr=False, compare=False)

    @classmethod
    def uniform(cls, prefix: str, sequences, new_tokens, prior: np.ndarray, matrix_type: str,
                window: int | None = None, per_row_count: bool | None = None):
        """`sequences` alike: `new_tokens` each after `prior` cached tokens (one value per step).

        `sequences` and `new_tokens` may also be arrays with one value per row (engine/explore/points.py
        stacks many scenarios that way); `per_row_count` then says whether each row is counted once
        (None: when there is more than one row, as for the steps of a request)."""
        if (window is None and sequences.__class__ in _PLAIN_NUMBERS and new_tokens.__class__ in _PLAIN_NUMBERS
                and prior.__class__ is np.ndarray and prior.shape == (1,)):
            return cls._one_row(prefix, sequences, new_tokens, prior, matrix_type, per_row_count)
        q = np.asarray(new_tokens, dtype=float)
        context = key_span(q, prior, window)                      # keys the new tokens attend together
        rows = len(prior)
        # new K/V were stored first (a decode token, a later chunk): the kernel streams the context
        from_cache = _per_row((q == 1) | (np.asarray(prior, dtype=float) > 0), rows)
        sequences_row = _per_row(np.asarray(sequences, dtype=float), rows)
        tokens = sequences_row * q
        return cls(prefix, matrix_type, sequences_row.copy(), _per_row(tokens, rows).copy(), context,
                   sequences_row * causal_pairs(q, prior, window),
                   np.where(from_cache, sequences_row * context, 0.0),
                   np.where(from_cache, 0.0, tokens),
                   per_row_count=rows > 1 if per_row_count is None else per_row_count, window=window,
                   alike=AlikeSequences(sequences, new_tokens, prior))

    @classmethod
    def _one_row(cls, prefix: str, sequences, new_tokens, prior: np.ndarray, matrix_type: str,
                 per_row_count: bool | None):
        """`uniform` of one row without a window (a prefill, a decode step), in Python floats: the same operations
        in the same order (key_span, causal_pairs, the masks), one one-value array per field."""
        s, q, p = float(sequences), float(new_tokens), float(prior.item(0))
        context = p + q
        from_cache = q == 1 or p > 0
        tokens = s * q
        floats = (s, tokens, context, s * (q * p + q * (q + 1) / 2.0), s * context if from_cache else 0.0,
                  0.0 if from_cache else tokens)
        return cls(prefix, matrix_type, *(np.array([value]) for value in floats),
                   per_row_count=False if per_row_count is None else per_row_count, window=None,
                   alike=AlikeSequences(sequences, new_tokens, prior), floats=floats)

    @classmethod
    def from_listed(cls, prefix: str, matrix_type: str, sequences: ListedSequences, window: int | None = None):
        """The rows of sequences listed one by one (`ListedSequences.totals`); each row is counted once."""
        return cls(prefix, matrix_type, **sequences.totals(window), per_row_count=True, window=window,
                   listed=sequences)

    def windowed(self, window: int | None) -> "AttentionPart":
        """The same sequences in a layer that attends to at most `window` keys (None: this part)."""
        if window is None or window == self.window:
            return self
        if self.alike is not None:
            return AttentionPart.uniform(self.prefix, self.alike.sequences, self.alike.new_tokens, self.alike.prior,
                                         self.matrix_type, window, self.per_row_count)
        if self.listed is not None:
            return AttentionPart.from_listed(self.prefix, self.matrix_type, self.listed, window)
        if self.window_builder is None:
            raise ValueError(f"attention part {self.prefix!r} cannot be recomputed for a sliding window")
        return self.window_builder(window)


def _per_row(values: np.ndarray, rows: int) -> np.ndarray:
    """`values` as one value per row (broadcast only when they are not already)."""
    if values.shape == (rows,):
        return values
    return values.repeat(rows) if values.ndim == 0 else np.broadcast_to(values, (rows,))


@dataclass(frozen=True)
class ForwardPass:
    phase: str
    tokens: object       # tokens through the linear layers in one step (an array: one value per iteration)
    logit_rows: object   # rows through the LM head in one step
    steps: int           # times this pass runs on the device (decode steps; prefill micro-batches)
    attention: tuple[AttentionPart, ...]
    micro_batches: int = 1
