"""Our GPU ground truth is repeatable: the runs recorded under calibration/measured/runs/ (the same plan twice on
one GPU, timed behind the lead spin kernel) agree item by item, where the earlier method (no lead kernel) did not;
and calibration/merge_runs.py keeps, per item, the run whose timed calls were steadiest.

Oracles: the recorded measurements themselves (two runs of one plan are independent samples), and hand-made rows.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "calibration" / "measured" / "runs"
SUPERSEDED = REPO / "calibration" / "measured" / "superseded"
KEY = ["model", "op", "kind", "tokens", "tp", "m", "n", "k", "dtype", "batch", "context"]


def _merge_module():
    spec = importlib.util.spec_from_file_location("merge_runs", REPO / "calibration" / "merge_runs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def relative_change(first: Path, second: Path) -> pd.DataFrame:
    a, b = (pd.read_csv(path, comment="#") for path in (first, second))
    both = a.merge(b, on=KEY, suffixes=("_a", "_b"))
    assert len(both) == len(a) == len(b)
    return both.assign(change=both["median_ms_b"] / both["median_ms_a"] - 1)


@pytest.mark.parametrize("device", ["H100-SXM", "H200-SXM"])
def test_two_runs_behind_the_lead_kernel_agree_item_by_item(device):
    """Measured 2026-11-27: H100 median |change| 0.5%, p90 2.3%, 8 of 719 items > 20% (GEMMs whose timed calls were
    disturbed: their p90 / p10 spread is wide in the run that differs); H200 0.5%, 2.2%, none > 20%."""
    change = relative_change(RUNS / f"{device}-2026-11-27-run1.csv", RUNS / f"{device}-2026-11-27-run2.csv")
    assert change["change"].abs().median() < 0.01
    assert change["change"].abs().quantile(0.9) < 0.03
    assert (change["change"].abs() > 0.2).sum() <= 10


def test_without_the_lead_kernel_short_kernels_were_timed_waiting_for_the_host():
    """The earlier method on two H100s (2026-11-26 and -27): whole decode steps (one graph replay each) agree within
    0.3%, but 93 of 536 GEMMs differ by more than 20% (up to 4x, all under 0.3 ms) and the p90 change is 41%."""
    change = relative_change(SUPERSEDED / "H100-SXM-2026-11-26.csv", SUPERSEDED / "H100-SXM-2026-11-27-no-lead.csv")
    steps = change[change["kind"] == "decode_step"]["change"].abs()
    gemms = change[change["kind"] == "gemm"]["change"].abs()
    assert steps.max() < 0.005
    assert (gemms > 0.2).sum() > 50 and change["change"].abs().quantile(0.9) > 0.2


def _row(kind, median, p10, p90, m="1"):
    return {"hardware": "H100-SXM", "model": "x", "op": "o", "kind": kind, "tokens": m, "tp": "1", "m": m, "n": "8",
            "k": "8", "dtype": "bf16", "batch": "", "context": "", "median_ms": str(median), "p10_ms": str(p10),
            "p90_ms": str(p90), "repeats": "20", "implementation": "t"}


def test_merge_keeps_the_steadiest_run_of_each_item_in_the_first_runs_order():
    merge = _merge_module().merge
    first = [_row("gemm", 0.31, 0.012, 0.66, m="4"), _row("gemm", 0.010, 0.0099, 0.0102, m="8")]
    second = [_row("gemm", 0.011, 0.0105, 0.0115, m="8"), _row("gemm", 0.014, 0.0138, 0.0144, m="4"),
              _row("gemm", 0.02, 0.02, 0.02, m="16")]
    rows, taken = merge([first, second])
    # m=4: 0.66/0.012 = 55 against 0.0144/0.0138 = 1.04 -> the second run; m=8: 1.030 against 1.095 -> the first
    assert [(r["m"], r["median_ms"]) for r in rows] == [("4", "0.014"), ("8", "0.01"), ("16", "0.02")]
    assert taken == 2          # m=4 and m=16 come from the second run


def test_merge_runs_writes_a_file_the_calibration_loader_reads(tmp_path):
    from engine.calibration import measurements as calibration

    out = tmp_path / "merged.csv"
    assert _merge_module().main([str(RUNS / "H200-SXM-2026-11-27-run1.csv"), str(RUNS / "H200-SXM-2026-11-27-run2.csv"),
                                 "--out", str(out)]) == 0
    metadata = calibration.read_metadata(out)
    assert metadata["hardware"] == "H200-SXM" and "merge_runs.py" in metadata["runs"]
    merged = pd.read_csv(out, comment="#")
    recorded = pd.read_csv(REPO / "calibration" / "measured" / "H200-SXM-2026-11-27.csv", comment="#")
    pd.testing.assert_frame_equal(merged, recorded)      # the recorded file is exactly this merge
    spread = merged["p90_ms"] / merged["p10_ms"]
    runs = [pd.read_csv(RUNS / f"H200-SXM-2026-11-27-run{i}.csv", comment="#") for i in (1, 2)]
    assert np.all(spread.to_numpy() <= np.minimum(*(r["p90_ms"] / r["p10_ms"] for r in runs)) + 1e-12)


def test_merging_runs_of_two_gpus_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="merge runs of one GPU only"):
        _merge_module().main([str(RUNS / "H100-SXM-2026-11-27-run1.csv"), str(RUNS / "H200-SXM-2026-11-27-run1.csv"),
                              "--out", str(tmp_path / "x.csv")])
