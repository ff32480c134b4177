"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st

import engine


def scenarios(max_batch: int, max_input: int, max_output: int, max_chunk: int, kv_dtypes=("bf16",)):
    """Scenarios of every phase with weights in bf16, fp8 or int4 (bounds keep a test fast)."""
    return st.builds(
        engine.Scenario,
        phase=st.sampled_from(["prefill", "decode", "chunked", "request"]),
        batch=st.integers(1, max_batch),
        input_length=st.integers(1, max_input),
        output_length=st.integers(1, max_output),
        chunk_size=st.integers(16, max_chunk),
        weight_dtype=st.sampled_from(["bf16", "fp8", "int4"]),
        kv_dtype=st.sampled_from(list(kv_dtypes)),
    )
