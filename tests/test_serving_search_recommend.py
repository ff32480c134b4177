"""The serving search's recommendation re-checked by simulation: the disaggregated answer by serve_disaggregated()
at the answer and with one device fewer (every split of the pools falls short), and the requests/s target whose
copies would need more clients than the searched concurrencies."""

from __future__ import annotations

import pytest

import engine
from engine.serving import SLA, serving_search
from engine.serving.disagg import serve_disaggregated

H200 = engine.load_hardware("H200-SXM")
LLAMA8 = engine.load_model("meta-llama/Llama-3.1-8B")
TP1 = dict(tp=1)


@pytest.fixture(scope="module")
def disaggregated():
    return serving_search(H200, LLAMA8, devices=2, disaggregated=True, concurrencies=[4, 16], token_budgets=[2048],
                          input_length=512, output_length=32, sla=SLA(ttft_max_s=0.2), requests_per_s=200)


def test_disaggregated_recommendation_is_serve_disaggregated_at_the_answer(disaggregated):
    rec = disaggregated.recommendation.set_index("mode").loc["disaggregated"]
    assert rec["checked_by_serve"] and "checked with serve_disaggregated" in rec["sentence"]
    workers = int(rec["prefill_workers"]), int(rec["decode_workers"])
    assert sum(workers) == rec["devices_needed"]                  # one-device workers (TP1) on both sides
    answer = serve_disaggregated(LLAMA8, H200, H200, TP1, TP1, *workers, concurrency=int(rec["concurrency"]),
                                 input_length=512, output_length=32, token_budget=int(rec["token_budget"]))
    assert answer.requests_per_s >= 200 and answer.ttft_s <= 0.2
    assert answer.requests_per_s == pytest.approx(rec["requests_per_s"], rel=1e-9)
    assert answer.ttft_s == pytest.approx(rec["ttft_s"], rel=1e-9)


def test_disaggregated_recommendation_fails_with_one_device_fewer_however_the_pools_split(disaggregated):
    rec = disaggregated.recommendation.set_index("mode").loc["disaggregated"]
    fewer = int(rec["devices_needed"]) - 1
    assert rec["one_fewer"].startswith(f"{fewer} devices")
    clients = int(rec["one_fewer"].split(" clients")[0].rsplit(", ", 1)[1])
    for prefill_workers in range(1, fewer):                        # every split of the devices left
        result = serve_disaggregated(LLAMA8, H200, H200, TP1, TP1, prefill_workers, fewer - prefill_workers,
                                     concurrency=clients, input_length=512, output_length=32, token_budget=8192)
        assert result.requests_per_s < 200 or result.ttft_s > 0.2, prefill_workers


def test_requests_per_s_extends_a_copys_load_beyond_the_searched_concurrencies():
    """Searched at 1 and 2 clients only; a copy meets TPOT <= 6 ms with more: the recommendation tries 4, 8, ...
    clients per copy with serve(), keeps the heaviest load within the SLA and says where it stopped."""
    from engine.serving import serve
    result = serving_search(H200, LLAMA8, devices=1, concurrencies=[1, 2], token_budgets=[2048], input_length=512,
                            output_length=64, sla=SLA(tpot_max_s=0.006), requests_per_s=50)
    rec = result.recommendation.iloc[0]
    assert "beyond the searched concurrencies (at most 2 clients per copy): 4 clients per copy meet it, 8 miss " \
           "the SLA (TPOT" in rec["sentence"]
    assert rec["checked_by_serve"] and rec["concurrency_per_replica"] == 4
    two = serve(H200, LLAMA8, concurrency=2, token_budget=2048, input_length=512, output_length=64).metrics
    assert rec["devices_needed"] < -(-50 // two["requests_per_s"])      # fewer than copies at 2 clients need
    eight = serve(H200, LLAMA8, concurrency=8, token_budget=2048, input_length=512, output_length=64).metrics
    assert eight["tpot_s"] > 0.006                                     # the message's 8 clients do miss it
    answer = serve(H200, LLAMA8, concurrency=int(rec["concurrency"]), token_budget=2048, input_length=512,
                   output_length=64, dp=int(rec["replicas"])).metrics
    assert answer["requests_per_s"] >= 50 and answer["tpot_s"] <= 0.006


def test_requests_per_s_says_when_heavier_loads_were_not_exhausted():
    result = serving_search(H200, LLAMA8, devices=1, concurrencies=[1, 2], token_budgets=[2048], input_length=512,
                            output_length=64, sla=SLA(tpot_max_s=0.02), requests_per_s=50)
    assert "up to 32 clients each, still within the SLA: heavier loads (search larger concurrencies) may need " \
           "fewer devices" in result.recommendation.iloc[0]["sentence"]


def test_disaggregated_users_target_holds_and_no_split_of_one_device_fewer_does():
    """For users the pools are split for the SLA, not only for requests/s: the answer holds under
    serve_disaggregated at exactly 100 clients, and every split of one device fewer misses the SLA."""
    sla = SLA(ttft_max_s=0.3, tpot_max_s=0.0065)
    result = serving_search(H200, LLAMA8, devices=2, disaggregated=True, concurrencies=[4, 16], token_budgets=[2048],
                            input_length=512, output_length=32, sla=sla, concurrent_users=100)
    rec = result.recommendation.set_index("mode").loc["disaggregated"]
    assert rec["checked_by_serve"] and rec["concurrency"] == 100
    answer = serve_disaggregated(LLAMA8, H200, H200, TP1, TP1, int(rec["prefill_workers"]), int(rec["decode_workers"]),
                                 concurrency=100, input_length=512, output_length=32, token_budget=8192)
    assert sla.check(answer.ttft_s, answer.tpot_s, answer.e2e_s) == ""
    assert answer.tpot_s == pytest.approx(rec["tpot_s"], rel=1e-9)
    fewer = int(rec["devices_needed"]) - 1
    assert fewer >= 2 and rec["one_fewer"].startswith(f"{fewer} devices")
    for prefill_workers in range(1, fewer):
        result = serve_disaggregated(LLAMA8, H200, H200, TP1, TP1, prefill_workers, fewer - prefill_workers,
                                     concurrency=100, input_length=512, output_length=32, token_budget=8192)
        assert sla.check(result.ttft_s, result.tpot_s, result.e2e_s) != "", prefill_workers
