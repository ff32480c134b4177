"""Views that used to mislead (issue 14): each names, draws or keeps what the user actually set."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.context import scenario_line
from tests.dashboard.test_app_explore import array
from dashboard.state import ViewState, parse_query
from dashboard.widgets import file_name
from engine.workload.scenario import Scenario
from tests.conftest import REPO
from tests.dashboard.charts_sent import chart_elements, config_of

APP = str(REPO / "dashboard" / "app.py")


def run_app(**params) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=180)
    for key, value in params.items():
        app.query_params[key] = value
    return app.run()


def figures(app) -> list[dict]:
    from tests.dashboard.test_app_explore import figures as sent
    return sent(app)


EDITED = "H100-SXM (edited: memory bandwidth 6,700 GB/s)"


def test_scenario_line_names_parallelism_and_edits_in_header_chart_subtitles_and_file_names():
    app = run_app(tp="4", chart="all", **{"edit.H100-SXM": "memory_bandwidth:6700"})
    assert not app.exception
    assert len(figures(app)) == 5
    header = app.main.caption[0].value
    assert EDITED in header and "TP 4" in header
    for figure in figures(app):
        subtitle = figure["layout"]["title"]["subtitle"]["text"].replace("<br>", " · ")
        assert EDITED in subtitle and "TP 4" in subtitle
    for chart in chart_elements(app):
        name = config_of(chart)["toImageButtonOptions"]["filename"]
        assert "tp-4" in name and "edited-memory-bandwidth-6-700-gb-s" in name


def test_scenario_line_names_every_layout_degree_above_one_and_chunked_prefill():
    state = ViewState(devices=("H100-SXM", "MI300X"), tp=2, pp=4, dp=1, ep=8, chunked_prefill=True, chunk_size=512)
    scenario = Scenario(phase="request", batch=8, input_length=2048, output_length=128, tp=2, pp=4, dp=1, ep=8,
                        chunked_prefill=True, chunk_size=512)
    line = scenario_line("some/model", state, scenario)
    assert "on H100-SXM, MI300X" in line
    assert "TP 2 x PP 4 x EP 8" in line and "DP" not in line
    assert "chunked prefill (chunk 512)" in line
    assert file_name("Roofline", line, "svg").startswith("roofline-some-model-on-h100-sxm-mi300x-tp-2-x-pp-4-x-ep-8")
    cloned = ViewState(devices=("H100-NEXT",), clones=(("H100-NEXT", "H100-SXM"),),
                       edits=(("H100-NEXT", (("memory_bandwidth", "6700"), ("num_cores", "160"))),))
    assert scenario_line("m", cloned, Scenario()).startswith(
        "m on H100-NEXT (clone of H100-SXM; edited: memory bandwidth 6,700 GB/s, num cores 160) · ")
    plain = scenario_line("m", ViewState(), Scenario())
    assert "TP" not in plain and "chunked prefill" not in plain and "edited" not in plain


# --- 1. points that do not fit in memory are hollow, with the reason on hover ---------------------

def test_sweep_chart_draws_points_that_do_not_fit_hollow_with_the_reason(llama8b):
    from dashboard.charts import sweep_figure
    from engine.hardware.specs import load_specs
    from engine.explore.sweeps import sweep

    h100 = load_specs()["H100-SXM"]
    frame = sweep(h100, llama8b, Scenario(), "batch", [1, 8, 1024])
    figure = sweep_figure(frame, x="value")
    # independent arithmetic: batch 1024 x 1,280 tokens x 128 KiB of KV per token (32 layers x 8 KV heads x 128 x
    # 2 x 2 B) is 172 GB, past the 80 GB of an H100 on its own; batch 1 (16 GB of weights, 0.17 GB of KV) fits.
    assert 1024 * 1280 * 32 * 8 * 128 * 2 * 2 > 80e9 > 16.1e9 + 1280 * 32 * 8 * 128 * 2 * 2
    for trace in figure.data:
        if trace.meta and trace.meta.get("role") in ("intensity", "tokens_per_s"):
            symbols = dict(zip(trace.x, trace.marker.symbol))
            assert not symbols[1].endswith("-open") and symbols[1024].endswith("-open")
            hover = dict(zip(trace.x, trace.hovertext))
            assert "does not fit in memory" in hover[1024] and "80 GB" in hover[1024].replace("<br>", " ")
            assert "does not fit" not in hover[1]
    assert any("hollow markers" in a.text for a in figure.layout.annotations)


def test_sweeps_page_draws_batches_past_the_largest_that_fits_hollow():
    app = run_app(page="sweeps", sweep="batch")
    assert not app.exception
    (figure,) = figures(app)
    intensity = next(t for t in figure["data"] if t.get("meta", {}).get("role") == "intensity")
    hollow = {int(x) for x, symbol in zip(array(intensity["x"]), intensity["marker"]["symbol"])
              if symbol.endswith("-open")}
    assert 1024 in hollow and 1 not in hollow


def test_tp_sweep_gives_the_reason_a_layout_does_not_fit(llama70b):
    from dashboard.charts.layout import layout_sweep_figure
    from engine.explore.layouts import layout_sweep
    from engine.hardware.specs import load_specs

    # 70.6 B parameters x 2 B = 141 GB of bf16 weights: past one 80 GB H100, within four (35 GB each)
    assert 70.6e9 * 2 > 80e9 > 70.6e9 * 2 / 4
    frame = layout_sweep(load_specs()["H100-SXM"], llama70b, Scenario(), "tp", [1, 4])
    figure = layout_sweep_figure(frame, "tp")
    for trace in figure.data:
        why = dict(zip(trace.x, trace.customdata))
        assert "does not fit in memory" in why[1] and "80 GB" in why[1].replace("<br>", " ")
        assert why[4] == ""
        assert trace.marker.symbol[0].endswith("-open") and not trace.marker.symbol[1].endswith("-open")


# --- 5. every chart uses the selected method ------------------------------------------------------

def test_ideal_vs_realistic_chart_uses_realistic_graph_when_it_is_selected(llama8b):
    import engine
    from engine.hardware.specs import load_specs

    app = run_app(method="realistic-graph", phase="decode", chart="gap")
    assert not app.exception
    gap = next(f for f in figures(app) if f["layout"]["title"]["text"].startswith("Ideal roofline vs"))
    assert gap["layout"]["title"]["text"].startswith("Ideal roofline vs realistic-graph")
    bar = "H100-SXM<br>realistic-graph"
    total_ms = sum(array(t["y"])[t["x"].index(bar)] for t in gap["data"] if bar in t["x"])
    scenario = engine.Scenario(phase="decode")
    h100 = load_specs()["H100-SXM"]
    graph = engine.estimate(h100, llama8b, scenario, method="realistic-graph").phases.loc["decode", "time_s"]
    eager = engine.estimate(h100, llama8b, scenario, method="realistic").phases.loc["decode", "time_s"]
    assert graph < eager                                  # graph launch drops the host cost per kernel
    assert total_ms == pytest.approx(graph * 1e3, rel=1e-6)
    headline = {m.label: m.value for m in app.metric}["TPOT"]
    assert float(headline.split()[0]) == pytest.approx(graph * 1e3, rel=0.01)


# --- 6. cloning an edited device copies its edited values and keeps the primary ---------------------

def test_clone_of_an_edited_device_copies_the_edits_and_keeps_the_primary():
    app = run_app(page="hardware", hw="H100-SXM,MI300X", **{"edit.H100-SXM": "memory_bandwidth:6700"})
    app.selectbox(key="w_edit_device").set_value("H100-SXM").run()
    app.text_input(key="w_clone_name").input("H100-NEXT")
    next(b for b in app.button if b.label == "Clone").click().run()
    assert not app.exception
    state, _ = parse_query(dict(app.query_params.items()))
    assert state.devices == ("H100-SXM", "MI300X", "H100-NEXT")
    assert state.edits_for("H100-NEXT") == {"memory_bandwidth": "6700"}
    table = app.data_editor[0].value                           # the editor now shows the clone
    assert app.selectbox(key="w_edit_device").value == "H100-NEXT"
    assert float(table.loc[table["field"] == "memory_bandwidth", "value"].item()) == 6700
    assert float(table.loc[table["field"] == "memory_bandwidth", "original"].item()) == 3350   # H100 SXM datasheet


# --- 7. the automatic model's card reports the KV heads the decomposition uses -----------------------

def test_card_of_an_automatic_multi_query_model_says_one_kv_head():
    pytest.importorskip("transformers")
    falcon = {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "vocab_size": 512, "new_decoder_architecture": False, "multi_query": True, "parallel_attn": True,
              "bias": False, "max_position_embeddings": 2048}
    app = run_app()
    app.radio(key="w_model_source").set_value("Upload config.json").run()
    app.file_uploader(key="w_config_file").set_value(("config.json", json.dumps(falcon).encode(),
                                                      "application/json")).run()
    assert not app.exception
    card = " ".join(c.value for c in app.sidebar.caption)
    assert "automatic decomposition" in card
    # 2 layers x (K + V) x 1 head x 16 x 2 B = 128 B per token: one KV head, as multi_query says
    assert "4 heads (1 KV)" in card


# --- 4. decode attention carries the KV bytes it reads ------------------------------------------

def test_decode_attention_on_the_roofline_carries_its_kv_reads_and_is_memory_bound():
    import engine
    from dashboard.charts import roofline_figure
    from engine.hardware.ceilings import roofline_ceilings
    from engine.models import load_model
    from engine.hardware.specs import load_specs

    h100 = load_specs()["H100-SXM"]
    gemma = load_model("google/gemma-3-27b-pt")
    scenario = engine.Scenario(phase="decode", input_length=32768, context_length=32768)
    result = engine.estimate(h100, gemma, scenario, method="roofline")
    figure = roofline_figure(roofline_ceilings(h100).assign(device="H100-SXM"), result.kernels)
    points = {}
    for trace in figure.data:
        if trace.meta and trace.meta.get("role") == "kernels":
            for name, x, y in zip(trace.meta["names"], trace.x, trace.y):
                points[name] = (x, y, trace.meta["bound"])
    # Gemma-3-27B: 32 query heads share 16 KV heads of dim 128; per cached token Q*K does 2 x 32 x 128 FLOPs
    # and reads 16 x 128 bf16 values (4 KiB): 2 FLOP/byte, far below the H100's ridge (~295 FLOP/byte)
    intensity = 2 * 32 * 128 / (16 * 128 * 2)
    for name in ("Q*gK", "Q*gK*gV"):
        x, y, bound = points[name]
        assert x == pytest.approx(intensity, rel=1e-3) and bound == "memory"
        assert y == pytest.approx(intensity * 3.35e12, rel=0.01)      # on the HBM slope (3.35 TB/s)
    assert not any("KVCache_Read" in (a.text or "") for a in figure.layout.annotations)
    # the engine's own table is unchanged: the KV read is still its own row there
    assert (result.kernels["op"] == "kv_read").any()


# --- 3. a bad workbook upload keeps the previously uploaded device, its selection and its edits ---

def _add_my_chip(sheet):
    column = sheet.max_column + 1
    for row in range(1, sheet.max_row + 1):
        sheet.cell(row=row, column=column, value=sheet.cell(row=row, column=6).value)   # copy a device column
    sheet.cell(row=1, column=column, value="MY-CHIP")


def _break_h100_bandwidth(sheet):
    from tests.dashboard.test_app import cell_of
    sheet[cell_of(sheet, "H100-SXM", "memory_bandwidth")] = -5


@pytest.mark.parametrize("uploader_empties_first", [True, False])
def test_bad_workbook_upload_keeps_the_uploaded_device_selected_with_its_edits(uploader_empties_first):
    """A browser's uploader swapping files reports no file for one run before the new one arrives."""
    from tests.dashboard.test_app import XLSX, edited_workbook

    app = run_app(page="compare")
    app.file_uploader(key="w_specs_file").set_value(("mine.xlsx", edited_workbook(_add_my_chip), XLSX)).run()
    app.multiselect(key="w_devices").set_value(["MY-CHIP", "H100-SXM"]).run()
    app.session_state["view"] = app.session_state["view"].with_edits("MY-CHIP", {"memory_bandwidth": "9000"})
    app.run()
    before = [m for m in app.dataframe][0].value.copy()
    if uploader_empties_first:
        app.file_uploader(key="w_specs_file").set_value(None).run()
    app.file_uploader(key="w_specs_file").set_value(("bad.xlsx", edited_workbook(_break_h100_bandwidth), XLSX)).run()
    assert not app.exception
    assert "keeping the previous workbook" in " ".join(e.value for e in app.error)
    assert app.multiselect(key="w_devices").value == ["MY-CHIP", "H100-SXM"]
    state, _ = parse_query(dict(app.query_params.items()))
    assert state.devices == ("MY-CHIP", "H100-SXM") and state.edits_for("MY-CHIP") == {"memory_bandwidth": "9000"}
    after = app.dataframe[0].value
    assert list(after["device"]) == ["MY-CHIP", "H100-SXM"]
    assert after.equals(before)                       # the comparison table is the one the user had


