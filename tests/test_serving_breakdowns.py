"""Serving accuracy breakdowns (issue 12: per system, model family, backend and concurrency bucket): the rows
engine/serving/validation.result_rows writes, the ones benchmarks/serving_accuracy.py --write recorded in
calibration/results/serving.csv, and the Accuracy page's table of them (dashboard/views/accuracy_silicon.py)."""

import numpy as np
import pandas as pd
import pytest

from dashboard.views.accuracy_silicon import BREAKDOWN_TABS, display_frame, is_serving_breakdown, serving_breakdown
from engine.calibration.silicon.results import RESULTS_DIR, SERVING_BREAKDOWNS, read_results_file
from engine.serving.validation import result_rows

LOSO = "leave-one-system-out"


def errors_frame() -> pd.DataFrame:
    """Six scored runs with hand-set errors: two families, two concurrency buckets."""
    return pd.DataFrame({"family": ["llama", "llama", "llama", "qwen3", "qwen3", "qwen3"],
                         "concurrency_bucket": pd.Categorical(["1-4", "1-4", "5-16", "5-16", "5-16", "5-16"],
                                                              categories=["1-4", "5-16", "17-64"]),
                         "tpot_error": [0.1, -0.3, 0.2, 0.05, -0.05, 0.4],
                         "ttft_error": [-0.5, 0.5, 1.0, 0.0, 0.2, -0.2]})


def test_result_rows_by_family_score_each_family_apart():
    rows = result_rows(errors_frame(), LOSO, "family").set_index(["subject", "family"])
    assert set(rows["variant"]) == {SERVING_BREAKDOWNS["family"]}
    llama = rows.loc[("llama", "tpot")]
    assert llama["count"] == 3
    assert llama["median_abs_error"] == pytest.approx(0.2)               # |0.1|, |-0.3|, |0.2|
    assert llama["bias"] == pytest.approx(0.1)                           # median of 0.1, -0.3, 0.2
    qwen = rows.loc[("qwen3", "ttft")]
    assert qwen["median_abs_error"] == pytest.approx(0.2) and qwen["bias"] == pytest.approx(0.0)


def test_result_rows_by_concurrency_bucket_skip_empty_buckets_and_keep_their_order():
    rows = result_rows(errors_frame(), LOSO, "concurrency_bucket")
    assert list(dict.fromkeys(rows["subject"])) == ["1-4", "5-16"]      # "17-64" has no run
    assert rows.loc[rows["family"] == "tpot", "count"].tolist() == [2, 4]


def test_result_rows_name_an_unknown_breakdown():
    with pytest.raises(ValueError, match="by must be one of"):
        result_rows(errors_frame(), LOSO, "model")


@pytest.fixture(scope="module")
def recorded() -> pd.DataFrame:
    return read_results_file(RESULTS_DIR / "serving.csv")


@pytest.mark.parametrize("by", ["system", "backend", "family", "concurrency_bucket"])
def test_recorded_breakdowns_cover_every_scored_run(recorded, by):
    """Every run is in exactly one group: each breakdown's counts add up to the summary row's, for TPOT and TTFT,
    and the summary's median lies between the groups' medians."""
    loso = recorded[recorded["split"] == LOSO]
    for metric in ("tpot", "ttft"):
        rows = loso[loso["family"] == metric]
        total = rows[rows["variant"] == SERVING_BREAKDOWNS[None]]
        groups = rows[rows["variant"] == SERVING_BREAKDOWNS[by]]
        assert len(total) == 1 and total["subject"].iloc[0] == "all"
        assert len(groups) >= 2, (by, metric)
        assert groups["subject"].is_unique
        assert groups["count"].sum() == total["count"].iloc[0], (by, metric)
        median = total["median_abs_error"].iloc[0]
        assert groups["median_abs_error"].min() <= median <= groups["median_abs_error"].max()


def test_recorded_backends_are_scored_both_ways(recorded):
    backends = recorded[recorded["variant"] == SERVING_BREAKDOWNS["backend"]]
    held_out = set(backends.loc[backends["split"] == LOSO, "subject"])
    assert held_out == set(backends.loc[backends["split"] == "in-sample", "subject"])
    assert {"trtllm", "vllm", "sglang"} <= held_out


def recorded_frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame["benchmark"], frame["recorded"], frame["package_version"] = "benchmarks/serving_accuracy.py", "d", "0.12.0"
    return frame


def row(variant, subject, family, split, count, median, p90, bias):
    return {"scope": "serving", "family": family, "subject": subject, "variant": variant, "split": split,
            "count": count, "median_abs_error": median, "p90_abs_error": p90, "bias": bias}


def test_the_page_table_puts_tpot_and_ttft_side_by_side_in_percent():
    by_bucket = SERVING_BREAKDOWNS["concurrency_bucket"]
    frame = recorded_frame([row(SERVING_BREAKDOWNS[None], "all", "tpot", LOSO, 30, 0.11, 0.3, -0.01),
                            row(by_bucket, "5-16", "tpot", LOSO, 20, 0.1, 0.2, 0.05),
                            row(by_bucket, "5-16", "ttft", LOSO, 20, 0.3, 0.9, -0.2),
                            row(by_bucket, "1-4", "tpot", LOSO, 10, 0.125, 0.25, 0.0)])
    table = serving_breakdown(frame, "concurrency_bucket")
    assert table["concurrency (clients)"].tolist() == ["5-16", "1-4"]    # as recorded
    five = table.iloc[0]
    assert (five["runs"], five["TPOT median (%)"], five["TTFT p90 (%)"], five["TTFT bias (%)"]) == pytest.approx(
        (20, 10.0, 90.0, -20.0))
    assert np.isnan(table.iloc[1]["TTFT median (%)"])                   # not recorded: left empty, not zero
    assert serving_breakdown(frame, "family").empty
    # the breakdowns leave the targets' table; the summary row stays there
    assert is_serving_breakdown(frame).tolist() == [False, True, True, True]
    assert display_frame(frame[~is_serving_breakdown(frame)])["subject"].tolist() == ["all"]


def test_every_tab_has_a_recorded_variant():
    assert set(BREAKDOWN_TABS) == {by for by in SERVING_BREAKDOWNS if by is not None}
