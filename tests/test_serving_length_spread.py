"""Measured runs read with the benchmark clients' length spread (engine/serving/validation_express.py,
BENCHMARK_LENGTH_SPREAD): why equal lengths keep a prefill-first schedule in lock step (hand-simulated), and which
fields express() gives a run."""

import numpy as np
import pandas as pd

from engine.hardware.specs import load_specs
from engine.serving import validation_express
from engine.serving.options import ServingOptions
from engine.serving.scheduler import schedule
from engine.serving.validation_express import ModelSource, express
from pathlib import Path

BIG = 1e18
ROOT = Path(__file__).parent / "data" / "aiconfigurator_serving" / "systems"


def first_token_waits(plan) -> list[int]:
    """Iterations from each request's arrival to its first token, inclusive."""
    r = plan.requests
    return list(r["first_token_iteration"] - r["arrival_iteration"] + 1)


def test_equal_lengths_keep_prefill_first_rounds_in_lock_step_by_hand():
    # 2 clients, 4-token prompts, 3 output tokens, a budget of one prompt per iteration, prefill batches alone
    # (SGLang's schedule). Round 1: request 0's prompt runs in iteration 0, request 1's in 1 (request 0 waits: no
    # decoding beside a prefill batch), both decode in 2-3 and finish together after 3; requests 2, 3 arrive together
    # at 4 and request 3 waits behind request 2's prompt again: every round repeats the burst
    plan = schedule(np.full(6, 4), np.full(6, 3), concurrency=2, token_budget=4, max_batch=2,
                    kv_capacity_bytes=BIG, kv_bytes_per_request=np.ones(6), mix_decode=False)
    r = plan.requests
    assert list(r["arrival_iteration"]) == [0, 0, 4, 4, 8, 8]
    assert list(r["first_token_iteration"]) == [0, 1, 4, 5, 8, 9]
    assert list(r["finish_iteration"]) == [3, 3, 7, 7, 11, 11]
    assert first_token_waits(plan) == [1, 2, 1, 2, 1, 2]


def test_unequal_output_lengths_break_the_lock_step_by_hand():
    # the same, request 0 asking for 2 tokens: it finishes after iteration 2 (first token in 0, second in the decode
    # iteration 2), so its client's request 2 arrives at 3 alone and its prompt runs at once (iteration 3) while
    # request 1 (first token in 1, 3 tokens) still decodes: it finishes after iteration 4 and request 3 arrives at 5,
    # again alone. No request after the start-up burst waits behind another's prompt.
    plan = schedule(np.full(4, 4), np.array([2, 3, 3, 3]), concurrency=2, token_budget=4, max_batch=2,
                    kv_capacity_bytes=BIG, kv_bytes_per_request=np.ones(4), mix_decode=False)
    r = plan.requests
    assert list(r["arrival_iteration"]) == [0, 0, 3, 5]
    assert list(r["first_token_iteration"]) == [0, 1, 3, 5]
    assert list(r["finish_iteration"]) == [2, 4, 6, 7]
    assert first_token_waits(plan) == [1, 2, 1, 1]
    # decode iterations: 2 (requests 0, 1), 4 (1, 2), 6 (2, 3), 7 (3); iterations 3 and 5 run a prompt alone
    assert [(seg.start, seg.length, len(seg.priors)) for seg in plan.segments] == [(2, 1, 2), (4, 1, 2), (6, 1, 2),
                                                                                    (7, 1, 1)]


def run_row(**fields):
    base = dict(device="H100-SXM", system="h100_sxm", mode="agg", attention_dp=pd.NA, model_path="meta-llama/Llama-3.1-70B",
                gemm_quant_mode="fp8", concurrency=16, max_batch=16, moe_ep=pd.NA, moe_tp=pd.NA, input_length=1000,
                output_length=500, tp=4, pp=1, backend="sglang")
    return next(pd.DataFrame([{**base, **fields}]).itertuples(index=False))


def test_express_reads_the_benchmark_length_spread(monkeypatch):
    devices, models = load_specs(), ModelSource(ROOT)
    # shipped off: every request at the recorded lengths (held out it scored worse, validation_express)
    assert validation_express.BENCHMARK_LENGTH_SPREAD == 0.0
    assert "length_spread" not in express(run_row(), devices, models)[2]
    monkeypatch.setattr(validation_express, "BENCHMARK_LENGTH_SPREAD", 0.1)     # a range 0.2 L wide around L
    _, _, fields = express(run_row(), devices, models)
    assert fields["length_spread"] == 0.1 and (fields["input_length"], fields["output_length"]) == (1000, 500)
    # what serve() then draws for the run: lengths within L(1 -+ 0.1), means within 1% of the recorded ones
    inputs, outputs = ServingOptions(**{k: fields[k] for k in ("concurrency", "input_length", "output_length",
                                                                "length_spread")}).lengths(16)
    assert inputs.min() >= 900 and inputs.max() <= 1100 and abs(inputs.mean() / 1000 - 1) < 0.01
    assert outputs.min() >= 450 and outputs.max() <= 550 and abs(outputs.mean() / 500 - 1) < 0.01
    assert len(set(outputs[:16])) > 8        # the clients' first requests end at different iterations
    monkeypatch.setattr(validation_express, "BENCHMARK_LENGTH_SPREAD", 0.0)
    assert "length_spread" not in express(run_row(), devices, models)[2]
