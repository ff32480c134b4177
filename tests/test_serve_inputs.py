"""Bad or unusual input to `serve`, engine.serve and engine.estimate (issue 12's new-user audit): more clients than
the token budget decodes, a backend on another vendor's device, mistyped names, names instead of objects, and
which requests the statistics count."""

import json

import numpy as np
import pytest

import engine
from engine.cli.entry import main
from engine.common.names import close_names, did_you_mean
from engine.hardware.specs import SpecsError
from engine.models import ModelLoadError
from engine.models.loading import load_catalog_config
from engine.serving import ServingOptions, serve
from engine.serving.scheduler import schedule

MODEL = "meta-llama/Llama-3.1-8B"
SMALL = dict(input_length=64, output_length=8, requests_per_client=2)


def _cli(capsys, *arguments):
    try:
        code = main(["serve", "--hardware", "H100-SXM", "--model", MODEL, *arguments])
    except SystemExit as exit:
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---- 1. more clients than one iteration's token budget decodes
def test_clients_beyond_the_token_budget_wait_instead_of_failing():
    hardware, model = engine.load_hardware("H100-SXM"), engine.load_model(MODEL)
    short_prompts = dict(input_length=4, output_length=64, requests_per_client=2)
    result = serve(hardware, model, concurrency=40, token_budget=16, **short_prompts)
    # never more than 16 requests decode in one iteration (one token each of the 16-token budget) ...
    assert result.iterations["decode_tokens"].max() == 16
    assert any("at most 16 of a replica's 40 clients run at once" in note for note in result.notes)
    # ... exactly as with max_batch = 16 given (the same schedule: clients beyond it wait in the queue)
    explicit = serve(hardware, model, concurrency=40, token_budget=16, max_batch=16, **short_prompts)
    assert result.metrics == explicit.metrics
    assert not any("clients run at once" in note for note in explicit.notes)


def test_a_budget_limited_batch_schedules_alike_in_both_loops():
    # the limit serve() passes (ServingOptions.batch_limit) reaches the fast loop and the plain one alike
    clients, budget = 12, 5
    limit = ServingOptions(concurrency=clients, token_budget=budget).batch_limit(clients)
    assert limit == 5
    lengths = np.full(2 * clients, 1), np.full(2 * clients, 20)     # one-token prompts: 5 decode at once
    fast = schedule(*lengths, clients, budget, limit, np.inf, np.ones(2 * clients))
    plain = schedule(*lengths, clients, budget, limit, np.inf, np.ones(2 * clients), step_by_step=True)
    assert fast.iterations == plain.iterations and fast.requests.keys() == plain.requests.keys()
    for name, values in fast.requests.items():
        assert np.array_equal(values, plain.requests[name]), name
    assert fast.decoding_requests().max() == 5


def test_a_max_batch_beyond_the_budget_names_both_flags_and_the_values_that_work(capsys):
    code, _, err = _cli(capsys, "--concurrency", "100000", "--max-batch", "9000")
    assert code == 2
    assert ("--token-budget 8192 is less than --max-batch 9000 requests x 1 token(s) each decodes per iteration: "
            "raise --token-budget to 9000 or lower --max-batch to 8192") in err


def test_the_cli_runs_more_clients_than_the_budget_and_says_so(capsys):
    code, out, _ = _cli(capsys, "--concurrency", "40", "--token-budget", "16", "--input-len", "64", "--output-len",
                        "8", "--requests-per-client", "2")
    assert code == 0
    assert "at most 16 of a replica's 40 clients run at once (--token-budget 16 decodes that many and --max-batch " \
           "is not given)" in out


# ---- 2. the CLI's bounds are the options' bounds
def test_requests_per_client_bound_is_the_options_bound(capsys):
    with pytest.raises(ValueError, match="requests_per_client"):
        ServingOptions(requests_per_client=1)
    code, _, err = _cli(capsys, "--requests-per-client", "1")
    assert code == 2 and "argument --requests-per-client: expected a whole number >= 2, got 1" in err
    assert "Input should be" not in err


