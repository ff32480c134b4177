"""Shared links that carry uploads (dev.<NAME>=, cfg=) and the CLI-only controls in the sidebar (AppTest)."""

from __future__ import annotations

import json
import zlib
import base64

import pytest

from dashboard.carry import MAX_LINK_CHARS, CarryError, device_from_blob, pack, unpack_bytes
from dashboard.state import ViewState, parse_query, to_query
from dashboard.resolve import resolve_scenario
from engine.models import load_catalog_config
from engine.hardware.specs import load_specs
from tests.dashboard.test_app import XLSX, cell_of, edited_workbook, run_app, texts

CHIP_BANDWIDTH_GB_S = 1000          # H100-SXM's column copied with a third of its bandwidth


def chip_workbook(sheet):
    column = sheet.max_column + 1
    source = next(c.column for c in sheet[1] if c.value == "H100-SXM")
    for row in range(1, sheet.max_row + 1):
        sheet.cell(row=row, column=column, value=sheet.cell(row=row, column=source).value)
    sheet.cell(row=1, column=column, value="MY-CHIP")
    sheet[cell_of(sheet, "MY-CHIP", "memory_bandwidth")] = CHIP_BANDWIDTH_GB_S


def metrics(app) -> dict:
    return {m.label: m.value for m in app.metric}


def uploaded_view():
    app = run_app(**{"in": "512"})                  # GPT-2 holds 1024 positions
    app.session_state["open_share"] = True          # the share box (made only while open) shows the link
    app.file_uploader(key="w_specs_file").set_value(("mine.xlsx", edited_workbook(chip_workbook), XLSX)).run()
    app.multiselect(key="w_devices").set_value(["MY-CHIP"]).run()
    app.radio(key="w_model_source").set_value("Upload config.json").run()
    config = json.dumps(load_catalog_config("openai-community/gpt2")).encode()
    app.file_uploader(key="w_config_file").set_value(("gpt2.json", config, "application/json")).run()
    assert not app.exception and not app.error
    return app


def test_a_link_with_an_uploaded_device_and_config_reproduces_the_view():
    app = uploaded_view()
    query = {k: v for k, v in app.query_params.items()}
    assert set(query) >= {"dev.MY-CHIP", "cfg"} and query["model"] == "uploaded/gpt2.json"
    share = next(c.value for c in app.sidebar.code)
    assert "dev.MY-CHIP=" in share and "cfg=" in share and len(share) <= MAX_LINK_CHARS
    fresh = run_app(**query)
    assert not fresh.exception and not fresh.error and not fresh.warning
    assert fresh.multiselect(key="w_devices").value == ["MY-CHIP"]
    assert fresh.selectbox(key="w_model").value == "uploaded/gpt2.json"
    assert metrics(fresh) == metrics(app)
    h100 = run_app(**{**{k: v for k, v in query.items() if k not in ("dev.MY-CHIP",)}, "hw": "H100-SXM"})
    assert metrics(h100)["TPOT"] != metrics(app)["TPOT"]   # the carried device's own bandwidth is what counts


def test_the_carried_device_keeps_its_fields_in_si_units():
    chip = load_specs(edited_workbook(chip_workbook))["MY-CHIP"]
    blob = pack(chip.model_dump(mode="json", exclude_defaults=True))
    back = device_from_blob("MY-CHIP", blob)
    assert back == chip and back.memory_bandwidth_bytes_per_s == CHIP_BANDWIDTH_GB_S * 1e9


@pytest.mark.parametrize("key, value, named", [
    ("dev.MY-CHIP", "bm90LXpsaWI", "URL parameter dev.MY-CHIP: not a carried value"),
    ("dev.MY-CHIP", pack({"vendor": "x", "kind": "gpu", "memory_bandwidth_bytes_per_s": -5}), "URL parameter dev.MY-CHIP: not a valid device"),
    ("dev.MY-CHIP", "a+b", "URL parameter dev.MY-CHIP is not valid"),
    ("cfg", pack({"model_type": "llama", "hidden_size": -4}), "URL parameter cfg"),
    ("cfg", "AAAA", "URL parameter cfg: not a carried value"),
])
def test_a_bad_or_tampered_blob_warns_naming_the_parameter_and_falls_back(key, value, named):
    app = run_app(**{key: value, "model": "uploaded/x.json", "hw": "MY-CHIP,H100-SXM"})
    assert not app.exception
    assert named in texts(app.warning)
    assert app.multiselect(key="w_devices").value == ["H100-SXM"]
    assert app.selectbox(key="w_model").value == "meta-llama/Llama-3.1-8B"


def test_a_blob_that_inflates_too_far_is_refused():
    bomb = base64.urlsafe_b64encode(zlib.compress(b" " * 5_000_000, 9)).decode().rstrip("=")
    with pytest.raises(CarryError, match="inflates beyond"):
        unpack_bytes(bomb, "cfg")


@pytest.mark.parametrize("limit, left_out, kept", [
    (500, "the uploaded config.json, device MY-CHIP", ()),
    (1200, "device MY-CHIP", ("cfg=",)),          # the config (~420 characters) fits, the device (~920) does not
])
def test_a_link_too_long_to_carry_says_what_it_leaves_out_before_it_is_copied(monkeypatch, limit, left_out, kept):
    monkeypatch.setattr("dashboard.session.MAX_LINK_CHARS", limit)
    app = uploaded_view()
    note = texts(app.sidebar.warning)
    assert f"This link cannot carry {left_out}:" in note and f"over the {limit:,}" in note
    share = next(c.value for c in app.sidebar.code)
    assert "dev." not in share and all(text in share for text in kept) and len(share) <= limit
    if not kept:
        assert "cfg=" not in share


def test_cli_only_controls_reach_the_scenario_and_stay_out_of_default_links():
    assert not {"coll", "mb", "skew", "mla"} & set(to_query(ViewState()))
    state, warnings = parse_query({"coll": "tree", "mb": "4", "batch": "8", "skew": "1.5", "mla": "naive"})
    assert warnings == []
    scenario, problems = resolve_scenario(state)
    assert problems == [] and (scenario.collective_algorithm, scenario.micro_batches, scenario.routing_skew,
                               scenario.mla_decode) == ("tree", 4, 1.5, "naive")
    assert to_query(state)["skew"] == "1.5" and to_query(state)["coll"] == "tree"
    _, warnings = parse_query({"skew": "11", "coll": "star"})
    assert any("skew='11'" in w for w in warnings) and any("coll='star'" in w for w in warnings)


def test_moe_and_mla_controls_show_only_for_models_that_have_them():
    dense = run_app()
    keys = {w.key for w in dense.sidebar.selectbox} | {w.key for w in dense.sidebar.number_input}
    assert {"w_coll", "w_mb"} <= keys and not {"w_skew", "w_mla"} & keys
    deepseek = run_app(model="deepseek-ai/DeepSeek-V3", tp="16")
    keys = {w.key for w in deepseek.sidebar.selectbox} | {w.key for w in deepseek.sidebar.number_input}
    assert {"w_skew", "w_mla"} <= keys


def test_tree_collectives_change_a_tensor_parallel_estimate_and_the_url():
    app = run_app(model="meta-llama/Llama-3.1-70B", tp="8", batch="16")
    ring = metrics(app)
    app.selectbox(key="w_coll").set_value("tree").run()
    assert {k: v for k, v in app.query_params.items()}.get("coll") == "tree"
    assert metrics(app) != ring
