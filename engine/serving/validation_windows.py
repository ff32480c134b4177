"""Where a measured request's TTFT and TPOT time goes in a simulated run: sums over the iterations of each request's
windows, so that serving terms that change only the iterations' times (not which tokens run in which iteration: the
schedule depends on token counts alone, engine/serving/scheduler.py) can be refitted without simulating again.

Per request (its arrival iteration a, first-token iteration f, last-token iteration e):
- TTFT window a..f: seconds in iterations with prompt chunks (`ttft_mixed_s`) and in decode-only ones
  (`ttft_decode_s`), decoding requests summed over the window (`ttft_batch`: a per-request-per-iteration host cost
  scales with it), prompt tokens run in the window (`ttft_prefill_tokens`);
- TPOT window f+1..e, per output token after the first (divided by output length - 1): the same sums
  (`tpot_mixed_s`, `tpot_decode_s`, `tpot_batch`, `tpot_prefill_tokens`);
- `arrival_residual_s`: the length of the iteration before the one that first schedules it (a request of a later
  round reaches the server while an iteration is running and waits for its end, which the iteration-level
  simulation does not count); 0 for the clients' first requests, which find the server idle.
Each is the mean over the run's measured requests with the statistics' weights (engine/serving/simulate.py).
"""

from __future__ import annotations

import numpy as np

WINDOW_COLUMNS = ("ttft_mixed_s", "ttft_decode_s", "ttft_batch", "ttft_prefill_tokens", "tpot_mixed_s",
                  "tpot_decode_s", "tpot_batch", "tpot_prefill_tokens", "arrival_residual_s")


def _prefix(values: np.ndarray) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(values, dtype=float)])


def window_terms(result) -> dict[str, float]:
    """WINDOW_COLUMNS of a ServingResult (weighted means over its measured requests)."""
    requests = result.requests
    sums = {name: 0.0 for name in WINDOW_COLUMNS}
    ttft_weight = tpot_weight = 0.0
    for kind, (replicas, plan, times) in enumerate(result.schedules):
        rows = requests[(requests["replica_kind"] == kind) & requests["measured"]]
        if rows.empty:
            continue
        prefill = plan.prefill_tokens()
        mixed = prefill > 0
        batch = plan.decoding_requests()
        prefixes = {"mixed": _prefix(times * mixed), "decode": _prefix(times * ~mixed), "batch": _prefix(batch),
                    "prefill_tokens": _prefix(prefill)}
        a = rows["arrival_iteration"].to_numpy()
        f = rows["first_token_iteration"].to_numpy()
        e = rows["finish_iteration"].to_numpy()
        tokens = rows["output_length"].to_numpy(dtype=float) - 1
        weight = rows["weight"].to_numpy(dtype=float) * replicas
        has_tpot = tokens > 0
        for name, prefix in prefixes.items():
            sums[f"ttft_{name}" + ("_s" if name in ("mixed", "decode") else "")] += float(
                np.sum(weight * (prefix[f + 1] - prefix[a])))
            per_token = np.where(has_tpot, (prefix[e + 1] - prefix[f + 1]) / np.maximum(tokens, 1), 0.0)
            sums[f"tpot_{name}" + ("_s" if name in ("mixed", "decode") else "")] += float(np.sum(weight * per_token))
        later = (rows["sequence"].to_numpy() > 0) & (a > 0)
        sums["arrival_residual_s"] += float(np.sum(weight * np.where(later, times[np.maximum(a - 1, 0)], 0.0)))
        ttft_weight += float(weight.sum())
        tpot_weight += float(weight[has_tpot].sum())
    return {name: value / (tpot_weight if name.startswith("tpot") else ttft_weight) if value else 0.0
            for name, value in sums.items()}


CONFIGURATION = ("system", "backend", "model_path", "quant", "tp", "max_batch", "concurrency", "input_length",
                 "output_length")


def conflicting_measurements(scored, spread: float = 1.5):
    """Boolean mask of the scored runs whose configuration (CONFIGURATION: the same system, engine, model, precision,
    tp, batch, concurrency and lengths) was measured more than once with TPOTs over `spread` x apart: no single
    prediction can be within (spread - 1) / 2 of both, so they bound any model's error rather than measure it
    (DeepSeek-R1 on B200 with TensorRT-LLM 1.2.0rc6.post2 vs post3, likely MTP on in one series, unrecorded)."""
    keys = [column for column in CONFIGURATION if column in scored]
    filled = scored[keys].astype(str)
    tpot = scored["measured_tpot_s"].astype(float)
    groups = tpot.groupby([filled[column] for column in keys])
    return (groups.transform("max") / groups.transform("min") > spread).to_numpy()
