"""What a serving schedule is made of (engine/serving/scheduler.py): iterations with prompt chunks, one by one, and
stretches of decode-only iterations."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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


def gate_open(i: int, gate: int, busy: bool) -> bool:
    """Whether waiting prompts may be admitted at iteration `i`: always on an idle server (`busy` False: nothing
    decodes or prefills) or without a gate (1), else at every `gate`-th iteration (options.context_gate_iterations)."""
    return gate <= 1 or not busy or i % gate == 0


def gate_length(i: int, length: int, gate: int, waiting: bool) -> int:
    """A decode segment of `length` iterations from `i`, cut at the next gate opening while prompts wait."""
    return min(length, gate - i % gate) if gate > 1 and waiting else length
