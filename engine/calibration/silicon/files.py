"""Find and read aiconfigurator's measured table files with their provenance; validate every row.

A table file is `data/<system>/<op family>/<framework>/<version>/<table>.parquet` (or `.csv` in a
copy such as tests/data/aiconfigurator). Every reader in engine.calibration.silicon.tables goes through
`read_tables`, which adds the provenance columns

    system, op_family, framework, version     from the file's path (framework may be `nccl`)
    source_file                               the path below the systems folder
    collection_provenance, collection_schema_version, table_status
                                              from collection_meta.yaml beside the file (NaN if absent)
    file_framework, file_version, device_label, kernel_source
                                              the file's own columns where it has them
                                              (device_label: e.g. "NVIDIA H100 80GB HBM3")

and turns `latency` (milliseconds per call, the package's unit) into `time_s`. Malformed files
raise SiliconFileError naming the file, the row (1 = first data row) and the column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from engine.calibration.silicon.package import resolve_root

EXTENSIONS = (".parquet", ".csv")
PROVENANCE_COLUMNS = ("system", "op_family", "framework", "version", "source_file", "collection_provenance",
                      "collection_schema_version", "table_status", "file_framework", "file_version",
                      "device_label", "kernel_source")
FILE_PROVENANCE = {"framework": "file_framework", "version": "file_version", "device": "device_label"}
MS = 1e-3


class SiliconFileError(ValueError):
    """A measured table file that cannot be read as documented (names file, row and column)."""


@dataclass(frozen=True)
class TableSpec:
    """How one table file maps to tidy columns.

    `columns`: file column -> our column (required); `whole`: our columns that must be whole numbers,
    with the least value allowed; `optional`: file column -> (our column, default) when absent.
    """

    family: str
    table: str
    columns: dict
    whole: dict = field(default_factory=dict)
    optional: dict = field(default_factory=dict)


def table_files(spec: TableSpec, root=None, systems=None, frameworks=None) -> list[Path]:
    """The spec's files under `root`, sorted; optionally only some systems / frameworks (directory names)."""
    root = resolve_root(root)
    found = []
    for extension in EXTENSIONS:
        found += root.glob(f"data/*/{spec.family}/*/*/{spec.table}{extension}")
    keep = [p for p in found if (systems is None or p.parts[-5] in systems)
            and (frameworks is None or p.parts[-3] in frameworks)]
    return sorted(keep)


def read_tables(spec: TableSpec, root=None, systems=None, frameworks=None) -> pd.DataFrame:
    """Every file of the spec as one tidy frame (see the module docstring); empty frame if none."""
    root = resolve_root(root)
    parts = [read_table_file(path, spec, root) for path in table_files(spec, root, systems, frameworks)]
    if not parts:
        return pd.DataFrame(columns=[*PROVENANCE_COLUMNS, *spec.columns.values(), "time_s"])
    return pd.concat(parts, ignore_index=True)


def read_raw(path: Path) -> pd.DataFrame:
    """The file as stored (parquet or CSV)."""
    try:
        if path.suffix == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, comment="#")
    except Exception as error:          # a damaged file: say which
        raise SiliconFileError(f"{path}: cannot be read as {path.suffix[1:]} ({error})") from error


def read_table_file(path, spec: TableSpec, root=None) -> pd.DataFrame:
    """One file: required columns renamed, numbers checked, time in seconds, provenance added."""
    path = Path(path)
    raw = read_raw(path)
    missing = [c for c in (*spec.columns, "latency") if c not in raw.columns]
    if missing:
        raise SiliconFileError(f"{path}: missing column(s) {', '.join(missing)} "
                               f"(has: {', '.join(map(str, raw.columns))})")
    out = pd.DataFrame({ours: raw[theirs].to_numpy() for theirs, ours in spec.columns.items()})
    for theirs, (ours, default) in spec.optional.items():
        out[ours] = raw[theirs].to_numpy() if theirs in raw.columns else default
    reverse = {ours: theirs for theirs, ours in spec.columns.items()}
    for column, least in spec.whole.items():
        out[column] = _whole_numbers(raw, reverse.get(column, column), out[column], least, path)
    latency = pd.to_numeric(raw["latency"], errors="coerce").to_numpy(dtype=float)
    bad = ~(np.isfinite(latency) & (latency > 0))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise SiliconFileError(f"{path} row {row + 1}, column 'latency': expected a positive time in milliseconds, "
                               f"got {raw['latency'].iloc[row]!r}")
    out["time_s"] = latency * MS
    return _with_provenance(out, raw, path, spec, root)


def _whole_numbers(raw, column: str, values: pd.Series, least: int, path: Path) -> np.ndarray:
    numbers = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
    bad = ~(np.isfinite(numbers) & (numbers >= least) & (np.floor(numbers) == numbers))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise SiliconFileError(f"{path} row {row + 1}, column {column!r}: expected a whole number >= {least}, "
                               f"got {raw[column].iloc[row]!r}")
    return numbers.astype(np.int64)


def _with_provenance(out: pd.DataFrame, raw: pd.DataFrame, path: Path, spec: TableSpec, root) -> pd.DataFrame:
    system, family, framework, version = path.parts[-5:-1]
    meta = collection_meta(path.parent)
    try:
        source = str(path.relative_to(Path(root))) if root is not None else str(path)
    except ValueError:
        source = str(path)
    provenance = {
        "system": system, "op_family": family, "framework": framework, "version": version, "source_file": source,
        "collection_provenance": meta.get("provenance", np.nan),
        "collection_schema_version": meta.get("schema_version", np.nan),
        "table_status": ((meta.get("tables") or {}).get(spec.table) or {}).get("status", np.nan),
    }
    for theirs, ours in FILE_PROVENANCE.items():
        provenance[ours] = raw[theirs].to_numpy() if theirs in raw.columns else np.nan
    provenance["kernel_source"] = raw["kernel_source"].to_numpy() if "kernel_source" in raw.columns else np.nan
    head = pd.DataFrame({key: (value if np.ndim(value) else np.repeat(value, len(out)))
                         for key, value in provenance.items()}, index=out.index)
    return pd.concat([head, out], axis=1)


def collection_meta(folder: Path) -> dict:
    """collection_meta.yaml of a version folder ({} when absent or unreadable)."""
    path = Path(folder) / "collection_meta.yaml"
    if not path.is_file():
        return {}
    try:
        meta = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise SiliconFileError(f"{path}: not valid YAML ({error})") from error
    return meta if isinstance(meta, dict) else {}


def _version_key(version: str) -> tuple:
    import re
    parts = re.split(r"[.\-+]|(?<=\d)(?=[a-z])", str(version))
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts if p)


def one_version_each(frame: pd.DataFrame) -> pd.DataFrame:
    """Only the rows of one version folder per system and framework (one measurement per shape): the one with
    the most rows (a later folder may hold a partial re-collection, e.g. moe trtllm 1.3.0rc23), newest on a tie."""
    if frame.empty:
        return frame
    keys = ["system", "framework", "version"]
    versions = frame.groupby(keys).size().rename("rows").reset_index()
    versions["key"] = versions["version"].map(_version_key)
    chosen = versions.sort_values(["rows", "key"]).groupby(["system", "framework"]).tail(1)
    keep = frame.set_index(keys).index.isin(chosen.set_index(keys).index)
    return frame[keep].reset_index(drop=True)
