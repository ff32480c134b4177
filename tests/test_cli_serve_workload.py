"""`llm-roofline serve --workload ... --draft-model/--mtp-layers ...`: presets and speculative decoding from the
command line give engine.serve's numbers; explicit lengths win over a preset; bad flags are one line."""

import json

import pytest

import engine
from engine.cli.entry import main
from engine.serving import SpeculativeDecoding, serve


def _json(capsys, *arguments):
    code = main(["serve", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--concurrency", "4",
                 "--method", "roofline", "--json", *arguments])
    assert code == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("workload, lengths", [("chat", (1024, 256)), ("rag", (8192, 256)), ("code", (2048, 1024)),
                                               ("reasoning", (1024, 8192))])
def test_workload_presets_set_the_lengths(capsys, workload, lengths):
    data = _json(capsys, "--workload", workload, "--requests-per-client", "2")
    assert (data["serving"]["input_length"], data["serving"]["output_length"]) == lengths


def test_explicit_lengths_win_over_the_preset(capsys):
    data = _json(capsys, "--workload", "rag", "--output-len", "32", "--requests-per-client", "2")
    assert (data["serving"]["input_length"], data["serving"]["output_length"]) == (8192, 32)
    data = _json(capsys, "--input-len", "300", "--output-len", "16", "--requests-per-client", "2")
    assert (data["serving"]["input_length"], data["serving"]["output_length"]) == (300, 16)


def test_draft_model_flags_match_the_python_api(capsys):
    data = _json(capsys, "--input-len", "512", "--output-len", "64", "--draft-model", "meta-llama/Llama-3.1-8B",
                 "--draft-tokens", "2", "--acceptance-rate", "0.8")
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    expected = serve(engine.load_hardware("H100-SXM"), model, concurrency=4, input_length=512, output_length=64,
                     method="roofline", speculative=SpeculativeDecoding(draft_model=model, draft_tokens=2,
                                                                        acceptance_rate=0.8))
    assert data["tpot_s"] == pytest.approx(expected.tpot_s, rel=1e-12)
    assert data["serving"]["speculative"] == {"draft_model": "meta-llama/Llama-3.1-8B", "mtp_layers": None,
                                              "draft_tokens": 2, "acceptance_rate": 0.8, "acceptance_rates": None,
                                              "draft_tp": None}
    assert any("2.44 tokens per step" in note for note in data["notes"])     # 1 + 0.8 + 0.64


def test_mtp_layers_and_text_output(capsys):
    code = main(["serve", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--concurrency", "2",
                 "--output-len", "32", "--mtp-layers", "1", "--draft-tokens", "1", "--acceptance-rate", "1"])
    assert code == 0
    assert "1 MTP layer(s), 1 drafted tokens per step, acceptance rate 1: 2 tokens per step" in capsys.readouterr().out


def _run(arguments):
    try:
        return main(["serve", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", *arguments])
    except SystemExit as exit:
        return exit.code


@pytest.mark.parametrize("arguments, expected", [
    (["--workload", "poetry"], "--workload"),
    (["--acceptance-rate", "1.5", "--mtp-layers", "1"], "--acceptance-rate"),
    (["--draft-tokens", "0", "--mtp-layers", "1"], "--draft-tokens"),
    (["--mtp-layers", "1", "--draft-model", "meta-llama/Llama-3.1-8B"], "not allowed with"),
    (["--mtp-layers", "40"], "--mtp-layers"),
    (["--mtp-layers", "1", "--draft-tp", "1"], "--draft-tp applies to a draft model"),
])
def test_bad_flags_are_one_line(capsys, arguments, expected):
    assert _run(arguments) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