# --- 8. the calibrated estimate leads; the ideal roofline is shown beside it ---------------------

def test_default_view_leads_with_realistic_and_shows_the_roofline_beside_it(llama8b):
    import engine
    from engine.hardware.specs import load_specs

    app = run_app()
    assert not app.exception
    assert ViewState().method == "realistic"
    assert "method realistic" in app.main.caption[0].value
    h100 = load_specs()["H100-SXM"]
    realistic = engine.estimate(h100, llama8b, engine.Scenario(), method="realistic")
    ideal = engine.estimate(h100, llama8b, engine.Scenario(), method="roofline")
    cards = {m.label: m for m in app.metric}
    assert float(cards["TPOT"].value.split()[0]) == pytest.approx(realistic.tpot_s * 1e3, rel=0.01)
    assert cards["TPOT"].delta.startswith("ideal roofline: ")
    assert float(cards["TPOT"].delta.split(": ")[1].split()[0]) == pytest.approx(ideal.tpot_s * 1e3, rel=0.01)
    assert realistic.tpot_s > ideal.tpot_s            # the calibrated estimate is the slower, measured-like one
    rate = cards["Output tokens/s"].delta.split(": ")[1]     # e.g. '1.2k' (k = 1,000)
    number = float(rate.rstrip("kM")) * {"k": 1e3, "M": 1e6}.get(rate[-1], 1.0)
    assert number == pytest.approx(ideal.tokens_per_s, rel=0.01)


