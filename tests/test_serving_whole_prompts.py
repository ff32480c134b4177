"""Prompts run whole (no chunked prefill, TensorRT-LLM's default; engine/serving/scheduler.py step 3): the scheduler
against hand-simulated cases, and the backend profiles that choose it."""

import numpy as np

from engine.serving import schedule
from engine.serving.backends import BACKENDS

BIG = 1e18


def test_two_clients_whole_prompts_by_hand():
    # 2 clients, prompts of 4 tokens, 3 output tokens, 6 tokens per iteration: request 1's prompt does not fit the 2
    # tokens left in iteration 0 and waits whole for iteration 1 (chunked, it would run 2 + 2 tokens)
    plan = schedule(np.full(4, 4), np.full(4, 3), concurrency=2, token_budget=6, max_batch=2,
                    kv_capacity_bytes=BIG, kv_bytes_per_request=np.ones(4), chunk_prompts=False)
    mixed = {it.index: it for it in plan.mixed}
    assert list(mixed[0].chunk_tokens) == [4] and mixed[0].completions == 1
    # iteration 1: request 0 decodes (1 token of the budget), request 1's whole prompt takes 4 of the 5 left
    assert list(mixed[1].decode_priors) == [4] and list(mixed[1].chunk_tokens) == [4]
    assert list(mixed[1].chunk_priors) == [0] and mixed[1].completions == 1
    r = plan.requests
    # request 0: tokens in iterations 0, 1, 2; request 1: 1, 2, 3; client 0's next request arrives at 3 and its
    # whole prompt runs beside request 1's last token
    assert list(r["first_token_iteration"][:3]) == [0, 1, 3]
    assert list(r["finish_iteration"][:2]) == [2, 3]
    assert list(mixed[3].decode_priors) == [5] and list(mixed[3].chunk_tokens) == [4]


def test_a_prompt_longer_than_the_budget_runs_whole_and_alone():
    plan = schedule(np.array([10, 10]), np.array([1, 1]), concurrency=1, token_budget=4, max_batch=1,
                    kv_capacity_bytes=BIG, kv_bytes_per_request=np.ones(2), chunk_prompts=False)
    assert [list(it.chunk_tokens) for it in plan.mixed] == [[10], [10]]
    assert list(plan.requests["first_token_iteration"]) == [0, 1]
    chunked = schedule(np.array([10, 10]), np.array([1, 1]), concurrency=1, token_budget=4, max_batch=1,
                       kv_capacity_bytes=BIG, kv_bytes_per_request=np.ones(2))
    assert [list(it.chunk_tokens) for it in chunked.mixed][:3] == [[4], [4], [2]]


def test_only_tensorrt_llm_runs_whole_prompts():
    assert not BACKENDS["trtllm"].chunked_prefill
    assert all(BACKENDS[name].chunked_prefill for name in ("vllm", "sglang", "generic"))
