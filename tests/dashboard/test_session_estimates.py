"""Issue 13: a rerun that changes nothing reuses this session's estimates (no recomputation, no unpickling of the
shared cache's copy); another session keeps its own; a changed view gets a new estimate, and the dict stays bounded."""

from __future__ import annotations

import engine
from dashboard import data
from tests.dashboard.test_app import run_app


def kept(app) -> dict:
    return dict(app.session_state[data.SESSION_ESTIMATES])


def test_an_unchanged_rerun_reuses_the_sessions_estimates_and_sessions_do_not_share_them(devices, llama8b):
    app = run_app(method="roofline")
    first = kept(app)
    methods = sorted(key[3] for key in first)
    assert methods == ["realistic", "roofline"]           # the selected method and the one shown beside it
    app.run()
    again = kept(app)
    assert again.keys() == first.keys() and all(again[key] is first[key] for key in first)
    other = run_app(method="roofline")
    assert all(kept(other)[key] is not first[key] for key in first)      # each session its own objects
    expected = engine.estimate(devices["H100-SXM"], llama8b, engine.Scenario(
        phase="request", batch=1, input_length=1024, output_length=256), method="roofline")
    shown = next(result for key, result in first.items() if key[3] == "roofline")
    assert shown.tpot_s == expected.tpot_s                # the kept estimate is the engine's


def test_a_changed_view_gets_a_new_estimate_and_the_kept_ones_stay_bounded():
    app = run_app(method="roofline")
    before = set(kept(app))
    for batch in range(2, 2 + data.SESSION_ESTIMATES_KEPT):
        app.number_input(key="w_batch").set_value(batch).run()
        assert not app.exception
    after = kept(app)
    assert len(after) == data.SESSION_ESTIMATES_KEPT and not before & set(after)   # oldest dropped first
    assert any(f'"batch":{1 + data.SESSION_ESTIMATES_KEPT}' in key[2] for key in after)
