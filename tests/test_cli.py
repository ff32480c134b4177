"""The CLI as other tools script it: real subprocesses, JSON on stdout, one-line errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import openpyxl
import pytest

from tests.conftest import REPO


def run(*args, check=True):
    done = subprocess.run([sys.executable, "-m", "engine.cli.entry", *args], capture_output=True, text=True, cwd=REPO,
                          env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def run_json(*args):
    return json.loads(run(*args, "--json").stdout)


def assert_one_line_error(done, *fragments):
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_console_script_is_installed():
    assert shutil.which("llm-roofline", path=str(REPO / ".venv" / "bin")) or shutil.which("llm-roofline")


def test_hardware_list_and_show():
    names = [d["name"] for d in run_json("hardware", "list")]
    assert names[:3] == ["NVL-AX", "JGS", "A100-40GB-PCIe"]
    shown = run_json("hardware", "show", "A100-40GB-PCIe")
    assert shown["memory_bandwidth_bytes_per_s"] == 1.555e12
    assert shown["matrix_flops_per_s"]["bf16"] == pytest.approx(312e12, rel=5e-3)
    assert "A100-80GB-SXM" in run("hardware", "list").stdout


def test_model_show_json():
    shown = run_json("model", "show", "meta-llama/Llama-3.1-8B")
    assert shown["params_total"] == pytest.approx(8.03e9, rel=5e-3)
    assert shown["params_active"] == shown["params_total"]
    assert (shown["num_layers"], shown["hidden_size"], shown["num_attention_heads"]) == (32, 4096, 32)
    assert (shown["num_key_value_heads"], shown["head_dim"]) == (8, 128)
    assert shown["kv_cache_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    fp8 = json.loads(run("model", "show", "meta-llama/Llama-3.1-8B", "--kv-dtype", "fp8", "--json").stdout)
    assert fp8["kv_cache_bytes_per_token"] == 2 * 32 * 8 * 128


def test_gemm_json():
    out = run_json("gemm", "--hardware", "A100-40GB-PCIe", "--m", "32", "--n", "8192", "--k", "4096")
    assert out["time_s"] == pytest.approx(43.66e-6, rel=1e-3)
    assert out["flops"] == 2 * 32 * 8192 * 4096
    assert out["bytes"] == 2 * (32 * 4096 + 4096 * 8192 + 32 * 8192)
    assert out["bound"] == "memory"


def test_estimate_request_json_and_csv(tmp_path):
    csv = tmp_path / "kernels.csv"
    out = run_json("estimate", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--phase", "request",
                   "--batch", "4", "--input-len", "512", "--output-len", "64", "--csv", str(csv))
    assert set(out["phases"]) == {"prefill", "decode"}
    for key in ("ttft_s", "tpot_s", "e2e_s", "tokens_per_s"):
        assert out[key] > 0
    assert out["e2e_s"] == pytest.approx(out["ttft_s"] + 63 * out["tpot_s"], rel=1e-9)
    memory = out["memory"]
    assert {"weights_bytes", "kv_cache_bytes", "activation_bytes", "capacity_bytes", "fits"} <= set(memory)
    required = {"phase", "name", "type", "m", "k", "n", "batch", "count", "macs", "flops", "bytes", "time_s", "bound"}
    assert all(required <= set(row) for row in out["kernels"])
    for phase, totals in out["phases"].items():
        rows = [r for r in out["kernels"] if r["phase"] == phase]
        assert sum(r["count"] * r["time_s"] for r in rows) == pytest.approx(totals["time_s"], rel=1e-9)
    header = csv.read_text().splitlines()[0].split(",")
    assert {"name", "time_s", "bound"} <= set(header)
    assert len(csv.read_text().splitlines()) == len(out["kernels"]) + 1


def test_estimate_seed_method_and_dtypes():
    out = run_json("estimate", "--hardware", "NVL-AX", "--model", "meta-llama/Llama-3.1-8B", "--phase", "prefill",
                   "--input-len", "8192", "--method", "seed")
    assert sum(r["macs"] for r in out["kernels"]) == 2_336_462_209_024
    fp8 = run_json("estimate", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--phase", "decode",
                   "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--context", "2048")
    bf16 = run_json("estimate", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--phase", "decode",
                    "--context", "2048")
    assert fp8["tpot_s"] < 0.6 * bf16["tpot_s"]


@pytest.mark.parametrize("args, fragments", [
    (("hardware", "show", "Z9000"), ("Z9000", "A100-40GB-PCIe")),
    (("estimate", "--hardware", "H100-SXM", "--model", "no-such-org/no-such-model"), ("no-such-org/no-such-model",)),
    (("estimate", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-2-7b-hf", "--input-len", "8000"),
     ("max_position_embeddings",)),
    (("gemm", "--hardware", "H100-SXM", "--m", "0", "--n", "1", "--k", "1"), ("--m",)),
])
def test_bad_input_is_one_line(args, fragments):
    assert_one_line_error(run(*args, check=False), *fragments)


def test_malformed_workbook_names_the_cell(tmp_path):
    from engine.hardware.specs import default_specs_path
    book = openpyxl.load_workbook(default_specs_path())
    sheet = book["hardware"]
    column = next(c.column_letter for c in sheet[1] if c.value == "H100-SXM")
    row = next(c.row for c in sheet["A"] if c.value == "memory_bandwidth")
    sheet[f"{column}{row}"] = -5
    path = tmp_path / "bad.xlsx"
    book.save(path)
    done = run("hardware", "show", "H100-SXM", "--specs", str(path), check=False)
    assert_one_line_error(done, f"hardware!{column}{row}", "memory_bandwidth")


def test_bad_config_file_names_the_field(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": "big", "num_hidden_layers": 2}))
    done = run("model", "show", str(path), check=False)
    assert_one_line_error(done, "hidden_size")


def test_hardware_template_round_trip(tmp_path):
    path = tmp_path / "blank.xlsx"
    run("hardware", "template", str(path))
    book = openpyxl.load_workbook(path)
    assert {"hardware", "sources", "README"} <= set(book.sheetnames)
    done = run("hardware", "list", "--specs", str(path), check=False)   # blank values: a clear error
    assert_one_line_error(done, "hardware!D", "MY-DEVICE")
