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
        app.number_input(key="w_batch").set_value(batch).run()    # reruns the overview's body alone (a fragment)
        assert not app.exception
        app.run()            # a full run: AppTest keeps only the fragment's elements after a fragment-only rerun
    after = kept(app)
    assert len(after) == data.SESSION_ESTIMATES_KEPT and not before & set(after)   # oldest dropped first
    assert any(f'"batch":{1 + data.SESSION_ESTIMATES_KEPT}' in key[2] for key in after)


def test_a_hand_models_estimate_lives_in_one_shared_cache_and_each_caller_gets_its_own_copy(devices, llama8b,
                                                                                          monkeypatch):
    """Folded caches: a hand model's estimate is the engine's kept one (never also pickled into the dashboard's
    st.cache_data); two callers (two sessions) get distinct objects with the engine's numbers, so an edit one makes
    cannot reach the other."""
    def refuse(*args):
        raise AssertionError("a hand model's estimate went to the dashboard's own cache too")
    monkeypatch.setattr(data, "_estimate", refuse)
    scenario = engine.Scenario(phase="decode", batch=3, input_length=512)
    key = (devices["H100-SXM"].model_dump_json(), data.model_key(llama8b), scenario.model_dump_json(), "realistic")
    first = data.shared_estimate(key, devices["H100-SXM"], llama8b, scenario, "realistic")
    second = data.shared_estimate(key, devices["H100-SXM"], llama8b, scenario, "realistic")
    assert first is not second and first.kernels is not second.kernels and first.notes is not second.notes
    first.notes.append("edited by one session")
    assert "edited by one session" not in second.notes
    decode = 2 * llama8b.params_total / devices["H100-SXM"].memory_bandwidth_bytes_per_s   # bf16 weights, read once
    assert second.tpot_s > decode and first.tpot_s == second.tpot_s
