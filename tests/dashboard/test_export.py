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
    assert back["Total time (µs)"].sum() == pytest.approx(table["Total time (µs)"].sum())

    sheet = load_workbook(io.BytesIO(export.table_xlsx(table)))["kernels"]
    rows = list(sheet.iter_rows(values_only=True))
    assert list(rows[0]) == list(table.columns)
    assert len(rows) == 1 + len(table)
    intensity = list(table.columns).index("Intensity (FLOP/byte)")
    softmax = [r for r in rows[1:] if r[list(table.columns).index("Kernel")] == "Softmax"][0]
    assert softmax[intensity] == "inf"  # Excel has no infinity
    assert load_workbook(io.BytesIO(export.table_xlsx(table, sheet_name="a/b:c")))  # bad sheet characters replaced
