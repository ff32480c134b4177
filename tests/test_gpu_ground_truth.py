"""GPU ground truth: the measuring harness (calibration/measure_gpu.py, run here on the CPU) and how
attention and whole decode steps are scored (engine/calibration/scenarios.py), against hand arithmetic."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.calibration import measurements as calibration
from engine.estimators.realistic import DEFAULT_CONSTANTS

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parent.parent
HARNESS = REPO / "calibration" / "measure_gpu.py"
LLAMA_8B_PARAMETERS = 8_030_261_248          # published parameter count of Llama-3.1-8B
LLAMA_8B_EMBEDDING = 128_256 * 4096          # the embedding table: one row per token is read in a step


def _load(name: str):
    sys.path.insert(0, str(HARNESS.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, HARNESS.parent / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module                    # dataclasses look their module up
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(HARNESS.parent))


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gt") / "cpu.csv"
    run = subprocess.run([sys.executable, str(HARNESS), "--device", "cpu", "--quick", "--hardware", "H200-SXM",
                          "--kinds", "attention,gemm,elementwise", "--repeats", "2", "--warmup", "1", "--out", str(out)],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert run.returncode == 0, run.stderr
    return out


def test_harness_writes_a_file_the_engine_loads_with_its_provenance(quick_run):
    metadata = calibration.read_metadata(quick_run)
    assert metadata["hardware"] == "H200-SXM"
    assert metadata["torch"] == torch.__version__
    assert "perf_counter" in metadata["timing"] and "median of 2" in metadata["timing"]
    assert float(metadata["copy_bandwidth_tb_s"].split()[0]) > 0
    assert float(metadata["matmul_tflops"].split()[0]) > 0
    measured = calibration.load_measurements(quick_run)
    assert set(measured["kind"]) == {"gemm", "rmsnorm", "residual_add", "swiglu", "attention_prefill",
                                     "attention_decode"}
    assert (measured["measured_s"] > 0).all() and (measured["device"] == "H200-SXM").all()


def test_harness_gemm_shapes_follow_the_model_config(quick_run):
    """Llama-3.1-8B at tp 8: 32/8 query heads + 2 x 8/8 KV heads of 128; up+gate 2 x 14336 / 8; down 14336 / 8."""
    gemm = calibration.load_measurements(quick_run).query("kind == 'gemm'").set_index(["op", "tokens"])
    assert gemm.loc[("attn_qkv", 16), ["m", "n", "k"]].tolist() == [16, (4 + 2) * 128, 4096]
    assert gemm.loc[("attn_o", 1), ["n", "k"]].tolist() == [4096, 4 * 128]
    assert gemm.loc[("mlp_up_proj", 1), ["n", "k"]].tolist() == [2 * 14336 / 8, 4096]
    assert gemm.loc[("mlp_down_proj", 16), ["n", "k"]].tolist() == [4096, 14336 / 8]


def test_every_method_scores_the_harness_output(quick_run, devices):
    tidy = calibration.predict(calibration.load_measurements(quick_run), devices)
    scored = tidy[tidy["method"] != "seed"]
    assert np.isfinite(scored["predicted_s"]).all() and (scored["predicted_s"] > 0).all()
    seed = tidy[tidy["method"] == "seed"]
    assert seed.loc[seed["kind"] == "gemm", "predicted_s"].notna().all()
    assert set(calibration.family(tidy["kind"])) == {"gemm", "elementwise", "attention"}


def _rows(**fields) -> pd.DataFrame:
    base = dict(device="H200-SXM", model="meta-llama/Llama-3.1-8B", op="x", tokens=1, tp=1, m=np.nan, n=np.nan,
                k=np.nan, dtype="bf16", measured_s=1e-3)
    return pd.DataFrame([{**base, **fields}])


def test_decode_step_roofline_is_weights_and_kv_over_bandwidth(devices):
    """Batch 1 at 1023 cached tokens: every weight but the embedding table once, 1024 tokens of K and V per layer."""
    hw = devices["H200-SXM"]
    row = _rows(kind="decode_step", batch=1, context=1023)
    predicted = calibration.predict(row, devices, ("roofline",))["predicted_s"].iloc[0]
    weights = 2 * (LLAMA_8B_PARAMETERS - LLAMA_8B_EMBEDDING)
    kv = 1024 * 32 * 2 * 8 * 128 * 2                       # tokens x layers x (K, V) x kv heads x head dim x 2 B
    by_hand = (weights + kv) / hw.memory_bandwidth_bytes_per_s
    assert by_hand <= predicted <= by_hand * 1.002          # activations add a few hundred kB


def test_decode_attention_streams_the_kv_cache(devices):
    """One layer, batch 8, 8191 cached tokens + the new one: 8 x 8192 tokens x (K, V) x 8 heads x 128 x 2 B
    streamed, plus (roofline: unfused kernels) q.K and p.V, 8 x 32 heads x 8192 x 128 MACs each."""
    hw = devices["H200-SXM"]
    row = _rows(kind="attention_decode", batch=8, context=8191, tokens=8)
    tidy = calibration.predict(row, devices, ("roofline", "realistic"))
    stream = 8 * 8192 * 2 * 8 * 128 * 2 / hw.memory_bandwidth_bytes_per_s
    products = 2 * 2 * (8 * 32 * 8192 * 128) / hw.matrix_flops_per_s("bf16")
    roofline, realistic = tidy.set_index("method")["predicted_s"][["roofline", "realistic"]]
    assert stream + products <= roofline <= (stream + products) * 1.005     # + the softmax
    # at most 1.25x the stream at the achievable fraction: the decode form's floor (15,480 cycles), wide-KV CTA cycles
    # and split-KV reduction (~15 us here) on top of the stream at 0.933 of the peak (was 1.2x before its cap)
    assert roofline < realistic <= stream / hw.achievable_memory_bandwidth_fraction * 1.25


def test_prefill_attention_counts_causal_scores(devices):
    """Batch 2 x 1024 tokens, 32 heads of 128: two products of b*h*s(s+1)/2*d MACs each, compute bound."""
    hw = devices["H200-SXM"]
    row = _rows(kind="attention_prefill", batch=2, context=1024, tokens=2048)
    predicted = calibration.predict(row, devices, ("roofline",))["predicted_s"].iloc[0]
    macs = 2 * 32 * (1024 * 1025 // 2) * 128
    matrix = 2 * (2 * macs) / hw.matrix_flops_per_s("bf16")
    assert matrix <= predicted <= matrix * 1.5              # + the softmax's vector work


def test_scenario_rows_are_checked_with_the_place_named(tmp_path):
    header = "hardware,model,op,kind,tokens,tp,m,n,k,dtype,batch,context,median_ms\n"
    cases = {
        "H200-SXM,meta-llama/Llama-3.1-8B,x,flash,1,1,,,,bf16,1,64,0.1\n": r"row 1: kind 'flash' is not one of",
        "H200-SXM,acme/unknown,x,decode_step,1,1,,,,bf16,1,64,0.1\n": r"row 1 \(decode_step\): model 'acme/unknown'",
        "H200-SXM,meta-llama/Llama-3.1-8B,x,decode_step,1,1,,,,bf16,,64,0.1\n": r"row 1 \(decode_step\): batch must",
        "H200-SXM,meta-llama/Llama-3.1-8B,x,decode_step,1,1,,,,bf16,1,64,-2\n": r"row 1: median_ms must be a positive number, got -2",
        "Z9,meta-llama/Llama-3.1-8B,x,decode_step,1,1,,,,bf16,1,64,1\n": r"unknown hardware \['Z9'\]",
        "H200-SXM,meta-llama/Llama-3.1-8B,x,gemm,1,1,16,,4096,bf16,,,0.1\n": r"row 1 \(gemm\): n must be a number >= 1",
    }
    for index, (line, message) in enumerate(cases.items()):
        path = tmp_path / f"bad{index}.csv"
        path.write_text(header + line)
        with pytest.raises(ValueError, match=f"bad{index}.csv.*{message}" if "hardware" not in message else message):
            calibration.load_measurements(path)


PROVENANCE = ("hardware", "gpu", "driver", "cuda", "torch", "timing", "date")


def provenance_problems(path: Path) -> list[str]:
    """What keeps a file from counting as GPU ground truth: missing provenance, a CPU run, no rows."""
    metadata = calibration.read_metadata(path)
    problems = [f"no '{key}' line" for key in PROVENANCE if key not in metadata]
    if "none" in metadata.get("gpu", "none"):
        problems.append("measured on a CPU")
    if len(calibration.load_measurements(path)) == 0:
        problems.append("no measurements")
    return problems


def as_if_measured_on_a_gpu(cpu_file: Path, out: Path, drop: tuple[str, ...] = ()) -> Path:
    """The harness's CPU file with the header lines a GPU run writes (environment() on CUDA)."""
    gpu = {"gpu": "NVIDIA H200 (132 SMs, 60 MiB L2, 139.8 GiB)", "cuda": "12.8", "driver": "570.124.06"}
    lines = []
    for line in cpu_file.read_text(encoding="utf-8").splitlines(keepends=True):
        key = line[2:].split(":", 1)[0] if line.startswith("# ") else None
        if key in drop:
            continue
        lines.append(f"# gpu: {gpu['gpu']}\n# cuda: {gpu['cuda']}\n# driver: {gpu['driver']}\n" if key == "gpu"
                     else line)
    out.write_text("".join(lines), encoding="utf-8")
    return out


