"""The scheduler's scalar loop (engine/serving/schedule_fast.py, the default for whole-token decode steps) against
the plain loop (`schedule(..., step_by_step=True)`) and hand simulations; the vectorized pieces of the iteration
costs (engine/serving/cost.py) and of the GEMM tiling dedup against plain numpy."""

import functools

import numpy as np
import pytest

from engine.estimators.row_groups import unique_rows
from engine.serving import cost, schedule
from tests import test_serving, test_serving_kv_admission, test_serving_whole_prompts

BIG = 1e18   # a KV cache that never fills
plain = functools.partial(schedule, step_by_step=True)


def assert_same_schedule(fast, slow):
    """Every field of two Schedules equal, to the bit and the dtype."""
    assert (fast.iterations, fast.kv_capacity_bytes, fast.peak_kv_bytes, fast.tokens_per_step) == \
        (slow.iterations, slow.kv_capacity_bytes, slow.peak_kv_bytes, slow.tokens_per_step)
    assert len(fast.mixed) == len(slow.mixed) and len(fast.segments) == len(slow.segments)
    for a, b in zip(fast.mixed, slow.mixed):
        assert (a.index, a.completions) == (b.index, b.completions)
        for name in ("decode_priors", "chunk_tokens", "chunk_priors"):
            x, y = getattr(a, name), getattr(b, name)
            assert x.dtype == y.dtype and np.array_equal(x, y), (a.index, name, x, y)
    for a, b in zip(fast.segments, slow.segments):
        assert (a.start, a.length) == (b.start, b.length)
        assert a.priors.dtype == b.priors.dtype and np.array_equal(a.priors, b.priors)
    assert fast.requests.keys() == slow.requests.keys()
    for name, values in fast.requests.items():
        assert values.dtype == slow.requests[name].dtype and np.array_equal(values, slow.requests[name]), name


HAND_SIMULATED = [test_serving.test_two_clients_by_hand, test_serving.test_prefill_batches_without_decode_by_hand,
                  test_serving.test_arrival_delays_by_hand, test_serving.test_token_budget_splits_a_prompt,
                  test_serving.test_full_kv_cache_makes_requests_wait, test_serving.test_max_batch_limits_admission,
                  test_serving_whole_prompts.test_two_clients_whole_prompts_by_hand,
                  test_serving_whole_prompts.test_a_prompt_longer_than_the_budget_runs_whole_and_alone,
                  test_serving_kv_admission.test_admission_counts_the_admitted_bytes_by_hand]


@pytest.mark.parametrize("case", HAND_SIMULATED, ids=lambda case: case.__name__)
def test_the_plain_loop_meets_the_hand_simulations_too(case, monkeypatch):
    """Those tests run the scalar loop (schedule's default); here the same expectations hold for the plain one."""
    monkeypatch.setitem(case.__globals__, "schedule", plain)
    case()


def test_requests_finishing_out_of_start_order_by_hand():
    # 3 clients, prompts of 4, outputs of 6, 2, 4 (then 2 each), 64 tokens per iteration: request 1 finishes
    # before requests 0 and 2 that started with it, leaving a gap among the decoding requests
    isl, osl = np.full(6, 4), np.array([6, 2, 4, 2, 2, 2])
    plan = schedule(isl, osl, concurrency=3, token_budget=64, max_batch=8, kv_capacity_bytes=BIG,
                    kv_bytes_per_request=np.ones(6))
    assert [(it.index, it.decode_priors.tolist(), it.chunk_tokens.tolist(), it.chunk_priors.tolist(), it.completions)
            for it in plan.mixed] == [(0, [], [4, 4, 4], [0, 0, 0], 3),   # three whole prompts
                                      (2, [5, 5], [4], [0], 1),          # requests 0, 2 decode; request 3's prompt
                                      (4, [7], [4, 4], [0, 0], 2)]       # request 0 decodes; requests 4, 5's prompts
    assert [(s.start, s.length, s.priors.tolist()) for s in plan.segments] == \
        [(1, 1, [4, 4, 4]), (3, 1, [6, 6, 4]), (5, 1, [8, 4, 4])]
    r = plan.requests
    assert r["first_token_iteration"].tolist() == [0, 0, 0, 2, 4, 4]
    assert r["finish_iteration"].tolist() == [5, 1, 3, 3, 5, 5]
    assert r["client"].tolist() == [0, 1, 2, 1, 2, 1] and r["arrival_iteration"].tolist() == [0, 0, 0, 2, 4, 4]
    assert plan.iterations == 6
    assert_same_schedule(plan, plain(isl, osl, 3, 64, 8, BIG, np.ones(6)))


