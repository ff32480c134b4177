"""Combine repeated runs of calibration/measure_gpu.py's plan on one GPU into one ground-truth file.

    python3 calibration/merge_runs.py run_a.csv run_b.csv --out calibration/measured/H100-SXM-<date>.csv

Every item keeps the run whose timed calls were steadiest (the smallest p90 / p10 ratio): a run
disturbed while it timed an item (a clock dip, another process) shows a wide spread there, and the
other run's median is the undisturbed one. The header is the first run's, with `runs` (the files and
the rule) added; items measured in only some runs are kept from those. Needs the standard library only.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

KEY = ("hardware", "model", "op", "kind", "tokens", "tp", "m", "n", "k", "dtype", "batch", "context")


def read(path: Path) -> tuple[list[str], list[str], list[dict]]:
    """(header comment lines, column names, rows) of one measure_gpu.py file."""
    lines = path.read_text().splitlines()
    header = [line for line in lines if line.startswith("#")]
    body = [line for line in lines if line and not line.startswith("#")]
    if not body:
        raise ValueError(f"{path}: no column line (not a measure_gpu.py file)")
    reader = csv.DictReader(body)
    missing = [c for c in KEY + ("median_ms", "p10_ms", "p90_ms") if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{path}: columns {missing} missing (expected calibration/README.md's layout)")
    return header, list(reader.fieldnames), list(reader)


def spread(row: dict) -> float:
    """p90 / p10 of the timed calls (1.0 for a perfectly steady item)."""
    low, high = float(row["p10_ms"]), float(row["p90_ms"])
    return high / low if low > 0 else float("inf")


def merge(runs: list[list[dict]]) -> tuple[list[dict], int]:
    """Per item (KEY), the steadiest run's row, in the first run's order; and how many items took a
    row from a run other than the first."""
    chosen: dict[tuple, dict] = {}
    origin: dict[tuple, int] = {}
    order: list[tuple] = []
    for index, rows in enumerate(runs):
        for row in rows:
            key = tuple(row[c] for c in KEY)
            if key not in chosen:
                order.append(key)
                chosen[key], origin[key] = row, index
            elif spread(row) < spread(chosen[key]):
                chosen[key], origin[key] = row, index
    return [chosen[key] for key in order], sum(1 for key in order if origin[key] != 0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="files written by measure_gpu.py on the same GPU")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    read_runs = [read(path) for path in args.runs]
    hardware = {row["hardware"] for _, _, rows in read_runs for row in rows}
    if len(hardware) > 1:
        raise SystemExit(f"runs measure different hardware {sorted(hardware)}: merge runs of one GPU only")
    header, columns, _ = read_runs[0]
    rows, taken = merge([rows for _, _, rows in read_runs])
    note = (f"# runs: {len(args.runs)} runs of the plan ({', '.join(p.name for p in args.runs)}), merged by "
            f"calibration/merge_runs.py: each item from the run with the smallest p90/p10 ({taken} of "
            f"{len(rows)} from a later run)")
    with args.out.open("w", newline="") as handle:
        handle.write("\n".join(header + [note]) + "\n")
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} items -> {args.out} ({taken} from a later run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
