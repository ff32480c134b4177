"""Disaggregated serving (engine/serving/kv_transfer.py, disagg.py, disagg_balance.py): the KV transfer and
the pool balance against hand arithmetic, TTFT with the transfer in it, the comparison on the same devices,
prefill and decode on different (one hypothetical) devices."""

import pytest

import engine
from engine.collectives import InterconnectError
from engine.parallel import parallel_layout
from engine.serving.kv_transfer import KVLink, as_link, kv_bytes_per_request, transfer_seconds, workbook_link
from engine.workload import Scenario

LLAMA_8B = "meta-llama/Llama-3.1-8B"


@pytest.fixture(scope="module")
def llama8b():
    return engine.load_model(LLAMA_8B)


@pytest.fixture(scope="module")
def h100():
    return engine.load_hardware("H100-SXM")


def _layout(model, **fields):
    return parallel_layout(model, Scenario(**fields))


def test_kv_transfer_by_hand(llama8b):
    # 2 (K and V) x 32 layers x 8 KV heads x 128 head dim x 2 bytes (bf16) = 131,072 B per token
    assert kv_bytes_per_request(llama8b, 1, "bf16") == 2 * 32 * 8 * 128 * 2 == 131_072
    assert kv_bytes_per_request(llama8b, 1024, "fp8") == 1024 * 65_536
    link = KVLink(bandwidth_bytes_per_s=50e9, latency_s=5e-6)
    one = _layout(llama8b, tp=1)
    seconds = transfer_seconds(llama8b, 1024, "bf16", link, one, one)
    assert seconds == pytest.approx(5e-6 + 1024 * 131_072 / 50e9, rel=1e-12)   # 2.6894 ms
    assert seconds == pytest.approx(2.68935e-3, rel=1e-5)
    # tp=4 on both sides: every device holds, sends and receives a quarter (2 of the 8 KV heads)
    four = _layout(llama8b, tp=4)
    assert transfer_seconds(llama8b, 1024, "bf16", link, four, four) == pytest.approx(5e-6 + 1024 * 131_072 / 4 / 50e9)
    # tp=1 prefill into tp=4 decode: the single prefill device sends the whole cache
    assert transfer_seconds(llama8b, 1024, "bf16", link, one, four) == pytest.approx(seconds)


def test_workbook_links(h100):
    up = workbook_link(h100, h100, total_devices=8)
    assert up.bandwidth_bytes_per_s == pytest.approx(18 * 25e9) and "scale-up" in up.description
    out = workbook_link(h100, h100, total_devices=16)
    assert out.bandwidth_bytes_per_s == pytest.approx(50e9) and "scale-out" in out.description
    b300 = engine.load_hardware("B300")
    mixed = workbook_link(h100, b300, total_devices=2)      # different devices: the slower NIC
    assert mixed.bandwidth_bytes_per_s == pytest.approx(50e9)
    with pytest.raises(InterconnectError, match="inter_node_bandwidth"):
        workbook_link(h100, engine.load_hardware("L4"), total_devices=2)


def test_link_forms():
    assert as_link((50e9, 5e-6)) == KVLink(bandwidth_bytes_per_s=50e9, latency_s=5e-6)
    assert as_link({"bandwidth_bytes_per_s": 1e9}).latency_s == 0.0
    with pytest.raises(TypeError, match="link"):
        as_link("fast")
