"""Accuracy results the benchmarks record (calibration/results/*.csv), for docs and the Accuracy page.

Scoring millions of measured kernels or thousands of serving runs takes minutes, so the benchmarks that do
it (benchmarks/serving_accuracy.py, benchmarks/silicon_accuracy.py, ...) write their summary tables here
with `write_results`, and the dashboard reads them back with `read_results`: every row says what was scored
(scope, family, subject, variant), how (split: in-sample, leave-one-device-out, leave-one-system-out), how
many measurements, the median / p90 absolute relative error and the bias, which benchmark wrote it, when,
and against which aiconfigurator-core version.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import numpy as np
import pandas as pd

RESULTS_DIR = Path(__file__).resolve().parents[3] / "calibration" / "results"
TEXT_COLUMNS = ("scope", "family", "subject", "variant", "split", "benchmark", "recorded", "package_version")
NUMBER_COLUMNS = ("count", "median_abs_error", "p90_abs_error", "bias")
COLUMNS = TEXT_COLUMNS[:5] + NUMBER_COLUMNS + TEXT_COLUMNS[5:]
SPLITS = ("in-sample", "leave-one-device-out", "leave-one-system-out")
# The serving rows' `variant`, by what they are grouped by (engine/serving/validation.result_rows writes them; the
# Accuracy page groups on them): None is the summary over every run (subject "all"), the others one row per value
SERVING_BREAKDOWNS = {None: "all systems and backends", "system": "by system (all backends)",
                      "backend": "by backend (all systems)", "family": "by model family (all systems and backends)",
                      "concurrency_bucket": "by concurrency bucket (clients; all systems and backends)"}


class ResultsFileError(ValueError):
    """A results file that cannot be read: names the file, row and column."""


def write_results(frame: pd.DataFrame, name: str, benchmark: str, package_version: str | None,
                  directory: Path = RESULTS_DIR) -> Path:
    """Write `frame` (the COLUMNS up to bias) as <directory>/<name>.csv with the provenance columns."""
    missing = [c for c in COLUMNS[:9] if c not in frame]
    if missing:
        raise ValueError(f"results for {name} lack column(s) {', '.join(missing)}")
    out = frame[list(COLUMNS[:9])].copy()
    out["benchmark"] = benchmark
    out["recorded"] = datetime.date.today().isoformat()
    out["package_version"] = package_version or ""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.csv"
    out.to_csv(path, index=False, float_format="%.6g")
    return path


def read_results(directory: Path = RESULTS_DIR) -> pd.DataFrame:
    """Every results file of `directory` in one frame (empty when there are none); ResultsFileError names the
    file, row and column of anything malformed."""
    frames = [read_results_file(path) for path in sorted(Path(directory).glob("*.csv"))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))


def read_results_file(path: Path) -> pd.DataFrame:
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.ParserError) as error:
        raise ResultsFileError(f"{path}: cannot be read as CSV ({error})") from None
    missing = [c for c in COLUMNS if c not in frame]
    if missing:
        raise ResultsFileError(f"{path}: missing column(s) {', '.join(missing)}")
    for column in NUMBER_COLUMNS:
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.isna() | ~np.isfinite(values) | ((values < 0) & (column != "bias"))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ResultsFileError(f"{path} row {row + 2}, column '{column}': expected a finite number"
                                   f"{'' if column == 'bias' else ' >= 0'}, got {frame[column].iloc[row]!r}")
        frame[column] = values
    unknown = ~frame["split"].isin(SPLITS)
    if unknown.any():
        row = int(np.flatnonzero(unknown.to_numpy())[0])
        raise ResultsFileError(f"{path} row {row + 2}, column 'split': expected one of {', '.join(SPLITS)}, "
                               f"got {frame['split'].iloc[row]!r}")
    frame["file"] = path.name
    return frame[list(COLUMNS) + ["file"]]
