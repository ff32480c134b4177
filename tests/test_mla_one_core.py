"""The one-core MLA decode kernel (engine/estimators/mla_attention.py) of a device whose cores cannot hold the
split-context kernels' tiles (A100): DeepSeek-V3's decode attention by hand from the shipped constants and the
workbook's fields, against A100's measured table; the split-context devices bit for bit as without it; the workbook
field that selects it; a floor on A100's measured rows; MLA prefill's 8-bit rule (the KV cache's dtype)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine
from engine.calibration.silicon import attention_fit, mla_fit
from engine.decomposition.transformer import decompose_columns
from engine.estimators.mla_attention import SHIPPED_MLA, SPLIT_DECODE_SRAM_BYTES, split_decode
from engine.estimators.realistic import DEFAULT_CONSTANTS, DeviceRates, estimate_realistic
from engine.models import load_model

ATTENTION_OPS = ["kv_read", "attention", "softmax"]
A100 = "A100-80GB-SXM"
SUBSET = Path(__file__).parent / "data" / "aiconfigurator_a100_mla" / "systems"
ONE_CORE = SHIPPED_MLA.one_core_decode


@pytest.fixture(scope="module")
def deepseek():
    return load_model("deepseek-ai/DeepSeek-V3")


def _attention(model, hardware, scenario, constants=DEFAULT_CONSTANTS) -> pd.DataFrame:
    kernels = pd.DataFrame(estimate_realistic(decompose_columns(model, scenario), hardware, scenario, "eager",
                                              constants))
    return kernels[kernels["op"].isin(ATTENTION_OPS)]


@pytest.mark.parametrize("batch, measured_s", [(1, 476.3e-6), (64, 692.6e-6)])
def test_a100_deepseek_decode_attention_by_hand(devices, deepseek, batch, measured_s):
    """A100 (108 cores at 1.41 GHz, 2.039 TB/s), DeepSeek-V3 at tp 8 (16 query heads: one CTA per sequence), 4,096
    cached tokens + the new one = 65 tiles of 64 tokens x 576 latent values x value_cycles at the clock (one CTA's
    stream, 0.476 ms), x sqrt(1 + (sequences / (cta_share x 108 cores))^2) (1 sequence: 1.00001; 64: 1.40); the HBM
    stream of the group's bytes at bandwidth_efficiency x 2.039 TB/s (64 x 4,097 x 1,152 B: 0.22 ms at 64); their
    2-norm + floor_cycles at the clock (8.0 us). The measured table (16 heads, 4,096 tokens): 476 us at 1 sequence,
    693 us at 64."""
    hw = devices[A100]
    scenario = engine.Scenario(phase="decode", batch=batch, context_length=4096, tp=8, ep=8)
    attention = _attention(deepseek, hw, scenario)
    read = attention[attention["name"] == "KVCache_Read"]
    assert read["bytes"].item() == batch * 4097 * 576 * 2            # the latent + rope key, bf16, per layer
    clock, cores = 1.41e9, 108
    assert (hw.clock_hz, hw.num_cores, hw.memory_bandwidth_bytes_per_s) == (clock, cores, 2.039e12)
    tiles = math.ceil(4097 / 64)
    crowding = math.sqrt(1 + (batch / (ONE_CORE.cta_share * cores)) ** 2)
    cta_s = tiles * 64 * 576 * ONE_CORE.value_cycles / clock * crowding
    hbm_s = attention["bytes"].sum() / (2.039e12 * ONE_CORE.bandwidth_efficiency)
    expected = ONE_CORE.floor_cycles / clock + math.sqrt(cta_s ** 2 + hbm_s ** 2)
    assert attention["kernel_time_s"].sum() == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(measured_s, rel=0.10)


@pytest.mark.parametrize("device", ["H100-SXM", "B200"])
def test_split_context_devices_do_not_move(devices, deepseek, device):
    """A device whose cores hold the split-context kernels' tiles (256 KiB of SRAM) times MLA decode bit for bit as
    without the one-core constants, in a decode and in a chunked batch."""
    without = replace(DEFAULT_CONSTANTS, mla_attention=replace(SHIPPED_MLA, one_core_decode=None))
    for scenario in (engine.Scenario(phase="decode", batch=64, context_length=4096, tp=8, ep=8, kv_dtype="fp8"),
                     engine.Scenario(phase="chunked", batch=4, input_length=512, context_length=2000, tp=8, ep=8)):
        shipped, plain = _attention(deepseek, devices[device], scenario), _attention(deepseek, devices[device],
                                                                                     scenario, without)
        np.testing.assert_array_equal(shipped["time_s"].to_numpy(), plain["time_s"].to_numpy())
        np.testing.assert_array_equal(shipped["kernel_time_s"].to_numpy(), plain["kernel_time_s"].to_numpy())


def test_the_workbook_sram_field_selects_the_kernel(devices, deepseek):
    """The split-context kernels need 3 x 64 x 576 x 2 B = 216 KiB on a core: NVIDIA's A100 (192 KiB), L40S and the
    RTX PRO 6000 (128 KiB) run the one-core kernel; Hopper and data-center Blackwell (256 KiB), a blank field
    (NVL-AX) and AMD's MI300X (its own kernels split the context) the split one; A100 edited to 256 KiB takes the
    split kernel's time."""
    assert SPLIT_DECODE_SRAM_BYTES == 221184
    one_core = {name for name, hw in devices.items() if not split_decode(DeviceRates.of(hw))}
    assert {A100, "A100-40GB-PCIe", "L40S", "L4", "RTX-PRO-6000-Server"} <= one_core
    assert not one_core & {"H100-SXM", "H200-SXM", "B200", "GB200", "B300", "GB300", "NVL-AX", "MI300X"}
    scenario = engine.Scenario(phase="decode", batch=8, context_length=8192, tp=8, ep=8)
    edited = devices[A100].model_copy(update={"sram_per_core_bytes": 262144.0})
    without = replace(DEFAULT_CONSTANTS, mla_attention=replace(SHIPPED_MLA, one_core_decode=None))
    split = _attention(deepseek, edited, scenario)["kernel_time_s"].sum()
    assert split == _attention(deepseek, devices[A100], scenario, without)["kernel_time_s"].sum()
    assert _attention(deepseek, devices[A100], scenario)["kernel_time_s"].sum() > 2 * split     # no split: slower