def test_provenance_check_accepts_a_gpu_file_and_names_what_a_file_lacks(quick_run, tmp_path):
    assert provenance_problems(as_if_measured_on_a_gpu(quick_run, tmp_path / "gpu.csv")) == []
    assert provenance_problems(quick_run) == ["no 'driver' line", "no 'cuda' line", "measured on a CPU"]
    undated = as_if_measured_on_a_gpu(quick_run, tmp_path / "undated.csv", drop=("date", "torch"))
    assert provenance_problems(undated) == ["no 'torch' line", "no 'date' line"]


def test_measured_files_in_the_repo_load_and_carry_their_provenance():
    """Whatever ground truth is recorded under calibration/measured/ names its GPU, software and timing
    (the check itself is tested on generated files above)."""
    paths = calibration.measured_paths()
    if not paths:
        pytest.skip(f"no ground truth recorded under {calibration.MEASURED_DIR} yet")
    assert {path.name: provenance_problems(path) for path in paths} == {path.name: [] for path in paths}


H100_FILE = calibration.MEASURED_DIR / "H100-SXM-2026-11-27.csv"
# out-of-sample floors on the recorded H100 file (constants fitted on Vidur's and AIConfigurator's tables, never on
# it; docs/accuracy.md): (method, kind, dtype) -> (median |error| at most, p90 |error| at most, bias between);
# measured 11.6% / 23.5% GEMM bf16, bias -7.2% (h/gemm2's model condition: the device's kernel_latency, bf16
# efficiency 1.0, no split-K cycles, the chip-level power cap: bf16 as before it), 49.4% prefill attention (a known
# miss), 16.9% whole prefill steps (with the tables' bf16 efficiency 1.09 in a model the prefill steps are 22.2%,
# docs/accuracy.md); the roofline is 30-63% optimistic on every kind.
# Decode attention and whole decode steps re-measured with the kernel-generation decode form shipped (fitted on
# TensorRT-LLM's XQA tables; this file times PyTorch SDPA, a different kernel): decode attention 10.3% / 28.8%,
# bias -10.3% -> 11.6% / 24.9%, -4.5%; graph-replayed decode steps 14.6% / 18.1%, -14.6% -> 13.1% / 16.0%, -13.1%.
# The decode attention band breaks at 15% less stream efficiency (bias +3.2%) or 15% more floor cycles (median
# 12.1%, p90 28.5%) or split cycles (p90 27.1%); 15% more or less of the wide-CTA or pair constants stays inside.
# Re-measured with the decode form's fifth step (stream cap 0.933 of peak, wide groups' fragments, Hopper's 8-bit
# matrix kernel; docs/accuracy.md): decode attention 11.6% / 24.9%, -4.5% -> 10.0% / 26.2%, +1.5%; decode steps
# 13.1% / 16.0%, -13.1% -> 12.6% / 15.5%, -12.6%. The band breaks at a 15% lower stream cap (median 16.6%), 15% more
# floor cycles (p90 27.9%), split cycles (bias +1.9%) or wide-CTA cycles (p90 27.1%).
# Re-recorded 2026-11-27 with the lead spin kernel (calibration/measure_timing.py LEAD_CYCLES: the host is always
# ahead of the GPU, so no call is timed waiting for its own dispatch), two runs merged per item by
# calibration/merge_runs.py (the runs agree within 2.3% at p90, test below). Against the 2026-11-26 file:
# GEMM bf16 11.6% / 23.5%, -7.2% -> 12.4% / 19.4%, -3.9% (the old file timed host gaps into short GEMMs);
# fp8 12.4% / 24.7%, +1.2% -> 13.6% / 23.0%, +5.8%; decode attention 10.0% / 26.2%, +1.5% -> 8.7% / 18.4%, +3.0%;
# prefill attention 51.1% / 72.5% -> 50.6% / 66.8%; decode steps (graph) 12.6% / 15.5% -> 12.7% / 15.7%;
# prefill steps 16.9% / 22.1% -> 15.6% / 20.4%.
H100_FLOORS = {
    ("realistic", "gemm", "bf16"): (0.13, 0.21, (-0.06, -0.02)),       # 12.4% / 19.4%, -3.9%
    ("realistic", "gemm", "fp8"): (0.145, 0.25, (0.04, 0.075)),        # 13.6% / 23.0%, +5.8%
    # 8.7% / 18.4%, +3.0% -> 7.0% / 13.8%, -0.9% with h/dattn5's decode stream (per-pair stream time added to the
    # HBM stream's, the split's ramp in HBM bytes per core cycle, Hopper's 8-bit MHA conversion) -> 6.7% / 16.9%, -0.9%
    # with session 21's monotone split (decode_split.py: short split decodes on H100 take the cap's time; H200 6.0% /
    # 21.2% -> 6.2% / 19.4%)
    ("realistic", "attention_decode", "bf16"): (0.08, 0.18, (-0.02, 0.01)),
    # 50.6% / 66.8% -> 55.3% / 71.6%, +55.3% with h/kern6's prefill form (the softmax's per-score vector work, fitted
    # on TensorRT-LLM's context kernel, which runs these bf16 prompts slower than SDPA: a known miss)
    ("realistic", "attention_prefill", "bf16"): (0.57, 0.74, (0.53, 0.57)),
    # 31.8% / 51.1%, +31.8% -> 25.9% / 41.9%, +25.9% with session 21's norm form (gamma from the cache, refitted)
    ("realistic", "rmsnorm", "bf16"): (0.28, 0.44, (0.24, 0.28)),
    ("realistic", "swiglu", "bf16"): (0.20, 3.0, (-0.17, -0.12)),
    ("realistic", "residual_add", "bf16"): (0.32, 0.45, (-0.29, -0.23)),
    ("realistic-graph", "decode_step", "bf16"): (0.14, 0.17, (-0.14, -0.12)),   # 12.7% / 15.7%, -12.7%
    ("realistic-graph", "prefill_step", "bf16"): (0.17, 0.22, (-0.17, -0.14)),  # 15.6% / 20.4%, -15.6%
}


