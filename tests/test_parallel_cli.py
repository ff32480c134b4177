"""The parallelism and serving flags of `llm-roofline estimate`, as scripts use them."""

from __future__ import annotations

from tests.test_cli import assert_one_line_error, run, run_json

MODEL = ("--model", "meta-llama/Llama-3.1-70B")


def test_tp_json_has_devices_per_device_rates_and_collectives():
    out = run_json("estimate", "--hardware", "H100-SXM", *MODEL, "--phase", "request", "--batch", "4",
                   "--input-len", "128", "--output-len", "8", "--tp", "4", "--dp", "2")
    assert out["devices"] == 8 and out["parallelism"]["tp"] == 4
    assert out["tokens_per_s_per_device"] * 8 == out["tokens_per_s"]
    assert out["memory_total_bytes"] > 7.9 * out["memory"]["total_bytes"]
    assert out["memory"]["message"].startswith("Fits: ")
    collectives = [k for k in out["kernels"] if k["op"] == "collective"]
    assert {k["name"] for k in collectives} == {"AllReduce_embed", "AllReduce_attn", "AllReduce_ffn", "AllGather_logits"}
    assert all(k["bound"] == "communication" and k["group_size"] == 4 and k["link_bytes"] > 0 for k in collectives)


def test_devices_are_inferred_from_the_other_ways():
    out = run_json("estimate", "--hardware", "H100-SXM", *MODEL, "--phase", "decode", "--devices", "8", "--tp", "4",
                   "--pp", "2")
    assert out["devices"] == 8 and out["parallelism"]["dp"] == 1


def test_text_output_says_it_does_not_fit_and_what_would():
    done = run("estimate", "--hardware", "H100-SXM", *MODEL, "--phase", "decode")
    assert ("Does not fit on one device: meta-llama/Llama-3.1-70B in bf16 needs 141 GB of weights and one H100-SXM "
            "holds 80 GB.") in done.stdout
    assert "fewest devices that fit: 2 (tp=2, pp=1)" in done.stdout
    assert "per device" in done.stdout


def test_chunked_prefill_schedule_in_json():
    out = run_json("estimate", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--batch", "4",
                   "--input-len", "600", "--output-len", "20", "--chunk-size", "256", "--chunked-prefill")
    assert out["schedule"]["prefill_tokens"] == 2400 and out["schedule"]["decode_tokens"] == 76
    assert out["ttft_s"] < out["schedule"]["ttft_max_s"]


def test_bad_layouts_are_one_line_errors():
    assert_one_line_error(run("estimate", "--hardware", "NVL-AX", "--model", "meta-llama/Llama-3.1-8B", "--tp", "2",
                              check=False), "link_bandwidth", "NVL-AX")
    assert_one_line_error(run("estimate", "--hardware", "H100-SXM", *MODEL, "--devices", "8", check=False),
                          "ambiguous")
    assert_one_line_error(run("estimate", "--hardware", "H100-SXM", *MODEL, "--tp", "3", check=False),
                          "num_attention_heads")
    assert_one_line_error(run("estimate", "--hardware", "H100-SXM", *MODEL, "--weight-dtype", "int3", check=False),
                          "int4_g128")
