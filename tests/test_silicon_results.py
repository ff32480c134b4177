"""Recorded accuracy results (engine/calibration/silicon/results.py): written with provenance, read back, malformed files named."""

import pandas as pd
import pytest

from dashboard.views.accuracy_silicon import display_frame, provenance
from engine.calibration.silicon.results import ResultsFileError, read_results, write_results


def rows():
    return pd.DataFrame([{"scope": "serving", "family": "tpot", "subject": "h100_sxm", "variant": "all backends",
                          "split": "leave-one-system-out", "count": 776, "median_abs_error": 0.12,
                          "p90_abs_error": 0.35, "bias": -0.01}])


def test_round_trip_with_provenance(tmp_path):
    path = write_results(rows(), "serving", "benchmarks/serving_accuracy.py", "0.12.0", directory=tmp_path)
    back = read_results(tmp_path)
    assert path.name == "serving.csv" and len(back) == 1
    row = back.iloc[0]
    assert (row["count"], row["median_abs_error"], row["package_version"], row["file"]) == (776, 0.12, "0.12.0",
                                                                                            "serving.csv")
    shown = display_frame(back)
    assert shown["median error (%)"].iloc[0] == pytest.approx(12.0)
    assert "0.12.0" in provenance(back) and "leave-one-system-out" in provenance(back)


@pytest.mark.parametrize("column, value, expected", [
    ("median_abs_error", "abc", "row 2, column 'median_abs_error'"),
    ("p90_abs_error", "-1", "row 2, column 'p90_abs_error'"),
    ("split", "cross", "row 2, column 'split'"),
])
def test_malformed_files_are_named_by_row_and_column(tmp_path, column, value, expected):
    write_results(rows(), "serving", "b", "0.12.0", directory=tmp_path)
    frame = pd.read_csv(tmp_path / "serving.csv", dtype=str)
    frame.loc[0, column] = value
    frame.to_csv(tmp_path / "serving.csv", index=False)
    with pytest.raises(ResultsFileError, match=expected):
        read_results(tmp_path)
    (tmp_path / "serving.csv").write_text("scope,family\nserving,tpot\n")
    with pytest.raises(ResultsFileError, match="missing column"):
        read_results(tmp_path)


def test_no_results_is_an_empty_frame(tmp_path):
    assert read_results(tmp_path).empty
