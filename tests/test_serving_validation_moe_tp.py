"""Measured runs whose experts are recorded tensor-parallel over their tp devices (moe_tp = tp > 1, moe_ep 1, no
attention DP) read without an all-to-all dispatch (engine/serving/validation_express.py,
tensor_parallel_moe_dispatch): which runs get it, and the simulated decode against measured TensorRT-LLM gpt-oss-120b
runs on B200 (a shipped subset of aiconfigurator-core's silicon_sample.csv, tests/data/aiconfigurator_serving_moe_tp)."""

from pathlib import Path

import pytest

from engine.calibration.silicon.serving import read_serving_runs
from engine.hardware.specs import load_specs
from engine.serving import serve
from engine.serving import validation_express
from engine.serving.validation_express import ModelSource, express, tensor_parallel_moe_dispatch

SUBSET = Path(__file__).parent / "data" / "aiconfigurator_serving_moe_tp"


@pytest.fixture(scope="module")
def runs():
    found = list(read_serving_runs(path=SUBSET / "silicon_sample.csv").itertuples(index=False))
    assert sorted(run.tp for run in found) == [2, 4, 8]
    assert all(run.moe_tp == run.tp and run.moe_ep == 1 and run.concurrency == 4 for run in found)
    return found


@pytest.fixture(scope="module")
def sources():
    return load_specs(), ModelSource(SUBSET / "systems")


def test_only_runs_recorded_with_tensor_parallel_experts_get_the_all_reduce_form(runs):
    run = next(r for r in runs if r.tp == 4)
    on = ("trtllm",)
    assert tensor_parallel_moe_dispatch(run, 4, 1, 4, backends=on) == "all_reduce"
    assert tensor_parallel_moe_dispatch(run, 4, 1, 4, backends=("vllm", "sglang")) is None
    assert tensor_parallel_moe_dispatch(run._replace(backend="vllm"), 4, 1, 4, backends=("vllm",)) == "all_reduce"
    # experts recorded expert-parallel (moe_ep 4) or split both ways (moe_tp 2 x moe_ep 2): the backend's dispatch
    assert tensor_parallel_moe_dispatch(run._replace(moe_tp=1, moe_ep=4), 4, 1, 4, backends=on) is None
    assert tensor_parallel_moe_dispatch(run._replace(moe_tp=2, moe_ep=2), 4, 1, 4, backends=on) is None
    # attention data parallelism (tokens do move between replicas) or one device: none
    assert tensor_parallel_moe_dispatch(run._replace(tp=1, attention_dp=4), 1, 4, 4, backends=on) is None
    one = run._replace(tp=1, moe_tp=1)
    assert tensor_parallel_moe_dispatch(one, 1, 1, 1, backends=on) is None


def test_express_names_the_dispatch_only_for_the_listed_backends(runs, sources, monkeypatch):
    devices, models = sources
    assert validation_express.TENSOR_PARALLEL_MOE_BACKENDS == ("trtllm",)     # shipped: TensorRT-LLM's runs alone
    for run in runs:
        assert express(run, devices, models)[2]["moe_dispatch"] == "all_reduce"
    monkeypatch.setattr(validation_express, "TENSOR_PARALLEL_MOE_BACKENDS", ("vllm", "sglang"))
    for run in runs:
        _, _, fields = express(run, devices, models)
        assert "moe_dispatch" not in fields and fields["ep"] == run.tp
    monkeypatch.setattr(validation_express, "TENSOR_PARALLEL_MOE_BACKENDS", ("trtllm",))
    for run in runs:
        _, _, fields = express(run, devices, models)
        assert fields["moe_dispatch"] == "all_reduce" and (fields["tp"], fields["dp"], fields["ep"]) == (run.tp, 1, run.tp)


def test_simulated_tpot_near_the_measured_one_without_the_all_to_all(runs, sources, monkeypatch):
    """Measured TPOT 2.82 / 2.42 / 2.29 ms at tp 2 / 4 / 8 (4 clients, 1k/1k). With an all-to-all dispatch and
    combine charged in each of the 36 MoE layers the simulated decode is 30-47% slow; without them, within 12%."""
    devices, models = sources
    monkeypatch.setattr(validation_express, "TENSOR_PARALLEL_MOE_BACKENDS", ("trtllm",))
    for run in runs:
        hardware, model, fields = express(run, devices, models)
        read = serve(hardware, model, method="realistic", backend="trtllm", **fields).tpot_s
        as_expert_parallel = serve(hardware, model, method="realistic", backend="trtllm",
                                   **{**fields, "moe_dispatch": "all_to_all"}).tpot_s
        assert read / run.tpot_s - 1 == pytest.approx(0.0, abs=0.12), run.tp
        assert as_expert_parallel / run.tpot_s - 1 > 0.25, run.tp