def test_roofline_chosen_shows_the_calibrated_estimate_beside_it():
    app = run_app(method="roofline")
    cards = {m.label: m for m in app.metric}
    assert cards["TPOT"].delta.startswith("realistic: ")
    assert "method roofline" in app.main.caption[0].value


def test_table_downloads_carry_the_scenario_in_their_file_names():
    line = scenario_line("meta-llama/Llama-3.1-8B", ViewState(tp=4), Scenario(tp=4))
    assert file_name("kernels", line, "csv").startswith("kernels-meta-llama-llama-3-1-8b-on-h100-sxm-tp-4-")
    assert file_name("kernels", "", "csv") == "kernels.csv"


def test_mla_decode_attention_carries_the_latent_it_reads():
    """DeepSeek-V3 (absorbed MLA): a query-side GEMM sits between the latent read and the attention products;
    the read still lands on them, and the step's total time is unchanged by the folding."""
    import engine
    from dashboard.charts.frames import attention_with_kv_reads
    from engine.models import load_model
    from engine.hardware.specs import load_specs

    result = engine.estimate(load_specs()["H100-SXM"], load_model("deepseek-ai/DeepSeek-V3"),
                             engine.Scenario(phase="decode", input_length=4096, tp=8))
    kernels = result.kernels
    folded = attention_with_kv_reads(kernels)
    assert not (folded["op"] == "kv_read").any()
    read = kernels.loc[kernels["op"] == "kv_read", ["count", "bytes"]].prod(axis=1).sum()
    attention = folded[folded["op"] == "attention"]
    assert (attention["kv_read_bytes"] * attention["count"]).sum() == pytest.approx(read, rel=1e-12)
    total = lambda frame: (frame["count"] * frame["time_s"]).sum()   # noqa: E731
    assert total(folded) == pytest.approx(total(kernels), rel=1e-12)


