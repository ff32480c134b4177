"""`llm-roofline serve`: JSON keys the issue names, values equal to engine.serve, one-line errors."""

import json

import pytest

import engine
from engine.cli.entry import main
from engine.serving import serve

KEYS = ("ttft_s", "tpot_s", "ttft_p90_s", "tpot_p90_s", "e2e_s", "tokens_per_s", "tokens_per_s_per_device",
        "tokens_per_s_per_user")


def test_json_matches_the_python_api(capsys):
    code = main(["serve", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-70B", "--concurrency", "8",
                 "--input-len", "1024", "--output-len", "128", "--tp", "4", "--weight-dtype", "fp8", "--act-dtype",
                 "fp8", "--kv-dtype", "fp8", "--method", "realistic", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    expected = serve(engine.load_hardware("H100-SXM"), engine.load_model("meta-llama/Llama-3.1-70B"), concurrency=8,
                     input_length=1024, output_length=128, tp=4, weight_dtype="fp8", activation_dtype="fp8",
                     kv_dtype="fp8", method="realistic")
    for key in KEYS:
        assert data[key] == pytest.approx(expected.metrics[key], rel=1e-12)
    assert (data["devices"], data["tp"]) == (4, 4)
    assert data["tokens_per_s_per_device"] == pytest.approx(data["tokens_per_s"] / 4)


def test_backend_scheduling_flags_reach_serve(capsys):
    base = ["serve", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--concurrency", "4",
            "--input-len", "512", "--output-len", "64", "--backend", "sglang", "--json"]
    assert main(base + ["--mixed-prefill", "on", "--graph-latency-overlap", "0"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["serving"]["mixed_prefill"] is True and data["serving"]["graph_latency_overlap"] == 0.0
    expected = serve(engine.load_hardware("H100-SXM"), engine.load_model("meta-llama/Llama-3.1-8B"), concurrency=4,
                     input_length=512, output_length=64, backend="sglang", mixed_prefill=True, graph_latency_overlap=0.0)
    assert data["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-12)
    assert main(base) == 0      # SGLang's defaults: prefill batches alone, its fitted overlap
    data = json.loads(capsys.readouterr().out)
    assert data["serving"]["mixed_prefill"] is False and data["serving"]["graph_latency_overlap"] > 0


def test_text_output_and_requests_csv(capsys, tmp_path):
    out = tmp_path / "requests.csv"
    code = main(["serve", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--concurrency", "4",
                 "--output-len", "32", "--iteration-overhead-ms", "1.5", "--requests-csv", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "TTFT" in text and "TPOT" in text and "1.5 ms per iteration" in text
    assert out.read_text().splitlines()[0].startswith("request,client,sequence")
    assert len(out.read_text().splitlines()) == 1 + 4 * 8     # 4 clients x 8 requests each (the default)


def _run(arguments):
    """main()'s exit status: argparse exits (SystemExit) on usage errors, the engine's errors return 2."""
    try:
        return main(["serve", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", *arguments])
    except SystemExit as exit:
        return exit.code


@pytest.mark.parametrize("arguments, expected", [
    (["--concurrency", "0"], "--concurrency"),
    (["--method", "seed"], "--method"),
    (["--token-budget", "4", "--concurrency", "64", "--max-batch", "8"],
     "--token-budget 4 is less than --max-batch 8 requests x 1 token(s) each decodes per iteration: raise "
     "--token-budget to 8 or lower --max-batch to 4"),
    (["--requests-per-client", "1"], "argument --requests-per-client: expected a whole number >= 2, got 1"),
    (["--requests-per-client", "2", "--warmup-requests", "1"], "use --requests-per-client 3 or more"),
    (["--input-len", "300000"], "max_position_embeddings"),
])
def test_bad_input_is_one_line(capsys, arguments, expected):
    assert _run(arguments) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
