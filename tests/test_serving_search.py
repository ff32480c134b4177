"""Serving design-space search (engine/serving/search*.py, sla.py): the front is non-dominated (checked pair by
pair) and every point on it is serve()'s own result at that configuration; an SLA nobody meets names the closest;
the recommendation holds when serve() re-runs it and fails with one replica fewer; layouts that do not fit are
left out with their reason; the CLI's JSON keys."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import engine
from engine.cli.entry import main
from engine.serving import SLA, serve, serving_search
from engine.serving.search_eval import LayoutEvaluator, ScheduleCache
from engine.serving.search_layouts import enumerate_layouts
from engine.serving.options import ServingOptions

H200 = engine.load_hardware("H200-SXM")
H100 = engine.load_hardware("H100-SXM")
LLAMA8 = engine.load_model("meta-llama/Llama-3.1-8B")
SMALL = dict(input_length=512, output_length=64, concurrencies=[1, 4, 16], token_budgets=[1024, 4096])
METRICS = ("ttft_s", "ttft_p90_s", "tpot_s", "tpot_p90_s", "e2e_s", "tokens_per_s", "tokens_per_s_per_device",
           "tokens_per_s_per_user", "requests_per_s")


@pytest.fixture(scope="module")
def search():
    return serving_search(H200, LLAMA8, devices=2, sla=SLA(ttft_max_s=0.1, tpot_max_s=0.005), requests_per_s=30,
                          **SMALL)


def _serve(row, **extra):
    return serve(H200, LLAMA8, concurrency=int(row["concurrency"]), token_budget=int(row["token_budget"]),
                 input_length=512, output_length=64, tp=int(row["tp"]), pp=int(row["pp"]), dp=int(row["dp"]),
                 ep=int(row["ep"]), **extra).metrics


def test_sla_check_names_each_missed_limit():
    sla = SLA(ttft_max_s=0.5, tpot_max_s=0.02)
    assert sla.check(0.81, 0.015, 16.2) == "TTFT 0.81 s > 0.5 s"
    assert sla.check(0.4, 0.025, 9.0) == "TPOT 25 ms > 20 ms"
    assert sla.check(0.4, 0.015, 1e9) == ""                       # no latency limit given
    assert sla.shortfall(0.81, 0.015, 16.2) == pytest.approx(0.62)
    assert SLA(latency_max_s=2).check(0.1, 0.01, float("nan")) == "request latency not measured"
    with pytest.raises(ValueError):
        SLA(ttft_max_s=-1)


def test_shared_evaluation_equals_serve_point_by_point():
    """Schedules shared between layouts, all iterations of a layout timed in two estimator calls: serve()'s numbers."""
    base = ServingOptions(input_length=512, output_length=64)
    cache = ScheduleCache()
    for layout in (dict(tp=1, pp=1, dp=2), dict(tp=2, pp=1, dp=1)):
        points = [(1, 4096), (3, 1024), (16, 1024)]                # 3 clients split unevenly over dp = 2
        got = LayoutEvaluator(H200, LLAMA8, "realistic", base, layout, cache).evaluate(points)
        for (concurrency, budget), metrics in zip(points, got):
            expected = serve(H200, LLAMA8, concurrency=concurrency, token_budget=budget, input_length=512,
                             output_length=64, **layout).metrics
            for name in expected:
                assert metrics[name] == pytest.approx(expected[name], rel=1e-9), (layout, concurrency, name)


