"""Serving at a fixed concurrency (engine/serving): the scheduler against hand-simulated cases, the timing
against hand arithmetic and the chunked-prefill request schedule, Little's law, monotonicity, errors."""

import numpy as np
import pytest

import engine
from engine.serving import ServingCapacityError, ServingOptions, schedule, serve
from engine.serving.backends import BACKENDS
from engine.serving.simulate import request_table
from engine.hardware.what_if import apply_edits

BIG = 1e18   # a KV cache that never fills


def test_two_clients_by_hand():
    # 2 clients, prompts of 4 tokens, 3 output tokens, 6 tokens per iteration, 2 requests each
    plan = schedule(np.full(4, 4), np.full(4, 3), concurrency=2, token_budget=6, max_batch=2,
                    kv_capacity_bytes=BIG, kv_bytes_per_request=np.ones(4))
    mixed = {it.index: it for it in plan.mixed}
    # iteration 0: request 0's whole prompt (4 tokens) and the first 2 tokens of request 1's
    assert list(mixed[0].chunk_tokens) == [4, 2] and list(mixed[0].chunk_priors) == [0, 0]
    assert len(mixed[0].decode_priors) == 0 and mixed[0].completions == 1
    # iteration 1: request 0 decodes (4 prompt tokens cached) while request 1 finishes its prompt
    assert list(mixed[1].decode_priors) == [4] and list(mixed[1].chunk_tokens) == [2]
    assert list(mixed[1].chunk_priors) == [2] and mixed[1].completions == 1
    # iteration 2: both decode, nothing else: request 0 has 5 cached tokens, request 1 has 4
    segment = plan.segments[0]
    assert (segment.start, segment.length, list(segment.priors)) == (2, 1, [5, 4])
    r = plan.requests
    # request 0: first token in iteration 0, last (3rd) token in iteration 2; client 0 sends request 2 at once
    assert list(r["first_token_iteration"][:3]) == [0, 1, 3]
    assert list(r["finish_iteration"][:2]) == [2, 3]
    assert list(r["arrival_iteration"]) == [0, 0, 3, 4]
    assert list(r["client"]) == [0, 1, 0, 1] and list(r["sequence"]) == [0, 0, 1, 1]
    # iteration 3: request 1 decodes its last token beside request 2's whole prompt
    assert list(mixed[3].decode_priors) == [5] and list(mixed[3].chunk_tokens) == [4]
    assert plan.iterations == int(r["finish_iteration"].max()) + 1


def test_prefill_batches_without_decode_by_hand():
    # the same case with prefill batches that run alone (SGLang's default): request 0 waits while request 1's
    # second chunk runs, and that chunk may use the whole budget
    plan = schedule(np.full(4, 4), np.full(4, 3), concurrency=2, token_budget=6, max_batch=2,
                    kv_capacity_bytes=BIG, kv_bytes_per_request=np.ones(4), mix_decode=False)
    mixed = {it.index: it for it in plan.mixed}
    assert list(mixed[0].chunk_tokens) == [4, 2] and mixed[0].completions == 1
    assert len(mixed[1].decode_priors) == 0 and list(mixed[1].chunk_tokens) == [2]
    # iterations 2-3: both decode their 2nd and 3rd tokens from 4 cached tokens each; then requests 2, 3 arrive
    assert [(seg.start, seg.length, list(seg.priors)) for seg in plan.segments] == [(2, 2, [4, 4]), (6, 2, [4, 4])]
    r = plan.requests
    assert list(r["first_token_iteration"]) == [0, 1, 4, 5]
    assert list(r["finish_iteration"]) == [3, 3, 7, 7]
    assert list(r["arrival_iteration"]) == [0, 0, 4, 4] and plan.iterations == 8
    assert list(plan.decode_tokens()) == [0, 0, 2, 2, 0, 0, 2, 2]


