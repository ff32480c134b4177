"""Disaggregated serving (engine/serving/kv_transfer.py, disagg.py, disagg_balance.py): the KV transfer and
the pool balance against hand arithmetic, TTFT with the transfer in it, the comparison on the same devices,
prefill and decode on different (one hypothetical) devices."""

import pytest

import engine
from engine.estimators.collectives import InterconnectError
from engine.workload.parallel import parallel_layout
from engine.serving.kv_transfer import KVLink, as_link, kv_bytes_per_request, transfer_seconds, workbook_link
from engine.workload.scenario import Scenario

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


# ---- serve_disaggregated ------------------------------------------------------------------------------

from engine.serving.disagg import compare_with_aggregated, serve_disaggregated  # noqa: E402
from engine.hardware.what_if import apply_edits  # noqa: E402

ROOFLINE = dict(method="roofline", input_length=1024, output_length=64)


def test_ttft_includes_the_transfer(llama8b, h100):
    fast = KVLink(bandwidth_bytes_per_s=1e12, latency_s=0.0)
    slow = KVLink(bandwidth_bytes_per_s=1e9, latency_s=0.002)
    a = serve_disaggregated(llama8b, h100, h100, {"tp": 1}, {"tp": 1}, link=fast, concurrency=1, **ROOFLINE)
    b = serve_disaggregated(llama8b, h100, h100, {"tp": 1}, {"tp": 1}, link=slow, concurrency=1, **ROOFLINE)
    bytes_ = 1024 * 131_072
    assert b.kv_transfer_s == pytest.approx(0.002 + bytes_ / 1e9)
    # one client: TTFT = the prompt's prefill alone + the transfer (roofline: no host-side times)
    assert b.ttft_s - a.ttft_s == pytest.approx(b.kv_transfer_s - a.kv_transfer_s, rel=1e-9)
    assert b.ttft_s == pytest.approx(b.prefill_s + b.kv_transfer_s, rel=1e-9)
    alone = engine.serve(h100, llama8b, concurrency=1, method="roofline", input_length=1024, output_length=1)
    assert b.prefill_s == pytest.approx(alone.ttft_s, rel=1e-9)
    # decode pool: TPOT is a decode-only step of one request (no prompt chunks share it)
    assert b.tpot_s == pytest.approx(a.tpot_s, rel=1e-12)
    assert b.e2e_s == pytest.approx(b.ttft_s + 63 * b.tpot_s, rel=1e-9)


def test_little_law_and_devices(llama8b, h100):
    r = serve_disaggregated(llama8b, h100, h100, {"tp": 1}, {"tp": 2}, prefill_workers=2, decode_workers=3,
                            concurrency=48, **ROOFLINE)
    assert r.devices == 2 * 1 + 3 * 2
    assert r.tokens_per_s_per_device == pytest.approx(r.tokens_per_s / 8)
    # decode pool: requests/s = decoding requests / time in decode (Little's law), n per replica
    assert r.requests_per_s == pytest.approx(3 * r.decode_batch / (63 * r.tpot_s), rel=1e-9)
    assert r.requests_per_s <= r.prefill_requests_per_s * (1 + 1e-9)


def test_same_devices_as_aggregated(llama8b, h100):
    table = compare_with_aggregated(llama8b, h100, h100, {"tp": 1}, {"tp": 1}, 1, 3, concurrency=32, **ROOFLINE)
    assert list(table["mode"]) == ["disaggregated", "aggregated"]
    assert table["devices"].tolist() == [4, 4] and table["error"].tolist() == ["", ""]
    agg = engine.serve(h100, llama8b, concurrency=32, dp=4, **ROOFLINE)
    assert table.loc[1, "tpot_s"] == pytest.approx(agg.tpot_s, rel=1e-12)
    # decode without prompt chunks in its iterations is faster per token than aggregated serving
    assert table.loc[0, "tpot_s"] < table.loc[1, "tpot_s"]


def test_prefill_and_decode_on_different_devices(llama8b, h100):
    # a hypothetical decode part: an H100 with twice the memory bandwidth; prefill on the real H100
    fast_memory = apply_edits(h100, {"memory_bandwidth": 2 * h100.memory_bandwidth_bytes_per_s / 1e9})
    fast_memory = fast_memory.model_copy(update={"name": "H100-2xHBM"})
    link = KVLink(bandwidth_bytes_per_s=50e9, latency_s=5e-6)
    base = serve_disaggregated(llama8b, h100, h100, {"tp": 1}, {"tp": 1}, link=link, concurrency=8, **ROOFLINE)
    mixed = serve_disaggregated(llama8b, h100, fast_memory, {"tp": 1}, {"tp": 1}, link=link, concurrency=8,
                                **ROOFLINE)
    assert (mixed.prefill_hardware, mixed.decode_hardware) == ("H100-SXM", "H100-2xHBM")
    # decode at a small batch is memory-bound: twice the bandwidth halves the step (roofline); prefill unchanged
    assert mixed.tpot_s == pytest.approx(base.tpot_s / 2, rel=0.05)
    assert mixed.prefill_s == pytest.approx(base.prefill_s, rel=1e-12)
    # a B200 decode pool beside an H100 prefill pool: the workbook link is the slower NIC
    b200 = engine.load_hardware("B200")
    across = serve_disaggregated(llama8b, h100, b200, {"tp": 1}, {"tp": 1}, concurrency=8, **ROOFLINE)
    assert across.link.bandwidth_bytes_per_s == pytest.approx(50e9) and "scale-out" in across.link.description
    assert across.tpot_s < base.tpot_s


