"""Issue 13 in the browser: on the overview, an input only the page's body depends on (Batch, Input and Output
tokens; the select boxes are covered by tests/dashboard/test_batch_fragment.py) reruns the body alone: of the
sidebar only the Batch input, which the body's fragment draws in its place there, is sent again, and the numbers
shown are those of the same view opened from its link. A Batch change starts one script run, not two (a callback's
keyed `st.rerun` first starts a full run and aborts it)."""

from __future__ import annotations

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.browser.waits import TIMEOUT_MS, charts_drawn, url_param_is, wait_idle

pytestmark = pytest.mark.browser
SIDEBAR = 1          # a delta's path starts with its root container: 0 the main area, 1 the sidebar


def metrics(page) -> dict:
    labels = page.locator('[data-testid="stMetricLabel"]').all_inner_texts()
    values = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
    return dict(zip(labels, values))


def settle(page, param: str, value: str) -> None:
    page.wait_for_function(url_param_is(param, value), timeout=TIMEOUT_MS)
    wait_idle(page)


def messages(frames: list) -> list[ForwardMsg]:
    """The Streamlit messages among the websocket frames received."""
    return [ForwardMsg.FromString(bytes(frame)) for frame in frames if not isinstance(frame, str)]


def sidebar_elements(frames: list) -> list[str]:
    """The elements sent into the sidebar, by kind and label ("number_input Batch"); blocks left out."""
    found = []
    for message in messages(frames):
        if message.WhichOneof("type") != "delta" or message.metadata.delta_path[0] != SIDEBAR:
            continue
        if message.delta.WhichOneof("type") == "new_element":
            kind = message.delta.new_element.WhichOneof("type")
            found.append(f"{kind} {getattr(getattr(message.delta.new_element, kind), 'label', '')}".strip())
    return found


def runs_started(frames: list) -> int:
    """Script runs the server started (each begins with a `new_session` message)."""
    return sum(message.WhichOneof("type") == "new_session" for message in messages(frames))


def open_overview(page, server_url: str) -> list:
    frames: list[bytes] = []
    page.on("websocket", lambda socket: socket.on("framereceived", lambda payload: frames.append(payload)))
    page.goto(server_url)
    page.wait_for_function(charts_drawn(1), timeout=TIMEOUT_MS)
    wait_idle(page)
    return frames


def enter(page, label: str, value: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Enter")


def metrics_from_link(browser, link: str) -> dict:
    """The headline numbers of `link` opened in a new browser context (its own session)."""
    fresh = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    fresh.goto(link)
    fresh.wait_for_function(charts_drawn(1), timeout=TIMEOUT_MS)
    wait_idle(fresh)
    return metrics(fresh)


def test_input_and_output_tokens_rerun_the_body_alone_with_the_links_numbers(page, browser, server_url):
    frames = open_overview(page, server_url)
    default = metrics(page)
    frames.clear()
    enter(page, "Input tokens", "4096")
    settle(page, "in", "4096")
    enter(page, "Output tokens", "512")
    settle(page, "out", "512")
    assert sidebar_elements(frames) == ["number_input Batch"] * 2     # of the sidebar only what the body draws
    shown = metrics(page)
    assert shown != default
    assert metrics_from_link(browser, f"{server_url}/?in=4096&out=512") == shown
    assert page.console_errors == []


def test_a_batch_change_starts_one_run_of_the_body_and_keeps_the_input_in_its_place(page, browser, server_url):
    frames = open_overview(page, server_url)
    default = metrics(page)
    frames.clear()
    enter(page, "Batch", "48")
    settle(page, "batch", "48")
    assert runs_started(frames) == 1                      # one run: no full run started and aborted before it
    assert sidebar_elements(frames) == ["number_input Batch"]
    shown = metrics(page)
    assert shown != default
    batch, tokens, output = (page.get_by_label(label, exact=True).bounding_box()
                             for label in ("Batch", "Input tokens", "Output tokens"))
    assert batch["y"] == tokens["y"] and batch["x"] < tokens["x"]       # still the first of the workload's grid:
    assert batch["x"] == output["x"] and batch["y"] < output["y"]       # left of Input tokens, above Output tokens
    page.get_by_text("Share this view").click()           # a whole-page rerun (the box shows the link)
    page.locator('[data-testid="stCode"]').wait_for(timeout=TIMEOUT_MS)
    wait_idle(page)
    assert page.get_by_label("Batch", exact=True).input_value() == "48"
    assert "batch=48" in page.locator('[data-testid="stCode"]').inner_text()
    frames.clear()
    enter(page, "Batch", "12")                            # the box open: the whole page reruns, its link follows
    page.wait_for_function("() => document.querySelector('[data-testid=\"stCode\"]')?.innerText.includes('batch=12')",
                           timeout=TIMEOUT_MS)
    wait_idle(page)
    assert "number_input Input tokens" in sidebar_elements(frames)
    assert metrics_from_link(browser, f"{server_url}/?batch=48") == shown
    assert page.console_errors == []
