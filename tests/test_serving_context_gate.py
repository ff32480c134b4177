"""The attention-DP balance gate (ServingOptions.context_gate_iterations): while requests decode, waiting prompts are
admitted only at every P-th iteration; an idle server admits at once. Hand-simulated closed loops, both loops."""

import numpy as np
import pytest

from engine.serving.scheduler import schedule


def _run(gate: int, step_by_step: bool):
    # two clients, 4-token prompts that run whole; client 0's requests produce 3 tokens, client 1's 6
    isl = np.full(4, 4)
    osl = np.array([3, 6, 3, 6])
    return schedule(isl, osl, concurrency=2, token_budget=100, max_batch=2, kv_capacity_bytes=1e12,
                    kv_bytes_per_request=np.ones(4), chunk_prompts=False, step_by_step=step_by_step,
                    context_gate=gate).requests


@pytest.mark.parametrize("step_by_step", [False, True])
def test_a_prompt_that_arrives_while_others_decode_waits_for_the_gate(step_by_step):
    # iteration 0: both prompts run (first tokens); request 0 decodes tokens 2 and 3 in iterations 1 and 2 and its
    # client's next request (2) arrives at iteration 3 while request 1 still decodes (its tokens 2-6: iterations 1-5)
    plain = _run(1, step_by_step)
    assert plain["arrival_iteration"][2] == 3 and plain["first_token_iteration"][2] == 3
    gated = _run(4, step_by_step)
    assert gated["arrival_iteration"][2] == 3
    assert gated["first_token_iteration"][2] == 4      # the next multiple of 4
    assert gated["first_token_iteration"][0] == gated["first_token_iteration"][1] == 0   # an idle server admits


@pytest.mark.parametrize("step_by_step", [False, True])
def test_an_idle_server_admits_without_waiting_for_the_gate(step_by_step):
    # one client: its next request arrives when nothing runs, so a gate of 7 never holds it
    isl, osl = np.full(3, 4), np.full(3, 3)
    plain = schedule(isl, osl, 1, 100, 1, 1e12, np.ones(3), chunk_prompts=False, step_by_step=step_by_step).requests
    gated = schedule(isl, osl, 1, 100, 1, 1e12, np.ones(3), chunk_prompts=False, step_by_step=step_by_step,
                     context_gate=7).requests
    assert list(gated["first_token_iteration"]) == list(plain["first_token_iteration"]) == [0, 3, 6]


def test_both_loops_give_the_same_gated_schedule():
    rng = np.random.default_rng(3)
    isl, osl = rng.integers(50, 400, 48), rng.integers(5, 60, 48)
    runs = [schedule(isl, osl, 6, 512, 6, 1e12, np.ones(48), chunk_prompts=False, step_by_step=flag,
                     context_gate=5) for flag in (False, True)]
    for key in ("arrival_iteration", "first_token_iteration", "finish_iteration"):
        assert np.array_equal(runs[0].requests[key], runs[1].requests[key])
    requests = runs[0].requests
    arrival, first = requests["arrival_iteration"][6:], requests["first_token_iteration"][6:]
    # a later prompt runs at the first gate opening at or after its arrival, or after it (a whole prompt that does
    # not fit the 512-token budget left waits for the next iteration)
    assert (first >= -(-arrival // 5) * 5).all()
    assert (first % 5 == 0).mean() > 0.7


def test_which_measured_runs_are_read_behind_the_gate(monkeypatch):
    from types import SimpleNamespace
    from engine.serving import validation_express
    from engine.serving.validation_express import attention_dp_gate
    monkeypatch.setattr(validation_express, "ATTENTION_DP_GATE_READING", True)
    run = SimpleNamespace(backend="trtllm", model_path="deepseek-ai/DeepSeek-R1", attention_dp=8)
    assert attention_dp_gate(run, attention_dp=True) == 60       # InferenceMAX's dsr1 scripts: timeout_iters 60
    assert attention_dp_gate(run, attention_dp=False) is None
    assert attention_dp_gate(SimpleNamespace(**{**vars(run), "backend": "vllm"}), attention_dp=True) is None
    # a Dynamo recording (attention_dp not written, read as attention DP over tp) and gpt-oss's script (no timeout)
    assert attention_dp_gate(SimpleNamespace(**{**vars(run), "attention_dp": float("nan")}), attention_dp=True) is None
    assert attention_dp_gate(SimpleNamespace(**{**vars(run), "model_path": "openai/gpt-oss-120b"}),
                             attention_dp=True) is None


def test_the_gate_opens_early_once_every_rank_likely_holds_a_prompt():
    from engine.serving.schedule_records import gate_open, gate_release
    # (1 - exp(-w))^(ranks - 1) >= 1/2: w >= 0.69 for 2 ranks, 1.58 for 4, 2.36 for 8 (hand arithmetic)
    assert [gate_release(r) for r in (1, 2, 4, 8)] == [0, 1, 2, 3]
    assert not gate_open(5, 60, busy=True, waiting=2, release=3)
    assert gate_open(5, 60, busy=True, waiting=3, release=3)
    assert gate_open(120, 60, busy=True, waiting=1, release=3)


def test_serve_with_a_gate_waits_longer_for_the_first_token(devices):
    from engine.models import load_model
    from engine.serving import serve
    hardware, model = devices["H100-SXM"], load_model("meta-llama/Llama-3.1-8B")
    fields = dict(concurrency=16, input_length=512, output_length=128, backend="trtllm", arrival_jitter=2)
    plain = serve(hardware, model, **fields)
    gated = serve(hardware, model, context_gate_iterations=40, **fields)
    assert gated.ttft_s > plain.ttft_s + 5 * plain.tpot_s     # a later prompt waits up to 39 decode steps
    assert gated.options.context_gate_iterations == 40