# ---- 3. TensorRT-LLM on a device of another vendor
def test_trtllm_is_refused_on_an_amd_device_by_vendor_field():
    mi300x = engine.load_hardware("MI300X")
    assert mi300x.vendor == "AMD"
    with pytest.raises(ValueError, match=r"backend='trtllm' \(TensorRT-LLM\) runs only on NVIDIA devices, and MI300X "
                                         r"is made by AMD"):
        serve(mi300x, MODEL, backend="trtllm", concurrency=2, **SMALL)
    # the vendor field decides, not the name: the same device relabelled NVIDIA is accepted
    relabelled = mi300x.model_copy(update={"vendor": "NVIDIA"})
    assert serve(relabelled, MODEL, backend="trtllm", concurrency=2, **SMALL).tpot_s > 0
    assert serve(mi300x, MODEL, backend="vllm", concurrency=2, **SMALL).tpot_s > 0


def test_trtllm_on_mi300x_is_one_cli_line_naming_the_flag(capsys):
    code, _, err = _cli(capsys, "--hardware", "MI300X", "--backend", "trtllm")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--backend 'trtllm' (TensorRT-LLM) runs only on NVIDIA devices" in err
    assert "use --backend 'generic', 'vllm' or 'sglang'" in err


# ---- 4. did you mean
def test_close_names_ignore_case_and_suggest_nothing_far():
    assert close_names("h10-sxm", ["H100-SXM", "B200", "TPU-v5e"]) == ["H100-SXM"]
    assert did_you_mean("zzzz", ["H100-SXM", "B200"]) == ""
    assert did_you_mean("B-300", ["B200", "B300", "MI300X"]) == "did you mean 'B300' or 'B200'?"


def test_unknown_device_suggests_the_close_one(capsys):
    with pytest.raises(SpecsError, match=r"unknown device 'H10-SXM' \(did you mean 'H100-SXM'"):
        engine.load_hardware("H10-SXM")
    code, _, err = _cli(capsys, "--hardware", "H10-SXM")
    assert code == 2 and "did you mean 'H100-SXM'" in err
    try:
        code = main(["estimate", "--hardware", "H10-SXM", "--model", MODEL])
    except SystemExit as exit:
        code = exit.code
    assert code == 2 and "did you mean 'H100-SXM'" in capsys.readouterr().err


def test_unknown_model_id_suggests_a_bundled_one(capsys):
    with pytest.raises(ModelLoadError, match=r"did you mean 'meta-llama/Llama-3.1-8B'"):
        load_catalog_config("meta-lama/Llama-3.1-8B")
    code, _, err = _cli(capsys, "--model", "meta-lama/Llama-3.1-8B", "--offline")
    assert code == 2 and "did you mean 'meta-llama/Llama-3.1-8B'" in err


# ---- 5. names instead of objects
def test_serve_and_estimate_take_names_as_the_cli_does():
    hardware, model = engine.load_hardware("H100-SXM"), engine.load_model(MODEL)
    by_name = engine.serve("H100-SXM", MODEL, concurrency=2, **SMALL)
    assert by_name.metrics == engine.serve(hardware, model, concurrency=2, **SMALL).metrics
    assert engine.estimate("H100-SXM", MODEL).tpot_s == engine.estimate(hardware, model).tpot_s


def test_other_objects_are_a_type_error_saying_what_to_pass():
    with pytest.raises(TypeError, match=r"hardware: expected a device name \(e.g. 'H100-SXM'\) or a Hardware"):
        engine.serve(7, MODEL)
    with pytest.raises(TypeError, match=r"model: expected a model id"):
        engine.estimate("H100-SXM", {"num_hidden_layers": 2})


# ---- 6. which requests are measured, in words and in the JSON
def test_measured_requests_are_counted_and_explained(capsys):
    clients, per_client = 4, 3
    arguments = ("--concurrency", str(clients), "--requests-per-client", str(per_client), "--input-len", "64",
                 "--output-len", "8")
    code, out, _ = _cli(capsys, *arguments, "--json")
    data = json.loads(out)
    assert code == 0 and data["measured_requests"] == clients * (per_client - 1)   # all but each client's last
    assert data["measured_rule"].startswith("each client's last request is left out")
    code, out, _ = _cli(capsys, *arguments, "--warmup-requests", "1")
    assert code == 0
    # warm-up: each client's first is left out too (and any arriving before the last warm-up prompt ran)
    assert "measured     4 of 12 requests: each client's last request is left out (the run winds down around " \
           "it), and its first 1 (warm-up)" in out