def test_front_is_non_dominated_and_each_point_is_serve_at_that_configuration(search):
    ran = search.configs[search.configs["fits"]]
    x, y = ran["tokens_per_s_per_user"].to_numpy(float), ran["tokens_per_s_per_device"].to_numpy(float)
    dominated = [bool(np.any((x >= xi) & (y >= yi) & ((x > xi) | (y > yi)))) for xi, yi in zip(x, y)]
    on_front = ran["on_front"].to_numpy(bool)
    assert on_front.any()
    assert not np.any(on_front & np.array(dominated))              # nothing on the front is dominated
    front = search.front
    assert len(front) == on_front.sum() and front["exact"].all()
    for row in front.to_dict("records"):
        expected = _serve(row)
        for name in METRICS:
            assert row[name] == pytest.approx(expected[name], rel=1e-9), (row["layout"], row["concurrency"], name)
    # within the configurations simulated exactly, every one left off the front is dominated by a front point
    exact = ran[ran["exact"] & ~ran["on_front"]]
    for xi, yi in zip(exact["tokens_per_s_per_user"], exact["tokens_per_s_per_device"]):
        assert ((front["tokens_per_s_per_user"] >= xi) & (front["tokens_per_s_per_device"] >= yi)).any()


def test_best_is_the_most_throughput_per_device_within_the_sla(search):
    best = search.best.iloc[0]
    assert best["meets_sla"] and best["exact"]
    assert best["ttft_s"] <= 0.1 and best["tpot_s"] <= 0.005
    inside = search.configs[search.configs["meets_sla"] & search.configs["exact"]]
    assert best["tokens_per_s_per_device"] == inside["tokens_per_s_per_device"].max()
    failing = search.configs[search.configs["fits"] & ~search.configs["meets_sla"]]
    assert failing["sla_failure"].str.contains("TTFT|TPOT").all()


def test_an_sla_nobody_meets_names_the_closest_configuration():
    result = serving_search(H200, LLAMA8, devices=1, sla=SLA(ttft_max_s=1e-4), **SMALL)
    best = result.best.iloc[0]
    assert not best["meets_sla"] and not result.configs["meets_sla"].any()
    fastest = result.configs.loc[result.configs["ttft_s"].idxmin()]    # with a TTFT limit only: the least TTFT
    assert best["ttft_s"] == fastest["ttft_s"] and best["exact"]
    message = result.messages[0]
    assert message.startswith("No configuration of meta-llama/Llama-3.1-8B on H200-SXM (aggregated) meets the SLA")
    assert f"{best['layout']} (1 device) at concurrency {int(best['concurrency'])}" in message
    assert "TTFT" in message and "> 0.1 ms" in message and "over)" in message


def test_recommendation_holds_under_serve_and_fails_with_one_replica_fewer(search):
    rec = search.recommendation.iloc[0]
    assert rec["checked_by_serve"] and rec["devices_needed"] >= 2
    tp, pp = (int(part[2:]) for part in rec["layout"].split()[:2])
    assert rec["devices_needed"] == rec["replicas"] * tp * pp

    def at(replicas):
        return serve(H200, LLAMA8, concurrency=replicas * int(rec["concurrency_per_replica"]),
                     token_budget=int(rec["token_budget"]), input_length=512, output_length=64, tp=tp, pp=pp,
                     dp=replicas).metrics
    answer = at(int(rec["replicas"]))
    assert answer["requests_per_s"] >= 30 and answer["ttft_s"] <= 0.1 and answer["tpot_s"] <= 0.005
    assert answer["requests_per_s"] == pytest.approx(rec["requests_per_s"], rel=1e-9)
    fewer = at(int(rec["replicas"]) - 1)
    assert fewer["requests_per_s"] < 30
    assert "requests/s < 30" in rec["one_fewer"] and f"{rec['devices_needed']} devices serve 30" in rec["sentence"]
    # no configuration within the SLA reaches 30 requests/s on fewer devices by copying its replicas
    inside = search.configs[search.configs["meets_sla"]]
    for row in inside.to_dict("records"):
        copies = row["dp"]
        if row["concurrency"] % copies == 0:
            per_copy = row["requests_per_s"] / copies
            assert np.ceil(30 / per_copy) * row["tp"] * row["pp"] >= rec["devices_needed"] or not row["exact"]


