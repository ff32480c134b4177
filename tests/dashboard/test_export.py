"""Exports: real PNG/SVG/PDF through kaleido + Chromium, a PPTX deck, CSV/XLSX tables."""

from __future__ import annotations

import io
import struct

import pandas as pd
import pytest

import engine
from dashboard import export
from dashboard.charts import kernel_table_frame, memory_fit_figure, roofline_figure

needs_chromium = pytest.mark.skipif(export.chromium_path() is None,
                                    reason="no Chromium here (/usr/bin/chromium); CI installs Debian's chromium")


@pytest.fixture(scope="module")
def result(devices, llama8b):
    return engine.estimate(devices["H100-SXM"], llama8b,
                           engine.Scenario(phase="request", batch=1, input_length=1024, output_length=256))


@pytest.fixture(scope="module")
def roofline(devices, result):
    return roofline_figure(engine.roofline_ceilings(devices["H100-SXM"]), result.kernels)


@pytest.fixture(scope="module")
def memory_chart(result):
    return memory_fit_figure(pd.DataFrame([{**result.memory.to_dict(), "device": "H100-SXM"}]))


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@needs_chromium
def test_png_is_slide_size_at_twice_the_pixels(roofline):
    png = export.figure_bytes(roofline, "png")
    assert png_size(png) == (2560, 1440)
    browser = export._SESSION.kaleido
    small = export.figure_bytes(roofline, "png", scale=1, width=800, height=450)
    assert png_size(small) == (800, 450)
    assert export._SESSION.kaleido is browser  # one warm browser for every export


@needs_chromium
def test_svg_and_pdf(memory_chart):
    svg = export.figure_bytes(memory_chart, "svg")
    assert svg.lstrip()[:4] == b"<svg" or svg.lstrip()[:5] == b"<?xml"
    assert b"does not fit" not in svg and b"fits" in svg  # the annotation text is in the vector output
    assert export.figure_bytes(memory_chart, "pdf")[:4] == b"%PDF"


def test_unknown_format_is_refused(roofline):
    with pytest.raises(ValueError, match="fmt"):
        export.figure_bytes(roofline, "gif")


@needs_chromium
def test_deck_has_a_title_slide_and_one_picture_slide_per_chart(roofline, memory_chart):
    from pptx import Presentation
    from pptx.enum.shapes import MSO_SHAPE_TYPE
    from pptx.util import Inches

    summary = "Llama-3.1-8B on H100-SXM · request · batch 1 · 1024 in / 256 out · bf16"
    deck = Presentation(io.BytesIO(export.deck_pptx([("Roofline", roofline), ("Memory", memory_chart)], summary)))
    assert len(deck.slides) == 1 + 2
    assert abs(deck.slide_width - Inches(13.333)) < Inches(0.01) and deck.slide_height == Inches(7.5)
    assert deck.slide_width / deck.slide_height == pytest.approx(16 / 9, rel=1e-3)
    cover = deck.slides[0]
    assert cover.shapes.title.text == "llm-roofline"
    assert any(summary in shape.text_frame.text for shape in cover.shapes if shape.has_text_frame)
    for slide, title in zip(list(deck.slides)[1:], ("Roofline", "Memory")):
        assert slide.shapes.title.text == title
        pictures = [s for s in slide.shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE]
        assert len(pictures) == 1
        assert png_size(pictures[0].image.blob) == (2560, 1440)
        assert pictures[0].left >= 0 and pictures[0].left + pictures[0].width <= deck.slide_width
        assert pictures[0].top + pictures[0].height <= deck.slide_height
        assert any(summary in s.text_frame.text for s in slide.shapes if s.has_text_frame and s != slide.shapes.title)


def test_no_chromium_means_a_plain_reason_and_a_clear_error(monkeypatch, tmp_path, roofline):
    """Real lookup, no mocks: BROWSER_PATH points nowhere and PATH holds no browser."""
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-such-chromium"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert export.chromium_path() is None
    available, reason = export.static_export_available()
    assert available is False
    assert "Chromium" in reason and "apt-get install chromium" in reason and "camera button" in reason
    with pytest.raises(export.ExportUnavailable, match="Chromium"):
        export.figure_bytes(roofline, "png")
    with pytest.raises(export.ExportUnavailable):
        export.deck_pptx([("Roofline", roofline)], "summary")
    # kaleido's own browser lookup agrees that there is nothing to drive
    kaleido = pytest.importorskip("kaleido")
    from choreographer.errors import ChromeNotFoundError
    with pytest.raises(ChromeNotFoundError):
        kaleido.Kaleido(mathjax=False)