def test_arrival_delays_by_hand():
    # the case above, request 2 reaching the scheduler 2 iterations after client 0 sent it (at the end of
    # iteration 3): request 3 runs its prompt alone in iteration 4 and decodes one token in iteration 5, the
    # decode-only stretch stopping where request 2 arrives (iteration 6), whose prompt then runs alone
    plan = schedule(np.full(4, 4), np.full(4, 3), concurrency=2, token_budget=6, max_batch=2,
                    kv_capacity_bytes=BIG, kv_bytes_per_request=np.ones(4), mix_decode=False,
                    arrival_delays=np.array([0, 0, 2, 0]))
    r = plan.requests
    assert list(r["sent_iteration"]) == [0, 0, 4, 4] and list(r["arrival_iteration"]) == [0, 0, 6, 4]
    assert list(r["first_token_iteration"]) == [0, 1, 6, 4] and list(r["finish_iteration"]) == [3, 3, 8, 7]
    assert [(seg.start, seg.length, list(seg.priors)) for seg in plan.segments] == \
        [(2, 2, [4, 4]), (5, 1, [4]), (7, 1, [5, 4]), (8, 1, [5])]
    assert [list(it.chunk_tokens) for it in plan.mixed] == [[4, 2], [2], [4], [4]] and plan.iterations == 9
    # TTFT counts from the arrival at the scheduler (the transit's mean time is in the request overhead)
    table = request_table(plan, np.arange(1.0, 10.0), ServingOptions(requests_per_client=2, request_overhead_s=0.5))
    ends = np.cumsum(np.arange(1.0, 10.0))
    assert table["ttft_s"].iloc[2] == pytest.approx(ends[6] - ends[5] + 0.5)


def test_token_budget_splits_a_prompt():
    plan = schedule(np.array([10, 10]), np.array([1, 1]), concurrency=1, token_budget=4, max_batch=1,
                    kv_capacity_bytes=BIG, kv_bytes_per_request=np.ones(2))
    chunks = [(list(it.chunk_tokens), list(it.chunk_priors)) for it in plan.mixed]
    assert chunks[:3] == [([4], [0]), ([4], [4]), ([2], [8])]
    assert list(plan.requests["first_token_iteration"]) == [2, 5]    # one output token: done at once
    assert list(plan.requests["finish_iteration"]) == [2, 5]


def test_full_kv_cache_makes_requests_wait():
    # the cache holds one request at a time: the second client's prompt waits for the first request to end
    plan = schedule(np.full(4, 8), np.full(4, 5), concurrency=2, token_budget=64, max_batch=8,
                    kv_capacity_bytes=13.0, kv_bytes_per_request=np.full(4, 13.0))
    r = plan.requests
    assert r["first_token_iteration"][1] == r["finish_iteration"][0] + 1
    assert plan.peak_kv_bytes == 13.0
    with pytest.raises(ServingCapacityError, match="KV cache"):
        schedule(np.full(2, 8), np.full(2, 5), 1, 64, 8, kv_capacity_bytes=12.0, kv_bytes_per_request=np.full(2, 13.0))


def test_max_batch_limits_admission():
    plan = schedule(np.full(6, 4), np.full(6, 10), concurrency=3, token_budget=64, max_batch=2,
                    kv_capacity_bytes=BIG, kv_bytes_per_request=np.ones(6))
    assert plan.decode_tokens().max() == 2
    r = plan.requests
    assert r["first_token_iteration"][2] == min(r["finish_iteration"][:2]) + 1


def test_latencies_from_iteration_times():
    plan = schedule(np.full(4, 4), np.full(4, 3), 2, 6, 2, BIG, np.ones(4))
    times = np.arange(1.0, plan.iterations + 1.0)            # iteration k takes k + 1 seconds
    table = request_table(plan, times, ServingOptions(concurrency=2, requests_per_client=2))
    ends = np.cumsum(times)
    # request 2 arrives at the start of iteration 3 (end of 2), first token at the end of 3, last at the end of 5
    assert table.loc[2, "arrival_s"] == ends[2]
    assert table.loc[2, "ttft_s"] == ends[3] - ends[2]
    assert table.loc[2, "tpot_s"] == (ends[table.loc[2, "finish_iteration"]] - ends[3]) / 2
    assert list(table["measured"]) == [True, True, False, False]   # each client's last request winds down


