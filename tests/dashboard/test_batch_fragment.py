"""Issue 13: on the overview a Batch change reruns only the overview's body (a keyed fragment), so the browser
re-renders the page's own elements and not the sidebar; the link and the numbers follow; elsewhere, and while the
share box shows a link holding the batch, the whole page reruns."""

from __future__ import annotations

from tests.dashboard.test_app import run_app, url_state


def sidebar_batch_present(app) -> bool:
    return any(widget.key == "w_batch" for widget in app.sidebar.number_input)


def test_a_batch_change_on_the_overview_reruns_the_body_alone_with_link_and_numbers():
    app = run_app(method="roofline")
    assert sidebar_batch_present(app)
    app.number_input(key="w_batch").set_value(48).run()
    assert not app.exception
    assert not sidebar_batch_present(app)          # the sidebar was not sent again: only the body ran
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
    assert not app.exception and sidebar_batch_present(app) and url_state(app).batch == 12
    app = run_app()
    app.session_state["open_share"] = True
    app.run()
    app.number_input(key="w_batch").set_value(24).run()
    assert not app.exception and sidebar_batch_present(app) and url_state(app).batch == 24
