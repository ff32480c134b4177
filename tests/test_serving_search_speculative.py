"""Speculative decoding inside the serving search (engine/serving/search_eval.py, search_screen.py): the shared
evaluation gives serve()'s numbers with a draft model and with MTP layers, the screen stays near serve(), and a
front point of a speculative search is serve() at that configuration (no point-by-point serve() fallback)."""

from __future__ import annotations

import pytest

import engine
from engine.serving import SLA, serve, serving_search
from engine.serving.options import ServingOptions
from engine.serving.search_eval import LayoutEvaluator, ScheduleCache, needs_serve
from engine.serving.search_screen import LayoutScreen
from engine.serving.speculative import SpeculativeDecoding

H200 = engine.load_hardware("H200-SXM")
LLAMA8 = engine.load_model("meta-llama/Llama-3.1-8B")
DRAFT = SpeculativeDecoding(draft_model=LLAMA8, draft_tokens=3, acceptance_rate=0.7, draft_tp=1)
MTP = SpeculativeDecoding(mtp_layers=1, draft_tokens=2, acceptance_rate=0.6)
METRICS = ("ttft_s", "ttft_p90_s", "tpot_s", "tpot_p90_s", "e2e_s", "tokens_per_s", "tokens_per_s_per_device",
           "tokens_per_s_per_user", "requests_per_s")


@pytest.mark.parametrize("spec", [DRAFT, MTP], ids=["draft-model", "mtp"])
def test_shared_evaluation_with_speculation_equals_serve(spec):
    base = ServingOptions(input_length=512, output_length=64, speculative=spec)
    assert not needs_serve(base)
    cache = ScheduleCache()
    for layout in (dict(tp=1, pp=1, dp=2), dict(tp=2, pp=1, dp=1)):
        points = [(1, 4096), (3, 1024), (16, 1024)]
        got = LayoutEvaluator(H200, LLAMA8, "realistic", base, layout, cache).evaluate(points)
        for (concurrency, budget), metrics in zip(points, got):
            expected = serve(H200, LLAMA8, concurrency=concurrency, token_budget=budget, input_length=512,
                             output_length=64, speculative=spec, **layout).metrics
            for name in expected:
                assert metrics[name] == pytest.approx(expected[name], rel=1e-9), (layout, concurrency, name)


def test_speculation_changes_the_evaluation():
    """The evaluator must not ignore the option: a draft that accepts nothing costs time and adds no tokens."""
    plain = LayoutEvaluator(H200, LLAMA8, "realistic", ServingOptions(input_length=512, output_length=64),
                            dict(tp=1)).evaluate([(4, 1024)])[0]
    useless = SpeculativeDecoding(draft_model=LLAMA8, draft_tokens=3, acceptance_rate=0.0)
    slowed = LayoutEvaluator(H200, LLAMA8, "realistic",
                             ServingOptions(input_length=512, output_length=64, speculative=useless),
                             dict(tp=1)).evaluate([(4, 1024)])[0]
    assert slowed["tpot_s"] > 1.5 * plain["tpot_s"]      # 3 draft passes of an 8B model and a 4-token verify


@pytest.mark.parametrize("spec", [DRAFT, MTP], ids=["draft-model", "mtp"])
def test_screen_with_speculation_is_close_to_serve(spec):
    base = ServingOptions(input_length=1024, output_length=256, speculative=spec)
    points = [(1, 2048), (8, 2048), (64, 8192)]
    layout = dict(tp=2, pp=1, dp=1)
    for (concurrency, budget), got in zip(points, LayoutScreen(H200, LLAMA8, "realistic", base, layout)
                                          .evaluate(points)):
        expected = serve(H200, LLAMA8, concurrency=concurrency, token_budget=budget, input_length=1024,
                         output_length=256, speculative=spec, **layout).metrics
        assert got["tpot_s"] == pytest.approx(expected["tpot_s"], rel=0.08), (concurrency, budget)
        assert got["tokens_per_s"] == pytest.approx(expected["tokens_per_s"], rel=0.06), (concurrency, budget)
        assert got["ttft_s"] == pytest.approx(expected["ttft_s"], rel=0.25), (concurrency, budget)


def test_a_front_point_of_a_speculative_search_is_serve_at_that_configuration():
    result = serving_search(H200, LLAMA8, devices=2, input_length=512, output_length=64, concurrencies=[1, 8],
                            token_budgets=[1024], sla=SLA(tpot_max_s=0.01), speculative=MTP)
    ran = result.configs[result.configs["fits"]]
    assert len(ran) == 6 and not ran["exact"].all()      # screened first: no serve() per point
    front = result.front
    assert len(front) and front["exact"].all()
    for row in front.to_dict("records"):
        expected = serve(H200, LLAMA8, concurrency=int(row["concurrency"]), token_budget=int(row["token_budget"]),
                         input_length=512, output_length=64, tp=int(row["tp"]), pp=int(row["pp"]), dp=int(row["dp"]),
                         speculative=MTP).metrics
        for name in METRICS:
            assert row[name] == pytest.approx(expected[name], rel=1e-9), (row["layout"], row["concurrency"], name)


def test_cli_speculative_flags_and_workload_reach_the_search(capsys):
    import json
    from pathlib import Path

    from engine.cli.entry import main
    from engine.cli.serving_search import JSON_KEYS
    code = main(["serving-search", "--hardware", "H200-SXM", "--model", "meta-llama/Llama-3.1-8B", "--devices", "1",
                 "--workload", "chat", "--output-len", "32", "--concurrency", "4", "--token-budget", "2048",
                 "--mtp-layers", "1", "--draft-tokens", "2", "--acceptance-rate", "0.6", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == set(JSON_KEYS)
    [row] = data["front"]
    expected = serve(H200, LLAMA8, concurrency=4, token_budget=2048, input_length=1024, output_length=32,
                     speculative=MTP).metrics                       # chat's 1k prompt, --output-len wins
    assert row["tpot_s"] == pytest.approx(expected["tpot_s"], rel=1e-9)
    plain = serve(H200, LLAMA8, concurrency=4, token_budget=2048, input_length=1024, output_length=32).metrics
    assert abs(row["tpot_s"] / plain["tpot_s"] - 1) > 0.05           # the flags changed the answer
    docs = (Path(__file__).resolve().parents[1] / "docs" / "serving.md").read_text()
    section = docs[docs.index("## Design-space search"):]
    for key in JSON_KEYS:                                             # every --json key is documented
        assert f"`{key}`" in section, key
