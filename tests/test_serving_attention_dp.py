"""Attention data parallelism in serving (engine/serving): a later prompt held W iterations before its prefill
(TensorRT-LLM's attention-DP balance, `attention_dp_wait_iterations`), checked on the simulated iterations by hand;
its re-timing in the validation against serve(); the shared search evaluation reproducing it; and how the measured
runs' layout fields are read (engine/serving/validation.py attention_dp_reading)."""

import numpy as np
import pandas as pd
import pytest

import engine
from engine.serving import serve
from engine.serving.options import ServingOptions
from engine.serving.search_eval import LayoutEvaluator, ScheduleCache
from engine.serving.validation import with_overheads
from engine.serving.validation_express import attention_dp_reading

FIELDS = dict(concurrency=16, input_length=512, output_length=64, requests_per_client=4, backend="trtllm",
              arrival_jitter=0, benchmark_requests=None, iteration_overhead_s=0.0, request_overhead_s=0.0,
              iteration_overhead_per_request_s=0.0, arrival_wait_share=0.0)
ATTENTION_DP = dict(tp=1, dp=2, ep=2)        # two attention replicas, experts over both devices


@pytest.fixture(scope="module")
def setting():
    from engine.models import load_model
    return engine.load_hardware("H100-SXM"), load_model("Qwen/Qwen3-30B-A3B")


def run(setting, layout=ATTENTION_DP, **fields):
    return serve(*setting, **{**FIELDS, **layout, **fields})


def test_a_later_prompt_is_held_w_decode_steps_of_the_run(setting):
    free, held = run(setting, attention_dp_wait_iterations=0), run(setting, attention_dp_wait_iterations=6)
    r, h = free.requests, held.requests
    later = (r["sequence"] > 0).to_numpy()
    # the schedule and the iterations are the same; a later request's TTFT and latency gain 6 x the run's mean TPOT
    assert held.iterations["time_s"].to_numpy() == pytest.approx(free.iterations["time_s"].to_numpy(), rel=1e-12)
    measured = r["measured"].to_numpy()
    step = np.average(r["tpot_s"].to_numpy()[measured], weights=r["weight"].to_numpy()[measured])
    assert step == pytest.approx(free.tpot_s)
    expected = np.where(later, 6 * step, 0.0)
    assert (h["ttft_s"] - r["ttft_s"]).to_numpy() == pytest.approx(expected, abs=1e-12)
    assert (h["e2e_s"] - r["e2e_s"]).to_numpy() == pytest.approx(expected, abs=1e-12)
    assert held.tpot_s == pytest.approx(free.tpot_s, rel=1e-12)
    assert held.options.attention_dp_wait_iterations == 6 and expected[later].min() > 0


def test_layouts_without_attention_dp_and_the_ideal_methods_hold_nothing(setting):
    for layout in (dict(tp=2, dp=1, ep=2), dict(tp=1, dp=2, ep=1)):    # experts within a replica; independent ones
        plain, held = run(setting, layout), run(setting, layout, attention_dp_wait_iterations=6)
        assert held.ttft_s == pytest.approx(plain.ttft_s, rel=1e-12) and held.options.attention_dp_wait_iterations == 0
    ideal = serve(*setting, **{**FIELDS, **ATTENTION_DP, "iteration_overhead_s": None, "request_overhead_s": None},
                  method="roofline")
    assert ideal.options.attention_dp_wait_iterations == 0


def test_validation_retiming_matches_serve(setting):
    # with_overheads adds W x the mean TPOT to the later requests' share of TTFT (1 - C / N with N = 1000 requests)
    for concurrency in (16, 1200):
        fields = dict(concurrency=concurrency, benchmark_requests=1000)
        free, held = run(setting, attention_dp_wait_iterations=0, **fields), \
            run(setting, attention_dp_wait_iterations=20, **fields)
        row = pd.DataFrame([{"ttft_s": free.ttft_s, "tpot_s": free.tpot_s, "iteration_overhead_s": 0.0,
                             "request_overhead_s": 0.0, "first_token_iterations": 1.0, "attention_dp_ranks": 2,
                             "attention_dp_wait_iterations": 0, "concurrency": concurrency}])
        retimed = with_overheads(row, 0.0, 0.0, attention_dp_wait=20).iloc[0]
        assert retimed["ttft_s"] == pytest.approx(held.ttft_s, rel=1e-9)
    assert held.ttft_s == pytest.approx(free.ttft_s)      # 1200 clients of a 1000-request run: all burst, none held
    single = with_overheads(row.assign(attention_dp_ranks=1), 0.0, 0.0, attention_dp_wait=20).iloc[0]
    assert single["ttft_s"] == free.ttft_s


def test_shared_search_evaluation_reproduces_the_hold(setting):
    base = ServingOptions(**{**FIELDS, "concurrency": 1, "attention_dp_wait_iterations": 6})
    points = [(16, 2048), (6, 2048)]       # 6 clients: 3 per replica
    got = LayoutEvaluator(*setting, "realistic", base, ATTENTION_DP, ScheduleCache()).evaluate(points)
    for (concurrency, budget), metrics in zip(points, got):
        expected = run(setting, concurrency=concurrency, token_budget=budget, attention_dp_wait_iterations=6).metrics
        for name in expected:
            assert metrics[name] == pytest.approx(expected[name], rel=1e-9), (concurrency, name)


def measured_run(**fields):
    base = dict(concurrency=pd.NA, max_batch=8, moe_tp=pd.NA, moe_ep=pd.NA)
    return next(pd.DataFrame([{**base, **fields}]).itertuples(index=False))


def test_measured_layouts_are_read_with_the_batch_per_attention_dp_rank():
    # as recorded: attention DP 8 over moe_ep 8, 8 clients per rank
    assert attention_dp_reading(measured_run(concurrency=64, moe_tp=1, moe_ep=8), 1, 8, 8) == (1, 8, 8)
    # no attention_dp written, concurrency = batch x tp (Dynamo's --enable-attention-dp): one rank per device
    assert attention_dp_reading(measured_run(concurrency=40, max_batch=5, moe_tp=1, moe_ep=8), 8, 1, 8) == (1, 8, 8)
    # concurrency = batch: tensor parallel as written
    assert attention_dp_reading(measured_run(concurrency=8, moe_tp=8, moe_ep=1), 8, 1, 8) == (8, 1, 8)
    # attention_dp 64 = moe_tp 8 x moe_ep 8 at tp 1 (the recording that repeats 8-device runs): 8 ranks
    assert attention_dp_reading(measured_run(concurrency=64, max_batch=1, moe_tp=8, moe_ep=8), 1, 64, 64) == (1, 8, 8)
    # moe_tp x moe_ep = attention_dp with unequal factors is kept as written
    assert attention_dp_reading(measured_run(concurrency=64, max_batch=4, moe_tp=2, moe_ep=8), 1, 16, 16) == (1, 16, 16)
