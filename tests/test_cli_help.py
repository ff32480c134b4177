"""The CLI explains itself: every option of every subcommand has a description and shows its default;
`hardware list` has column headers; `estimate` states the memory once (and why, when it does not fit)."""

from __future__ import annotations

import argparse
import re

import pytest

from engine.cli.entry import build_parser, main

LLAMA_70B_PARAMETERS = 70_553_706_496     # published parameter count of Llama-3.1-70B


def subcommands(parser: argparse.ArgumentParser, path=()):
    """(command words, parser) of every leaf subcommand."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        yield path, parser
    for action in actions:
        for name, sub in action.choices.items():
            yield from subcommands(sub, (*path, name))


LEAVES = dict(subcommands(build_parser()))


def option_blocks(help_text: str) -> dict[str, str]:
    """Option string -> its help paragraph (the lines up to the next option), whitespace collapsed."""
    blocks, current = {}, None
    for line in help_text.splitlines():
        match = re.match(r"  (-{1,2}[\w-]+|\w[\w-]*)", line)
        if match and not line.startswith("   "):
            current = match.group(1)
            blocks[current] = ""
        if current:
            blocks[current] += " " + line.strip()
    return {key: " ".join(text.split()) for key, text in blocks.items()}


def test_every_subcommand_is_covered():
    assert {" ".join(path) for path in LEAVES} >= {"hardware list", "hardware show", "hardware template",
                                                   "model show", "gemm", "estimate", "sweep"}


@pytest.mark.parametrize("path", list(LEAVES), ids=" ".join)
def test_every_option_has_a_description_and_its_default(path):
    parser = LEAVES[path]
    blocks = option_blocks(parser.format_help())
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        name = action.option_strings[0] if action.option_strings else (action.metavar or action.dest)
        text = blocks.get(name, "")
        described = text.split(None, 1)[1] if " " in text else ""
        assert len(described) > 10, f"{' '.join(path)} {name}: no description ({text!r})"
        if action.option_strings and action.default not in (None, False):
            assert f"default: {action.default}" in text or "(default" in text, f"{name}: default not shown: {text}"


def test_estimate_help_reads_as_documentation(capsys):
    with pytest.raises(SystemExit):
        main(["estimate", "--help"])
    blocks = option_blocks(capsys.readouterr().out)
    assert "(default: 1)" in blocks["--batch"] and "sequences" in blocks["--batch"]
    assert "(default: 1024)" in blocks["--input-len"] and "prompt tokens" in blocks["--input-len"]
    assert "(default: 256)" in blocks["--output-len"] and "generated tokens" in blocks["--output-len"]
    assert "(default: request)" in blocks["--phase"] and "decode (one step" in blocks["--phase"]
    assert "(default: roofline)" in blocks["--method"]
    assert "(default: --input-len)" in blocks["--context"]
    assert blocks["--json"].endswith("print JSON instead of text")     # a flag: no "(default: False)"


def test_hardware_list_has_column_headers(capsys):
    assert main(["hardware", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0]
    assert header.split() == ["device", "vendor", "kind", "matrix", "dtype", "matrix", "TFLOP/s", "memory", "GB/s",
                              "memory", "GB"]
    h100 = next(line for line in lines if line.startswith("H100-SXM "))
    # right-aligned under their headers: H100 SXM's published 3.35 TB/s and 80 GB
    assert h100[:header.index("memory GB/s") + len("memory GB/s")].endswith(" 3,350.0")
    assert h100.endswith(" 80.0") and len(h100) == len(header)


def estimate_text(capsys, *args) -> list[str]:
    assert main(["estimate", "--hardware", "H100-SXM", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_estimate_states_memory_once_when_it_fits(capsys):
    lines = estimate_text(capsys, "--model", "meta-llama/Llama-3.1-8B", "--batch", "8")
    memory = [line for line in lines if "GB" in line and "device" in line and "memory" in line]
    assert len(memory) == 1 and memory[0].startswith("memory ") and ", fits (largest batch that fits: " in memory[0]
    assert not any(line.startswith(("memory note", "why")) for line in lines)


def test_estimate_says_why_it_does_not_fit(capsys):
    lines = estimate_text(capsys, "--model", "meta-llama/Llama-3.1-70B")
    memory = next(line for line in lines if line.startswith("memory "))
    why = next(line for line in lines if line.startswith("why "))
    assert "of 80.0 GB per device, DOES NOT FIT (no batch fits)" in memory
    assert f"needs {2 * LLAMA_70B_PARAMETERS / 1e9:.0f} GB of weights" in why     # bf16: 2 bytes per parameter
    assert not any(line.startswith("memory note") for line in lines)