@pytest.fixture(scope="module")
def h100():
    return engine.load_hardware("H100-SXM")


def test_one_client_decodes_at_the_memory_roofline(h100, llama8b):
    # batch-1 decode streams every weight but the embedding table (a lookup) and the KV cache
    isl, osl = 1000, 64
    result = serve(h100, llama8b, concurrency=1, input_length=isl, output_length=osl, method="roofline")
    weights = 2 * (8_030_261_248 - 128_256 * 4096)
    kv_per_token = 32 * 2 * 8 * 128 * 2
    mean_context = isl + np.arange(1, osl).mean()        # tokens attended by decode steps 1..osl-1
    by_hand = (weights + mean_context * kv_per_token) / h100.memory_bandwidth_bytes_per_s
    assert result.tpot_s == pytest.approx(by_hand, rel=0.005)
    assert result.tokens_per_s_per_user == pytest.approx(1 / result.tpot_s)


def test_first_round_matches_the_chunked_prefill_request_schedule(h100, llama8b):
    # C clients starting together run, in their first round, exactly the chunked-prefill schedule of a batch of C
    clients, isl, osl, budget = 6, 700, 40, 512
    served = serve(h100, llama8b, concurrency=clients, input_length=isl, output_length=osl, token_budget=budget,
                   method="roofline", requests_per_client=2)
    batch = engine.estimate(h100, llama8b, engine.Scenario(phase="request", batch=clients, input_length=isl,
                                                           output_length=osl, chunk_size=budget, chunked_prefill=True))
    first = served.requests[served.requests["sequence"] == 0].sort_values("request")
    np.testing.assert_allclose(first["ttft_s"], batch.requests["ttft_s"], rtol=1e-9)
    # the first request to finish decodes before any second-round prompt arrives (decode-only iterations are
    # interpolated on a grid: within 1%)
    assert first["tpot_s"].iloc[0] == pytest.approx(batch.requests["tpot_s"].iloc[0], rel=0.01)


@pytest.mark.parametrize("stagger", [False, True])
def test_littles_law(h100, llama8b, stagger):
    clients = 24
    result = serve(h100, llama8b, concurrency=clients, input_length=2048, output_length=256, method="realistic",
                   stagger_start=stagger, warmup_requests=1, requests_per_client=6)
    # closed loop without think time, in steady state: requests/s = clients / mean request latency
    assert result.requests_per_s == pytest.approx(clients / result.e2e_s, rel=0.03)
    assert result.tokens_per_s_per_device == pytest.approx(result.tokens_per_s)


def test_more_bandwidth_is_never_slower(h100, llama70b):
    faster = apply_edits(h100, {"memory_bandwidth": 2 * h100.memory_bandwidth_bytes_per_s / 1e9})
    fields = dict(concurrency=16, input_length=1024, output_length=128, tp=4, method="realistic")
    slow, fast = serve(h100, llama70b, **fields), serve(faster, llama70b, **fields)
    for metric in ("ttft_s", "tpot_s", "e2e_s"):
        assert fast.metrics[metric] <= slow.metrics[metric]
    assert fast.tokens_per_s > slow.tokens_per_s