# ---- pool balance and the search's disaggregated rows ----------------------------------------------------------

from engine.serving import ServingOptions  # noqa: E402
from engine.serving.disagg_balance import CONFIG_COLUMNS, balance_pools, disaggregated_candidates  # noqa: E402


def test_pool_balance_by_hand():
    # prefill 10 requests/s per worker, decode 5: with 9 one-device workers 3:6 serves 30 requests/s each way
    assert balance_pools(10.0, 5.0, total_devices=9) == (3, 6)
    # 10 devices: 3:6 (30/s on 9 devices) beats every split of 10 (3:7 gives min(30, 35) = 30, one device more)
    assert balance_pools(10.0, 5.0, total_devices=10) == (3, 6)
    # two-device decode workers at 8 requests/s, one-device prefill at 4/s, 12 devices: W_p = 2 W_d and
    # W_p + 2 W_d <= 12 -> 6:3 (24 requests/s), rather than 4:4 (16) or 8:2 (16)
    assert balance_pools(4.0, 8.0, total_devices=12, prefill_worker_devices=1, decode_worker_devices=2) == (6, 3)
    # a decode rate that depends on the workers (fewer clients each): the callable is used
    assert balance_pools(100.0, lambda workers: 12.0 / workers, total_devices=5) == (1, 1)
    with pytest.raises(ValueError, match="total_devices=1"):
        balance_pools(1.0, 1.0, total_devices=1)


def test_candidates_rows(llama8b, h100):
    options = ServingOptions(input_length=1024, output_length=64)
    table = disaggregated_candidates(llama8b, h100, h100, 4, options, "roofline", concurrencies=[1, 16],
                                     prefill_layouts=[{"tp": 1}, {"tp": 3}], decode_layouts=[{"tp": 1}, {"tp": 4}])
    assert list(table.columns) == list(CONFIG_COLUMNS) and len(table) == 2 * 2 * 2
    assert (table["mode"] == "disaggregated").all() and (table["device"] == "H100-SXM→H100-SXM").all()
    bad = table[~table["fits"]]
    assert bad["reason"].str.contains("tp=3 does not divide").sum() == 4       # P TP3 with either decode layout
    ok = table[table["fits"]]
    assert (ok["devices"] <= 4).all() and (ok["prefill_workers"] >= 1).all()
    # every row is a real configuration: serve_disaggregated at its worker counts gives the same numbers
    row = ok[(ok["concurrency"] == 16) & (ok["decode_layout"] == "TP1 PP1 DP1 EP1")].iloc[0]
    again = serve_disaggregated(llama8b, h100, h100, {"tp": 1}, {"tp": 1}, int(row["prefill_workers"]),
                                int(row["decode_workers"]), options, "roofline", concurrency=16)
    assert again.tpot_s == pytest.approx(row["tpot_s"], rel=1e-9)
    assert again.tokens_per_s_per_device == pytest.approx(row["tokens_per_s_per_device"], rel=1e-9)
    # TP4 decode with a TP1 prefill needs 5 devices: named, not silently dropped
    five = table[(table["prefill_layout"].isna()) & table["layout"].str.contains("D\\[TP4")]
    assert five["reason"].str.contains("more than 4 devices|does not divide").all()


# ---- expressing the measured disaggregated runs -------------------------------------------------------------

def test_express_measured_disagg_rows(tmp_path):
    import pandas as pd
    from engine.serving.disagg_validation import NO_WORKERS, express_disaggregated
    from engine.serving.validation import ModelSource
    b200 = engine.load_hardware("B200")
    base = dict(system="b200_sxm", device="B200", mode="disagg", model_path="deepseek-ai/DeepSeek-V3",
                gemm_quant_mode="fp8", concurrency=pd.NA, input_length=8192, output_length=1024,
                prefill_tp=1, prefill_pp=1, prefill_attention_dp=8, prefill_moe_tp=1, prefill_moe_ep=8,
                prefill_max_batch=1, prefill_num_workers=1, decode_tp=8, decode_pp=1, decode_attention_dp=1,
                decode_moe_tp=1, decode_moe_ep=8, decode_max_batch=8, decode_num_workers=4)
    rows = pd.DataFrame([base, {**base, "prefill_num_workers": pd.NA, "decode_num_workers": pd.NA}])
    models = ModelSource(tmp_path / "systems")          # the catalog holds DeepSeek-V3
    first, second = rows.itertuples(index=False)
    hardware, model, arguments = express_disaggregated(first, {"B200": b200}, models)
    assert hardware is b200 and model.is_moe
    assert arguments["prefill_layout"] == {"tp": 1, "pp": 1, "dp": 8, "ep": 8}
    assert arguments["decode_layout"] == {"tp": 8, "pp": 1, "dp": 1, "ep": 8}
    # no concurrency note: decode batch 8 x 4 workers x attention_dp 1
    assert arguments["concurrency"] == 32 and arguments["max_batch"] == 8 and arguments["prefill_max_batch"] == 1
    assert (arguments["weight_dtype"], arguments["kv_dtype"]) == ("fp8", "fp8")
    assert express_disaggregated(second, {"B200": b200}, models) == NO_WORKERS
    assert "no workbook device" in express_disaggregated(first, {}, models)