def test_toolbar_camera_downloads_a_2x_slide_png():
    config = export.toolbar_config("Roofline: H100-SXM vs A100")
    options = config["toImageButtonOptions"]
    assert options["format"] == "png" and options["scale"] >= 2
    assert (options["width"], options["height"]) == (1280, 720)
    assert options["filename"] == "roofline-h100-sxm-vs-a100"
    assert export.toolbar_config("x", fmt="svg")["toImageButtonOptions"]["format"] == "svg"
    with pytest.raises(ValueError):
        export.toolbar_config("x", fmt="pdf")


def test_tables_download_as_csv_and_xlsx(result):
    from openpyxl import load_workbook

    table = kernel_table_frame(result.kernels)
    back = pd.read_csv(io.BytesIO(export.table_csv(table)))
    assert list(back.columns) == list(table.columns) and len(back) == len(table)
    assert back["Total time (s)"].sum() == pytest.approx(table["Total time (s)"].sum(), rel=1e-12)

    sheet = load_workbook(io.BytesIO(export.table_xlsx(table)))["kernels"]
    rows = list(sheet.iter_rows(values_only=True))
    assert list(rows[0]) == list(table.columns)
    assert len(rows) == 1 + len(table)
    intensity = list(table.columns).index("Intensity (FLOP/byte)")
    softmax = [r for r in rows[1:] if r[list(table.columns).index("Kernel")] == "Softmax"][0]
    assert softmax[intensity] == "inf"  # Excel has no infinity
    assert load_workbook(io.BytesIO(export.table_xlsx(table, sheet_name="a/b:c")))  # bad sheet characters replaced


# ---- formula injection (OWASP): text a spreadsheet would run is neutralised; numbers stay numbers -------------
NAMES = ['=HYPERLINK("http://example.com","click")', "+1", "-chip", "@SUM(A1)", "\tTAB", "\rCR", "plain", "a=b"]


def injection_frame() -> pd.DataFrame:
    return pd.DataFrame({"device": NAMES, "delta (s)": [-1.5, -2.0, 0.0, 3.25, -0.001, 1e-9, 7.0, -8.0],
                         "count": [-1, 2, -3, 4, -5, 6, -7, 8], "=kind": ["=x"] * len(NAMES)})


def test_csv_export_prefixes_formula_text_and_keeps_numbers():
    import csv

    rows = list(csv.reader(io.StringIO(export.table_csv(injection_frame()).decode("utf-8"), newline="")))
    assert rows[0] == ["device", "delta (s)", "count", "'=kind"]
    assert [r[0] for r in rows[1:]] == ["'" + n for n in NAMES[:6]] + ["plain", "a=b"]
    assert [float(r[1]) for r in rows[1:]] == [-1.5, -2.0, 0.0, 3.25, -0.001, 1e-9, 7.0, -8.0]
    assert [r[2] for r in rows[1:]] == ["-1", "2", "-3", "4", "-5", "6", "-7", "8"]     # negative numbers unquoted
    assert {r[3] for r in rows[1:]} == {"'=x"}


def test_a_carriage_return_inside_text_cannot_start_a_row():
    """Unquoted, 'x<CR>=1+1' would end the row at the CR and start the next with a live formula."""
    import csv

    data = export.table_csv(pd.DataFrame({"device": ["x\r=1+1", "H100-SXM"], "n": [1, -2]})).decode("utf-8")
    rows = list(csv.reader(io.StringIO(data, newline="")))
    assert rows == [["device", "n"], ["x\r=1+1", "1"], ["H100-SXM", "-2"]]


def test_xlsx_export_holds_no_formula_and_numbers_stay_numbers():
    from openpyxl import load_workbook

    sheet = load_workbook(io.BytesIO(export.table_xlsx(injection_frame())))["kernels"]   # formulas kept as such
    cells = [cell for row in sheet.iter_rows() for cell in row]
    assert not [c.coordinate for c in cells if c.data_type == "f"]
    assert [c.value for c in sheet["A"][1:]] == ["'" + n for n in NAMES[:6]] + ["plain", "a=b"]
    assert [c.value for c in sheet["B"][1:]] == [-1.5, -2.0, 0.0, 3.25, -0.001, 1e-9, 7.0, -8.0]
    assert all(c.data_type == "n" for c in sheet["B"][1:] + sheet["C"][1:])
    assert sheet["D1"].value == "'=kind"


def test_cli_sweep_csv_is_neutralised(tmp_path, devices):
    from engine.cli.entry import main
    from engine.hardware.specs import write_specs

    specs = tmp_path / "specs.xlsx"
    write_specs([devices["H100-SXM"], devices["H100-SXM"].with_changes(name="@EVIL")], specs)
    out = tmp_path / "sweep.csv"
    assert main(["sweep", "--specs", str(specs), "--model", "meta-llama/Llama-3.1-8B", "--grid",
                 "device=@EVIL,H100-SXM", "--out", str(out)]) == 0
    frame = pd.read_csv(out)
    assert frame["device"].tolist() == ["'@EVIL", "H100-SXM"]
    assert frame["tpot_s"].dtype == float and (frame["tpot_s"] > 0).all()


