"""`llm-roofline sweep`: grids from flags and files, CSV and Parquet out, values checked against engine.estimate
run on the point alone (a device with the field changed in SI units by hand), one-line errors."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import engine
from engine.cli.entry import main
from engine.explore.grid import METRIC_COLUMNS
from tests.conftest import REPO

H100 = engine.load_hardware("H100-SXM")
LLAMA8 = engine.load_model("meta-llama/Llama-3.1-8B")
BASE = ["sweep", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--phase", "decode",
        "--input-len", "512"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def sweep(capsys, *args):
    """main() in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    try:
        status = main([*BASE, *args])
    except SystemExit as stop:          # argparse usage errors
        status = stop.code
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(capsys, *args) -> str:
    status, out, err = sweep(capsys, *args)
    assert status == 2, (out, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def decode_oracle(batch, bandwidth_gb_s=None, context=None, hardware=H100):
    """engine.results.run of one decode point; the bandwidth change done here, in B/s."""
    device = hardware if bandwidth_gb_s is None else hardware.with_changes(
        memory_bandwidth_bytes_per_s=bandwidth_gb_s * 1e9)
    return engine.estimate(device, LLAMA8, engine.Scenario(phase="decode", batch=batch, input_length=512,
                                                           context_length=context))


def test_csv_and_parquet_files_match_estimate(capsys, tmp_path):
    grid = ["--grid", "batch=1,8,64", "--grid", "memory_bandwidth=2000,3350"]
    status, out, err = sweep(capsys, *grid, "--out", str(tmp_path / "sweep.csv"))
    assert status == 0, err
    assert out == ""
    assert "6 points (0 with errors)" in err and "sweep.csv" in err
    status, _, err = sweep(capsys, *grid, "--out", str(tmp_path / "sweep.parquet"))
    assert status == 0, err
    csv = pd.read_csv(tmp_path / "sweep.csv", keep_default_na=False, na_values=[""])
    parquet = pd.read_parquet(tmp_path / "sweep.parquet")
    assert list(csv.columns) == list(parquet.columns) == ["batch", "memory_bandwidth", *METRIC_COLUMNS]
    assert csv["batch"].tolist() == parquet["batch"].tolist() == [1, 1, 8, 8, 64, 64]
    assert parquet["memory_bandwidth"].tolist() == [2000.0, 3350.0] * 3
    for frame in (csv, parquet):
        for row in (frame.iloc[2], frame.iloc[5]):     # (8, 2000) and (64, 3350)
            expected = decode_oracle(int(row["batch"]), row["memory_bandwidth"])
            assert row["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-12)
            assert row["tokens_per_s"] == pytest.approx(expected.tokens_per_s, rel=1e-12)
            assert row["energy_j"] == pytest.approx(expected.energy["request_energy_j"], rel=1e-12)
            assert row["memory_per_device_bytes"] == pytest.approx(expected.memory.total_bytes, rel=1e-12)
            assert bool(row["fits"]) == expected.memory.fits
        assert all(pd.isna(e) or e == "" for e in frame["error"])
        assert math.isnan(frame["ttft_s"][0])            # a decode step has no TTFT
    # memory bound at batch 1: twice-ish the bandwidth, about 1.675x faster
    ratio = csv["tpot_s"][0] / csv["tpot_s"][1]
    assert 1.6 < ratio <= 3350 / 2000


def test_stdout_csv_and_explicit_format(capsys, tmp_path):
    status, out, err = sweep(capsys, "--grid", "batch=2,4")
    assert status == 0
    frame = pd.read_csv(io.StringIO(out))
    assert frame["batch"].tolist() == [2, 4]
    assert frame["tpot_s"][1] == pytest.approx(decode_oracle(4).tpot_s, rel=1e-12)
    assert err.strip().splitlines() == [err.strip()] and "2 points" in err
    status, _, _ = sweep(capsys, "--grid", "batch=2,4", "--out", str(tmp_path / "table.data"), "--format", "parquet")
    assert status == 0
    assert pd.read_parquet(tmp_path / "table.data")["batch"].tolist() == [2, 4]


def swept_values(capsys, *args) -> dict:
    status, out, err = sweep(capsys, *args)
    assert status == 0, err
    frame = pd.read_csv(io.StringIO(out))
    return {c: list(dict.fromkeys(frame[c].tolist())) for c in frame.columns if c not in METRIC_COLUMNS}


@pytest.mark.parametrize("entry, field, values", [
    ("batch=1:64:4", "batch", [1, 22, 43, 64]),                          # linear, ends included
    ("batch=log:1:1024:11", "batch", [2 ** i for i in range(11)]),       # geometric, integral
    ("batch=log:1:4:5", "batch", [1, 2, 3, 4]),                          # 1, 1.41, 2, 2.83, 4 rounded, deduplicated
    ("batch=1,2,8:32:2", "batch", [1, 2, 8, 32]),                        # values and ranges mixed
    ("memory_bandwidth=1000:2000:3", "memory_bandwidth", [1000.0, 1500.0, 2000.0]),
    ("compute_scale=log:0.25:4:5", "compute_scale", [0.25, 0.5, 1.0, 2.0, 4.0]),
    ("clock=1.5,1.98", "clock", [1.5, 1.98]),
])
def test_ranges_expand_to_the_right_values(capsys, entry, field, values):
    got = swept_values(capsys, "--grid", entry)
    assert got[field] == values
    assert all(type(v) is type(values[0]) for v in got[field])


def test_none_context_text_fields_and_device_list(capsys):
    status, out, err = sweep(capsys, "--grid", "context_length=none,4096", "--grid", "device=H100-SXM,B200",
                             "--grid", "kv_dtype=bf16,fp8")
    assert status == 0, err
    frame = pd.read_csv(io.StringIO(out), keep_default_na=False, na_values=[""])
    assert len(frame) == 8 and frame["device"].tolist()[:4] == ["H100-SXM", "H100-SXM", "B200", "B200"]
    none_row = frame.iloc[0]                                              # context none: the decode context is 512
    assert pd.isna(none_row["context_length"]) and none_row["kv_dtype"] == "bf16"
    assert none_row["tpot_s"] == pytest.approx(decode_oracle(1).tpot_s, rel=1e-12)
    long_row = frame[(frame["context_length"] == 4096) & (frame["device"] == "B200") & (frame["kv_dtype"] == "fp8")]
    b200 = engine.load_hardware("B200")
    expected = engine.estimate(b200, LLAMA8, engine.Scenario(phase="decode", input_length=512, context_length=4096,
                                                             kv_dtype="fp8"))
    assert long_row["tpot_s"].item() == pytest.approx(expected.tpot_s, rel=1e-12)
    assert long_row["energy_j"].item() == pytest.approx(expected.energy["request_energy_j"], rel=1e-9)


def test_grid_file(capsys, tmp_path):
    path = tmp_path / "grid.json"
    path.write_text(json.dumps({"batch": [1, 4], "memory_bandwidth": "log:1000:4000:3",
                                "context_length": [None, 2048]}))
    status, out, err = sweep(capsys, "--grid-file", str(path), "--grid", "compute_scale=1,2")
    assert status == 0, err
    frame = pd.read_csv(io.StringIO(out))
    assert list(frame.columns[:4]) == ["batch", "memory_bandwidth", "context_length", "compute_scale"]
    assert len(frame) == 2 * 3 * 2 * 2
    assert list(dict.fromkeys(frame["memory_bandwidth"])) == [1000.0, 2000.0, 4000.0]
    row = frame[(frame["batch"] == 4) & (frame["memory_bandwidth"] == 2000) & (frame["context_length"] == 2048)
                & (frame["compute_scale"] == 1)]
    assert row["tpot_s"].item() == pytest.approx(decode_oracle(4, 2000, 2048).tpot_s, rel=1e-12)


def test_points_that_cannot_run_keep_the_sweep_going(capsys):
    status, out, err = sweep(capsys, "--grid", "context_length=1024,200000")
    assert status == 0
    frame = pd.read_csv(io.StringIO(out), keep_default_na=False)
    assert frame["error"][0] == "" and "max_position_embeddings" in frame["error"][1]
    assert frame["tpot_s"][1] == ""                                      # NaN metrics: empty cells
    assert "2 points (1 with errors)" in err and "max_position_embeddings" in err


def test_chunks_in_process_and_on_dask_give_the_same_file(capsys, tmp_path):
    grid = ["--grid", "batch=1,3,64", "--grid", "device=H100-SXM,B200", "--grid", "context_length=4096,200000"]
    outputs = {}
    for name, extra in (("plain", []), ("chunked", ["--chunk-points", "5"]),
                        ("dask", ["--dask", "local", "--chunk-points", "4"])):
        path = tmp_path / f"{name}.csv"
        status, _, err = sweep(capsys, *grid, "--out", str(path), *extra)
        assert status == 0, err
        assert "12 points (6 with errors)" in err
        outputs[name] = path.read_bytes()
    assert outputs["chunked"] == outputs["plain"]
    assert outputs["dask"] == outputs["plain"]


@pytest.mark.parametrize("args, fragments", [
    (["--grid", "bandwidth=1,2"], ("--grid bandwidth=1,2", "cannot sweep 'bandwidth'")),
    (["--grid", "batch=1,x"], ("--grid batch=1,x", "'batch'", "whole numbers")),
    (["--grid", "batch=1.5"], ("'batch'", "whole numbers")),
    (["--grid", "batch=1:10"], ("'batch'", "start:stop:count")),
    (["--grid", "batch=log:0:10:3"], ("'batch'", "> 0")),
    (["--grid", "batch=1:10:1"], ("'batch'", "count")),
    (["--grid", "memory_bandwidth=a:b:3"], ("'memory_bandwidth'", "numbers")),
    (["--grid", "phase=warp"], ("'phase'", "prefill")),
    (["--grid", "kv_dtype=int3"], ("'kv_dtype'", "int3")),
    (["--grid", "device=H100-SXM:2"], ()),   # a text field: no range syntax, an unknown device instead
    (["--grid", "batch"], ("--grid", "FIELD=VALUES")),
    (["--grid", "batch=1", "--grid", "batch=2"], ("'batch'", "twice")),
    (["--grid", "memory_bandwidth=-5"], ("memory_bandwidth",)),
    (["--grid", "compute_scale=0"], ("compute_scale",)),
    (["--grid", "device=NoSuchChip"], ("NoSuchChip",)),
    (["--grid", "compute_scale=1", "--grid", "matrix_tflops=100"], ("not both",)),
    (["--grid", "batch=1", "--out", "table.txt"], ("--out", ".parquet")),
    (["--grid", "batch=1", "--format", "parquet"], ("--format parquet", "--out")),
    (["--grid", "batch=1", "--chunk-points", "0"], ("--chunk-points",)),
    ([], ("--grid",)),
])
def test_bad_input_is_one_line_naming_the_field(capsys, args, fragments):
    line = one_line_error(capsys, *args)
    for fragment in fragments:
        assert fragment in line, line
    if "device=H100-SXM:2" in args:
        assert "H100-SXM:2" in line


@pytest.mark.parametrize("content, fragments", [
    ({"batch": ["x"]}, ("--grid-file", "'batch'", "whole numbers")),
    ({"batch": []}, ("--grid-file", "'batch'", "non-empty")),
    ({"batch": [True]}, ("'batch'",)),
    ({"watts": [1]}, ("cannot sweep 'watts'",)),
    ([1, 2], ("--grid-file", "JSON object")),
])
def test_bad_grid_file_is_one_line(capsys, tmp_path, content, fragments):
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(content))
    line = one_line_error(capsys, "--grid-file", str(path))
    for fragment in fragments:
        assert fragment in line, line


def test_missing_model_or_device_is_one_line(capsys):
    capsys.readouterr()
    assert main(["sweep", "--model", "meta-llama/Llama-3.1-8B", "--grid", "batch=1"]) == 2
    assert "--hardware" in capsys.readouterr().err
    assert main(["sweep", "--hardware", "H100-SXM", "--grid", "batch=1"]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["sweep", "--grid", "batch=1,2", "--grid", "device=H100-SXM",
                 "--grid", "model=meta-llama/Llama-3.1-8B,Qwen/Qwen3-8B"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert frame["model"].tolist() == ["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-8B"] * 2
    assert np.isfinite(frame["tpot_s"]).all() and (frame["tpot_s"] > 0).all()


def test_console_script_subprocess(tmp_path):
    done = subprocess.run([sys.executable, "-m", "engine.cli.entry", *BASE, "--grid", "batch=1,2", "--tp", "2"],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
                          env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(io.StringIO(done.stdout))
    assert frame["devices"].tolist() == [2, 2]
    expected = engine.estimate(H100, LLAMA8, engine.Scenario(phase="decode", batch=2, input_length=512, tp=2))
    assert frame["tpot_s"][1] == pytest.approx(expected.tpot_s, rel=1e-12)
