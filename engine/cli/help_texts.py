"""The CLI's help texts: a description and the default for every option of every subcommand.

`describe(parser)` fills in the help (and a readable metavar) of each option that the subcommand modules declare
without one, so the parser's declarations stay short; `HelpFormatter` appends "(default: X)" wherever an
option has a default worth stating.
"""

from __future__ import annotations

import argparse

# dest -> (help, metavar); None where the subcommand module declares it. A dest means the same in every subcommand.
OPTION_HELP: dict[str, tuple[str | None, str | None]] = {
    "hardware": ("device name from the specs workbook (see `llm-roofline hardware list`)", "NAME"),
    "model": ("a bundled catalog id (meta-llama/Llama-3.1-8B), a local config.json or its folder, "
              "or a Hugging Face repo id", None),
    "name": ("device name from the specs workbook (see `llm-roofline hardware list`)", None),
    "path": ("where to write the .xlsx workbook", None),
    "specs": ("path to a specs workbook (default: the bundled specs.xlsx)", "XLSX"),
    "json": ("print JSON instead of text", None),
    "phase": ("what to estimate: prefill (one forward pass over the prompts), decode (one step with --context "
              "tokens cached), chunked (one chunked-prefill iteration of --chunk-size tokens), request "
              "(prefill, then --output-len - 1 decode steps)", None),
    "batch": ("sequences processed together (per data-parallel replica)", "N"),
    "input_len": ("prompt tokens per sequence", "TOKENS"),
    "output_len": ("generated tokens per sequence (request phase)", "TOKENS"),
    "context": ("decode: tokens already in the KV cache (default: --input-len)", "TOKENS"),
    "chunk_size": ("tokens per chunked-prefill iteration (chunked phase, --chunked-prefill)", "TOKENS"),
    "method": ("how each kernel is timed: roofline (ideal peaks), seed (the seed notebook's tiler), hierarchical (cache levels), realistic "
               "(calibrated on measured kernels), realistic-graph (realistic with CUDA-graph launches); "
               "docs/methods.md", None),
    "collective_algorithm": ("all-reduce / all-gather algorithm of the collectives (docs/parallelism.md)", None),
    "m": ("rows of A and C", "M"),
    "n": ("columns of B and C", "N"),
    "k": ("columns of A, rows of B (the reduced dimension)", "K"),
    "csv": ("write the kernel table as CSV", "PATH"),
    # help declared in the subcommand module; only a metavar here
    "tp": (None, "N"),
    "pp": (None, "N"),
    "dp": (None, "N"),
    "ep": (None, "N"),
    "devices": (None, "N"),
    "micro_batches": (None, "N"),
    "routing_skew": (None, "EXPONENT"),
    "chunk_points": (None, "N"),
}


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: X)" unless there is nothing to state (no default, a flag that is off) or the
    help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        nothing_to_state = any(action.default is value for value in (None, False, argparse.SUPPRESS))
        if not action.option_strings or nothing_to_state or "default" in text:
            return text
        return f"{text} (default: %(default)s)"


def describe(parser: argparse.ArgumentParser) -> None:
    """Fill in the help and metavar of every option (of every subcommand) declared without them."""
    for action in parser._actions:  # noqa: SLF001 - argparse offers no public walk over its actions
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for sub in action.choices.values():
                describe(sub)
            continue
        text, metavar = OPTION_HELP.get(action.dest, (None, None))
        if not action.help and text:
            action.help = text
        if action.metavar is None and metavar and action.nargs is None and action.choices is None:
            action.metavar = metavar