def test_a100_subset_floor_breaks_when_a_one_core_constant_moves_15_percent(devices):
    """A100's 40 shipped MLA decode rows (tests/data/aiconfigurator_a100_mla; the constants were fitted on the full
    table, 2,000 rows): mean |log(predicted / measured)| 0.048 with the one-core constants (0.92 with the split
    kernels' constants, which A100 got before), within 0.052; 15% more or less of the per-value cycles, the CTA share
    or the floor breaks it (the HBM term binds only at the largest batches of 128 heads, none of these rows)."""
    groups = attention_fit.device_groups(attention_fit.fit_rows("decode_mla", devices, SUBSET), devices, "decode_mla")
    assert sorted(groups) == [A100]
    group, base = groups[A100], attention_fit.shipped_values("decode_mla")
    values = mla_fit.FITTED_MLA["decode_mla_one_core"]

    def error(family, candidate):
        return float(np.mean(np.abs(np.log(mla_fit.predicted_s(group, family, candidate, base) / group.measured))))
    assert error("decode_mla_one_core", values) < 0.052
    assert error("decode_mla", mla_fit.FITTED_MLA["decode_mla"]) > 0.5
    for name in ("value_cycles", "cta_share", "floor_cycles"):
        for factor in (0.85, 1.15):
            assert error("decode_mla_one_core", {**values, name: values[name] * factor}) > 0.052, (name, factor)


def test_the_a100_estimate_says_its_mla_decode_is_calibrated_on_one_device(devices, deepseek):
    """estimate() and its JSON carry the one-core note on A100 (an MLA decode), not on H100, nor for a prefill."""
    decode = engine.estimate(devices[A100], deepseek, phase="decode", batch=8, context_length=1024, tp=8,
                             method="realistic")
    assert "one-core MLA decode kernel" in decode.validation["one_core_mla"]
    assert decode.validation["one_core_mla"] in decode.notes
    assert "one_core_mla" not in engine.estimate(devices["H100-SXM"], deepseek, phase="decode", batch=8,
                                                 context_length=1024, tp=8, method="realistic").validation
    assert "one_core_mla" not in engine.estimate(devices[A100], deepseek, phase="prefill", batch=1,
                                                 input_length=1024, tp=8, method="realistic").validation


def test_mla_prefill_reads_the_cache_width(devices, deepseek):
    """MLA prefill's 8-bit rule follows the KV cache's dtype, as AIConfigurator's tables (their 8-bit rows: bf16
    activations over an fp8 cache) and mla_fit: bf16 activations over an fp8 cache tag the naive prefill's attention
    1 byte per K/V value (was 2: the activation's) and take the 8-bit constants on H100; a naive decode keeps the
    activation width."""
    prefill = engine.Scenario(phase="prefill", batch=1, input_length=2048, tp=8, ep=8, kv_dtype="fp8")
    rows = _attention(deepseek, devices["H100-SXM"], prefill)
    core = rows[rows["op"] == "attention"]
    assert set(core["kv_value_bytes"]) == {1.0}
    sixteen = _attention(deepseek, devices["H100-SXM"], prefill.model_copy(update={"kv_dtype": "bf16"}))
    assert set(sixteen.loc[sixteen["op"] == "attention", "kv_value_bytes"]) == {2.0}
    assert rows["kernel_time_s"].sum() != sixteen["kernel_time_s"].sum()
    naive = engine.Scenario(phase="decode", batch=2, context_length=512, tp=8, ep=8, kv_dtype="fp8", mla_decode="naive")
    decode = _attention(deepseek, devices["H100-SXM"], naive)
    assert set(decode.loc[decode["op"] == "attention", "kv_value_bytes"]) == {2.0}
