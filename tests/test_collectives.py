"""Collectives against hand arithmetic from the interconnect numbers of the bundled workbook.

H100-SXM (typed here from NVIDIA's datasheet, not read from the code): NVLink 4, 18 links of
25 GB/s per direction = 450 GB/s per device per direction, 8 GPUs per node; one 400 Gb/s NIC per
GPU = 50 GB/s per direction. No published latencies: 1 us per NVLink hop and 5 us per network
hop are the engine's documented assumptions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine
from engine.collectives import InterconnectError, collective_time, group_link, stage_hop_link

NVLINK = 18 * 25e9          # B/s per direction per device
NIC = 50e9                  # B/s per direction per device
NVLINK_HOP, NIC_HOP = 1e-6, 5e-6


@pytest.fixture(scope="module")
def h100(devices):
    return devices["H100-SXM"]


def test_ring_all_reduce_inside_one_node(h100):
    message, n = 64e6, 8
    expected = 2 * (n - 1) / n * message / NVLINK + 2 * (n - 1) * NVLINK_HOP   # 2(n-1)/n x M / B + 2(n-1) hops
    assert expected == pytest.approx(2.4889e-4 + 14e-6, rel=1e-4)
    assert collective_time("all_reduce", message, n, group_link(h100, n)) == pytest.approx(expected, rel=1e-12)


def test_ring_all_reduce_across_nodes_is_limited_by_the_network(h100):
    message, n = 64e6, 16                       # two nodes of 8: the ring crosses the NICs
    expected = 2 * 15 / 16 * message / NIC + 2 * 15 * NIC_HOP
    assert expected == pytest.approx(2.4e-3 + 150e-6, rel=1e-12)
    link = group_link(h100, n)
    assert link.spans_nodes and link.bandwidth_bytes_per_s == NIC
    assert collective_time("all_reduce", message, n, link) == pytest.approx(expected, rel=1e-12)


def test_tree_and_other_collectives(h100):
    message, n, link = 8e6, 8, group_link(h100, 8)
    assert collective_time("all_reduce", message, n, link, "tree") == pytest.approx(
        2 * message / NVLINK + 2 * 3 * NVLINK_HOP)                     # reduce up, broadcast down, log2(8) = 3
    for kind in ("all_gather", "reduce_scatter", "all_to_all"):
        assert collective_time(kind, message, n, link) == pytest.approx(7 / 8 * message / NVLINK + 7 * NVLINK_HOP)
    assert collective_time("all_gather", message, n, link, "tree") == pytest.approx(7 / 8 * message / NVLINK + 3e-6)
    assert collective_time("send_recv", message, 2, link) == pytest.approx(message / NVLINK + NVLINK_HOP)


def test_pipeline_hops_cross_nodes_only_at_node_boundaries(h100):
    # tp=4, pp=2: stages on devices 0-3 and 4-7, one node
    per_byte, latency = stage_hop_link(h100, tp=4, pp=2)
    assert (per_byte, latency) == (pytest.approx(1 / NVLINK), pytest.approx(NVLINK_HOP))
    # tp=4, pp=4: boundaries before devices 4, 8, 12; the one at 8 crosses -> a third of the hops
    per_byte, latency = stage_hop_link(h100, tp=4, pp=4)
    assert per_byte == pytest.approx(2 / 3 / NVLINK + 1 / 3 / NIC)
    assert latency == pytest.approx(2 / 3 * NVLINK_HOP + 1 / 3 * NIC_HOP)


def test_all_reduce_rows_of_a_tp_decode_step_are_timed_by_the_formula(h100, llama70b):
    batch, tp, hidden, bf16 = 16, 8, 8192, 2
    result = engine.estimate(h100, llama70b, engine.Scenario(phase="decode", batch=batch, tp=tp))
    row = result.kernels.set_index("name").loc["AllReduce_attn"]
    message = batch * hidden * bf16
    assert row["link_bytes"] == 2 * 7 / 8 * message
    assert row["time_s"] == pytest.approx(2 * 7 / 8 * message / NVLINK + 14 * NVLINK_HOP, rel=1e-12)
    assert row["bound"] == "communication" and row["type"] == "Collective" and row["unit"] == "link"


def test_every_method_times_collectives_alike(h100, llama70b):
    scenario = engine.Scenario(phase="decode", batch=4, tp=4, pp=2)
    times = {}
    for method in ("roofline", "hierarchical", "realistic", "realistic-graph"):
        kernels = engine.estimate(h100, llama70b, scenario, method=method).kernels
        collectives = kernels[kernels["op"] == "collective"].set_index("name")
        times[method] = collectives["time_s"]
        assert (collectives["bound"] == "communication").all()
        if "ideal_time_s" in collectives:          # realistic: no gap on a collective
            np.testing.assert_allclose(collectives["ideal_time_s"], collectives["time_s"])
    for method, series in times.items():
        np.testing.assert_allclose(series.to_numpy(), times["roofline"].to_numpy(), rtol=1e-12, err_msg=method)
    assert set(times["roofline"].index) == {"AllReduce_embed", "AllReduce_attn", "AllReduce_ffn", "SendRecv_stage",
                                            "AllGather_logits"}


def test_overlap_hides_each_collective_behind_its_producer(h100, llama70b):
    plain = engine.Scenario(phase="prefill", batch=1, input_length=2048, tp=8)
    hidden = plain.model_copy(update={"overlap_communication": True})
    a, b = engine.estimate(h100, llama70b, plain), engine.estimate(h100, llama70b, hidden)
    ka, kb = a.kernels.set_index("name"), b.kernels.set_index("name")
    for collective, producer in (("AllReduce_attn", "O*W"), ("AllReduce_ffn", "FFN_down")):
        full = ka.loc[collective, "time_s"]
        assert kb.loc[collective, "communication_time_s"] == pytest.approx(full)
        assert kb.loc[collective, "time_s"] == pytest.approx(max(0.0, full - ka.loc[producer, "time_s"]))
    phases_a, phases_b = a.phases.loc["prefill"], b.phases.loc["prefill"]
    assert phases_b["time_s"] < phases_a["time_s"]
    # both numbers are reported: time with overlap + hidden part = time without overlap
    assert phases_b["time_s"] + phases_b["hidden_communication_time_s"] == pytest.approx(phases_a["time_s"])
    assert phases_a["hidden_communication_time_s"] == 0.0


@pytest.mark.parametrize("device", ["NVL-AX", "JGS"])
def test_a_device_without_links_names_the_missing_field(devices, llama8b, device):
    with pytest.raises(InterconnectError, match="link_bandwidth"):
        engine.estimate(devices[device], llama8b, phase="decode", tp=2)
    engine.estimate(devices[device], llama8b, phase="decode", dp=2)     # replicas need no links


def test_a_group_beyond_the_node_needs_the_network_field(devices, llama70b):
    # MI300X publishes no scale-out bandwidth; 16-way tensor parallelism spans two nodes of 8, and so
    # does a pipeline of two 8-way stages
    for layout in (dict(tp=16), dict(tp=8, pp=2)):
        with pytest.raises(InterconnectError, match="inter_node_bandwidth"):
            engine.estimate(devices["MI300X"], llama70b, phase="decode", **layout)
    assert math.isfinite(engine.estimate(devices["MI300X"], llama70b, phase="decode", tp=8).tpot_s)
