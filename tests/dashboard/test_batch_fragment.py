"""Issue 13: on the overview a change of an input only the body depends on (Batch, the lengths, the dtypes, the
method, the engine options) reruns only the overview's body (a keyed fragment), so the browser re-renders the page's
own elements and not the sidebar; the link and the numbers follow; elsewhere, and while the share box shows a link
holding the value, the whole page reruns. The Batch input is drawn by the body's fragment into its place in the
sidebar (one run per change in the browser: tests/browser/test_body_inputs_browser.py; Streamlit's AppTest reruns
the whole app for an input a fragment drew, so here only the link and the numbers are checked for Batch)."""

from __future__ import annotations

import pytest

from tests.dashboard.test_app import run_app, url_state


def sidebar_batch_present(app) -> bool:
    return any(widget.key == "w_batch" for widget in app.sidebar.number_input)


def sidebar_redrawn(app) -> bool:
    """Whether the last run drew the sidebar's own inputs (the Phase input; AppTest keeps only the elements of a
    fragment-only rerun, and the body's fragment draws only Batch into the sidebar)."""
    return any(widget.key == "w_phase" for widget in app.sidebar.selectbox)


def test_a_batch_change_on_the_overview_gives_the_links_numbers():
    app = run_app(method="roofline")
    assert sidebar_batch_present(app)
    app.number_input(key="w_batch").set_value(48).run()
    assert not app.exception and sidebar_batch_present(app)       # drawn in its place by the body
    assert url_state(app).batch == 48              # the body wrote the link
    cards = {m.label: m.value for m in app.metric}
    opened = run_app(method="roofline", batch="48")          # the same view opened from its link (a full run)
    assert cards == {m.label: m.value for m in opened.metric}
    assert cards != {m.label: m.value for m in run_app(method="roofline").metric}     # batch 1's differ
    app.run()                                      # a full run afterwards keeps the value everywhere
    assert app.number_input(key="w_batch").value == 48 and url_state(app).batch == 48


def test_other_pages_and_an_open_share_box_rerun_the_whole_page():
    app = run_app(page="compare")
    app.number_input(key="w_batch").set_value(12).run()
    assert not app.exception and sidebar_redrawn(app) and url_state(app).batch == 12
    app = run_app()
    app.session_state["open_share"] = True
    app.run()
    app.number_input(key="w_batch").set_value(24).run()
    assert not app.exception and sidebar_redrawn(app) and url_state(app).batch == 24


@pytest.mark.parametrize("kind, key, value, param, changes_numbers", [
    ("number_input", "w_input", 4096, "in", True),
    ("number_input", "w_output", 512, "out", True),
    ("selectbox", "w_method", "roofline", "method", True),
    ("selectbox", "w_kv_dtype", "fp8", "kvdt", True),
    ("selectbox", "w_weight_dtype", "fp8", "wdt", True),
    ("selectbox", "w_coll", "tree", "coll", False),            # one device: no collective, the same numbers
])
def test_other_body_inputs_on_the_overview_rerun_the_body_alone(kind, key, value, param, changes_numbers):
    app = run_app()
    getattr(app, kind)(key=key).set_value(value).run()
    assert not app.exception
    assert not sidebar_redrawn(app) and sidebar_batch_present(app)     # only the body ran (it draws Batch)
    assert app.query_params[param] == str(value)   # the body wrote the link
    cards = {m.label: m.value for m in app.metric}
    assert cards == {m.label: m.value for m in run_app(**{param: str(value)}).metric}    # as opened from the link
    assert (cards != {m.label: m.value for m in run_app().metric}) == changes_numbers
    app.run()                                      # a full run afterwards keeps the value in the sidebar
    assert getattr(app, kind)(key=key).value == value


def test_phase_and_parallelism_rerun_the_whole_page():
    """Inputs that change the sidebar itself (the phase shows other inputs; TP x PP x DP is counted under them)."""
    app = run_app()
    app.selectbox(key="w_phase").set_value("decode").run()
    assert not app.exception and sidebar_redrawn(app) and url_state(app).phase == "decode"
    app.selectbox(key="w_tp").set_value(2).run()
    assert not app.exception and sidebar_redrawn(app) and url_state(app).tp == 2
