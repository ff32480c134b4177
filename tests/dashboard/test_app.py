"""The dashboard through Streamlit's AppTest: pages, URL round trip, uploads, edits (no browser)."""

from __future__ import annotations

import io
import json

import openpyxl
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state import PAGES, ViewState, parse_query, to_query
from engine.models import load_catalog_config
from engine.hardware.specs import default_specs_path
from tests.conftest import REPO

APP = str(REPO / "dashboard" / "app.py")
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def run_app(**params) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=180)
    for key, value in params.items():
        app.query_params[key] = value
    return app.run()


def url_state(app) -> ViewState:
    state, warnings = parse_query({k: v for k, v in app.query_params.items()})
    assert warnings == []
    return state


def texts(elements) -> str:
    return " ".join(str(e.value) for e in elements)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_with_defaults(page):
    app = run_app(page=page)
    assert not app.exception
    assert not app.error
    assert url_state(app).page == page


def test_default_overview_shows_a_real_estimate():
    app = run_app()
    metrics = {m.label: m.value for m in app.metric}
    assert {"TTFT", "TPOT", "Output tokens/s", "Memory"} <= set(metrics)
    assert metrics["TPOT"].endswith(" ms") and float(metrics["TPOT"].split()[0]) > 0
    assert url_state(app) == ViewState()                    # the default view is written to the URL


def test_metric_cards_scale_their_units():
    """A 100k-token prompt at batch 64: the TTFT card in minutes, not "298448.68 ms"."""
    import engine
    from engine.workload.scenario import Scenario

    app = run_app(batch="64", method="roofline", **{"in": "100000"})   # checked against the roofline method
    metrics = {m.label: m.value for m in app.metric}
    direct = engine.estimate(engine.load_hardware("H100-SXM"), engine.load_model("meta-llama/Llama-3.1-8B"),
                             Scenario(phase="request", batch=64, input_length=100_000, output_length=256))
    assert metrics["TTFT"].endswith(" min") and float(metrics["TTFT"].split()[0]) == pytest.approx(
        direct.ttft_s / 60, rel=5e-3)
    assert metrics["TPOT"].endswith(" ms") and float(metrics["TPOT"].split()[0]) == pytest.approx(
        direct.tpot_s * 1e3, rel=5e-3)


def test_loading_from_an_unreachable_hub_fails_at_once_and_says_so(tmp_path, monkeypatch):
    """The Hub endpoint is a closed loopback port (no network): the Load button answers within seconds
    (huggingface_hub alone retries for ~25 s) with what to do instead."""
    import socket
    import time

    from huggingface_hub import constants

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setattr(constants, "ENDPOINT", closed)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    app = run_app()
    app.radio(key="w_model_source").set_value("Hugging Face Hub").run()
    app.text_input(key="w_hub_id").input("some-org/not-cached")
    started = time.perf_counter()
    next(b for b in app.button if b.label == "Load from the Hub").click().run()
    elapsed = time.perf_counter() - started
    message = texts(app.sidebar.error)
    assert "the Hugging Face Hub cannot be reached from this machine" in message and "some-org/not-cached" in message
    assert "HF_HUB_OFFLINE=1" in message and not app.exception
    assert elapsed < 10, f"{elapsed:.1f} s"


def test_query_parameters_round_trip():
    state = ViewState(page="compare", devices=("MI300X", "H100-SXM"), model="Qwen/Qwen2.5-7B", phase="decode",
                      batch=32, input_length=2048, output_length=128, context_length=3000, weight_dtype="fp8",
                      kv_dtype="fp8", stack_by="family", percent=True)
    app = run_app(**to_query(state))
    assert not app.exception
    assert url_state(app) == state
    assert app.multiselect(key="w_devices").value == ["MI300X", "H100-SXM"]
    assert app.number_input(key="w_batch").value == 32
    assert app.selectbox(key="w_model").value == "Qwen/Qwen2.5-7B"


def test_changing_an_input_updates_url_and_numbers():
    app = run_app()
    before = {m.label: m.value for m in app.metric}
    app.number_input(key="w_batch").set_value(64).run()
    assert url_state(app).batch == 64
    assert {m.label: m.value for m in app.metric}["TPOT"] != before["TPOT"]


def test_bad_url_parameters_warn_and_fall_back_per_field():
    app = run_app(batch="lots", hw="Z9000,MI300X", model="no-such-org/nothing", zoom="3", **{"in": "2048"})
    assert not app.exception
    warnings = texts(app.warning)
    for fragment in ("batch", "Z9000", "no-such-org/nothing", "zoom"):
        assert fragment in warnings
    state = url_state(app)
    assert (state.batch, state.devices, state.input_length) == (1, ("MI300X",), 2048)