H200_FILE = calibration.MEASURED_DIR / "H200-SXM-2026-11-27.csv"
# the same harness on an H200 (141 GB HBM3e, 4.8 TB/s): measured 11.9% / 21.0% GEMM bf16, bias -3.8%, 51.9% prefill
# attention (the same known miss), 15.9% whole prefill steps (docs/accuracy.md). With the kernel-generation decode
# form: decode attention 8.4% / 22.2%, -8.4% -> 10.3% / 29.1%, -0.5%; graph-replayed decode steps 17.4% / 21.8%,
# -17.4% -> 15.0% / 19.7%, -15.0%. The decode attention band breaks at 15% less stream efficiency (bias +6.3%,
# p90 34.2%) or 15% more floor cycles (p90 30.8%) or wide-CTA cycles (p90 33.0%). Fifth step (as H100's): decode
# attention 10.3% / 29.1%, -0.5% -> 9.8% / 31.3%, +4.5%; decode steps 15.0% / 19.7% -> 15.0% / 19.4%, -15.0%. The
# band breaks at a 15% lower stream cap (median 17.2%), 15% more floor cycles (bias +6.2%), split cycles (+5.7%) or
# wide-CTA cycles (p90 34.0%).
# Re-recorded 2026-11-27 as the H100 (lead spin kernel, two runs merged; they agree within 2.2% at p90): GEMM bf16
# 11.9% / 21.0%, -3.8% -> 13.1% / 19.7%, -1.0%; fp8 14.4% / 26.0%, -2.3% -> 16.1% / 25.2%, +6.8%; decode attention
# 9.8% / 31.3%, +4.5% -> 7.9% / 23.1%, +4.9%; prefill attention 52.9% / 71.7% -> 50.8% / 69.8%; decode steps
# (graph) 15.0% / 19.4% -> 15.0% / 19.3%; prefill steps 15.9% / 20.9% -> 17.0% / 21.4%.
H200_FLOORS = {
    ("realistic", "gemm", "bf16"): (0.14, 0.21, (-0.03, 0.01)),        # 13.1% / 19.7%, -1.0%
    ("realistic", "gemm", "fp8"): (0.17, 0.27, (0.05, 0.085)),         # 16.1% / 25.2%, +6.8%
    # 7.9% / 23.1%, +4.9% -> 5.8% / 20.9%, +2.9% with h/dattn5's decode stream
    ("realistic", "attention_decode", "bf16"): (0.07, 0.23, (0.02, 0.045)),
    # 50.8% / 69.8% -> 55.4% / 74.8%, +55.4% with h/kern6's prefill form (as H100's)
    ("realistic", "attention_prefill", "bf16"): (0.57, 0.77, (0.53, 0.57)),
    ("realistic-graph", "decode_step", "bf16"): (0.16, 0.21, (-0.16, -0.14)),   # 15.0% / 19.3%, -15.0%
    ("realistic-graph", "prefill_step", "bf16"): (0.18, 0.23, (-0.18, -0.15)),  # 17.0% / 21.4%, -17.0%
}


