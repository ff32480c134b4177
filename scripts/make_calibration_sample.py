"""Write engine/data/vidur_llama2_ops_sample.csv: a stratified sample of ../shared's measurements.

    .venv/bin/python scripts/make_calibration_sample.py

For every (hardware, model, tp, op) the rows at evenly spaced token ranks (first and last included):
10 per GEMM op, 36 per element-wise op, i.e. 320 GEMM rows and 288 rows of each element-wise kind
per device. Rows are copied unchanged (tests/test_calibration.py checks them against the full file).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "calibration" / "vidur_llama2_ops.csv"
TARGET = REPO / "engine" / "data" / "vidur_llama2_ops_sample.csv"
PER_GROUP = {"gemm": 10, "swiglu": 36, "rmsnorm": 36, "residual_add": 36}


def sample(frame: pd.DataFrame) -> pd.DataFrame:
    picked = []
    for (_, _, _, _, kind), rows in frame.groupby(["hardware", "model", "tp", "op", "kind"], sort=False):
        ordered = rows.sort_values("tokens", kind="stable")
        ranks = np.unique(np.rint(np.linspace(0, len(ordered) - 1, PER_GROUP[kind])).astype(int))
        picked.append(ordered.iloc[ranks])
    return pd.concat(picked).sort_index()


def main() -> None:
    if not SOURCE.exists():
        raise SystemExit(f"{SOURCE} not found: the sample is cut from the shared measurement file")
    header = SOURCE.read_text().splitlines()[0]
    frame = pd.read_csv(SOURCE, comment="#", dtype=str)
    chosen = sample(frame.astype({"tokens": int}))
    with open(TARGET, "w") as handle:
        handle.write(header + "\n")
        handle.write(f"# Stratified sample ({len(chosen)} of {len(frame)} rows, unchanged) written by "
                     "scripts/make_calibration_sample.py; the full file is ../shared/calibration/vidur_llama2_ops.csv.\n")
        chosen.astype(str).to_csv(handle, index=False)
    print(f"wrote {len(chosen)} rows to {TARGET}")


if __name__ == "__main__":
    main()