def edited_workbook(edit) -> bytes:
    book = openpyxl.load_workbook(default_specs_path())
    edit(book["hardware"])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def cell_of(sheet, device: str, field: str) -> str:
    column = next(c.column_letter for c in sheet[1] if c.value == device)
    row = next(c.row for c in sheet["A"] if c.value == field)
    return f"{column}{row}"


def test_valid_workbook_upload_adds_its_devices():
    def add_device(sheet):
        column = sheet.max_column + 1
        for row in range(1, sheet.max_row + 1):
            sheet.cell(row=row, column=column, value=sheet.cell(row=row, column=6).value)   # copy a column
        sheet.cell(row=1, column=column, value="MY-CHIP")
    app = run_app()
    app.file_uploader(key="w_specs_file").set_value(("mine.xlsx", edited_workbook(add_device), XLSX)).run()
    assert not app.exception and not app.error
    assert "MY-CHIP" in app.multiselect(key="w_devices").options


def test_invalid_workbook_upload_names_the_cell_and_keeps_the_previous_choice():
    expected_cell = {}

    def break_bandwidth(sheet):
        expected_cell["cell"] = cell_of(sheet, "H100-SXM", "memory_bandwidth")
        sheet[expected_cell["cell"]] = -5
    app = run_app(hw="MI300X")
    before = {m.label: m.value for m in app.metric}
    app.file_uploader(key="w_specs_file").set_value(("bad.xlsx", edited_workbook(break_bandwidth), XLSX)).run()
    assert not app.exception
    message = texts(app.error)
    assert f"hardware!{expected_cell['cell']}" in message and "memory_bandwidth" in message
    assert app.multiselect(key="w_devices").value == ["MI300X"]
    assert {m.label: m.value for m in app.metric} == before


def test_hardware_workbook_with_a_unit_slip_loads_and_warns_naming_the_cell():
    expected_cell = {}

    def bandwidth_in_tb_per_s(sheet):
        expected_cell["cell"] = cell_of(sheet, "H100-SXM", "memory_bandwidth")
        sheet[expected_cell["cell"]] = 3.35
    app = run_app()
    app.file_uploader(key="w_specs_file").set_value(("slip.xlsx", edited_workbook(bandwidth_in_tb_per_s), XLSX)).run()
    assert not app.exception and not app.error
    warning = next(w.value for w in app.sidebar.warning if "slip.xlsx" in w.value)
    assert f"hardware!{expected_cell['cell']}: memory_bandwidth of 'H100-SXM' is 3.35 GB/s" in warning
    assert "TB/s" in warning and "3350 GB/s" in warning


def test_config_upload_becomes_the_model():
    app = run_app(**{"in": "512"})       # GPT-2 has 1024 positions
    app.radio(key="w_model_source").set_value("Upload config.json").run()
    config = json.dumps(load_catalog_config("openai-community/gpt2")).encode()
    app.file_uploader(key="w_config_file").set_value(("config.json", config, "application/json")).run()
    assert not app.exception and not app.error
    assert app.selectbox(key="w_model").value == "uploaded/config.json"
    assert "0.12 B parameters" in texts(app.sidebar.caption)


def test_bad_config_upload_names_the_field():
    app = run_app()
    app.radio(key="w_model_source").set_value("Upload config.json").run()
    bad = json.dumps({"model_type": "llama", "hidden_size": -4}).encode()
    app.file_uploader(key="w_config_file").set_value(("config.json", bad, "application/json")).run()
    assert not app.exception
    assert "hidden_size" in texts(app.error)
    assert app.selectbox(key="w_model").value == "meta-llama/Llama-3.1-8B"


def edit_h100_field(field: str, value: str) -> AppTest:
    """The Hardware page of H100-SXM (roofline method) after typing `value` into `field`'s cell of the data editor."""
    app = run_app(page="hardware", hw="H100-SXM", method="roofline")
    editor = app.data_editor[0]
    row = list(editor.value["field"]).index(field)
    app.session_state[editor.key] = {"edited_rows": {row: {"value": value}}, "added_rows": [], "deleted_rows": []}
    return app.run()


def test_edit_a_field_marks_it_and_moves_the_numbers():
    app = edit_h100_field("memory_bandwidth", "6700")
    assert not app.exception
    state = url_state(app)
    assert state.edits == (("H100-SXM", (("memory_bandwidth", "6700"),)),)
    table = app.data_editor[0].value
    assert table.loc[table["field"] == "memory_bandwidth", "edited"].item() == "✎ edited"
    app.radio(key="w_page").set_value("overview").run()
    edited_tpot = float(next(m.value for m in app.metric if m.label == "TPOT").split()[0])
    plain = run_app(hw="H100-SXM", method="roofline")     # the roofline's decode time is bytes / bandwidth
    plain_tpot = float(next(m.value for m in plain.metric if m.label == "TPOT").split()[0])
    assert edited_tpot == pytest.approx(plain_tpot / 2, rel=0.02)    # decode is memory bound: 2x bandwidth


