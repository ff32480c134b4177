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


def gate_open(i: int, gate: int, busy: bool, waiting: int = 0, release: int = 0) -> bool:
    """Whether waiting prompts may be admitted at iteration `i`: always on an idle server (`busy` False: nothing
    decodes or prefills) or without a gate (1), else at every `gate`-th iteration (options.context_gate_iterations), or
    once `release` > 0 prompts wait here (gate_release: then every rank most likely holds one too)."""
    return gate <= 1 or not busy or i % gate == 0 or 0 < release <= waiting


def gate_release(ranks: int) -> int:
    """Prompts waiting on one rank at which the other `ranks` - 1 more likely than not each hold one too (their
    arrivals Poisson with the same mean as this rank's count w: (1 - exp(-w))^(ranks - 1) >= 1/2), the
    attention-DP balance's other way out; 0 (never) for a single rank."""
    if ranks <= 1:
        return 0
    return max(1, int(np.ceil(-np.log(1.0 - 0.5 ** (1.0 / (ranks - 1))))))


def gate_length(i: int, length: int, gate: int, waiting: bool) -> int:
    """A decode segment of `length` iterations from `i`, cut at the next gate opening while prompts wait."""
    return min(length, gate - i % gate) if gate > 1 and waiting else length
