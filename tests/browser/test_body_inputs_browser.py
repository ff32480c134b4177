"""Issue 13 in the browser: on the overview, an input only the page's body depends on (here Input and Output
tokens; the select boxes are covered by tests/dashboard/test_batch_fragment.py) reruns the body alone: no element
of the sidebar is sent again, and the numbers shown are those of the same view opened from its link."""

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


def delta_paths(frames: list) -> list[tuple]:
    """The delta paths of the Streamlit messages among the websocket frames received."""
    messages = [ForwardMsg.FromString(bytes(frame)) for frame in frames if not isinstance(frame, str)]
    return [tuple(message.metadata.delta_path) for message in messages if message.WhichOneof("type") == "delta"]


def test_input_and_output_tokens_rerun_the_body_alone_with_the_links_numbers(page, browser, server_url):
    frames: list[bytes] = []
    page.on("websocket", lambda socket: socket.on("framereceived", lambda payload: frames.append(payload)))
    page.goto(server_url)
    page.wait_for_function(charts_drawn(1), timeout=TIMEOUT_MS)
    wait_idle(page)
    default = metrics(page)
    frames.clear()
    tokens = page.get_by_label("Input tokens", exact=True)
    tokens.fill("4096")
    tokens.press("Enter")
    settle(page, "in", "4096")
    tokens = page.get_by_label("Output tokens", exact=True)
    tokens.fill("512")
    tokens.press("Enter")
    settle(page, "out", "512")
    deltas = delta_paths(frames)
    assert deltas and all(path[0] != SIDEBAR for path in deltas)        # the body's elements only
    shown = metrics(page)
    assert shown != default
    fresh = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    fresh.goto(f"{server_url}/?in=4096&out=512")
    fresh.wait_for_function(charts_drawn(1), timeout=TIMEOUT_MS)
    wait_idle(fresh)
    assert metrics(fresh) == shown
    assert page.console_errors == []
