"""Block-scaled GEMM formats keep their own name on kernel rows, so their per-format constants apply.

Oracles: the tables' activation-quantize latency of TensorRT-LLM's block-scaled fp8 (3.25 us, not per-tensor fp8's
11.25 us: engine/calibration/silicon/conditions.py) as hand arithmetic, and B200's measured fp8_g128 GEMMs.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.calibration import silicon
from engine.calibration.silicon import score, tables
from engine.calibration.silicon.conditions import table_constants
from engine.hardware.dtypes import gemm_dtype


@pytest.mark.parametrize("weight, activation, expected", [
    ("fp8_g128", "fp8_g128", "fp8_g128"),     # block-scaled fp8 (aiconfigurator's fp8_block, DeepSeek's checkpoints)
    ("int8_g64", "int8_g64", "int8_g64"),
    ("nvfp4", "nvfp4", "fp4"),                 # microscaled in the tensor cores: its compute format, as before
    ("fp8", "fp8", "fp8"),                     # per-tensor fp8
    ("fp8_e4m3", "fp8_e4m3", "fp8"),           # no scale groups: its compute format, as before
    ("int4_g128", "bf16", "bf16"),             # weight-only: the activation's rate
    ("fp8_g128", "bf16", "bf16"),
])
def test_gemm_rows_carry_the_block_scaled_format(weight, activation, expected):
    assert gemm_dtype(weight, activation) == expected


@pytest.fixture(scope="module")
def b200_block_fp8():
    if not silicon.is_installed():
        pytest.skip("aiconfigurator-core (calibration extra) absent")
    from engine.hardware.specs import load_specs
    frame = tables.gemm_table(systems=["b200_sxm"], frameworks=["trtllm"])
    rows = frame[frame["dtype"] == "fp8_g128"].reset_index(drop=True)
    if rows.empty:
        pytest.skip("the installed tables have no B200 TensorRT-LLM fp8_block GEMMs")
    return rows, load_specs()["B200"]


def test_b200_block_fp8_gemm_pays_the_block_scaled_quantize_latency(b200_block_fp8):
    rows, b200 = b200_block_fp8
    rows = rows.iloc[:40].reset_index(drop=True)
    columns, index = score.gemm_kernels(rows)
    assert set(columns["dtype"]) == {"fp8_g128"}
    tables_condition = table_constants("trtllm")
    # (fp4: nvfp4 x nvfp4 rows' quantize kernel, h/nvfp4)
    assert tables_condition.gemm_quantize_latency_s == {"fp8": 11.0e-6, "fp8_g128": 3.25e-6, "fp4": 6.0e-6}
    no_fixed = replace(tables_condition, gemm_quantize_latency_s={"fp8": 11.0e-6, "fp8_g128": 0.0, "fp4": 6.0e-6})
    shipped = score.method_seconds(columns, index, len(rows), b200, "realistic", tables_condition)
    without = score.method_seconds(columns, index, len(rows), b200, "realistic", no_fixed)
    # the only difference: the block-scaled quantize kernel's fixed 3.25 us (plain fp8's 11.0 us would give 0)
    np.testing.assert_allclose(shipped - without, 3.25e-6, rtol=1e-6)


def test_b200_block_fp8_gemms_are_scored_near_their_measurements(b200_block_fp8):
    rows, _ = b200_block_fp8
    tidy = score.score_family(rows, "gemm", methods=("realistic",))
    # measured: 16% median |error| with the block-scaled constants, 50% with per-tensor fp8's (docs/accuracy.md)
    assert np.median(np.abs(tidy["error"])) < 0.25
