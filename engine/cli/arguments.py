"""The CLI's shared arguments: bounded number and dtype types, the model-source, workload and layout flags,
the Scenario and model they build, and the parser that reports a usage mistake in one line."""

from __future__ import annotations

import argparse
import math

from engine.cli.help_texts import HelpFormatter
from engine.estimators import METHODS
from engine.hardware.dtypes import DTYPES, check_dtype
from engine.workload.module_dtypes import MODULE_ALIASES, MODULE_GROUPS, check_modules
from engine.workload.scenario import COLLECTIVE_ALGORITHMS, PHASES


def number(kind: type, minimum: float, maximum: float):
    """An argparse type: a finite `kind` (int or float) from minimum to maximum, else a one-line usage error
    (a 400-digit number is refused before it is converted)."""
    noun = "a whole number" if kind is int else "a number"
    expected = f"{noun} from {_bound(minimum)} to {_bound(maximum)}"

    def parse(text: str):
        if len(text.strip()) > 32:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {len(text.strip())} characters")
        try:
            value = kind(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        if math.isfinite(value) and value < minimum:
            raise argparse.ArgumentTypeError(f"expected {noun} >= {minimum}, got {text}")
        if not math.isfinite(value) or value > maximum:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
        return value
    return parse


def _bound(value: float) -> str:
    """A bound as the error message shows it: whole values with thousands separators, others as written (0.99)."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


MAX_WHOLE = 10**12          # beyond any batch, length, device count or GEMM dimension worth estimating
positive_int = number(int, 1, MAX_WHOLE)
non_negative_int = number(int, 0, MAX_WHOLE)
non_negative_float = number(float, 0, 1e15)
timeout_seconds = number(float, 0.1, 3600)


def dtype(text: str) -> str:
    try:
        return check_dtype(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def modules(text: str) -> tuple[str, ...]:
    try:
        return check_modules(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


DTYPE_HELP = f"one of {', '.join(DTYPES)}, or <int4|int8|fp4|fp8>_g<group> (one bf16 scale per group)"


def add_model_source(parser) -> None:
    parser.add_argument("--revision", help="Hub revision: branch, tag or commit (default: main; bypasses the "
                                           "bundled catalog)")
    parser.add_argument("--token", help="Hugging Face token for gated repos (default: HF_TOKEN or the saved login)")
    parser.add_argument("--cache-dir", metavar="DIR", help="Hugging Face cache directory (default: HF_HUB_CACHE)")
    parser.add_argument("--offline", action="store_true", help="never reach the Hub; use catalog, files and cache")


def add_scenario_arguments(parser) -> None:
    """The workload flags `estimate` and `sweep` share (one Scenario; `scenario_of` builds it)."""
    parser.add_argument("--phase", default="request", choices=PHASES)
    parser.add_argument("--batch", type=positive_int, default=1)
    parser.add_argument("--input-len", "--input-length", dest="input_len", type=positive_int, default=1024)
    parser.add_argument("--output-len", "--output-length", dest="output_len", type=positive_int, default=256)
    parser.add_argument("--context", "--context-length", dest="context", type=non_negative_int, default=None,
                        help="decode: tokens already in the KV cache (default: --input-len)")
    parser.add_argument("--chunk-size", type=positive_int, default=256)
    parser.add_argument("--method", default="roofline", choices=list(METHODS))
    add_layout_arguments(parser)
    parser.add_argument("--micro-batches", type=positive_int, default=None,
                        help="prefill micro-batches for the pipeline (default: largest divisor of batch <= pp)")
    parser.add_argument("--chunked-prefill", action="store_true",
                        help="request: simulate a chunked-prefill schedule of --chunk-size tokens per iteration")


def add_layout_arguments(parser) -> None:
    """Dtypes and the parallel layout: the flags `estimate`, `sweep` and `serve` share."""
    parser.add_argument("--weight-dtype", default="bf16", type=dtype, help=f"weights: {DTYPE_HELP}")
    parser.add_argument("--act-dtype", default="bf16", type=dtype, help=f"activations: {DTYPE_HELP}")
    parser.add_argument("--kv-dtype", default="bf16", type=dtype, help=f"KV cache: {DTYPE_HELP}")
    parser.add_argument("--unquantized-modules", default=(), type=modules, metavar="M1,M2",
                        help="module groups that keep --unquantized-dtype weights, as a quantized checkpoint's "
                             f"excluded modules do: {', '.join([*MODULE_GROUPS, *MODULE_ALIASES])}")
    parser.add_argument("--unquantized-dtype", default="bf16", type=dtype,
                        help="weights (and the least activation width) of --unquantized-modules")
    parser.add_argument("--tp", type=positive_int, default=None, help="tensor-parallel ways (default 1)")
    parser.add_argument("--pp", type=positive_int, default=None, help="pipeline stages (default 1)")
    parser.add_argument("--dp", type=positive_int, default=None, help="data-parallel replicas (default 1)")
    parser.add_argument("--ep", type=positive_int, default=1, help="expert-parallel ways (MoE models)")
    parser.add_argument("--devices", type=positive_int, default=None,
                        help="tp x pp x dp; with all but one of them given, the missing one is inferred")
    parser.add_argument("--overlap-communication", action="store_true",
                        help="hide each collective behind the kernel producing its input")
    parser.add_argument("--collective-algorithm", default="ring", choices=COLLECTIVE_ALGORITHMS)
    parser.add_argument("--routing-skew", type=non_negative_float, default=0.0,
                        help="MoE routing: Zipf exponent over the experts' popularity (0 = uniform routing)")
    parser.add_argument("--mla-decode", default="absorbed", choices=("absorbed", "naive"),
                        help="MLA models (DeepSeek): decode in the absorbed form serving engines run (default) "
                             "or the naive form transformers runs (docs/methods.md)")


def scenario_of(args):
    """The Scenario of the shared workload flags (add_scenario_arguments)."""
    from engine.workload.scenario import Scenario
    return Scenario(phase=args.phase, batch=args.batch, input_length=args.input_len,
                    output_length=args.output_len, context_length=args.context, chunk_size=args.chunk_size,
                    weight_dtype=args.weight_dtype, activation_dtype=args.act_dtype, kv_dtype=args.kv_dtype,
                    unquantized_modules=args.unquantized_modules, unquantized_dtype=args.unquantized_dtype,
                    tp=args.tp, pp=args.pp, dp=args.dp, ep=args.ep, devices=args.devices,
                    micro_batches=args.micro_batches, overlap_communication=args.overlap_communication,
                    collective_algorithm=args.collective_algorithm, chunked_prefill=args.chunked_prefill,
                    routing_skew=args.routing_skew, mla_decode=args.mla_decode)


def load_model(args):
    """The hand model, else (an architecture the hand parser rejects) the automatic one when the `auto`
    extra is installed; without it the error says what the extra would add."""
    from engine.decomposition.auto import load_any_model
    return load_any_model(args.model, revision=args.revision, token=args.token, cache_dir=args.cache_dir,
                          offline=True if args.offline else None)


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes print one line (not the usage block) and exit 2, like every other error."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)  # every option with its default
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def parse_known_args(self, args=None, namespace=None):
        """argparse reads `--m=--` as an empty list, past the option's type: refuse it like any bad value."""
        parsed, extras = super().parse_known_args(args, namespace)
        for action in self._actions:
            if action.type is not None and action.nargs is None and isinstance(getattr(parsed, action.dest, None), list):
                self.error(f"argument {'/'.join(action.option_strings)}: expected a value, got '--'")
        return parsed, extras
