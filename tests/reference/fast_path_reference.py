"""Frozen digests of `engine.estimate` results, for the fast-path identity test (issue 15).

The digests were computed from the engine as it was before the fast path (pandas bookkeeping on every
call); tests/test_fast_path_identity.py recomputes them with today's engine and compares. A digest is the
SHA-256 of exact bytes: every kernel and phase column's name, dtype and values (float64 bytes for number
columns, repr for the rest), and the JSON of every other result field (floats written by repr, which
round-trips exactly). So "identical" means bit-identical, not close.

Regenerate (only when a result is meant to change, and say why in the commit):
    PYTHONPATH=. python tests/reference/fast_path_reference.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

REFERENCE = Path(__file__).resolve().parent.parent / "data" / "fast_path_reference.json"
METHODS = ("roofline", "realistic", "hierarchical", "seed", "realistic-graph")
PHASES = ("prefill", "decode", "chunked", "request")
BASE = {"batch": 4, "input_length": 512, "output_length": 32, "context_length": 1000}
# extra scenarios that reach the pipeline bubble, collectives, expert parallelism, a chunked-prefill schedule,
# a device without energy values, the long request of the speed benchmark and mixed precision
VARIANTS = (
    ("H100-SXM", "meta-llama/Llama-3.1-70B", {"phase": "request", "batch": 1, "input_length": 1024,
                                               "output_length": 1024}),
    ("H100-SXM", "meta-llama/Llama-3.1-70B", {"phase": "decode", "batch": 1, "context_length": 1000}),
    ("H100-SXM", "meta-llama/Llama-3.1-70B", {"phase": "request", "batch": 8, "tp": 4, "pp": 2,
                                               "output_length": 16}),
    ("H100-SXM", "meta-llama/Llama-3.1-70B", {"phase": "request", "batch": 8, "tp": 2, "dp": 2,
                                               "overlap_communication": True, "output_length": 16}),
    ("H100-SXM", "meta-llama/Llama-3.1-8B", {"phase": "request", "batch": 4, "chunked_prefill": True,
                                              "chunk_size": 256, "input_length": 600, "output_length": 20}),
    ("H100-SXM", "mistralai/Mixtral-8x7B-v0.1", {"phase": "request", "batch": 16, "ep": 2, "tp": 2,
                                                  "routing_skew": 1.0, "output_length": 16}),
    ("H100-SXM", "deepseek-ai/DeepSeek-V3", {"phase": "decode", "batch": 32, "tp": 8, "ep": 8,
                                              "mla_decode": "naive"}),
    ("T4", "meta-llama/Llama-2-7b-hf", {"phase": "request", "batch": 2, "output_length": 16}),
    ("NVL-AX", "meta-llama/Llama-2-7b-hf", {"phase": "request", "batch": 2, "output_length": 16}),
    ("H100-SXM", "meta-llama/Llama-3.1-8B", {"phase": "request", "weight_dtype": "int4",
                                              "kv_dtype": "fp8", "output_length": 16}),
)


def cases():
    """(key, hardware name, model id, scenario fields, method) for the catalog x phases x methods and VARIANTS."""
    from engine.models import catalog_ids
    for model_id in catalog_ids():
        for phase in PHASES:
            for method in METHODS:
                yield f"{model_id}|{phase}|{method}", "H100-SXM", model_id, {**BASE, "phase": phase}, method
    for device, model_id, fields in VARIANTS:
        label = ",".join(f"{k}={v}" for k, v in sorted(fields.items()))
        for method in METHODS:
            yield f"{model_id}|{device}|{label}|{method}", device, model_id, fields, method


def frame_digest(frame) -> str | None:
    """SHA-256 of a DataFrame's index, column names, dtypes and exact values (None for no frame)."""
    if frame is None:
        return None
    digest = hashlib.sha256()
    digest.update(repr(list(frame.index)).encode())
    digest.update(repr(frame.index.name).encode())
    for name in frame.columns:
        column = frame[name]
        digest.update(f"|{name}|{column.dtype}|".encode())
        if column.dtype.kind in "biuf":
            digest.update(np.ascontiguousarray(column.to_numpy()).tobytes())
        else:
            digest.update(repr(column.tolist()).encode())
    return digest.hexdigest()


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


FIELDS_ADDED_SINCE = {"moe_dispatch": "all_to_all",     # h/serve8, 2026-11-27 (Scenario.moe_dispatch)
                      "unquantized_modules": (), "unquantized_dtype": "bf16"}   # h/serve10, 2026-11-27


def result_digest(result) -> dict[str, str | None]:
    """Digests of one Estimate: kernels, phases, the schedule tables and every other field."""
    summary = result.to_dict(include_kernels=True)
    # Scenario fields added after the digests were frozen, at the default that reproduces the frozen behaviour, are
    # left out of the summary (their non-default values change the kernel rows, which the digests still cover)
    for name, default in FIELDS_ADDED_SINCE.items():
        if summary["scenario"].get(name) == default:
            del summary["scenario"][name]
    summary["experts_touched_raw"] = result.experts_touched
    summary["total_time_s"] = result.total_time_s
    text = json.dumps(summary, sort_keys=True, default=_json_default)
    return {"kernels": frame_digest(result.kernels), "phases": frame_digest(result.phases),
            "requests": frame_digest(result.requests), "iterations": frame_digest(result.iterations),
            "summary": hashlib.sha256(text.encode()).hexdigest()}


def compute(keys=None) -> dict[str, dict | str]:
    """{case key: digests, or 'error: <type>: <message>' where the engine refuses the case}."""
    import engine
    from engine.models import load_model
    from engine.hardware.specs import load_specs
    devices, models, out = load_specs(), {}, {}
    for key, device, model_id, fields, method in cases():
        if keys is not None and key not in keys:
            continue
        model = models.setdefault(model_id, load_model(model_id))
        try:
            result = engine.estimate(devices[device], model, engine.Scenario(**fields), method=method)
        except (ValueError, KeyError) as error:
            out[key] = f"error: {type(error).__name__}: {error}"
            continue
        out[key] = result_digest(result)
    return out


if __name__ == "__main__":
    digests = compute()
    REFERENCE.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    errors = sum(isinstance(v, str) for v in digests.values())
    print(f"wrote {len(digests)} cases ({errors} refused by the engine) to {REFERENCE}")
