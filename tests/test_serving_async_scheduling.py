"""Async scheduling (engine/serving/backends.py `async_scheduling`, vLLM's default since 0.14.0): the engine schedules
iteration k + 1 while k runs, so a later request that reaches the server during k also waits for k + 1, one more
iteration in its TTFT; checked by hand on the simulated iterations, and the validation's reading of each measured
vLLM run's setting from its version and date (validation_express.async_scheduling_reading)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from engine.serving import serve
from engine.serving.validation_express import async_scheduling_reading

FIELDS = dict(concurrency=2, input_length=256, output_length=32, requests_per_client=4, backend="vllm",
              arrival_jitter=0, benchmark_requests=None, iteration_overhead_s=0.0, request_overhead_s=0.0,
              iteration_overhead_per_request_s=0.0, arrival_wait_share=0.0)


@pytest.fixture(scope="module")
def setting(devices, llama8b):
    return devices["H100-SXM"], llama8b


def run(setting, **fields):
    return serve(*setting, **{**FIELDS, **fields})


def test_a_later_request_waits_one_more_iteration_with_async_scheduling(setting):
    off = run(setting, async_scheduling=False)
    on = run(setting, async_scheduling=True)
    later = (off.requests["sequence"] > 0).to_numpy()
    extra = (on.requests["ttft_s"] - off.requests["ttft_s"]).to_numpy()
    # 2 clients in lock step: both finish in the same decode step, their next requests arrive after it, and with the
    # next iteration scheduled while that step ran they wait for all of it: one decode-only step (no prompt tokens)
    decode_steps = off.iterations.loc[off.iterations["prefill_tokens"] == 0, "time_s"].to_numpy()
    step = float(np.median(decode_steps))
    assert extra[later] == pytest.approx(np.full(later.sum(), step), rel=0.02)
    assert np.all(extra[~later] == 0.0)         # the clients' first requests found the server idle
    assert (on.requests["e2e_s"] - off.requests["e2e_s"]).to_numpy() == pytest.approx(extra)
    assert on.tpot_s == pytest.approx(off.tpot_s)      # the schedule and the iterations are the same
    assert on.options.async_scheduling is True and off.options.async_scheduling is False


def test_the_wait_share_and_the_iteration_ahead_add_up(setting):
    off = run(setting, async_scheduling=False, arrival_wait_share=0.5)
    on = run(setting, async_scheduling=True, arrival_wait_share=0.5)
    times = off.iterations["time_s"].to_numpy()
    r = off.requests
    later = (r["sequence"] > 0).to_numpy()
    waited = times[np.maximum(r["arrival_iteration"].to_numpy() - 1, 0)]
    base = run(setting, async_scheduling=False)
    for result, share in ((off, 0.5), (on, 1.5)):
        added = (result.requests["ttft_s"] - base.requests["ttft_s"]).to_numpy()
        assert added == pytest.approx(np.where(later, share * waited, 0.0))


def test_backend_defaults_and_ideal_methods(setting):
    given = {k: v for k, v in FIELDS.items() if k != "backend"}
    assert serve(*setting, **{**given, "backend": "vllm"}).options.async_scheduling is True
    for backend in ("sglang", "trtllm", "generic"):
        assert serve(*setting, **{**given, "backend": backend}).options.async_scheduling is False
    # the ideal methods count no host-side wait unless the options say so
    assert serve(*setting, **given, backend="vllm", method="roofline").options.async_scheduling is False
    assert serve(*setting, **given, backend="vllm", method="roofline", async_scheduling=True).options.async_scheduling


def measured(backend, version, date):
    return SimpleNamespace(backend=backend, backend_version=version,
                           measured_at=pd.Timestamp(date, tz="UTC") if date else pd.NaT)


@pytest.mark.parametrize("backend, version, date, expected", [
    ("vllm", "0.12.0", None, False),                  # before 0.14.0: off by default
    ("vllm", "0.11.2", "2025-12-08", False),
    ("vllm", "0.14.0", None, None),                   # 0.14.0 on: the backend's default (on)
    ("vllm", "0.19.0", "2026-04-22", None),
    ("vllm", np.nan, "2025-10-29", False),            # no version, measured before 0.14.0 was out
    ("vllm", np.nan, "2026-03-01", None),
    ("vllm", "nightly-5b8c30d62b754b57", "2026-04-03", None),
    ("vllm", np.nan, None, None),                     # nothing known: the default
    ("trtllm", "1.0.0rc3", "2025-10-29", None),       # other engines: not read
])
def test_reading_of_a_measured_runs_async_scheduling(backend, version, date, expected):
    assert async_scheduling_reading(measured(backend, version, date)) is expected
