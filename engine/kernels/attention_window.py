"""Causal attention with and without a sliding window: (query, key) pairs and the keys a chunk reads.

A query at position x (1-based) of a sequence attends the keys at positions max(1, x - w + 1) .. x:
min(x, w) keys with a window of w tokens (the Hugging Face / vLLM convention: the query itself and
the w - 1 tokens before it), all x keys without one (w = None).

    prefix_pairs(x, w)   = sum over positions 1..x of min(position, w)
                         = x(x+1)/2                       for x <= w
                         = w(w+1)/2 + (x - w) w           for x > w
    causal_pairs(q, p, w) = prefix_pairs(p + q, w) - prefix_pairs(p, w)   (q new tokens after p cached)
                          = q p + q(q+1)/2 without a window
    key_span(q, p, w)     = min(p, w - 1) + q   (keys the q queries attend together: the cached tokens
                            the kernel reads back, and the shape's n; p + q without a window)
"""

from __future__ import annotations

import numpy as np


def prefix_pairs(positions, window):
    """Pairs of the first `positions` queries of a sequence (arrays or scalars; window None: no window)."""
    x = np.asarray(positions, dtype=float)
    if window is None:
        return x * (x + 1) / 2.0
    w = np.asarray(window, dtype=float)
    return np.where(x <= w, x * (x + 1) / 2.0, w * (w + 1) / 2.0 + (x - w) * w)


def causal_pairs(new_tokens, prior, window):
    """(query, key) pairs per head of `new_tokens` queries after `prior` cached tokens."""
    q = np.asarray(new_tokens, dtype=float)
    p = np.asarray(prior, dtype=float)
    if window is None:
        return q * p + q * (q + 1) / 2.0
    return prefix_pairs(p + q, window) - prefix_pairs(p, window)


def key_span(new_tokens, prior, window: int | None):
    """Keys the `new_tokens` queries after `prior` cached tokens attend together."""
    p = np.asarray(prior, dtype=float)
    if window is None:
        return p + new_tokens
    return np.minimum(p, float(window) - 1.0) + new_tokens