def test_the_recorded_h100_file_is_gpu_ground_truth():
    """The file recorded on an H100 (not a generated one): provenance complete, every kind measured."""
    assert H100_FILE in calibration.measured_paths()
    assert provenance_problems(H100_FILE) == []
    metadata = calibration.read_metadata(H100_FILE)
    assert metadata["hardware"] == "H100-SXM" and "H100" in metadata["gpu"] and "torch.cuda.Event" in metadata["timing"]
    measured = calibration.load_measurements(H100_FILE)
    assert len(measured) == 719 and (measured["device"] == "H100-SXM").all()
    assert set(measured["kind"]) == set(calibration.ALL_KINDS)


def test_the_recorded_h200_file_is_gpu_ground_truth():
    assert provenance_problems(H200_FILE) == []
    metadata = calibration.read_metadata(H200_FILE)
    assert metadata["hardware"] == "H200-SXM" and "H200" in metadata["gpu"]
    measured = calibration.load_measurements(H200_FILE)
    assert len(measured) == 720 and (measured["device"] == "H200-SXM").all()
    assert set(measured["kind"]) == set(calibration.ALL_KINDS)


@pytest.mark.parametrize("path, floors_by_kind", [(H100_FILE, H100_FLOORS), (H200_FILE, H200_FLOORS)],
                         ids=["H100", "H200"])
