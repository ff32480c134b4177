"""llm-roofline command line: hardware, model, gemm, estimate, serve, serving-search and sweep, with JSON, CSV
and Parquet output.

Each subcommand lives in its own module (engine/cli/hardware.py, model.py, estimate.py, serve.py,
serving_search.py, sweep.py); the shared flags in arguments.py. Bad input exits with status 2 and one line
on stderr naming the problem; never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from engine.cli.arguments import (OneLineParser, add_layout_arguments, add_model_source, dtype, load_model,
                                  number)
from engine.cli.estimate import add_estimate_parser, add_gemm_parser
from engine.cli.hardware import add_hardware_parser
from engine.cli.help_texts import describe
from engine.cli.model import add_model_parser
from engine.cli.printing import print_json
from engine.cli.sweep import add_sweep_parser
from engine.common.errors import one_line
from engine.estimators import METHODS


def cmd_serve(args) -> None:
    from engine.cli.serve import in_flags, print_serving, serving_fields
    from engine.serving import serve
    from engine.hardware.specs import load_hardware
    hardware, model = load_hardware(args.hardware, args.specs), load_model(args)
    try:
        result = serve(hardware, model, method=args.method, **serving_fields(args))
    except ValueError as error:          # the fields it names, as the flags that set them
        raise ValueError(in_flags(one_line(error))) from None
    if args.requests_csv:
        result.requests.to_csv(args.requests_csv, index=False)
    if args.json:
        print_json(result.to_dict())
    else:
        print_serving(result)


def cmd_serving_search(args) -> None:
    from engine.cli.serving_search import run_search
    run_search(args, load_model(args), print_json)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="llm-roofline", description="How fast would this LLM run on that chip, and why.")
    commands = parser.add_subparsers(dest="command", required=True)
    add_hardware_parser(commands)
    add_model_parser(commands)
    add_gemm_parser(commands)
    add_estimate_parser(commands)
    from engine.cli.serve import add_serve_parser
    add_serve_parser(commands, number, add_layout_arguments, add_model_source, METHODS, cmd_serve)
    from engine.cli.serving_search import add_search_parser
    add_search_parser(commands, number, dtype, add_model_source, METHODS, cmd_serving_search)
    add_sweep_parser(commands)
    describe(parser)
    return parser


def _os_error(error: OSError) -> str:
    if error.filename is None:
        return one_line(error)
    return (f"cannot use {str(error.filename)[:200]!r}: {error.strerror or type(error).__name__} "
            "(expected an existing, readable file, or a writable path for output)")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "specs", None):   # unusual values of a user's workbook (likely unit slips)
            from engine.hardware.specs import load_specs
            for warning in load_specs(args.specs).warnings:
                print(f"llm-roofline: warning: {warning}", file=sys.stderr)
        args.handler(args)
    except BrokenPipeError:  # output piped into `head` and closed early
        return 0
    except OSError as error:            # name the path and what went wrong, not "[Errno 21] ..."
        print(f"llm-roofline: error: {_os_error(error)}", file=sys.stderr)
        return 2
    except (ValueError, KeyError) as error:
        print(f"llm-roofline: error: {one_line(error)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
