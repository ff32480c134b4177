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


def test_digests_do_not_depend_on_the_blas_kernel_the_cpu_picks():
    """The same results on every machine: OpenBLAS picks its kernel by the CPU (here forced to the oldest, Prescott),
    and kernels add in different orders, so a sum through BLAS (np.dot) changed the last bits between machines
    (CI failed on a machine whose OpenBLAS picked another kernel than the one the digests were frozen on)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parent.parent
    keys = sorted(key for key in EXPECTED if isinstance(EXPECTED[key], dict)
                  and (key.startswith("EleutherAI/pythia-1b|") or "pp=2" in key or "ep=2" in key))
    assert len(keys) >= 25
    script = ("import json, sys; from tests.reference.fast_path_reference import compute; "
              "print(json.dumps(compute(set(json.loads(sys.argv[1])))))")
    env = {**os.environ, "OPENBLAS_CORETYPE": "Prescott", "PYTHONPATH": str(repo)}
    done = subprocess.run([sys.executable, "-c", script, json.dumps(keys)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    actual = json.loads(done.stdout.strip().splitlines()[-1])
    assert {key: actual[key] for key in keys} == {key: EXPECTED[key] for key in keys}