def test_layouts_that_do_not_fit_or_divide_are_left_out_with_the_reason():
    model = engine.load_model("meta-llama/Llama-3.1-70B")
    result = serving_search(H100, model, devices=2, concurrencies=[1], token_budgets=[2048], output_length=16)
    configs = result.configs.set_index("layout")
    assert not configs.loc["TP1 PP1 DP2 EP1", "fits"]                 # 141 GB of bf16 weights on one 80 GB device
    assert "does not fit on H100-SXM" in configs.loc["TP1 PP1 DP2 EP1", "reason"]
    assert configs.loc["TP2 PP1 DP1 EP1", "fits"] and configs.loc["TP2 PP1 DP1 EP1", "reason"] == ""
    odd = serving_search(H200, LLAMA8, devices=3, concurrencies=[1], token_budgets=[2048], output_length=16)
    reasons = odd.configs.set_index("layout")["reason"]
    assert "tp=3 does not divide num_attention_heads=32" in reasons["TP3 PP1 DP1 EP1"]
    assert odd.configs.set_index("layout").loc["TP1 PP3 DP1 EP1", "fits"]


def test_layouts_of_n_devices_with_expert_and_attention_data_parallelism():
    dense = enumerate_layouts(LLAMA8, 8)
    assert len(dense) == 10 and all(l.devices == 8 and l.ep == 1 for l in dense)
    moe = engine.load_model("Qwen/Qwen3-30B-A3B")
    layouts = enumerate_layouts(moe, 4)
    for layout in layouts:
        assert layout.devices == 4
        assert layout.ep == 1 or (layout.ep % layout.tp == 0 and (layout.tp * layout.dp) % layout.ep == 0
                                  and moe.num_experts % layout.ep == 0)
    names = {l.name for l in layouts}
    assert {"TP1 PP1 DP4 EP4", "TP2 PP1 DP2 EP4", "TP4 PP1 DP1 EP4", "TP1 PP2 DP2 EP2"} <= names
    assert [l.attention_dp for l in layouts if l.name == "TP1 PP1 DP4 EP4"] == [True]


def test_several_devices_in_one_search_an_edited_copy_kept_apart_and_searched_fields_refused():
    faster = H200.model_copy(update={"memory_bandwidth_bytes_per_s": 2 * H200.memory_bandwidth_bytes_per_s})
    devices = {"H200-SXM": H200, "H200 with 2x HBM bandwidth": faster, "H100-SXM": H100}
    result = serving_search(devices, LLAMA8, devices=1, concurrencies=[1, 8], token_budgets=[2048], output_length=32,
                            sla=SLA(tpot_max_s=0.1), requests_per_s=1)
    assert set(result.configs["device"]) == set(devices) and len(result.best) == 3 and len(result.recommendation) == 3
    speed = result.configs[result.configs["concurrency"] == 1].set_index("device")["tokens_per_s_per_user"]
    assert speed["H200 with 2x HBM bandwidth"] > 1.3 * speed["H200-SXM"]     # batch-1 decode is bandwidth-bound
    with pytest.raises(TypeError, match="searches tp"):
        serving_search(H200, LLAMA8, devices=1, tp=2)
    with pytest.raises(ValueError, match="seed"):
        serving_search(H200, LLAMA8, devices=1, method="seed")


def test_disaggregated_names_the_missing_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "engine.serving.disagg_balance", None)     # import fails as if absent
    with pytest.raises(NotImplementedError, match="disagg_balance.disaggregated_candidates"):
        serving_search(H200, LLAMA8, devices=2, disaggregated=True, concurrencies=[1], token_budgets=[2048],
                       output_length=16)


