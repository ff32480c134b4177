"""Runs whose experts are tensor-parallel (moe_tp = tp, moe_ep 1) are expressed with ep 1 (validation_express.
moe_tensor_parallel): every device holds every expert at 1/tp of its inner width and the decode step has no
all-to-all; hand-computed oracles on gpt-oss-120b (128 experts, inner 2880, hidden 2880, 36 MoE layers)."""

from types import SimpleNamespace

import numpy as np

from engine.decomposition.transformer import add_forward_pass
from engine.kernels.table import KernelTableBuilder
from engine.models import load_model
from engine.serving.cost import grid_pass
from engine.serving.validation_express import moe_tensor_parallel
from engine.workload.parallel import parallel_layout
from engine.workload.scenario import Scenario


def run(tp, moe_tp, moe_ep):
    return SimpleNamespace(tp=tp, moe_tp=moe_tp, moe_ep=moe_ep)


def test_tensor_parallel_experts_are_read_only_where_tp_alone_splits_them():
    model = SimpleNamespace(moe_intermediate_size=2880, shared_expert_intermediate_size=0)
    assert moe_tensor_parallel(run(2, 2, 1), model, tp=2, dp=1, ep=2)
    assert moe_tensor_parallel(run(8, 8, 1), model, tp=8, dp=1, ep=8)
    assert not moe_tensor_parallel(run(1, 1, 1), model, tp=1, dp=1, ep=1)       # no split at all
    assert not moe_tensor_parallel(run(4, 1, 4), model, tp=4, dp=1, ep=4)       # expert parallel
    assert not moe_tensor_parallel(run(4, 2, 2), model, tp=4, dp=1, ep=4)       # hybrid: kept expert parallel
    assert not moe_tensor_parallel(run(1, 4, 1), model, tp=1, dp=4, ep=4)       # attention DP under a MoE group
    # 2880 = 2^6 x 45: tp 128 does not split the inner width; a shared expert of 1000 not over tp 16
    assert not moe_tensor_parallel(run(128, 128, 1), model, tp=128, dp=1, ep=128)
    shared = SimpleNamespace(moe_intermediate_size=2048, shared_expert_intermediate_size=1000)
    assert not moe_tensor_parallel(run(16, 16, 1), shared, tp=16, dp=1, ep=16)


def decode_step_kernels(tp, ep, batch=4):
    model = load_model("openai/gpt-oss-120b")
    scenario = Scenario.model_validate(dict(phase="request", batch=1, input_length=1024, output_length=1024, tp=tp,
                                            ep=ep, weight_dtype="nvfp4", activation_dtype="nvfp4", kv_dtype="fp8"))
    builder = KernelTableBuilder()
    add_forward_pass(builder, model, scenario, grid_pass(np.array([float(batch)]), np.array([1536.0])),
                     parallel_layout(model, scenario))
    columns = builder.build_columns()
    return {name: i for i, name in enumerate(columns["name"])}, columns


def test_tensor_parallel_decode_step_has_no_all_to_all_and_splits_each_expert():
    names, columns = decode_step_kernels(tp=2, ep=1)
    assert not any(name.startswith("AllToAll") for name in names)
    up = names["Expert_up"]
    # every expert, 2880 / 2 = 1440 of its inner width: n 1440, k 2880; 4 tokens x 4 experts = 16 assignments
    # summed over all 36 layers per kernel row: MACs 16 x 2880 x 1440 per layer
    assert columns["n"][up] == 1440 and columns["k"][up] == 2880
    assert np.isclose(columns["macs"][up], 16 * 2880 * 1440)
    assert "AllReduce_moe" in names     # the partial sums over tp
    expert_parallel, _ = decode_step_kernels(tp=2, ep=2)
    assert "AllToAll_dispatch" in expert_parallel and "AllToAll_combine" in expert_parallel