def test_a_burst_of_prompts_queues(h100, llama8b):
    # 2 prompts of 4096 tokens fill one 8192-token iteration; 16 arriving together need 8 such iterations
    # (a little more: prompts that finished decode beside the later ones), so the last waits about 8 times as long
    few = serve(h100, llama8b, concurrency=2, input_length=4096, output_length=64, method="roofline")
    many = serve(h100, llama8b, concurrency=16, input_length=4096, output_length=64, method="roofline")
    first = few.requests.loc[few.requests["sequence"] == 0, "ttft_s"].max()
    last = many.requests.loc[many.requests["sequence"] == 0, "ttft_s"].max()
    assert 8 * 0.99 * first <= last <= 9.5 * first
    assert many.tokens_per_s > few.tokens_per_s


def test_replicas_share_the_clients(h100, llama8b):
    one = serve(h100, llama8b, concurrency=8, input_length=512, output_length=64, method="roofline")
    two = serve(h100, llama8b, concurrency=16, input_length=512, output_length=64, dp=2, method="roofline")
    assert two.tokens_per_s == pytest.approx(2 * one.tokens_per_s, rel=1e-9)
    assert two.tokens_per_s_per_device == pytest.approx(one.tokens_per_s_per_device, rel=1e-9)
    assert ServingOptions(concurrency=5).replica_concurrencies(2) == {3: 1, 2: 1}


def test_bad_options_name_the_field(h100, llama8b, llama70b):
    with pytest.raises(ValueError, match="token_budget=32 is less than max_batch=64"):
        ServingOptions(concurrency=64, token_budget=32, max_batch=64)
    with pytest.raises(ValueError, match="concurrency"):
        ServingOptions(concurrency=0)
    with pytest.raises(TypeError, match="unknown field"):
        serve(h100, llama8b, concurency=4)
    with pytest.raises(ServingCapacityError, match="does not fit"):
        serve(h100, llama70b, concurrency=1)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        serve(h100, llama8b, input_length=200_000)
    with pytest.raises(ValueError, match="seed method"):
        serve(h100, llama8b, method="seed")


def test_host_side_times(h100, llama8b):
    fields = dict(concurrency=4, input_length=512, output_length=32, method="realistic")
    bare = serve(h100, llama8b, iteration_overhead_s=0.0, request_overhead_s=0.0, **fields)
    slow = serve(h100, llama8b, iteration_overhead_s=1e-3, request_overhead_s=0.1, **fields)
    # every iteration between two tokens pays 1 ms more; the client sees 100 ms more per request
    assert slow.tpot_s == pytest.approx(bare.tpot_s + 1e-3, rel=1e-9)
    measured = bare.requests[bare.requests["measured"]]
    iterations_to_first_token = (measured["first_token_iteration"] - measured["arrival_iteration"] + 1).mean()
    assert slow.ttft_s == pytest.approx(bare.ttft_s + 0.1 + 1e-3 * iterations_to_first_token, rel=1e-9)
    # the fitted profile applies to realistic methods only; roofline stays ideal
    vllm = serve(h100, llama8b, backend="vllm", **fields)
    profile = BACKENDS["vllm"]
    assert (vllm.iteration_overhead_s, vllm.options.request_overhead_s) == (profile.iteration_overhead_s,
                                                                            profile.request_overhead_s)
    assert vllm.options.request_overhead_s > 0
    ideal = serve(h100, llama8b, backend="vllm", **{**fields, "method": "roofline"})
    assert (ideal.iteration_overhead_s, ideal.options.request_overhead_s) == (0.0, 0.0)
    with pytest.raises(ValueError, match="unknown serving backend 'tgi'"):
        serve(h100, llama8b, backend="tgi")


