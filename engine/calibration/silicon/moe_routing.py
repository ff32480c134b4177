"""The token-to-expert routing of aiconfigurator's `balanced` MoE measurements, exactly as its collector builds it.

The collector (collector/helper.py `balanced_logits`, used by collector/trtllm/collect_moe.py) does not route at
random: with stride = ceil(E / k), token i picks experts (i + j x stride) mod E for j < k when tokens >= stride,
else floor(i x stride / tokens + j x stride) mod E (spread evenly over the experts). The module under test holds
the first E / moe_ep experts (expert-parallel rank 0), so its (token, expert) pairs and its active experts are
those of experts 0 .. E / moe_ep - 1. Random routing (engine.decomposition.moe.expected_active_experts) reaches
fewer experts: at 32 tokens, top-8 of 256 experts, E x (1 - (1 - k / E)^T) = 161 where the table reaches all 256
(the weight stream of 1.6x the experts), and at tokens x topk < moe_ep it gives the rank a fraction of a pair
where the table always gives it token 0's pick of expert 0.
"""

from __future__ import annotations

from functools import lru_cache
import math

import numpy as np


@lru_cache(maxsize=8192)
def balanced_loads(tokens: int, experts: int, topk: int, moe_ep: int) -> tuple[int, int, int]:
    """(pairs, active experts, most pairs on one expert) of the local experts (rank 0) under balanced_logits."""
    stride = math.ceil(experts / topk)
    token = np.arange(tokens, dtype=np.int64)[:, None]
    pick = np.arange(topk, dtype=np.int64)[None, :] * stride
    if tokens >= stride:
        chosen = (token + pick) % experts
    else:
        chosen = np.floor((token * stride / tokens + pick) % experts).astype(np.int64)
    chosen = np.sort(chosen, axis=1)        # an expert picked twice by one token counts once (top-k is distinct)
    distinct = np.concatenate([np.ones((tokens, 1), bool), chosen[:, 1:] != chosen[:, :-1]], axis=1)
    counts = np.bincount(chosen[distinct], minlength=experts)[:max(experts // moe_ep, 1)]
    return int(counts.sum()), int((counts > 0).sum()), int(counts.max())


def balanced_routing(tokens, experts, topk, moe_ep) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per measurement: (pairs, active experts, largest expert's pairs) on the measured rank (balanced_loads)."""
    keys = np.stack([np.asarray(v, dtype=np.int64) for v in (tokens, experts, topk, moe_ep)], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    loads = np.array([balanced_loads(*map(int, key)) for key in unique], dtype=float).reshape(-1, 3)
    picked = loads[inverse.reshape(-1)]
    return picked[:, 0], picked[:, 1], picked[:, 2]
