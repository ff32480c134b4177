"""The Serving page's workload presets, speculative decoding and design-space section: URL keys round-trip,
numbers equal engine.serve, the search section draws its charts (a stand-in search while engine.serving.search
is absent; the real one once it exists) and says so plainly when the search module is missing."""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass, field
from typing import Optional

import pandas as pd
import pytest
from pydantic import BaseModel

import engine
from dashboard.state import ViewState, parse_query, to_query
from dashboard.views import serving_search as section
from engine.serving import SpeculativeDecoding, serve
from tests.dashboard.test_app import run_app, url_state
from tests.dashboard.charts_sent import chart_specs

REAL_SEARCH = importlib.util.find_spec("engine.serving.search") is not None


def test_new_serving_keys_round_trip_and_stay_out_of_other_pages():
    state = ViewState(page="serving", serving_workload="rag", serving_speculative="draft",
                      serving_draft_model="Qwen/Qwen2.5-7B", serving_draft_tokens=4, serving_acceptance_rate=0.65,
                      serving_design_space=True, serving_ttft_max_ms=500.0, serving_tpot_max_ms=25.0,
                      serving_devices=4, serving_requests_per_s=12.5, serving_disaggregated=True,
                      serving_prefill_device="H100-SXM", serving_decode_device="H200-SXM")
    query = to_query(state)
    assert (query["sv.wl"], query["sv.sd"], query["sv.k"], query["sv.a"], query["sv.ds"]) == ("rag", "draft", "4",
                                                                                              "0.65", "1")
    assert (query["sv.ttft"], query["sv.tpot"], query["sv.n"], query["sv.rps"]) == ("500", "25", "4", "12.5")
    assert (query["sv.dis"], query["sv.pd"], query["sv.dd"]) == ("1", "H100-SXM", "H200-SXM")
    assert parse_query(query) == (state, [])
    # defaults stay out of links: no SLA, no target, automatic pools, no speculation
    plain = to_query(ViewState(page="serving"))
    assert not {"sv.ttft", "sv.tpot", "sv.rps", "sv.pd", "sv.dd", "sv.sd", "sv.wl", "sv.ds"} & set(plain)
    assert not any(key.startswith("sv.") for key in to_query(ViewState(page="overview")))
    _, warnings = parse_query({"sv.wl": "poetry", "sv.a": "1.5", "sv.sd": "eagle", "sv.k": "0", "sv.tpot": "-1"})
    for key in ("sv.wl", "sv.a", "sv.sd", "sv.k", "sv.tpot"):
        assert any(f"URL parameter {key}=" in w for w in warnings), key


def test_workload_preset_and_speculative_decoding_give_engine_numbers():
    app = run_app(page="serving", method="roofline", **{"sv.c": "4", "sv.cmax": "8", "sv.wl": "code", "sv.sd": "mtp",
                                                         "sv.k": "2", "sv.a": "0.6", "in": "300", "out": "20"})
    assert not app.exception and not app.error
    expected = serve(engine.load_hardware("H100-SXM"), engine.load_model("meta-llama/Llama-3.1-8B"), concurrency=4,
                     input_length=2048, output_length=1024, method="roofline",      # the preset wins over in/out
                     speculative=SpeculativeDecoding(mtp_layers=1, draft_tokens=2, acceptance_rate=0.6))
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["TPOT mean"] == f"{expected.tpot_s * 1e3:.2f} ms"
    assert metrics["Tokens per request"] == "2,048 in / 1,024 out"
    state = url_state(app)
    assert (state.serving_workload, state.serving_speculative, state.serving_draft_tokens) == ("code", "mtp", 2)
    assert "1.96 tokens per step" in " ".join(c.value for c in app.caption)       # 1 + 0.6 + 0.36


class _StandInSLA(BaseModel):
    ttft_max_s: Optional[float] = None
    tpot_max_s: Optional[float] = None
    latency_max_s: Optional[float] = None


@dataclass
class _StandInResult:
    configs: pd.DataFrame
    best: pd.DataFrame
    recommendation: pd.DataFrame
    messages: list = field(default_factory=list)

    @property
    def front(self):
        return self.configs[self.configs["on_front"]]


