"""The fast path (issue 15) gives bit-identical results: every catalog model x phase x method, and variants
reaching pipelines, collectives, experts, chunked schedules and devices without energy values, hash to the
digests frozen from the engine before the fast path (tests/reference/fast_path_reference.py)."""

from __future__ import annotations

import json

import pytest

from tests.reference.fast_path_reference import REFERENCE, compute, frame_digest

EXPECTED = json.loads(REFERENCE.read_text())


def test_reference_covers_catalog_phases_and_methods():
    from engine.models import catalog_ids
    keys = set(EXPECTED)
    for model_id in catalog_ids():
        for phase in ("prefill", "decode", "chunked", "request"):
            for method in ("roofline", "realistic", "hierarchical", "seed", "realistic-graph"):
                assert f"{model_id}|{phase}|{method}" in keys
    refused = [key for key, value in EXPECTED.items() if isinstance(value, str)]
    assert all(key.endswith("|seed") for key in refused), refused   # only seed refuses tp/pp/ep/chunked


@pytest.mark.parametrize("method", ("roofline", "realistic", "hierarchical", "seed", "realistic-graph"))
def test_results_are_bit_identical_to_the_frozen_reference(method):
    keys = {key for key in EXPECTED if key.endswith(f"|{method}")}
    actual = compute(keys)
    assert set(actual) == keys
    differing = {key: [part for part in EXPECTED[key] if not isinstance(actual[key], dict)
                       or actual[key][part] != EXPECTED[key][part]] if isinstance(EXPECTED[key], dict)
                 else actual[key] for key in sorted(keys) if actual[key] != EXPECTED[key]}
    assert not differing, f"{len(differing)} results changed: {dict(list(differing.items())[:5])}"


def test_digest_sees_the_last_bit():
    import numpy as np
    import pandas as pd
    frame = pd.DataFrame({"time_s": [0.1, 0.2]})
    nudged = pd.DataFrame({"time_s": [0.1, np.nextafter(0.2, 1.0)]})
    assert frame_digest(frame) != frame_digest(nudged)
    assert frame_digest(frame) != frame_digest(frame.astype({"time_s": "float32"}))
