"""How the measured serving runs' layout fields are read under attention data parallelism
(engine/serving/validation_express.py attention_dp_reading): the batch size per attention-DP rank, as aiconfigurator
counts concurrency = batch_size x attention_dp_size, and two recordings that state the layout otherwise."""

import pandas as pd

from engine.serving.validation_express import attention_dp_reading


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


def test_tp_written_as_the_square_of_the_expert_group_beyond_a_node_is_read_as_moe_ep_devices():
    # aiconfigurator-core 0.12.0 silicon_sample.csv, H200 TensorRT-LLM 1.1.0rc2.post2 DeepSeek-R1 fp8, 1024/1024 at 32
    # clients: run 2026_04_06_..._c32_tp8_ep8_922 is written tp 64, moe_tp 8, moe_ep 8, attention_dp 1, and run
    # 2026_03_25_..._c32_tp8_0_ep8_0_1255 tp 8, moe_tp 1, moe_ep 8; both measured TTFT 0.671080 s, TPOT 0.019252 s.
    # Both read as the same 8 devices (an H200 node: devices_per_node 8)
    squared = measured_run(concurrency=32, max_batch=32, moe_tp=8, moe_ep=8)
    written = measured_run(concurrency=32, max_batch=32, moe_tp=1, moe_ep=8)
    assert attention_dp_reading(squared, 64, 1, 64, domain=8) == (8, 1, 8)
    assert attention_dp_reading(written, 8, 1, 8, domain=8) == attention_dp_reading(squared, 64, 1, 64, domain=8)
    # tp 16 = 4 x 4 likewise (B200 DeepSeek-R1 nvfp4 8192/1024 at 32 clients, TPOT 0.017184 s both ways)
    assert attention_dp_reading(measured_run(concurrency=32, max_batch=32, moe_tp=4, moe_ep=4), 16, 1, 16,
                                domain=8) == (4, 1, 4)
    # within one scale-up domain (GB200 NVL72: 72 devices) or without a known domain the square is kept as written
    assert attention_dp_reading(squared, 64, 1, 64, domain=72) == (64, 1, 64)
    assert attention_dp_reading(squared, 64, 1, 64) == (64, 1, 64)
    # and tp = moe_tp x moe_ep with unequal factors, or with attention DP, is not this recording
    assert attention_dp_reading(measured_run(concurrency=32, max_batch=32, moe_tp=2, moe_ep=8), 16, 1, 16,
                                domain=8) == (16, 1, 16)
