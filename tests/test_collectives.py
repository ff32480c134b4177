"""Collectives against hand arithmetic from the interconnect numbers of the bundled workbook.

H100-SXM (typed here from NVIDIA's datasheet, not read from the code): NVLink 4, 18 links of
25 GB/s per direction = 450 GB/s per device per direction, 8 GPUs per node; one 400 Gb/s NIC per
GPU = 50 GB/s per direction; clock 1.83 GHz, 132 SMs, L2 50 MiB. No published latencies: the fitted 0.931 us per
NVLink hop and a_kind (both per 1 GHz clock, 100 cores and no cache, scaled by (1 / 1.83) x (100 / 132) x
(1 + 1.910 x 50 / 100) = 0.80932 on H100) and the assumed 5 us per network hop, not scaled (docs/parallelism.md).

The model (docs/parallelism.md, "Collectives"): latency = scale x (a + hops x hop) + network hops; transfer = link_bytes /
(B x e (1 - c/n)); time = latency + transfer + r sqrt(latency x transfer), with the fitted constants
typed below from the docs' table.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine
from engine.estimators.collectives import InterconnectError, collective_time, group_link, stage_hop_link

NVLINK = 18 * 25e9          # B/s per direction per device
NIC = 50e9                  # B/s per direction per device
SCALE = (1 / 1.83) * (100 / 132) * (1 + 1.910 * 50 / 100)     # H100: 1.83 GHz, 132 SMs, 50 MiB L2 -> 0.80932
NVLINK_HOP, NIC_HOP = 0.931e-6 * SCALE, 5e-6
P2P_HOP = 0.953e-6          # point-to-point sends (pipeline stages): the hop fitted before the device scale
A_ALL_REDUCE, A_ALL_GATHER, A_ALL_TO_ALL = (a * SCALE for a in (6.43e-6, 6.58e-6, 7.90e-6))
E_ALL_REDUCE, E_ALL_GATHER, E_ALL_TO_ALL = 1.0, 0.894, 0.880
C, R = 0.680, 1.282


@pytest.fixture(scope="module")
def h100(devices):
    return devices["H100-SXM"]


def by_hand(latency, link_bytes, bandwidth):
    return latency + link_bytes / bandwidth + R * math.sqrt(latency * link_bytes / bandwidth)


def test_ring_all_reduce_inside_one_node(h100):
    message, n = 64e6, 8
    latency = A_ALL_REDUCE + 2 * (n - 1) * NVLINK_HOP                  # 0.80932 x (6.43 + 14 x 0.931) = 15.753 us
    bandwidth = NVLINK * E_ALL_REDUCE * (1 - C / n)                            # 450 x 0.915 = 411.75 GB/s
    expected = by_hand(latency, 2 * (n - 1) / n * message, bandwidth)
    assert expected == pytest.approx(15.753e-6 + 272.010e-6 + 1.282 * math.sqrt(15.753e-6 * 272.010e-6), rel=1e-4)
    assert collective_time("all_reduce", message, n, h100) == pytest.approx(expected, rel=1e-12)


def test_small_all_reduce_across_two_nodes_is_hierarchical(h100):
    """4 tokens x 7168 x 2 B over tp=16 (two nodes of 8): ring inside each node (14 NVLink hops), and
    between the nodes each device all-reduces its eighth over its NIC (2 hops of 5 us, all of the NIC's
    bandwidth: e = 1.0 and no small-group loss on the NIC)."""
    message, n = 4 * 7168 * 2, 16
    latency = A_ALL_REDUCE + 14 * NVLINK_HOP + 2 * NIC_HOP                     # 25.753 us
    inside = 2 * 7 / 8 * message / (NVLINK * (1 - C / 8))                     # 0.2438 us
    between = 2 * 1 / 2 * (message / 8) / (NIC * E_ALL_REDUCE)                 # ring of 2 nodes: 0.1434 us
    transfer = inside + between
    expected = latency + transfer + R * math.sqrt(latency * transfer)
    assert expected == pytest.approx(30.19e-6, rel=1e-3)                      # was 2 x 15 x 5 us = 150 us + bytes
    assert collective_time("all_reduce", message, n, h100) == pytest.approx(expected, rel=1e-12)
    link = group_link(h100, n)
    assert link.spans_nodes and link.bandwidth_bytes_per_s == NIC


def test_large_all_reduce_across_nodes_is_limited_by_the_network(h100):
    message, n = 64e6, 16
    latency = A_ALL_REDUCE + 14 * NVLINK_HOP + 2 * NIC_HOP
    transfer = 2 * 7 / 8 * message / (NVLINK * (1 - C / 8)) + (message / 8) / (NIC * E_ALL_REDUCE)
    assert transfer == pytest.approx(272.010e-6 + 160e-6, rel=1e-4)             # the NIC carries an eighth
    expected = latency + transfer + R * math.sqrt(latency * transfer)
    assert collective_time("all_reduce", message, n, h100) == pytest.approx(expected, rel=1e-12)


def test_tree_and_other_collectives(h100):
    message, n = 8e6, 8
    loss = 1 - C / n
    assert collective_time("all_reduce", message, n, h100, "tree") == pytest.approx(
        by_hand(A_ALL_REDUCE + 2 * 3 * NVLINK_HOP, 2 * message, NVLINK * E_ALL_REDUCE * loss))   # log2(8) = 3
    gather = by_hand(A_ALL_GATHER + 7 * NVLINK_HOP, 7 / 8 * message, NVLINK * E_ALL_GATHER * loss)
    assert gather == pytest.approx(47.82e-6, rel=1e-3)
    assert collective_time("all_gather", message, n, h100) == pytest.approx(gather)
    assert collective_time("all_gather", message, n, h100, "tree") == pytest.approx(
        by_hand(A_ALL_GATHER + 3 * NVLINK_HOP, 7 / 8 * message, NVLINK * E_ALL_GATHER * loss))
    assert collective_time("all_to_all", message, n, h100) == pytest.approx(
        by_hand(A_ALL_TO_ALL + 3 * NVLINK_HOP, 7 / 8 * message, NVLINK * E_ALL_TO_ALL * loss))
    assert collective_time("send_recv", message, 2, h100) == pytest.approx(message / NVLINK + P2P_HOP)


def test_pipeline_hops_cross_nodes_only_at_node_boundaries(h100):
    # tp=4, pp=2: stages on devices 0-3 and 4-7, one node
    per_byte, latency = stage_hop_link(h100, tp=4, pp=2)
    assert (per_byte, latency) == (pytest.approx(1 / NVLINK), pytest.approx(P2P_HOP))
    # tp=4, pp=4: boundaries before devices 4, 8, 12; the one at 8 crosses -> a third of the hops
    per_byte, latency = stage_hop_link(h100, tp=4, pp=4)
    assert per_byte == pytest.approx(2 / 3 / NVLINK + 1 / 3 / NIC)
    assert latency == pytest.approx(2 / 3 * P2P_HOP + 1 / 3 * NIC_HOP)


def test_all_reduce_rows_of_a_tp_decode_step_are_timed_by_the_formula(h100, llama70b):
    batch, tp, hidden, bf16 = 16, 8, 8192, 2
    result = engine.estimate(h100, llama70b, engine.Scenario(phase="decode", batch=batch, tp=tp))
    row = result.kernels.set_index("name").loc["AllReduce_attn"]
    message = batch * hidden * bf16
    assert row["link_bytes"] == 2 * 7 / 8 * message
    nccl = by_hand(A_ALL_REDUCE + 14 * NVLINK_HOP, 2 * 7 / 8 * message, NVLINK * (1 - C / 8))      # 22.2 us
    custom = 5.34e-6 + 7 * message / (NVLINK * 0.471)     # one-shot custom all-reduce: 5.34 + 8.66 us
    assert custom == pytest.approx(14.00e-6, rel=1e-3) and nccl == pytest.approx(22.24e-6, rel=1e-3)
    assert row["time_s"] == pytest.approx(min(nccl, custom), rel=1e-12)
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