def test_each_recorded_gpu_file_scores_within_its_out_of_sample_floors(devices, path, floors_by_kind):
    from tests.test_calibration_floors import floor_violations

    measured = calibration.load_measurements(path)
    steps = measured[measured["kind"].str.endswith("_step")]
    # the files time bare GEMMs (fp8: torch._scaled_mm on pre-quantized inputs): no activation-quantize kernel
    bare = replace(DEFAULT_CONSTANTS, gemm_quantize_latency_s={})
    tidy = pd.concat([calibration.predict(measured, devices, ("roofline", "realistic"), bare),
                      calibration.predict(steps, devices, ("realistic-graph",))], ignore_index=True)
    floors = pd.DataFrame([{"method": method, "kind": kind, "dtype": dtype, "median_abs_error_max": median,
                            "p90_abs_error_max": p90, "bias_min": low, "bias_max": high}
                           for (method, kind, dtype), (median, p90, (low, high)) in floors_by_kind.items()])
    floors = pd.concat([floors, pd.DataFrame({"method": "roofline", "kind": list(calibration.ALL_KINDS),
                                              "bias_max": -0.30})], ignore_index=True)
    assert floor_violations(tidy, floors) == []


def test_ceilings_keep_four_significant_digits_however_small():
    """A CPU's bf16 matmul: 2 x 512^3 FLOP in 10 s is 2.684e-5 TFLOP/s, not "0.0"; an H200's copy of
    1 GiB read and written in 0.5 ms is 4.295 TB/s."""
    fields = _load("measure_timing").ceiling_fields(1 << 30, 0.5e-3, 512, 10.0, "bfloat16")
    assert fields["matmul_tflops"] == "2.684e-05 (512^3 bfloat16, random data)"
    assert float(fields["copy_bandwidth_tb_s"].split()[0]) == pytest.approx(2 * 2**30 / 0.5e-3 / 1e12, rel=1e-3)


