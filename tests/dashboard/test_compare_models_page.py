"""The Compare models page through Streamlit's AppTest: two models side by side, `models=` in the link,
bad ids dropped with a warning naming the parameter (no browser)."""

from __future__ import annotations

import pytest

import engine
from dashboard.state import ViewState, parse_query, to_query
from tests.dashboard.test_app import run_app, texts, url_state
from tests.dashboard.test_app_explore import figures

LLAMA, QWEN = "meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-7B"
LLAMA_PARAMS, QWEN_PARAMS = 8_030_261_248, 7_615_616_512      # published parameter counts
H100 = "H100-SXM"


def table(app):
    return app.dataframe[0].value.set_index("model")


def test_the_page_shows_two_models_side_by_side_on_the_primary_device():
    app = run_app(page="compare_models", models=f"{LLAMA},{QWEN}", method="roofline")
    assert not app.exception and not app.error
    shown = table(app)
    assert list(shown.index) == [LLAMA, QWEN]
    # weights in bf16: published parameters x 2 bytes (Qwen2.5-7B unties its LM head: counted in the 7.6 B)
    assert shown.at[LLAMA, "Weights per device (GB)"] == pytest.approx(LLAMA_PARAMS * 2 / 1e9, rel=1e-9)
    assert shown.at[QWEN, "Weights per device (GB)"] == pytest.approx(QWEN_PARAMS * 2 / 1e9, rel=1e-9)
    hardware, scenario = engine.load_hardware(H100), engine.Scenario(phase="request", batch=1, input_length=1024,
                                                                    output_length=256)
    for name in (LLAMA, QWEN):
        direct = engine.estimate(hardware, engine.load_model(name), scenario, method="roofline")
        assert shown.at[name, "TPOT (ms)"] == pytest.approx(direct.tpot_s * 1e3, rel=1e-9)
        assert shown.at[name, "TTFT (ms)"] == pytest.approx(direct.ttft_s * 1e3, rel=1e-9)
        assert bool(shown.at[name, "Fits"]) is True
    assert shown.at[QWEN, "TPOT (ms)"] < shown.at[LLAMA, "TPOT (ms)"]      # fewer bytes to read per token
    captions = texts(app.caption)
    assert f"{LLAMA}, {QWEN} on {H100}" in captions
    assert [d.label for d in app.get("download_button")][:2] == ["CSV", "XLSX"]
    charts = figures(app)
    bars = [t for t in charts[0]["data"] if t["type"] == "bar"]
    assert {t["meta"]["model"] for t in bars} == {LLAMA, QWEN}
    tpot = {t["meta"]["model"]: t["y"][0] for t in bars if t["meta"]["metric"] == "tpot_s"}
    assert tpot == pytest.approx({name: shown.at[name, "TPOT (ms)"] for name in (LLAMA, QWEN)}, rel=1e-9)
    roofline = charts[-1]
    kernels = {t["meta"]["device"] for t in roofline["data"] if t.get("meta", {}).get("role") == "kernels"}
    ceilings = {t["meta"]["device"] for t in roofline["data"] if t.get("meta", {}).get("role") == "ceiling"}
    assert kernels == {LLAMA, QWEN} and ceilings == {H100}      # one device's roofs, both models' kernels


def test_the_models_round_trip_through_the_url_and_the_picker_writes_them():
    app = run_app(page="compare_models", models=f"{QWEN},{LLAMA}")
    assert url_state(app).models == (QWEN, LLAMA)                      # the order as given
    assert app.multiselect(key="w_models").value == [QWEN, LLAMA]
    app.multiselect(key="w_models").set_value([LLAMA, "openai-community/gpt2"])
    app.number_input(key="w_input").set_value(512).run()                # GPT-2 holds 1,024 positions
    assert not app.exception and not app.error
    assert url_state(app).models == (LLAMA, "openai-community/gpt2")
    assert list(table(app).index) == [LLAMA, "openai-community/gpt2"]
    state = ViewState(page="compare_models", models=(QWEN, LLAMA))
    assert to_query(state)["models"] == f"{QWEN},{LLAMA}"
    assert parse_query(to_query(state)) == (state, [])
    assert "models" not in to_query(ViewState())                         # left out of links while unused


def test_the_page_starts_from_the_sidebar_model():
    app = run_app(page="compare_models", model=QWEN)
    assert not app.exception and not app.error
    assert list(table(app).index) == [QWEN]
    assert "two or more models" in texts(app.info)


@pytest.mark.parametrize("bad, reason", [("/etc/passwd", "expected a catalog id"),
                                         ("nobody/no-such-model", "cannot be shown")])
def test_a_bad_model_id_warns_naming_the_models_parameter_and_keeps_the_others(bad, reason, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    app = run_app(page="compare_models", models=f"{LLAMA},{bad},{QWEN}")
    assert not app.exception and not app.error
    warnings = [w.value for w in app.warning if "URL parameter models" in w.value]
    assert len(warnings) == 1 and repr(bad) in warnings[0] and reason in warnings[0]
    assert list(table(app).index) == [LLAMA, QWEN]
    assert url_state(app).models == (LLAMA, QWEN)


def test_parse_query_keeps_the_good_ids_of_a_mixed_list():
    state, warnings = parse_query({"models": f"{LLAMA},../x,{QWEN},{LLAMA}", "batch": "4"})
    assert state.models == (LLAMA, QWEN) and state.batch == 4
    assert len(warnings) == 1 and warnings[0].startswith("URL parameter models: model '../x'")


def test_more_models_than_fit_side_by_side_keeps_the_first_eight_and_says_so():
    ids = ["openai-community/gpt2", "EleutherAI/pythia-1b", "facebook/opt-1.3b", "microsoft/Phi-3-mini-4k-instruct",
           QWEN, LLAMA, "mistralai/Mistral-7B-v0.1", "Qwen/Qwen3-8B", "google/gemma-2-9b"]
    app = run_app(page="compare_models", models=",".join(ids), method="roofline", **{"in": "512"})
    assert not app.exception and not app.error, texts(app.error)
    assert "showing the first 8 of 9" in texts(app.warning) and "URL parameter models" in texts(app.warning)
    assert list(table(app).index) == ids[:8]
    assert url_state(app).models == tuple(ids[:8])


def test_the_share_box_says_when_a_compared_upload_cannot_travel_in_the_link():
    from dashboard.session import share_link
    link, note = share_link(ViewState(page="compare_models", models=(LLAMA, "uploaded/mine.json")))
    assert "models=" in link
    assert "cannot carry the uploaded config.json of uploaded/mine.json" in note and "models" in note
    assert share_link(ViewState(page="compare_models", models=(LLAMA, QWEN)))[1] == ""
