"""A shared link whose view uses an uploaded workbook device and an uploaded config.json reproduces the view in a
fresh browser context (the uploads travel inside the link: dev.<NAME>=, cfg=)."""

from __future__ import annotations

import io
import json

import openpyxl
import pytest

from engine.models import load_catalog_config
from engine.hardware.specs import default_specs_path
from tests.browser.test_dashboard_browser import metrics, open_shared_link, open_view
from tests.browser.waits import TIMEOUT_MS, wait_idle

pytestmark = pytest.mark.browser
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def workbook_with_a_slower_h100() -> bytes:
    book = openpyxl.load_workbook(default_specs_path())
    sheet = book["hardware"]
    column = next(c.column for c in sheet[1] if c.value == "H100-SXM")
    row = next(c.row for c in sheet["A"] if c.value == "memory_bandwidth")
    sheet.cell(row=row, column=column, value=1000)          # GB/s, a third of the datasheet's 3,350
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def upload(page, index: int, name: str, mime: str, content: bytes):
    page.locator('[data-testid="stSidebar"] input[type=file]').nth(index).set_input_files(
        files=[{"name": name, "mimeType": mime, "buffer": content}])
    wait_idle(page)


def test_link_with_an_uploaded_device_and_config_reproduces_the_numbers(browser, page, server_url):
    open_view(page, f"{server_url}/?in=512", 1)                       # GPT-2 holds 1024 positions
    upload(page, 0, "mine.xlsx", XLSX, workbook_with_a_slower_h100())
    # the run that reads the workbook has finished (once, in CI, the link lacked the device: the next step's rerun
    # came before the upload was read)
    page.locator('[data-testid="stSidebar"]').get_by_text("Using mine.xlsx").wait_for(timeout=TIMEOUT_MS)
    page.get_by_text("Upload config.json").click()
    wait_idle(page)
    config = json.dumps(load_catalog_config("openai-community/gpt2")).encode()
    upload(page, 1, "gpt2.json", "application/json", config)
    page.wait_for_function("window.location.search.includes('cfg=')", timeout=TIMEOUT_MS)
    wait_idle(page)
    shown = metrics(page)
    assert shown["TPOT"] and shown["Memory"]
    fresh = open_shared_link(browser, page, server_url, 1, ("dev.H100-SXM=", "cfg=", "model=uploaded%2Fgpt2.json"))
    alerts = " ".join(fresh.locator('[data-testid="stAlert"]').all_inner_texts())
    assert "URL parameter" not in alerts
    assert metrics(fresh) == shown
    model = fresh.locator('[data-testid="stSidebar"] input[aria-label^="Model"]').input_value()
    assert model == "uploaded/gpt2.json"
    catalog = fresh.context.new_page()                                # the same model on the datasheet's H100
    open_view(catalog, f"{server_url}/?in=512&model=openai-community/gpt2", 1)
    assert metrics(catalog)["TPOT"] != shown["TPOT"]
    fresh.context.close()