def test_realistic_says_where_it_is_unvalidated(h100, llama8b):
    tpu = engine.load_hardware("TPU-v5e")
    fields = dict(concurrency=2, input_length=256, output_length=16)
    on_tpu = serve(tpu, llama8b, method="realistic", weight_dtype="int8", **fields)     # 16 GB: 8-bit weights fit
    assert on_tpu.validation["validated"] is False and any("unvalidated on TPU-v5e" in n for n in on_tpu.notes)
    assert on_tpu.to_dict()["realistic_validation"]["validated"] is False
    assert serve(h100, llama8b, method="realistic", **fields).validation["validated"] is True
    assert serve(tpu, llama8b, method="roofline", weight_dtype="int8", **fields).validation is None
    mi300x = engine.estimate(engine.load_hardware("MI300X"), llama8b, engine.Scenario(phase="decode"), method="realistic")
    assert mi300x.to_dict(include_kernels=False)["realistic_validation"]["validated"] is False
    assert any("unvalidated on MI300X" in note for note in mi300x.notes)
    clone = h100.model_copy(update={"name": "My-NPU", "vendor": "Acme", "kind": "npu"})
    assert engine.estimate(clone, llama8b, engine.Scenario(phase="decode"), method="realistic").validation["validated"] is False


def test_request_weights_by_hand():
    from engine.serving.simulate import request_weights
    sequence, measured = np.array([0, 0, 1, 1, 2, 2]), np.array([True, True, True, True, False, False])
    # a benchmark of 8 requests from 2 clients: the first requests are 2 / 8 of those measured, the later 6 / 8
    assert list(request_weights(sequence, measured, 2, 8)) == [0.5, 0.5, 1.5, 1.5, 0.0, 0.0]
    assert list(request_weights(sequence, measured, 2, None)) == [1, 1, 1, 1, 0, 0]
    assert list(request_weights(sequence, measured, 2, 1)) == [2.0, 2.0, 0.0, 0.0, 0.0, 0.0]   # share at most 1


def test_benchmark_requests_weigh_the_start_up_burst(h100, llama8b):
    fields = dict(concurrency=8, input_length=2048, output_length=64, method="roofline", requests_per_client=4)
    burst_only = serve(h100, llama8b, benchmark_requests=8, **fields)
    m = burst_only.requests[burst_only.requests["measured"]]
    first, later = m.loc[m["sequence"] == 0, "ttft_s"].mean(), m.loc[m["sequence"] > 0, "ttft_s"].mean()
    assert first > 1.5 * later                           # the start-up burst queues 8 prompts of 2048 tokens
    assert burst_only.ttft_s == pytest.approx(first)
    long_run = serve(h100, llama8b, benchmark_requests=800, **fields)
    assert long_run.ttft_s == pytest.approx(0.01 * first + 0.99 * later)
    assert serve(h100, llama8b, **fields).ttft_s == pytest.approx(m["ttft_s"].mean())   # ideal: all alike


def test_arrival_jitter_breaks_up_lock_step_rounds(h100, llama8b):
    # 16 clients of 1024-token prompts: in lock step the later rounds' prompts still arrive in groups (those that
    # finished together: 5.3 on average here); drifting 0-4 iterations apart, fewer share an iteration (2.0) and
    # each waits less
    fields = dict(concurrency=16, input_length=1024, output_length=128, method="realistic", requests_per_client=8,
                  benchmark_requests=10**6, request_overhead_s=0.0)
    lock, drift = (serve(h100, llama8b, arrival_jitter=j, **fields) for j in (0, 4))
    later = [r.requests[r.requests["measured"] & (r.requests["sequence"] > 0)] for r in (lock, drift)]
    groups = [requests.groupby("arrival_iteration").size().mean() for requests in later]
    assert groups[1] < 0.6 * groups[0]
    assert drift.ttft_s < 0.8 * lock.ttft_s
    assert drift.tpot_s == pytest.approx(lock.tpot_s, rel=0.1)
    # Little's law with the time in transit (sent at the start of one iteration, arrived at the start of another)
    starts = drift.iterations["end_s"].to_numpy() - drift.iterations["time_s"].to_numpy()
    transit = (starts[later[1]["arrival_iteration"]] - starts[later[1]["sent_iteration"]]).mean()
    assert drift.requests_per_s == pytest.approx(16 / (drift.e2e_s + transit), rel=0.03)