# --- sidebar at 1440 px: the layout and dtype selects sit two per row, so none is cut off ---------------------

def test_layout_and_dtype_selects_are_in_the_sidebar_two_per_row():
    """At 1440 px, four selects in a 400 px sidebar row were 48 px wide and showed no value; two per row are
    (400 - 2 x 24 padding - 16 gap) / 2 = 168 px, room for '64' or 'bf16' beside the arrow."""
    import re
    from pathlib import Path

    width = int(re.search(r"SIDEBAR_WIDTH_PX = (\d+)", Path(APP).read_text()).group(1))   # app.py runs on import
    assert (width - 2 * 24 - 16) / 2 >= 150
    app = run_app()
    assert not app.exception
    placed = {}
    for column in app.sidebar.columns:
        for select in column.selectbox:
            placed[select.key] = column.weight
    wanted = ("w_tp", "w_pp", "w_dp", "w_ep", "w_weight_dtype", "w_act_dtype", "w_kv_dtype")
    assert set(wanted) <= set(placed)                                   # every one exists, in the sidebar
    assert all(placed[key] >= 0.5 for key in wanted)                    # at most two to a row
    assert {app.selectbox(key=key).value for key in ("w_tp", "w_pp", "w_dp", "w_ep")} == {1}
    assert app.selectbox(key="w_weight_dtype").value == "bf16"


def test_deck_names_the_scenario_with_its_layout_and_edits_on_every_slide(monkeypatch):
    """The PPTX's cover subtitle and each slide's footer carry the scenario line (TP 4, the edited bandwidth)."""
    import base64
    import io

    import plotly.graph_objects as go
    from pptx import Presentation

    from dashboard import export

    one_pixel = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
    monkeypatch.setattr(export, "static_export_available", lambda: (True, ""))
    monkeypatch.setattr(export, "figures_bytes", lambda figures, *args, **kwargs: [one_pixel] * len(figures))   # no Chromium
    state = ViewState(tp=4, edits=(("H100-SXM", (("memory_bandwidth", "6700"),)),))
    line = scenario_line("meta-llama/Llama-3.1-8B", state, Scenario(tp=4))
    deck = Presentation(io.BytesIO(export.deck_pptx([("Roofline", go.Figure()), ("Memory fit", go.Figure())], line)))
    texts_per_slide = [" ".join(shape.text_frame.text for shape in slide.shapes if shape.has_text_frame)
                       for slide in deck.slides]
    assert len(texts_per_slide) == 3
    for text in texts_per_slide:
        assert EDITED in text and "TP 4" in text
