"""The two host terms of a serving engine beside its fixed iteration and request overheads (engine/serving):
host time per decoding request per iteration, and the share of the running iteration a later request waits before
the scheduler takes it; checked against hand arithmetic on the simulated iterations, and their re-timing in the
validation (engine/serving/validation.py with_overheads) against serve() itself."""

import numpy as np
import pandas as pd
import pytest

from engine.serving import serve
from engine.serving.validation import with_overheads
from engine.serving.validation_windows import window_terms

FIELDS = dict(concurrency=2, input_length=256, output_length=32, requests_per_client=4, backend="vllm",
              arrival_jitter=0, benchmark_requests=None, iteration_overhead_s=0.0, request_overhead_s=0.0)


@pytest.fixture(scope="module")
def setting(devices, llama8b):
    return devices["H100-SXM"], llama8b


def run(setting, **fields):
    return serve(*setting, **{**FIELDS, **fields})


def test_per_request_overhead_adds_its_time_to_every_decoding_request_of_every_iteration(setting):
    base = run(setting, iteration_overhead_per_request_s=0.0, arrival_wait_share=0.0)
    more = run(setting, iteration_overhead_per_request_s=1e-4, arrival_wait_share=0.0)
    added = more.iterations["time_s"] - base.iterations["time_s"]
    decoding = base.iterations["decode_tokens"]          # one token per decoding request (no speculation)
    assert added.to_numpy() == pytest.approx(1e-4 * decoding.to_numpy())
    # 2 clients in lock step: both decode in every iteration between a request's first and last token
    assert more.tpot_s - base.tpot_s == pytest.approx(2e-4, rel=1e-6)


def test_a_later_request_waits_the_given_share_of_the_iteration_it_arrived_in(setting):
    base = run(setting, arrival_wait_share=0.0, iteration_overhead_per_request_s=0.0)
    half = run(setting, arrival_wait_share=0.5, iteration_overhead_per_request_s=0.0)
    times = base.iterations["time_s"].to_numpy()
    r = base.requests
    later = (r["sequence"] > 0).to_numpy()
    expected = np.where(later, 0.5 * times[np.maximum(r["arrival_iteration"].to_numpy() - 1, 0)], 0.0)
    assert (half.requests["ttft_s"] - r["ttft_s"]).to_numpy() == pytest.approx(expected)
    assert (half.requests["e2e_s"] - r["e2e_s"]).to_numpy() == pytest.approx(expected)
    assert half.tpot_s == pytest.approx(base.tpot_s)
    # the clients' first requests found the server idle: no wait; later ones waited for a decode step
    assert expected[~later].max() == 0.0 and expected[later].min() > 0.0


def test_validation_retiming_matches_serve(setting):
    # with_overheads moves TTFT and TPOT by the windows' sums (validation_windows.py): for these terms exactly
    base = run(setting, iteration_overhead_per_request_s=0.0, arrival_wait_share=0.0)
    terms = window_terms(base)
    row = pd.DataFrame([{**terms, "ttft_s": base.ttft_s, "tpot_s": base.tpot_s, "iteration_overhead_s": 0.0,
                         "request_overhead_s": 0.0, "first_token_iterations": 1.0,
                         "iteration_overhead_per_request_s": 0.0, "arrival_wait_share": 0.0}])
    retimed = with_overheads(row, 0.0, 0.0, per_request_s=3e-5, wait_share=0.75).iloc[0]
    both = run(setting, iteration_overhead_per_request_s=3e-5, arrival_wait_share=0.75)
    assert retimed["tpot_s"] == pytest.approx(both.tpot_s, rel=1e-9)
    # TTFT: exact but for the wait on the per-request time of the iteration waited for (3e-5 x 2 x (0.75 + 1): the vLLM
    # profile schedules ahead, so that iteration is waited for once more, engine/serving/backends.py async_scheduling)
    assert retimed["ttft_s"] == pytest.approx(both.ttft_s, abs=1.75 * 2 * 3e-5 + 1e-12)
    assert abs(retimed["ttft_s"] - base.ttft_s) > 1e-4


def test_ideal_methods_add_no_host_terms(setting):
    result = serve(*setting, **{**FIELDS, "iteration_overhead_s": None, "request_overhead_s": None},
                   method="roofline")
    assert result.options.iteration_overhead_per_request_s == 0.0 and result.options.arrival_wait_share == 0.0


def test_conflicting_measurements_marks_both_runs_of_a_configuration_measured_2x_apart():
    from engine.serving.validation_windows import conflicting_measurements
    runs = pd.DataFrame({"system": ["b200_sxm"] * 4, "backend": "trtllm", "model_path": "deepseek-ai/DeepSeek-R1",
                         "quant": "fp8", "tp": 8, "max_batch": 4, "concurrency": [4, 4, 8, 8], "input_length": 1024,
                         "output_length": 1024, "measured_tpot_s": [0.0043, 0.0103, 0.0068, 0.0075]})
    assert list(conflicting_measurements(runs)) == [True, True, False, False]     # 2.4x apart; 1.1x apart
    assert list(conflicting_measurements(runs, spread=1.05)) == [True, True, True, True]


