"""Measured serving runs (aiconfigurator's systems/silicon_sample.csv) as a typed frame.

One row per benchmark run at a fixed client concurrency. File column -> ours:

    id -> run_id; system -> system (+ device: the workbook name, None where it has none); backend;
    backend_version; model_path; precision; mode (agg | disagg); isl -> input_length; osl -> output_length;
    silicon_data_source -> source, and its `silicon_concurrency=<C>` -> concurrency (<NA> where the source
    does not say: 19 of the 5,221 rows of 0.12.0), `measured=<date>` -> measured_at, `config_id=<id>` -> config_id;
    gemm_quant_mode, moe_quant_mode;
    batch_size -> max_batch; tp_size -> tp; pp_size -> pp; attention_dp_size -> attention_dp;
    moe_tp_size -> moe_tp; moe_ep_size -> moe_ep;
    prefill_* and decode_* (batch_size, num_workers, tp_size, pp_size, attention_dp_size, moe_tp_size,
    moe_ep_size) -> prefill_* / decode_* with the same renames (disagg runs; empty in agg runs);
    silicon_ttft_ms -> ttft_s (/ 1e3); silicon_tpot_ms -> tpot_s (/ 1e3).
Layout columns are nullable integers (pandas Int64: empty where the run's mode has none).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from engine.calibration.silicon.files import SiliconFileError
from engine.calibration.silicon.package import SYSTEM_DEVICES, resolve_root

SERVING_FILE = "silicon_sample.csv"
TEXT = {"id": "run_id", "system": "system", "backend": "backend", "backend_version": "backend_version",
        "model_path": "model_path", "precision": "precision", "mode": "mode", "gemm_quant_mode": "gemm_quant_mode",
        "moe_quant_mode": "moe_quant_mode", "silicon_data_source": "source"}
LAYOUT = {"batch_size": "max_batch", "tp_size": "tp", "pp_size": "pp", "attention_dp_size": "attention_dp",
          "moe_tp_size": "moe_tp", "moe_ep_size": "moe_ep"}
DISAGG = {f"{side}_{theirs}": f"{side}_{ours}" for side in ("prefill", "decode")
          for theirs, ours in {**LAYOUT, "num_workers": "num_workers"}.items()}
LENGTHS = {"isl": "input_length", "osl": "output_length"}
TIMES = {"silicon_ttft_ms": "ttft_s", "silicon_tpot_ms": "tpot_s"}
MODES = ("agg", "disagg")
SOURCE_FIELD = re.compile(r"(?:^|;)\s*{}=([^;]*)")


def _source_field(source: str, key: str) -> str | None:
    found = re.search(SOURCE_FIELD.pattern.format(re.escape(key)), str(source))
    return found.group(1).strip() if found else None


def read_serving_runs(root=None, path=None) -> pd.DataFrame:
    """The serving runs (see the module docstring); `path` overrides `<root>/silicon_sample.csv`."""
    path = resolve_root(root) / SERVING_FILE if path is None else path
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    except Exception as error:
        raise SiliconFileError(f"{path}: cannot be read as CSV ({error})") from error
    missing = [c for c in (*TEXT, *LAYOUT, *DISAGG, *LENGTHS, *TIMES) if c not in raw.columns]
    if missing:
        raise SiliconFileError(f"{path}: missing column(s) {', '.join(missing)}")
    out = pd.DataFrame({ours: raw[theirs].replace("", np.nan) for theirs, ours in TEXT.items()})
    bad_mode = ~out["mode"].isin(MODES)
    if bad_mode.any():
        row = int(np.flatnonzero(bad_mode)[0])
        raise SiliconFileError(f"{path} row {row + 1}, column 'mode': expected agg or disagg, "
                               f"got {raw['mode'].iloc[row]!r}")
    out.insert(1, "device", out["system"].map(SYSTEM_DEVICES).astype(object))
    concurrency = out["source"].map(lambda s: _source_field(s, "silicon_concurrency"))
    out["concurrency"] = _numbers(raw.assign(silicon_data_source=concurrency), "silicon_data_source", path,
                                  least=1, whole=True, required=False, what="silicon_concurrency=<whole number>")
    out["config_id"] = out["source"].map(lambda s: _source_field(s, "config_id"))
    # ISO 8601 in two spellings (2026-01-14T22:26:21Z, 2026-01-14T00:00:00.000Z): inferred from the first row, the
    # other spelling read as NaT (1,406 of the 4,303 dated runs of 0.12.0)
    out["measured_at"] = pd.to_datetime(out["source"].map(lambda s: _source_field(s, "measured")), errors="coerce",
                                        utc=True, format="ISO8601")
    for theirs, ours in LENGTHS.items():
        out[ours] = _numbers(raw, theirs, path, least=1, whole=True, required=True)
    for theirs, ours in {**LAYOUT, **DISAGG}.items():
        out[ours] = _numbers(raw, theirs, path, least=0, whole=True, required=False)
    for theirs, ours in TIMES.items():
        out[ours] = _numbers(raw, theirs, path, least=0, whole=False, required=True, positive=True) * 1e-3
    return out


def _numbers(raw, column, path, least, whole, required, positive=False, what=None) -> pd.Series:
    text = raw[column].astype(object).where(raw[column].notna(), "").astype(str)
    values = pd.to_numeric(text.replace("", np.nan), errors="coerce")
    blank = text.astype(str).str.strip() == ""
    ok = values.notna() & (values > least if positive else values >= least)
    if whole:
        ok &= values.fillna(0) == np.floor(values.fillna(0))
    bad = ~ok & (~blank | required)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        expected = what or (f"a {'positive' if positive else ''} {'whole ' if whole else ''}number"
                            f"{'' if positive else f' >= {least}'}").replace("  ", " ")
        raise SiliconFileError(f"{path} row {row + 1}, column {column!r}: expected {expected}, "
                               f"got {raw[column].iloc[row]!r}")
    return values.astype("Int64") if whole else values.astype(float)