def test_hardware_page_workbook_keeps_uploaded_sources_and_formula_like_names(devices):
    """Upload a workbook with a device named '=...' and its own citations; download it from the Hardware
    page and upload that again: the name and the citations come back unchanged."""
    from openpyxl import load_workbook

    from dashboard.state import ViewState
    from dashboard.views.hardware import workbook_bytes
    from engine.hardware.specs import load_specs, write_specs

    name = '=HYPERLINK("http://example.com","x")'
    mine = devices["T4"].with_changes(name=name)
    upload = io.BytesIO()
    write_specs([devices["L4"], mine], upload, sources={name: {"clock": ("my lab's measurement", "at 1.59 GHz")},
                                                        "L4": {"tdp": ("L4 datasheet", "")}})
    uploaded = load_specs(upload.getvalue())
    downloaded = workbook_bytes(dict(uploaded), ViewState(), uploaded.sources)
    again = load_specs(downloaded)
    assert list(again) == ["L4", name] and again[name] == mine
    assert again.sources[name]["clock"] == ("my lab's measurement", "at 1.59 GHz")
    assert again.sources["L4"]["tdp"] == ("L4 datasheet", "")
    header = load_workbook(io.BytesIO(downloaded))["hardware"]["E1"]
    assert header.value == name and header.data_type == "s"           # text, not a live formula


@needs_chromium
def test_figures_rendered_side_by_side_are_each_figures_own_bytes(roofline, memory_chart):
    """The deck renders its charts at once in several tabs: each result belongs to its own figure, in order."""
    together = export.figures_bytes([roofline, memory_chart, roofline], "png", scale=1)
    alone = [export.figure_bytes(figure, "png", scale=1) for figure in (roofline, memory_chart)]
    assert together[0] == together[2] == alone[0] and together[1] == alone[1] and alone[0] != alone[1]


def test_deck_button_builds_lazy_slides_only_when_the_deck_is_made(monkeypatch):
    import plotly.graph_objects as go

    from dashboard import widgets
    made = []
    monkeypatch.setattr(export, "deck_pptx", lambda slides, summary: made.append([t for t, _ in slides]) or b"pptx")
    built = []

    def slides():
        built.append(1)
        return [("Roofline", go.Figure()), ("Energy by kernel", go.Figure())]
    assert widgets._deck_bytes(slides, "line") == b"pptx" and made == [["Roofline", "Energy by kernel"]]
    assert built == [1]
    assert widgets._deck_bytes([("Memory fit", go.Figure())], "line") == b"pptx" and made[-1] == ["Memory fit"]


def pruned(value):
    """JSON without empty objects (plotly draws `title: {}` and no title alike)."""
    if isinstance(value, dict):
        kept = {key: pruned(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item != {}}
    return [pruned(item) for item in value] if isinstance(value, list) else value


def test_a_slide_copy_drops_the_title_and_subtitle_like_a_validated_figure_update(roofline, memory_chart):
    """The deck's copy of a chart (a plain dict, not a validated go.Figure) has the JSON of plotly's own update."""
    import json

    import plotly.graph_objects as go

    from dashboard.widgets import scenario_subtitle

    titled = scenario_subtitle(go.Figure(memory_chart), "model on H100-SXM · request, batch 1")
    for figure in (roofline, titled, go.Figure()):
        expected = go.Figure(figure)
        expected.update_layout(title_text=None, title_subtitle_text=None, margin_t=30)
        copy = export._without_title(figure)
        assert pruned(json.loads(go.Figure(copy).to_json())) == pruned(json.loads(expected.to_json()))
        assert "text" not in copy["layout"].get("title", {}) and copy["layout"]["margin"]["t"] == 30
    assert titled.layout.title.subtitle.text and titled.layout.margin.t != 30        # the shown figure is untouched


@needs_chromium
def test_tabs_reloaded_behind_the_renders_come_back_for_more_figures_than_tabs(roofline, memory_chart):
    """export._kaleido_class returns each image before its tab's reload: twice as many figures as tabs, at once and
    then one by one, each come back as its own figure's image (a tab that never came back would leave them waiting),
    and no reload failed."""
    figures = [roofline, memory_chart] * export.TABS
    together = export.figures_bytes(figures, "png", scale=1)
    one_by_one = [export.figure_bytes(figure, "png", scale=1) for figure in figures]
    assert together == one_by_one
    assert len(set(together)) == 2 and together[0] != together[1]
    assert export._SESSION.kaleido is not None and not export._SESSION.kaleido.broken
    assert type(export._SESSION.kaleido).__name__ == "ReloadBehind"
