"""The short-table paths of the roofline fast path (issue 15) give the general paths' bits: each is compared with the
path it shortcuts (forced by hand) on one-step tables of several models and phases, and on tables with the values
the short paths leave to the general ones (NaN, infinities, negative values, missing energies)."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.decomposition.attention import one_row
from engine.decomposition.passes import AttentionPart
from engine.decomposition.transformer import decompose_columns
from engine.estimators import bound_labels
from engine.estimators.roofline import estimate_roofline
from engine.estimators.row_groups import RowGroups
from engine.results import energy as energy_module
from engine.results import phase_totals as columns_module
from engine.results.columns import KernelColumns
from engine.results.phase_totals import phase_total_rows, step_bound_times

CASES = [("meta-llama/Llama-3.1-70B", dict(phase="decode", context_length=1031)),
         ("meta-llama/Llama-3.1-70B", dict(phase="prefill", input_length=1029)),
         ("meta-llama/Llama-3.1-8B", dict(phase="prefill", input_length=77, batch=3, kv_dtype="fp8")),
         ("meta-llama/Llama-3.1-8B", dict(phase="decode", context_length=4000, batch=16, tp=2)),
         ("Qwen/Qwen3-30B-A3B", dict(phase="decode", context_length=500, batch=4)),
         ("google/gemma-2-9b", dict(phase="prefill", input_length=6000))]


def bits(values) -> list:
    values = np.asarray(values)
    return values.view(np.int64).tolist() if values.dtype == float else values.tolist()


def same(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for key in a:
        assert bits(a[key]) == bits(b[key]), key


@pytest.fixture(scope="module")
def tables():
    hardware = engine.load_hardware("H100-SXM")
    out = []
    for model_id, fields in CASES:
        try:
            model = engine.load_model(model_id)
        except Exception:       # a catalog without this model: the others still run
            continue
        scenario = engine.Scenario(**fields)
        out.append((hardware, scenario, decompose_columns(model, scenario)))
    assert len(out) >= 4
    return out


def test_roofline_short_table_matches_the_row_groups_path(tables):
    for hardware, scenario, table in tables:
        assert len(table["op"]) <= 64
        same(estimate_roofline(table, hardware, scenario),
             estimate_roofline(table, hardware, scenario, row_groups=RowGroups(dict(table))))


def timed(hardware, scenario, table, **changes):
    out = estimate_roofline(table, hardware, scenario)
    out["communication_time_s"] = np.zeros(len(out["op"]))
    out["hidden_time_s"] = np.zeros(len(out["op"]))
    for name, (row, value) in changes.items():
        out[name] = np.asarray(out[name], dtype=float).copy()
        out[name][row] = value
    return out


EDGES = [{}, {"macs": (0, -3.0)}, {"time_s": (1, np.inf)}, {"bytes": (2, np.nan)}, {"link_bytes": (0, 5.0)},
         {"vector_flops": (3, 0.0)}]


@pytest.mark.parametrize("changes", EDGES)
def test_energy_short_table_matches_the_general_path(tables, changes, monkeypatch):
    for hardware, scenario, table in tables:
        out = timed(hardware, scenario, table, **changes)
        fast, fast_notes = energy_module.kernel_energy(KernelColumns(out), hardware)
        with monkeypatch.context() as patch:
            patch.setattr(energy_module, "_short_table_energy", lambda *args: None)
            general, general_notes = energy_module.kernel_energy(KernelColumns(out), hardware)
        assert fast_notes == general_notes
        same(fast, general)


def test_energy_short_table_leaves_a_missing_energy_to_the_general_path(tables):
    hardware, scenario, table = tables[0]
    lacking = hardware.model_copy(update={"static_power_w": None})
    columns, notes = energy_module.kernel_energy(KernelColumns(timed(hardware, scenario, table)), lacking)
    assert columns is None and "static_power" in notes[0]


@pytest.mark.parametrize("changes", EDGES)
def test_phase_totals_of_one_phase_match_the_general_path(tables, changes, monkeypatch):
    for hardware, scenario, table in tables:
        kernels = KernelColumns(timed(hardware, scenario, table, **changes))
        by_bound = step_bound_times(kernels.source)
        fast = phase_total_rows(kernels, by_bound)
        fast_without = phase_total_rows(kernels)
        with monkeypatch.context() as patch:
            patch.setattr(columns_module, "_one_phase_sums", lambda *args: None)
            general = phase_total_rows(kernels, by_bound)
            general_without = phase_total_rows(kernels)
        for a, b in ((fast, general), (fast_without, general_without)):
            assert list(a) == list(b)
            for phase in a:
                same(a[phase], b[phase])
                assert all(type(a[phase][key]) is type(b[phase][key]) for key in a[phase])


def test_step_bound_times_and_present_codes_of_short_tables_match_the_numpy_paths(tables, monkeypatch):
    for hardware, scenario, table in tables:
        out = timed(hardware, scenario, table)
        mixed = dict(out, phase=np.where(np.arange(len(out["op"])) % 3 == 0, "prefill", "decode").astype(object))
        short = [step_bound_times(columns) for columns in (out, mixed)]
        codes = bound_labels.codes_of(out["bound"])
        short_codes = bound_labels.present_codes(*codes)
        with monkeypatch.context() as patch:
            patch.setattr(columns_module, "SHORT_ROWS", 0)
            patch.setattr(bound_labels, "SHORT_CODES", 0)
            assert short == [step_bound_times(columns) for columns in (out, mixed)]
            assert [type(value) for value in short[0].values()] == [float] * len(short[0])
            general_codes = bound_labels.present_codes(*codes)
        assert short_codes[0] == general_codes[0]
        assert short_codes[1].dtype == general_codes[1].dtype and bits(short_codes[1]) == bits(general_codes[1])


@pytest.mark.parametrize("sequences, new_tokens, prior", [(1, 1, 1024.0), (3, 77, 0.0), (16, 1, 0.0), (2, 5, 7.0),
                                                          (1.0, 1000003.0, 12345.0), (0, 1, 3.0)])
def test_one_row_attention_part_matches_the_array_path(sequences, new_tokens, prior):
    fast = AttentionPart.uniform("", sequences, new_tokens, np.array([prior]), "Ma_Mqa")
    general = AttentionPart.uniform("", np.float64(sequences), new_tokens, np.array([prior]), "Ma_Mqa")
    for name in ("sequences", "query_tokens", "context", "pairs", "cache_tokens", "fresh_tokens"):
        a, b = getattr(fast, name), getattr(general, name)
        assert a.shape == b.shape == (1,) and a.dtype == b.dtype and bits(a) == bits(b), name
    assert fast.per_row_count == general.per_row_count and fast.window is None
    assert general.floats is None and one_row(fast) == one_row(general)      # the kept floats are the arrays' values
    assert fast.alike.sequences == sequences and fast.alike.prior.tolist() == [prior]


def test_equal_to_gives_numpys_comparison():
    from engine.common.arrays import equal_to
    labels = np.array(["gemm", "collective", None, 3, float("nan"), "bubble", "collective "], dtype=object)
    for value in ("collective", "bubble", "", "nan"):
        assert equal_to(labels, value).tolist() == (labels == value).tolist()
        assert equal_to(labels, value).dtype == bool
    long = np.array(["a", "b"] * 40, dtype=object)
    assert equal_to(long, "a").tolist() == (long == "a").tolist()
    assert equal_to(np.array([], dtype=object), "a").shape == (0,)
    assert equal_to(np.array(["a", "b"]), "a").tolist() == [True, False]       # a str array: numpy's own compare