SMALL_CASES = {   # (input lengths, output lengths, concurrency, token budget, max batch, KV capacity, KV per request)
    "two clients, chunk budget": (np.full(4, 4), np.full(4, 3), 2, 6, 2, BIG, np.ones(4)),
    "three clients, long prompts split": (np.full(9, 20), np.full(9, 4), 3, 8, 3, BIG, np.ones(9)),
    "full KV cache, one request at a time": (np.full(6, 8), np.full(6, 5), 3, 64, 8, 13.0, np.full(6, 13.0)),
    "KV cache of two, unequal lengths": (np.array([5, 9, 3, 7, 4, 6]), np.array([4, 1, 6, 2, 3, 5]), 2, 5, 2,
                                         25.0, np.array([9, 10, 9, 9, 7, 11], dtype=float)),
}


@pytest.mark.parametrize("name", SMALL_CASES)
@pytest.mark.parametrize("options", [{}, {"mix_decode": False}, {"chunk_prompts": False},
                                     {"arrival_delays": np.array([0, 0, 0, 2, 1, 3, 0, 1, 2])}])
def test_scalar_loop_equals_the_plain_loop_on_small_cases(name, options):
    isl, osl, *rest = SMALL_CASES[name]
    options = {k: v[:len(isl)] if k == "arrival_delays" else v for k, v in options.items()}
    if "arrival_delays" in options:
        options["arrival_delays"][:rest[0]] = 0
    assert_same_schedule(schedule(isl, osl, *rest, **options), plain(isl, osl, *rest, **options))


def test_scalar_loop_equals_the_plain_loop_on_random_cases():
    rng = np.random.default_rng(12)
    for _ in range(300):
        clients = int(rng.integers(1, 10))
        total = clients * int(rng.integers(2, 5))
        isl = rng.integers(1, 50, total) if rng.random() < 0.6 else np.full(total, int(rng.integers(1, 50)))
        osl = rng.integers(1, 30, total) if rng.random() < 0.6 else np.full(total, int(rng.integers(1, 30)))
        reserve = (isl + osl) * rng.uniform(0.5, 2.0)
        args = (isl, osl, clients, int(rng.integers(clients, 80)), int(rng.integers(1, clients + 3)),
                float(reserve.max() * rng.uniform(1.0, 5.0)), reserve)
        options = dict(mix_decode=bool(rng.random() < 0.7), chunk_prompts=bool(rng.random() < 0.7),
                       verify_tokens=int(rng.integers(1, 3)))     # (whole steps with a wider verification pass)
        if rng.random() < 0.5:
            options["arrival_delays"] = np.where(np.arange(total) < clients, 0, rng.integers(0, 5, total))
        if rng.random() < 0.3:
            options["kv_bytes_admitted"] = reserve * 0.6
        assert_same_schedule(schedule(*args, **options), plain(*args, **options))


def test_speculative_steps_keep_the_plain_loop():
    # a fractional step is summed iteration by iteration there; schedule() does not take the scalar loop for it
    args = (np.full(2, 4), np.full(2, 9), 1, 64, 1, BIG, np.ones(2))
    assert_same_schedule(schedule(*args, tokens_per_step=2.5, verify_tokens=3),
                         plain(*args, tokens_per_step=2.5, verify_tokens=3))


def test_descending_within_sorts_each_row():
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 6, 40)
    values = rng.integers(0, 9, counts.sum()).astype(float)
    ends = np.cumsum(counts)
    expected = np.concatenate([np.sort(row)[::-1] for row in np.split(values, ends[:-1])])
    np.testing.assert_array_equal(cost.descending_within(values, counts), expected)
    ordered = np.array([9.0, 7.0, 7.0, 2.0, 5.0, 1.0])     # rows [9, 7], [7, 2], [5, 1]: in order, kept as given
    assert cost.descending_within(ordered, np.array([2, 2, 2])) is ordered


def test_distinct_mixed_groups_iterations_with_the_same_contents():
    plan = schedule(np.full(40, 12), np.full(40, 30), 8, 16, 8, BIG, np.ones(40))
    distinct, which = cost.distinct_mixed(plan)
    keys = [(tuple(np.sort(it.decode_priors)), tuple(it.chunk_tokens), tuple(it.chunk_priors), it.completions)
            for it in plan.mixed]
    first = {}
    for position, key in enumerate(keys):
        first.setdefault(key, position)
    position = {id(it): p for p, it in enumerate(plan.mixed)}
    assert [position[id(it)] for it in distinct] == sorted(first.values())
    assert len(distinct) < len(plan.mixed)          # a lock-step run repeats its rounds
    assert [keys[position[id(distinct[w])]] for w in which] == keys


def test_unique_rows_equals_numpy_unique():
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 4, (500, 7)).astype(float) * np.array([1.0, 0.5, 3.0, 1.0, 1e6, 2.0, 1.0])
    unique, inverse = unique_rows(keys)
    expected, expected_inverse = np.unique(keys, axis=0, return_inverse=True)
    np.testing.assert_array_equal(unique, expected)
    np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))
    np.testing.assert_array_equal(unique[inverse], keys)
