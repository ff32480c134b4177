"""engine.calibration.silicon: aiconfigurator-core's measured tables and serving runs, read with provenance in SI units.

Counts and hand-checked rows use the shipped subset (tests/data/aiconfigurator, always present);
invariants also run on the installed package when the `calibration` extra is there."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from engine.calibration import silicon
from engine.calibration.silicon import package as silicon_package

SUBSET = Path(__file__).parent / "data" / "aiconfigurator" / "systems"
H100_GEMM = SUBSET / "data/h100_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.csv"
H100_DECODE = SUBSET / "data/h100_sxm/attention/trtllm/1.3.0rc20/generation_attention_perf.csv"
ROOTS = [SUBSET] + ([None] if silicon.is_installed() else [])   # None: the installed package


def first_row(path: Path) -> dict:
    with open(path, newline="") as handle:
        return next(csv.DictReader(handle))


def test_subset_lists_its_two_systems_and_reads_a_system_description():
    assert silicon.list_systems(SUBSET) == ["b200_sxm", "h100_sxm"]
    spec = silicon.read_system("h100_sxm", SUBSET)
    assert spec["system"] == "h100_sxm" and spec["file"].endswith("h100_sxm.yaml")
    assert spec["gpu"]["mem_bw"] == 3350000000000          # 3.35 TB/s in bytes per second, as the yaml says
    with pytest.raises(ValueError, match="unknown system 'x100'.*h100_sxm"):
        silicon.read_system("x100", SUBSET)


def test_gemm_rows_seconds_and_dtypes():
    table = silicon.gemm_table(SUBSET)
    assert len(table) == 104 and set(table["system"]) == {"h100_sxm", "b200_sxm"}    # 24 of them B200 nvfp4
    raw = first_row(H100_GEMM)
    mine = table[table["source_file"] == str(H100_GEMM.relative_to(SUBSET))].iloc[0]
    assert (mine["m"], mine["n"], mine["k"]) == (int(raw["m"]), int(raw["n"]), int(raw["k"]))
    assert mine["time_s"] == pytest.approx(float(raw["latency"]) / 1e3, rel=1e-12)   # file: milliseconds
    assert mine["dtype"] == {"bfloat16": "bf16", "fp8": "fp8"}[raw["gemm_dtype"]]
    assert mine["device"] == "H100-SXM" and mine["device_label"] == raw["device"]
    assert set(table["dtype"]) == {"bf16", "fp8", "nvfp4"}


@pytest.mark.parametrize("root", ROOTS, ids=lambda r: "subset" if r else "installed")
def test_every_reader_has_provenance_and_positive_seconds(root):
    systems = ["h100_sxm"]
    frames = {"gemm": silicon.gemm_table(root, systems, ["trtllm"]),
              "context": silicon.context_attention_table(root, systems, ["trtllm"]),
              "generation": silicon.generation_attention_table(root, systems, ["trtllm"]),
              "mla": silicon.mla_table("generation", root, systems, ["trtllm"]),
              "moe": silicon.moe_table(root, systems, ["trtllm"]),
              "collectives": silicon.collective_table(root, systems)}
    for name, frame in frames.items():
        assert len(frame), name
        for column in silicon.PROVENANCE_COLUMNS:
            assert column in frame, (name, column)
        for column in ("system", "op_family", "framework", "version", "source_file"):
            assert frame[column].notna().all(), (name, column)
        assert (frame["time_s"] > 0).all() and (frame["time_s"] < 10).all(), name   # seconds, not ms
        provenance = frame["collection_provenance"]          # NaN: a version folder without collection_meta.yaml
        assert (provenance.isin(["collected", "legacy"]) | provenance.isna()).all(), name
    assert set(frames["collectives"]["op"]) <= {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}


def test_decode_context_is_input_plus_step_and_collective_bytes_are_elements_times_width():
    decode = silicon.generation_attention_table(SUBSET, ["h100_sxm"])
    raw = first_row(H100_DECODE)
    row = decode.iloc[0]
    assert row["context_length"] == int(raw["isl"]) + int(raw["step"])
    assert (row["heads"], row["kv_heads"], row["head_dim"]) == (int(raw["num_heads"]), int(raw["num_key_value_heads"]),
                                                                int(raw["head_dim"]))
    comm = silicon.collective_table(SUBSET)
    half = comm[comm["file_dtype"].isin(["half", "bfloat16"])]
    assert (half["message_bytes"] == 2 * half["elements"]).all()
    int8 = comm[comm["file_dtype"] == "int8"]
    assert (int8["message_bytes"] == int8["elements"]).all()
    assert set(comm["implementation"]) == {"nccl", "trtllm"}


def copy_layout(tmp_path: Path) -> Path:
    root = tmp_path / "systems"
    shutil.copytree(SUBSET, root)
    return root


@pytest.mark.parametrize("column, value, expected", [
    ("m", "abc", r"row 3, column 'm': expected a whole number >= 1, got 'abc'"),
    ("k", "0", r"row 3, column 'k': expected a whole number >= 1"),
    ("latency", "-1.5", r"row 3, column 'latency': expected a positive time in milliseconds"),
    ("latency", "", r"row 3, column 'latency'"),
])
def test_malformed_gemm_file_names_file_row_and_column(tmp_path, column, value, expected):
    root = copy_layout(tmp_path)
    path = root / H100_GEMM.relative_to(SUBSET)
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows[2][column] = value
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(silicon.SiliconFileError, match=re.escape(str(path)) + " " + expected):
        silicon.gemm_table(root)


def test_missing_column_names_file_and_column(tmp_path):
    root = copy_layout(tmp_path)
    path = root / H100_DECODE.relative_to(SUBSET)
    text = path.read_text().replace("num_key_value_heads", "kv_heads_renamed", 1)
    path.write_text(text)
    expected = re.escape(str(path)) + r": missing column\(s\) num_key_value_heads"
    with pytest.raises(silicon.SiliconFileError, match=expected):
        silicon.generation_attention_table(root)


def test_serving_runs_typed_with_concurrency_and_device():
    runs = silicon.read_serving_runs(SUBSET)
    assert len(runs) == 30
    with open(SUBSET / "silicon_sample.csv", newline="") as handle:
        raw = list(csv.DictReader(handle))
    for row, parsed in zip(raw, runs.itertuples()):
        found = re.search(r"silicon_concurrency=(\d+)", row["silicon_data_source"])
        if found:
            assert parsed.concurrency == int(found.group(1))
        else:
            assert parsed.concurrency is pd.NA
        assert parsed.ttft_s == pytest.approx(float(row["silicon_ttft_ms"]) / 1e3)
        assert parsed.tpot_s == pytest.approx(float(row["silicon_tpot_ms"]) / 1e3)
        assert parsed.input_length == int(row["isl"]) and parsed.output_length == int(row["osl"])
    assert dict(zip(runs["system"], runs["device"])) == {"h100_sxm": "H100-SXM", "b200_sxm": "B200"}
    assert set(runs["mode"]) <= {"agg", "disagg"}
    agg = runs[runs["mode"] == "agg"]
    assert agg["tp"].notna().all() and agg["decode_tp"].isna().all()


def test_serving_run_errors_name_file_row_and_column(tmp_path):
    path = tmp_path / "silicon_sample.csv"
    text = (SUBSET / "silicon_sample.csv").read_text().splitlines()
    lines = text[:1] + [re.sub(r"silicon_concurrency=\d+", "silicon_concurrency=many", text[1])] + text[2:]
    path.write_text("\n".join(lines) + "\n")
    if "silicon_concurrency=many" not in path.read_text():
        pytest.skip("the first subset row has no concurrency field")
    with pytest.raises(silicon.SiliconFileError, match=r"row 1, column 'silicon_data_source': expected "
                                                       r"silicon_concurrency=<whole number>, got"):
        silicon.read_serving_runs(path=path)
    header = text[0].split(",")
    first = next(csv.reader([text[1]]))
    first[header.index("silicon_tpot_ms")] = "0"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerow(first)
    with pytest.raises(silicon.SiliconFileError, match=r"row 1, column 'silicon_tpot_ms': expected a positive number"):
        silicon.read_serving_runs(path=path)


def test_missing_package_error_names_the_extra(monkeypatch):
    monkeypatch.setattr(silicon_package.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(silicon.SiliconDataMissing, match=re.escape("pip install llm-roofline[calibration]")):
        silicon.gemm_table()
    assert not silicon.is_installed()


def test_system_map_points_at_workbook_devices():
    from engine.hardware.specs import load_specs
    workbook = set(load_specs())
    named = {device for device in silicon.SYSTEM_DEVICES.values() if device}
    assert named <= workbook
    assert silicon.SYSTEM_DEVICES["h100_sxm"] == "H100-SXM" and silicon.SYSTEM_DEVICES["a30"] is None
    # the PCIe cards with tables that joined the workbook in issue 12 (h/newdev)
    assert (silicon.SYSTEM_DEVICES["l40s"], silicon.SYSTEM_DEVICES["rtx_pro_6000_server"],
            silicon.SYSTEM_DEVICES["b60"]) == ("L40S", "RTX-PRO-6000-Server", "Arc-Pro-B60")


@pytest.mark.skipif(not silicon.is_installed(), reason="needs the calibration extra")
def test_installed_serving_runs_all_parse():
    runs = silicon.read_serving_runs()
    assert len(runs) == 5221
    assert runs["concurrency"].notna().sum() == 5202         # 19 sources do not state a concurrency
    assert runs["device"].notna().all()                      # all six systems have a workbook device
    # every measured=<date> note is read, in both of its ISO 8601 spellings
    stated = runs["source"].str.contains("measured=")
    assert runs.loc[stated, "measured_at"].notna().all() and runs.loc[~stated, "measured_at"].isna().all()
    assert runs["source"].str.contains(r"measured=\S+T\d\d:\d\d:\d\dZ").any()
    assert runs["source"].str.contains(r"measured=\S+\.000Z").any()
