"""Misleading views only a browser shows (issue 14): a bad workbook upload keeps the uploaded device; the
scenario line (TP, edits) in the page header, the deck and the downloaded file names."""

from __future__ import annotations

import io
import re

import pytest
from pptx import Presentation

from tests.browser.test_dashboard_browser import open_view
from tests.browser.waits import TIMEOUT_MS, wait_idle
from tests.dashboard.test_app import cell_of, edited_workbook

pytestmark = pytest.mark.browser


def _add_my_chip(sheet):
    column = sheet.max_column + 1
    for row in range(1, sheet.max_row + 1):
        sheet.cell(row=row, column=column, value=sheet.cell(row=row, column=6).value)
    sheet.cell(row=1, column=column, value="MY-CHIP")


def _break_h100_bandwidth(sheet):
    sheet[cell_of(sheet, "H100-SXM", "memory_bandwidth")] = -5


def _hw(page) -> str:
    return page.evaluate("new URLSearchParams(window.location.search).get('hw')") or ""


def test_bad_workbook_upload_keeps_the_uploaded_device_selected(page, server_url, tmp_path):
    """The browser's uploader empties itself while swapping files; the previous upload and selection stay."""
    good, bad = tmp_path / "mine.xlsx", tmp_path / "bad.xlsx"
    good.write_bytes(edited_workbook(_add_my_chip))
    bad.write_bytes(edited_workbook(_break_h100_bandwidth))
    open_view(page, f"{server_url}/?page=compare", 1)
    uploader = page.locator('[data-testid="stSidebar"] input[type="file"]').first
    uploader.set_input_files(str(good))
    page.wait_for_selector("text=Using mine.xlsx", timeout=TIMEOUT_MS)
    wait_idle(page)
    page.locator('[data-testid="stSidebar"] [data-testid="stMultiSelect"]').first.click()
    page.keyboard.type("MY-CHIP")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    page.wait_for_function("new URLSearchParams(window.location.search).get('hw').includes('MY-CHIP')",
                           timeout=TIMEOUT_MS)
    wait_idle(page)
    selected = _hw(page)
    uploader.set_input_files(str(bad))
    page.wait_for_selector("text=keeping the previous workbook", timeout=TIMEOUT_MS)
    wait_idle(page)
    assert _hw(page) == selected
    tags = page.locator('[data-testid="stSidebar"] [data-testid="stMultiSelect"]').first.inner_text()
    assert re.search(r"MY-CHIP", tags)
    assert page.locator("text=MY-CHIP").count() >= 2            # in the selection and in the comparison


EDITED = "H100-SXM (edited: memory bandwidth 6,700 GB/s)"


def test_scenario_line_with_tp_and_edits_in_the_header_the_deck_and_file_names(page, server_url):
    open_view(page, f"{server_url}/?tp=4&edit.H100-SXM=memory_bandwidth:6700", 1)
    header = page.locator('[data-testid="stMain"] [data-testid="stCaptionContainer"]').first.inner_text()
    assert EDITED in header and "TP 4" in header
    with page.expect_download(timeout=TIMEOUT_MS) as png_download:
        page.get_by_role("button", name="PNG").first.click()
    assert "tp-4" in png_download.value.suggested_filename
    assert "edited-memory-bandwidth-6-700-gb-s" in png_download.value.suggested_filename
    with page.expect_download(timeout=TIMEOUT_MS) as deck_download:
        page.get_by_role("button", name="Download deck (PPTX)").click()
    assert "tp-4" in deck_download.value.suggested_filename
    deck = Presentation(io.BytesIO(open(deck_download.value.path(), "rb").read()))
    cover = " ".join(shape.text_frame.text for shape in deck.slides[0].shapes if shape.has_text_frame)
    assert EDITED in cover and "TP 4" in cover
    assert page.console_errors == []