def test_bad_edit_is_rejected_with_the_field_named():
    app = edit_h100_field("num_cores", "-3")
    assert "num_cores" in texts(app.error)
    assert url_state(app).edits == ()


def test_clone_into_a_hypothetical_device():
    app = run_app(page="hardware", hw="H100-SXM")
    app.text_input(key="w_clone_name").input("H100-NEXT")
    next(b for b in app.button if b.label == "Clone").click().run()
    assert not app.exception
    state = url_state(app)
    assert ("H100-NEXT", "H100-SXM") in state.clones
    assert state.devices == ("H100-SXM", "H100-NEXT")        # added to the selection; the primary stays first


def test_parallelism_controls_reach_the_estimate_and_the_url():
    app = run_app(model="meta-llama/Llama-3.1-70B", tp="4")
    assert not app.exception and not app.error
    metrics = {m.label: m.value for m in app.metric}
    assert "Tokens/s per device" in metrics and metrics["Memory per device"].endswith(" GB")
    per_device = next(m for m in app.metric if m.label == "Tokens/s per device")
    assert "the 4 devices" in per_device.proto.help      # the count in the help: a short label is not cut off
    memory = next(m for m in app.metric if m.label == "Memory per device")
    assert memory.delta == "fits in 80 GB"          # the capacity beside the verdict, not cut off in the value
    app.selectbox(key="w_tp").set_value(8).run()
    assert url_state(app).tp == 8
    assert "the 8 devices" in next(m for m in app.metric if m.label == "Tokens/s per device").proto.help


def test_tp_sweep_page_and_a_device_without_links():
    app = run_app(page="sweeps", sweep="tp", model="meta-llama/Llama-3.1-70B", hw="H100-SXM,NVL-AX")
    assert not app.exception
    assert "link_bandwidth" in texts(app.warning)            # NVL-AX has no interconnect: named, not a crash
    table = app.dataframe[0].value
    assert list(table.loc[table["device"] == "H100-SXM", "tp"]) == [1, 2, 4, 8]


def test_moe_model_card_shows_active_parameters_and_layer_pattern():
    app = run_app(model="deepseek-ai/DeepSeek-V3")
    card = texts(app.sidebar.caption)
    assert "671.0 B parameters, 37.6 B active" in card and "256 experts" in card


def test_moe_results_show_experts_touched_per_step():
    app = run_app(model="mistralai/Mixtral-8x7B-v0.1", batch="4", tp="2")     # 93 GB of weights: two devices
    assert not app.exception and not app.error
    caption = texts(app.caption)
    assert "Experts touched per MoE layer per step" in caption and "decode 5.47" in caption   # 8 x (1 - (6/8)^4)


def test_uploaded_config_of_an_unmodelled_architecture_is_decomposed_automatically():
    pytest.importorskip("transformers")
    config = {"model_type": "phi", "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 256,
              "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 2048}
    app = run_app(**{"in": "128", "out": "16"})
    app.radio(key="w_model_source").set_value("Upload config.json").run()
    app.file_uploader(key="w_config_file").set_value(("phi.json", json.dumps(config).encode(), "application/json")).run()
    assert not app.exception and not app.error
    assert app.selectbox(key="w_model").value == "uploaded/phi.json"
    assert "automatic decomposition" in texts(app.sidebar.caption)
    tpot = next(m.value for m in app.metric if m.label == "TPOT")       # a 2-layer model: microseconds
    assert tpot.endswith((" µs", " ms")) and float(tpot.split()[0]) > 0


def test_a_model_that_does_not_fit_says_so_and_names_the_fewest_devices():
    app = run_app(model="meta-llama/Llama-3.1-405B")
    assert not app.exception
    message = texts(app.error)
    assert message.startswith("Does not fit on one device: meta-llama/Llama-3.1-405B in bf16 needs 812 GB of "
                              "weights and one H100-SXM holds 80 GB. ")                   # sentences
    assert "The fewest devices that fit it are 16 (TP 8 x PP 2" in message and message.endswith("parallelism.")
    memory = next(m for m in app.metric if m.label == "Memory")
    assert memory.delta == "exceeds 80 GB" and memory.value.endswith(" GB") and len(memory.value) <= 8
