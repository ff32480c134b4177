"""The engine's per-structure caches under threads (engine/common/kept.py): the dashboard runs each browser session's
script in its own thread, so estimates share the caches at once; an entry evicted by another thread between a lookup
and its bookkeeping must cost a recomputation, never an exception, and never another estimate's numbers."""

from __future__ import annotations

import threading
from collections import OrderedDict

import pytest

import engine
from engine.common.kept import touch, trim
from engine.decomposition import pass_template
from engine.estimators import attention_group_cache, kept_rows, structure_memo
from engine.results import estimate_cache


def test_touch_moves_a_key_last_and_ignores_one_already_evicted():
    kept = OrderedDict.fromkeys("abc")
    touch(kept, "a")
    assert list(kept) == ["b", "c", "a"]
    touch(kept, "z")                            # evicted by another thread meanwhile: nothing to do
    assert list(kept) == ["b", "c", "a"]


def test_trim_drops_the_least_recently_used_and_stops_when_emptied_by_another_thread():
    kept = OrderedDict.fromkeys("abcde")
    trim(kept, 2)
    assert list(kept) == ["d", "e"]

    class EmptiedMeanwhile(OrderedDict):        # len() still says full, the dict is already empty
        def __len__(self):
            return 10

    trim(EmptiedMeanwhile(), 2)                 # returns instead of raising KeyError from popitem


def _tpots(hardware, model, contexts, method):
    return [engine.estimate(hardware, model, engine.Scenario(phase="decode", context_length=c, batch=b),
                            method=method).tpot_s for c in contexts for b in (1, 2, 3)]


@pytest.mark.parametrize("method", ["realistic", "roofline"])
def test_threads_sharing_tiny_caches_get_their_own_estimates(monkeypatch, method):
    # every cache holds one structure, so eight threads of different structures evict each other's entries all the
    # time; each thread's estimates must equal the ones computed alone
    for module, name in ((structure_memo, "KEPT"), (kept_rows, "KEPT"), (attention_group_cache, "KEPT"),
                         (pass_template, "PASS_TEMPLATES_KEPT")):
        monkeypatch.setattr(module, name, 1)
    hardware = engine.load_hardware("H100-SXM")
    models = [engine.load_model(m) for m in ("meta-llama/Llama-3.1-8B", "mistralai/Mixtral-8x7B-v0.1")]
    contexts = (512, 1024, 2048)
    expected = {}
    for number, model in enumerate(models):
        estimate_cache.clear()
        expected[number] = _tpots(hardware, model, contexts, method)
    errors, results = [], {}

    def work(thread):
        try:
            for _ in range(3):
                results[thread] = _tpots(hardware, models[thread % 2], contexts, method)
        except Exception as error:              # noqa: BLE001  (the test reports any)
            errors.append(error)

    estimate_cache.clear()
    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for thread, tpots in results.items():
        assert tpots == expected[thread % 2]