def test_measured_paths_lists_csv_files_only(tmp_path):
    (tmp_path / "b.csv").write_text("x")
    (tmp_path / "a.csv").write_text("x")
    (tmp_path / "notes.md").write_text("x")
    assert [p.name for p in calibration.measured_paths(tmp_path)] == ["a.csv", "b.csv"]
    assert calibration.measured_paths(tmp_path / "missing") == []


def test_plan_shapes_of_llama_70b_by_hand():
    plan = _load("measure_plan")
    items = {(i.op, i.tp): i for i in plan.gemm_items("meta-llama/Llama-3.1-70B", (1, 8), (64,))}
    assert (items[("attn_qkv", 8)].n, items[("attn_qkv", 8)].k) == ((64 // 8 + 2 * 1) * 128, 8192)
    assert (items[("mlp_down_proj", 8)].n, items[("mlp_down_proj", 8)].k) == (8192, 28672 // 8)
    assert (items[("lm_head", 1)].n, items[("lm_head", 1)].k) == (128256, 8192)
    assert ("lm_head", 8) not in items
    with pytest.raises(ValueError, match="unknown kind group"):
        plan.build(["gemms"])


def test_decode_step_callable_runs_a_whole_model_step_on_cpu():
    """The harness's decode step (tiny config, CPU): one token per sequence, logits over the vocabulary."""
    harness = _load("measure_gpu")
    ops = harness.Ops("cpu", torch.float32, compile_elementwise=False)
    tiny = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
            "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 97, "rms_norm_eps": 1e-5}
    step, implementation = ops.decode_step("tiny", tiny, batch=3, context=20)
    logits = step()
    assert logits.shape == (3, 1, 97) and torch.isfinite(logits).all()
    assert "torch_llama" in implementation
    timing = harness.Timer("cpu", repeats=3, warmup=1)(step)
    assert 0 < timing.p10_ms <= timing.median_ms <= timing.p90_ms and timing.repeats == 3


def test_prefill_step_roofline_is_at_least_the_weight_flops(devices):
    """Batch 1 x 1024 tokens of Llama-3.1-8B: every layer's 2 FLOPs per weight per token plus causal attention
    (compute bound on an H200), and the LM head on the last token only (memory bound: its weights streamed once)."""
    hw = devices["H200-SXM"]
    row = _rows(kind="prefill_step", batch=1, context=1024, tokens=1024)
    predicted = calibration.predict(row, devices, ("roofline",))["predicted_s"].iloc[0]
    layer_weights = LLAMA_8B_PARAMETERS - 2 * LLAMA_8B_EMBEDDING          # embedding table and LM head aside
    linear = 2 * layer_weights * 1024
    attention = 32 * 2 * 2 * 32 * (1024 * 1025 // 2) * 128                 # layers x 2 products x causal MACs
    head = 2 * LLAMA_8B_EMBEDDING / hw.memory_bandwidth_bytes_per_s         # bf16 LM head read for one token
    by_hand = (linear + attention) / hw.matrix_flops_per_s("bf16") + head
    assert by_hand <= predicted <= by_hand * 1.12    # + norms, residual adds, SwiGLU (memory bound at 1k tokens)


def test_plan_fp8_gemms_and_prefill_steps():
    plan = _load("measure_plan")
    fp8 = plan.fp8_gemm_items("meta-llama/Llama-3.1-8B", (8,), (16,))
    assert {item.dtype for item in fp8} == {"fp8"} and {item.m for item in fp8} == {16}
    steps = {(i.batch, i.context): i for i in plan.step_items({"m": ((4, 1024),)}, "prefill_step")}
    assert steps[(4, 1024)].tokens == 4096 and steps[(4, 1024)].kind == "prefill_step"


def test_prefill_step_callable_returns_last_token_logits_on_cpu():
    harness = _load("measure_gpu")
    ops = harness.Ops("cpu", torch.float32, compile_elementwise=False)
    tiny = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
            "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 97, "rms_norm_eps": 1e-5}
    step, implementation = ops.prefill_step("tiny", tiny, batch=2, length=16)
    logits = step()
    assert logits.shape == (2, 1, 97) and torch.isfinite(logits).all() and "prefill" in implementation