def _stand_in_search(hardware, model, *, devices, sla=None, requests_per_s=None, **_):
    """Two configurations per device, one beyond the TPOT limit, and one layout that does not fit."""
    rows = []
    for name in hardware:
        for layout, per_user, per_device in (("TP1 PP1 DP1 EP1", 30.0, 800.0), ("TP1 PP1 DP1 EP1", 90.0, 200.0)):
            tpot = 1 / per_user
            failure = f"TPOT {tpot * 1e3:.3g} ms > {sla.tpot_max_s * 1e3:.3g} ms" if sla and tpot > sla.tpot_max_s else ""
            rows.append(dict(device=name, mode="aggregated", layout=layout, concurrency=8, token_budget=8192,
                             devices=devices, fits=True, reason="", ttft_s=0.1, tpot_s=tpot, e2e_s=1.0,
                             tokens_per_s=per_device * devices, tokens_per_s_per_device=per_device,
                             tokens_per_s_per_user=per_user, meets_sla=not failure, sla_failure=failure,
                             on_front=True))
        rows.append(dict(device=name, mode="aggregated", layout="TP2 PP1 DP1 EP1", concurrency=8, token_budget=8192,
                         devices=devices, fits=False, reason="does not fit: stand-in", ttft_s=math.nan,
                         tpot_s=math.nan, e2e_s=math.nan, tokens_per_s=math.nan, tokens_per_s_per_device=math.nan,
                         tokens_per_s_per_user=math.nan, meets_sla=False, sla_failure="does not run", on_front=False))
    configs = pd.DataFrame(rows)
    best = configs[configs["meets_sla"]].groupby("device", sort=False).head(1).assign(message="stand-in best")
    sentence = [f"Use {devices} x {name} for {requests_per_s:g} requests/s." for name in hardware] \
        if requests_per_s else []
    return _StandInResult(configs, best, pd.DataFrame({"sentence": sentence}))


@pytest.mark.skipif(REAL_SEARCH, reason="engine.serving.search exists: the real-search test covers the section")
def test_design_space_section_with_a_stand_in_search(monkeypatch):
    monkeypatch.setattr(section, "search_function", lambda: (_stand_in_search, _StandInSLA))
    app = run_app(page="serving", method="roofline", hw="H100-SXM,H200-SXM",
                  **{"sv.c": "1", "sv.cmax": "2", "in": "128", "out": "8", "sv.ds": "1", "sv.tpot": "20",
                     "sv.n": "2", "sv.rps": "3"})
    assert not app.exception and not app.error
    assert "Use 2 x H100-SXM for 3 requests/s. Use 2 x H200-SXM for 3 requests/s." in [i.value for i in app.info]
    figures = chart_specs(app)
    front = next(f for f in figures if "Pareto front" in f["layout"]["title"]["text"])
    assert front["layout"]["shapes"][0]["x0"] == pytest.approx(50.0)                    # 1 / 20 ms
    hollow = next(t for t in front["data"] if t["name"] == "H100-SXM: outside the SLA")
    assert hollow["x"] == [30.0]                                                        # 30 tok/s/user misses 20 ms
    notes = next(a["text"] for a in front["layout"]["annotations"] if a.get("name") == "notes")
    assert "not run: TP2 PP1 DP1 EP1 on H100-SXM (does not fit)" in notes
    labels = [button.proto.label for button in app.get("download_button")]
    assert "CSV" in labels and "XLSX" in labels
    state = url_state(app)
    assert (state.serving_design_space, state.serving_tpot_max_ms, state.serving_devices,
            state.serving_requests_per_s) == (True, 20.0, 2, 3.0)


def test_design_space_says_so_when_the_search_is_missing(monkeypatch):
    def missing():
        raise ImportError("No module named 'engine.serving.search'")
    monkeypatch.setattr(section, "search_function", missing)
    app = run_app(page="serving", method="roofline", **{"sv.c": "1", "sv.cmax": "2", "in": "128", "out": "8",
                                                         "sv.ds": "1"})
    assert not app.exception and not app.error
    assert any("design-space search" in w.value and "not in this installation" in w.value for w in app.warning)


@pytest.mark.skipif(not REAL_SEARCH, reason="engine.serving.search is not in this build yet")
def test_design_space_section_with_the_real_search():
    app = run_app(page="serving", method="roofline", **{"sv.c": "1", "sv.cmax": "4", "in": "256", "out": "16",
                                                         "sv.ds": "1", "sv.tpot": "30", "sv.n": "1"})
    assert not app.exception and not app.error
    figures = chart_specs(app)
    front = next(f for f in figures if "Pareto front" in f["layout"]["title"]["text"])
    assert front["layout"]["shapes"][0]["x0"] == pytest.approx(1 / 0.030)
    assert any(t["name"] == "H100-SXM" for t in front["data"])
