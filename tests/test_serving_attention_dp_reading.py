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