def test_cli_json_keys(capsys):
    code = main(["serving-search", "--hardware", "H200-SXM", "--model", "meta-llama/Llama-3.1-8B", "--devices", "1",
                 "--input-len", "512", "--output-len", "32", "--concurrency", "1,4", "--token-budget", "2048",
                 "--ttft-max", "0.5", "--tpot-max", "0.02", "--requests-per-s", "5", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert {"front", "best", "recommendation", "messages", "configurations", "sla"} <= set(data)
    assert data["configurations"] == 2 and data["sla"]["ttft_max_s"] == 0.5
    for key in ("device", "layout", "concurrency", "token_budget", "ttft_s", "tpot_s", "tokens_per_s_per_device",
                "tokens_per_s_per_user", "meets_sla", "on_front"):
        assert key in data["front"][0]
    assert {"devices_needed", "layout", "replicas", "sentence"} <= set(data["recommendation"][0])
    code = main(["serving-search", "--hardware", "H200-SXM", "--model", "meta-llama/Llama-3.1-8B", "--devices", "1",
                 "--workload", "chat", "--concurrency", "1", "--token-budget", "2048"])
    assert code == 0
    text = capsys.readouterr().out
    assert "Pareto front, H200-SXM (aggregated)" in text and "tok/s/dev" in text


def test_disaggregated_rows_join_the_search_with_their_own_front_and_scaled_recommendation(monkeypatch):
    """A stand-in for engine/serving/disagg_balance.py: its rows get their own front, best and recommendation."""
    import types

    import pandas as pd
    calls = {}

    def candidates(model, prefill_hw, decode_hw, total_devices, options, method, link=None, concurrencies=None,
                   **fields):
        calls.update(total=total_devices, prefill=prefill_hw.name, decode=decode_hw.name, fields=fields)
        return pd.DataFrame([dict(device="H100-SXM→H200-SXM", mode="disaggregated", tp=1, pp=1, dp=1, ep=1,
                                  concurrency=c, token_budget=2048, devices=2, fits=True, reason="",
                                  layout=f"P[TP1] x1 D[TP1] x1", prefill_device="H100-SXM", decode_device="H200-SXM",
                                  prefill_layout="TP1", decode_layout="TP1", prefill_workers=1, decode_workers=1,
                                  kv_transfer_s=0.001, ttft_s=0.05 * c, tpot_s=0.004 + 0.001 * c, e2e_s=1.0,
                                  tokens_per_s=32.0 * c, tokens_per_s_per_device=16.0 * c,
                                  tokens_per_s_per_user=1 / (0.004 + 0.001 * c)) for c in (1, 2, 4)])
    monkeypatch.setitem(sys.modules, "engine.serving.disagg_balance",
                        types.SimpleNamespace(disaggregated_candidates=candidates))
    result = serving_search({"H200-SXM": H200, "H100-SXM": H100}, LLAMA8, devices=2, disaggregated=True,
                            prefill_hardware="H100-SXM", decode_hardware="H200-SXM", sla=SLA(ttft_max_s=0.15),
                            concurrencies=[1, 2], token_budgets=[2048], output_length=32, requests_per_s=3,
                            kv_dtype="fp8")
    assert calls == dict(total=2, prefill="H100-SXM", decode="H200-SXM", fields={"kv_dtype": "fp8"})
    disagg = result.configs[result.configs["mode"] == "disaggregated"]
    assert list(disagg["meets_sla"]) == [True, True, False] and disagg["on_front"].all()   # none dominates another
    best = result.best.set_index("mode").loc["disaggregated"]
    assert best["concurrency"] == 2                                     # 32 tokens/s per device, TTFT 0.1 s
    rec = result.recommendation.set_index("mode").loc["disaggregated"]
    # 64 tokens/s / 32 output tokens = 2 requests/s per 2-device copy: 2 copies, 4 devices for 3 requests/s
    assert (rec["replicas"], rec["devices_needed"]) == (2, 4) and "scaled" in rec["sentence"]


def test_dask_client_runs_the_layouts_and_gives_the_same_configurations():
    from dask.distributed import Client, LocalCluster, get_task_stream
    kwargs = dict(devices=2, concurrencies=[1, 4], token_budgets=[2048], output_length=32, sla=SLA(tpot_max_s=0.005))
    expected = serving_search(H200, LLAMA8, **kwargs)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client, get_task_stream(client) as stream:
        got = serving_search(H200, LLAMA8, client=client, **kwargs)
    tasks = [t for t in stream.data if str(t["key"]).startswith("llm-roofline-serving-search-")]
    assert len(tasks) == 3                                             # one per layout of 2 devices
    import pandas as pd
    pd.testing.assert_frame_equal(got.configs, expected.configs)


def test_screen_is_close_to_serve_on_tpot_and_throughput():
    """The closed-form screen only chooses what to simulate, but it must stay near serve() on a chat-like
    workload: TPOT within 8%, tokens/s within 6%, TTFT within 25% (docs/serving.md quotes the measured spread)."""
    from engine.serving.search_screen import LayoutScreen
    base = ServingOptions(input_length=1024, output_length=256)
    points = [(1, 2048), (8, 2048), (64, 1024), (64, 8192)]
    for layout in (dict(tp=1, pp=1, dp=1), dict(tp=2, pp=2, dp=1)):
        screened = LayoutScreen(H200, LLAMA8, "realistic", base, layout).evaluate(points)
        for (concurrency, budget), got in zip(points, screened):
            expected = serve(H200, LLAMA8, concurrency=concurrency, token_budget=budget, input_length=1024,
                             output_length=256, **layout).metrics
            where = (layout, concurrency, budget)
            assert got["tpot_s"] == pytest.approx(expected["tpot_s"], rel=0.08), where
            assert got["tokens_per_s"] == pytest.approx(expected["tokens_per_s"], rel=0.06), where
            assert got["ttft_s"] == pytest.approx(expected["ttft_s"], rel=0.25), where


def test_recommendation_for_concurrent_users_holds_under_serve():
    result = serving_search(H200, LLAMA8, devices=1, sla=SLA(tpot_max_s=0.0065), concurrent_users=40, **SMALL)
    rec = result.recommendation.iloc[0]
    assert rec["checked_by_serve"] and rec["layout"] == "TP1 PP1 DP1 EP1"
    replicas = int(rec["replicas"])
    assert rec["devices_needed"] == replicas and replicas * rec["concurrency_per_replica"] >= 40
    answer = serve(H200, LLAMA8, concurrency=40, token_budget=int(rec["token_budget"]), input_length=512,
                   output_length=64, dp=replicas).metrics
    assert answer["tpot_s"] <= 0.0065 and answer["tpot_s"] == pytest.approx(rec["tpot_s"], rel=1e-9)
    assert "40 concurrent users" in rec["sentence"]
    assert replicas > 1                                                 # one device fewer: TPOT over the SLA
    fewer = serve(H200, LLAMA8, concurrency=40, token_budget=int(rec["token_budget"]), input_length=512,
                  output_length=64, dp=replicas - 1).metrics
    assert fewer["tpot_s"] > 0.0065 and f"{replicas - 1} devices" in rec["one_fewer"]


def test_search_times_a_backends_4bit_kernels_as_serve():
    """SGLang's nvfp4 activation-quantize kernel (engine/serving/backend_kernels.py) is in the search's evaluation as
    in serve(): the same metrics point by point (without it the search was 0.3% fast on TTFT here)."""
    b200 = engine.load_hardware("B200")
    fields = dict(input_length=512, output_length=64, backend="sglang", weight_dtype="nvfp4", activation_dtype="nvfp4",
                  kv_dtype="fp8")
    base = ServingOptions(input_length=512, output_length=64, backend="sglang")
    layout = dict(tp=1, pp=1, dp=1, weight_dtype="nvfp4", activation_dtype="nvfp4", kv_dtype="fp8")
    points = [(1, 4096), (8, 1024)]
    got = LayoutEvaluator(b200, LLAMA8, "realistic", base, layout, ScheduleCache()).evaluate(points)
    for (concurrency, budget), metrics in zip(points, got):
        expected = serve(b200, LLAMA8, concurrency=concurrency, token_budget=budget, **fields).metrics
        for name in METRICS:
            assert metrics[name] == pytest.approx(expected[name], rel=1e-9), (concurrency, name)
