"""The dashboard renders with its defaults, offline (Streamlit AppTest, no browser)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.conftest import REPO


def test_default_page_shows_a_real_estimate():
    app = AppTest.from_file(str(REPO / "dashboard" / "app.py"), default_timeout=60).run()
    assert not app.exception
    labels = [m.label for m in app.metric]
    assert {"TTFT", "TPOT", "Output tokens/s"} <= set(labels)
    assert all(m.value and m.value[0].isdigit() for m in app.metric)