def synthetic_scored(measured_ttft):
    """Scored runs whose simulated TTFT is 0.1 s without request overhead and whose TPOT is exact."""
    n = len(measured_ttft)
    zeros = np.zeros(n)
    return pd.DataFrame({"reason": "", "ttft_s": np.full(n, 0.1), "tpot_s": np.full(n, 0.01),
                         "measured_ttft_s": measured_ttft, "measured_tpot_s": np.full(n, 0.01),
                         "iteration_overhead_s": zeros, "request_overhead_s": zeros, "graph_latency_overlap": zeros,
                         "iteration_overhead_per_request_s": zeros, "arrival_wait_share": zeros,
                         "decode_kernel_latency_s": zeros, "first_token_iterations": np.ones(n), "tpot_batch": zeros,
                         "ttft_batch": zeros, "arrival_residual_s": zeros})


def test_a_tail_weight_pulls_the_fitted_request_overhead_toward_the_slow_runs(monkeypatch):
    from engine.serving import validation
    # 80 runs measure 0.15 s (request overhead 50 ms), 20 measure 0.40 s (300 ms): the median alone fits 50 ms;
    # with the p90 weighed in, the loss median + w x p90 of |log error| is lower at a longer overhead
    frame = synthetic_scored(np.r_[np.full(80, 0.15), np.full(20, 0.40)])
    monkeypatch.setattr(validation, "TAIL_WEIGHT", {"tpot": 0.0, "ttft": 0.0})
    assert validation.fit_overheads(frame)[1] == pytest.approx(0.05)
    # hand arithmetic for 0.05 <= r: the fast runs err by e_f = log((0.1 + r) / 0.15), the slow ones by
    # e_s = |log(0.4 / (0.1 + r))|; up to r = 0.145 (0.1 + r = sqrt(0.15 x 0.4), where e_f = e_s) the median is e_f and the
    # p90 e_s, so the loss is (1 - w) log(0.1 + r) + const: rising for w = 0.5 (50 ms stays), falling for w = 2; beyond
    # it the fast runs' error is also the p90, and the loss (1 + w) e_f rises: w = 2 fits 145 ms
    monkeypatch.setattr(validation, "TAIL_WEIGHT", {"tpot": 0.0, "ttft": 0.5})
    assert validation.fit_overheads(frame)[1] == pytest.approx(0.05)
    monkeypatch.setattr(validation, "TAIL_WEIGHT", {"tpot": 0.0, "ttft": 2.0})
    assert validation.fit_overheads(frame)[1] == pytest.approx(0.145)


def test_prefill_time_scale_multiplies_the_kernel_time_of_iterations_with_prompt_chunks_only(setting):
    base = run(setting, iteration_overhead_s=2e-4, prefill_time_scale=1.0)
    scaled = run(setting, iteration_overhead_s=2e-4, prefill_time_scale=0.8)
    before, after = base.iterations["time_s"].to_numpy(), scaled.iterations["time_s"].to_numpy()
    mixed = base.iterations["prefill_tokens"].to_numpy() > 0
    assert mixed.any() and (~mixed).any()
    host = 2e-4 + 15e-6 * base.iterations["decode_tokens"].to_numpy()   # vLLM's per-decoding-request host time
    assert after[mixed] == pytest.approx(0.8 * (before[mixed] - host[mixed]) + host[mixed], rel=1e-9)
    assert after[~mixed] == pytest.approx(before[~mixed], rel=1e-12)
    # roofline is ideal: no scale unless given
    assert serve(*setting, **{**FIELDS, "iteration_overhead_s": None, "request_overhead_s": None},
                 method="roofline").options.prefill_time_scale == 1.0


def test_validation_retiming_of_the_prefill_scale_matches_serve(setting):
    base = run(setting, prefill_time_scale=1.0)
    row = pd.DataFrame([{**window_terms(base), "ttft_s": base.ttft_s, "tpot_s": base.tpot_s,
                         "iteration_overhead_s": 0.0, "request_overhead_s": 0.0, "first_token_iterations": 1.0,
                         "prefill_time_scale": 1.0}])
    retimed = with_overheads(row, 0.0, 0.0, prefill_scale=0.7).iloc[0]
    scaled = run(setting, prefill_time_scale=0.7)
    assert scaled.ttft_s < base.ttft_s - 1e-4
    # exact but for the host time inside the mixed iterations (not scaled by serve(): 15 us x 2 requests each)
    assert retimed["ttft_s"] == pytest.approx(scaled.ttft_s, rel=2e-3)
    assert retimed["tpot_s"] == pytest.approx(scaled.tpot_s, rel=2e-3)
