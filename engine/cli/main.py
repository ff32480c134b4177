"""llm-roofline command line: hardware, model, gemm, estimate and sweep, with JSON, CSV and Parquet output.

Bad input exits with status 2 and one line on stderr naming the problem; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Sequence

from engine.cli.help_texts import HelpFormatter, describe
from engine.hardware.dtypes import DTYPES, check_dtype
from engine.common import readable
from engine.common.errors import one_line
from engine.estimators import METHODS
from engine.explore.grid_spec import DEFAULT_MAX_POINTS, GridArgumentError, sweep_grid_arguments
from engine.common.table_safety import to_safe_csv
from engine.workload.scenario import COLLECTIVE_ALGORITHMS, PHASES


def _print_json(data) -> None:
    print(json.dumps(_finite(data), indent=2, allow_nan=False))


def _print_fields(fields: dict, as_json: bool) -> None:
    """A flat record as JSON, or one `name  value` line per field."""
    if as_json:
        _print_json(fields)
        return
    width = max(map(len, fields)) + 2
    for key, value in fields.items():
        print(f"{key:<{width}} {value}")


def _finite(value):
    """JSON has no NaN/Infinity: they become null."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return _finite(value.item())
    return value


# ---- commands ------------------------------------------------------------------------------

def cmd_hardware_list(args) -> None:
    from engine.hardware.specs import load_specs
    devices = load_specs(args.specs)
    if args.json:
        _print_json([{"name": hw.name, "vendor": hw.vendor, "kind": hw.kind} for hw in devices.values()])
        return
    row = "{:<18} {:<14} {:<13} {:<20} {:>16} {:>16} {:>10}"
    print(row.format("device", "vendor", "kind", "matrix dtype", "matrix TFLOP/s", "memory GB/s", "memory GB"))
    for hw in devices.values():
        rate = hw.matrix_rate_dtype("bf16")
        label = "bf16" if rate == "bf16" else f"bf16 (at {rate} rate)"
        print(row.format(hw.name, hw.vendor, hw.kind, label, f"{hw.matrix_flops_per_s('bf16') / 1e12:,.1f}",
                         f"{hw.memory_bandwidth_bytes_per_s / 1e9:,.1f}", f"{hw.memory_capacity_bytes / 1e9:,.1f}"))


def hardware_summary(hw) -> dict:
    return {
        **hw.model_dump(),
        "matrix_flops_per_s": {d: hw.matrix_flops_per_s(d) for d in hw.matrix_dtypes},
        "vector_flops_per_s": hw.vector_flops_per_s,
        "ridge_point_flop_per_byte": {d: hw.ridge_point(d) for d in hw.matrix_dtypes},
    }


def cmd_hardware_show(args) -> None:
    from engine.hardware.specs import load_hardware
    _print_fields(hardware_summary(load_hardware(args.name, args.specs)), args.json)


def cmd_hardware_template(args) -> None:
    from engine.hardware.specs import write_template
    write_template(args.path)
    print(f"wrote a blank specs workbook to {args.path}: fill in a device column, then use --specs {args.path}")


def _load_model(args):
    """The hand model, else (an architecture the hand parser rejects) the automatic one when the `auto`
    extra is installed; without it the error says what the extra would add."""
    from engine.decomposition.auto import load_any_model
    return load_any_model(args.model, revision=args.revision, token=args.token, cache_dir=args.cache_dir,
                          offline=True if args.offline else None)


def cmd_model_show(args) -> None:
    model = _load_model(args)
    summary = model.summary()
    summary["kv_cache_bytes_per_token"] = model.kv_cache_bytes_per_token(args.kv_dtype)
    summary["kv_dtype"] = args.kv_dtype
    _print_fields(summary, args.json)


def cmd_gemm(args) -> None:
    from engine.results.run import estimate_gemm
    from engine.hardware.specs import load_hardware
    hw = load_hardware(args.hardware, args.specs)
    row = estimate_gemm(hw, args.m, args.n, args.k, dtype=args.dtype, method=args.method)
    keys = ("m", "k", "n", "dtype", "macs", "flops", "bytes", "intensity", "compute_time_s", "memory_time_s",
            "time_s", "bound", "matrix_rate_dtype")
    result = {"hardware": hw.name, "method": args.method, **{k: row[k] for k in keys}}
    if args.json:
        _print_json(result)
        return
    print(f"C[{args.m},{args.n}] = A[{args.m},{args.k}] @ B[{args.k},{args.n}] ({args.dtype}) on {hw.name}")
    print(f"  {result['flops']:.4g} FLOP, {result['bytes']:.4g} B, intensity {result['intensity']:.1f} FLOP/B")
    print(f"  time {result['time_s'] * 1e6:.2f} us ({result['bound']} bound)")


def _scenario(args):
    """The Scenario of the shared workload flags (_add_scenario_arguments)."""
    from engine.workload.scenario import Scenario
    return Scenario(phase=args.phase, batch=args.batch, input_length=args.input_len,
                    output_length=args.output_len, context_length=args.context, chunk_size=args.chunk_size,
                    weight_dtype=args.weight_dtype, activation_dtype=args.act_dtype, kv_dtype=args.kv_dtype,
                    tp=args.tp, pp=args.pp, dp=args.dp, ep=args.ep, devices=args.devices,
                    micro_batches=args.micro_batches, overlap_communication=args.overlap_communication,
                    collective_algorithm=args.collective_algorithm, chunked_prefill=args.chunked_prefill,
                    routing_skew=args.routing_skew, mla_decode=args.mla_decode)


def cmd_estimate(args) -> None:
    from engine.results.run import estimate
    from engine.results.memory import fewest_devices
    from engine.hardware.specs import load_hardware
    hw = load_hardware(args.hardware, args.specs)
    model = _load_model(args)
    scenario = _scenario(args)
    result = estimate(hw, model, scenario, method=args.method)
    fewest = None if result.memory.fits else fewest_devices(hw, model, scenario)
    if args.csv:
        to_safe_csv(result.kernels, args.csv)
    if args.json:
        data = result.to_dict()
        if not result.memory.fits:
            data["fewest_devices"] = None if fewest is None else {"devices": fewest.devices, "tp": fewest.tp,
                                                                  "pp": fewest.pp}
        _print_json(data)
        return
    layout = result.parallelism
    shape = ", ".join(f"{k}={layout[k]}" for k in ("tp", "pp", "dp", "ep") if layout[k] > 1) or "one device"
    print(f"{model.name} on {result.devices} x {hw.name} ({shape}), {scenario.phase}"
          f"{' (chunked prefill)' if scenario.chunked_prefill else ''}, method {result.method}")
    print(result.phases.to_string(float_format=lambda v: f"{v:.4g}"))
    for label, value in (("TTFT", result.ttft_s), ("TPOT", result.tpot_s), ("end-to-end", result.e2e_s)):
        if value is not None:
            print(f"{label:<12} {value * 1e3:10.3f} ms")
    if result.tokens_per_s is not None:
        print(f"{'tokens/s':<12} {result.tokens_per_s:10.1f} (output tokens per second, all replicas)")
        print(f"{'per device':<12} {result.tokens_per_s_per_device:10.1f} (output tokens per second per device)")
    if result.experts_touched:
        print(experts_line(result, model))
    summary = result.schedule_summary()
    if summary is not None:
        print(f"schedule     {summary['iterations']} iterations ({summary['mixed_iterations']} mixing prefill and "
              f"decode); TTFT {summary['ttft_min_s'] * 1e3:.3f} .. {summary['ttft_max_s'] * 1e3:.3f} ms "
              "over the requests")
    memory = result.memory
    energy = result.energy
    if energy is None:
        print("energy       unavailable (see note)")
    else:
        token_energy = energy["energy_per_token_j"]
        per_token = "" if token_energy is None else f", {readable.energy(token_energy)}/token"
        print(f"energy       {readable.energy(energy['request_energy_j'])} on {result.devices} device(s){per_token}, "
              f"{readable.significant(energy['tokens_per_j'] or 0)} tokens/J; average power "
              f"{energy['average_power_w'] or 0:,.0f} W"
              + (f" of {energy['tdp_w']:.0f} W TDP" if energy["tdp_w"] else "")
              + (" (EXCEEDS TDP)" if energy["exceeds_tdp"] else ""))
    print(memory_line(memory, result.devices))
    if not memory.fits:
        if getattr(model, "automatic", False):
            print("fewest devices that fit: not searched (an automatically decomposed model runs on one device)")
        else:
            print("fewest devices that fit: " + ("none tried fits" if fewest is None else
                                                f"{fewest.devices} (tp={fewest.tp}, pp={fewest.pp})"))
    for note in result.notes:
        print(f"note: {note}")


def memory_line(memory, devices: int) -> str:
    """One line: per-device use against capacity, whether it fits, the largest batch that does, and when it
    does not fit, why (the footprint's own sentence, which names what is too big)."""
    largest = "no batch fits" if memory.max_batch < 1 else f"largest batch that fits: {memory.max_batch:,}"
    verdict = "fits" if memory.fits else "DOES NOT FIT"
    line = (f"memory       {memory.total_bytes / 1e9:,.2f} GB of {memory.capacity_bytes / 1e9:,.1f} GB per device, "
            f"{verdict} ({largest}); {memory.total_all_devices_bytes / 1e9:,.1f} GB over {devices} device(s)")
    return line if memory.fits else f"{line}\nwhy          {memory.message}"


def experts_line(result, model) -> str:
    """One line: routed experts whose weights a device reads per MoE layer per step, per phase."""
    s = result.scenario
    held = model.num_experts // s.ep
    of = f"of {model.num_experts}" if s.ep == 1 else f"of the {held} held per device"
    values = ", ".join(f"{phase} {value:.2f}" for phase, value in result.experts_touched.items())
    routing = "uniform routing" if not s.routing_skew else f"routing skew {s.routing_skew:g}"
    return (f"experts      {values} {of} routed experts read per MoE layer per step "
            f"(top-{model.experts_per_token}, {routing})")


def cmd_serve(args) -> None:
    from engine.cli.serve import print_serving, serving_fields
    from engine.serving import serve
    from engine.hardware.specs import load_hardware
    result = serve(load_hardware(args.hardware, args.specs), _load_model(args), method=args.method,
                   **serving_fields(args))
    if args.requests_csv:
        result.requests.to_csv(args.requests_csv, index=False)
    if args.json:
        _print_json(result.to_dict())
    else:
        print_serving(result)


def cmd_serving_search(args) -> None:
    from engine.cli.serving_search import run_search
    run_search(args, _load_model(args), _print_json)


# ---- sweep ---------------------------------------------------------------------------------

SWEEP_FORMATS = ("csv", "parquet")
def _sweep_format(args) -> str:
    if args.format:
        if args.format == "parquet" and not args.out:
            raise GridArgumentError("--format parquet needs --out PATH (Parquet is not written to stdout)")
        return args.format
    if not args.out:
        return "csv"
    suffix = args.out.rsplit(".", 1)[-1].lower() if "." in args.out else ""
    if suffix not in SWEEP_FORMATS:
        raise GridArgumentError(f"--out {args.out}: cannot tell the format from the extension; use .csv or .parquet "
                                "or give --format csv|parquet")
    return suffix


def cmd_sweep(args) -> None:
    import time

    from engine.explore.grid import DEVICE_FIELD, MODEL_FIELD, expand_grid
    from engine.hardware.specs import load_hardware, load_specs
    started = time.perf_counter()
    output_format = _sweep_format(args)
    grid = sweep_grid_arguments(args.grid, args.grid_file, args.max_points)
    if not grid:
        raise GridArgumentError("sweep: give at least one --grid FIELD=VALUES or a --grid-file")
    if args.chunk_points is not None and args.chunk_points < 1:
        raise GridArgumentError(f"--chunk-points: expected a whole number >= 1, got {args.chunk_points}")
    if MODEL_FIELD not in grid and not args.model:
        raise GridArgumentError("sweep: give --model ID_OR_PATH or sweep models with --grid model=ID,ID")
    if DEVICE_FIELD not in grid and not args.hardware:
        raise GridArgumentError("sweep: give --hardware NAME or sweep devices with --grid device=NAME,NAME")
    scenario = _scenario(args)
    model = None if MODEL_FIELD in grid else _load_model(args)
    hardware = load_hardware(args.hardware, args.specs) if args.hardware else None
    devices = load_specs(args.specs) if args.specs and DEVICE_FIELD in grid else None
    if args.dask:
        try:
            import dask.distributed  # noqa: F401

            from engine.explore.dask_cluster import DEFAULT_CHUNK_POINTS, sweep_grid_dask
        except ImportError:
            raise GridArgumentError('--dask needs dask.distributed: pip install "dask[distributed]"') from None
        frame = sweep_grid_dask(model, scenario, grid, hardware, args.method, devices, address=args.dask,
                                chunk_points=args.chunk_points or DEFAULT_CHUNK_POINTS,
                                connect_timeout=args.dask_timeout)
    else:
        from engine.explore.dask_cluster import DEFAULT_CHUNK_POINTS, sweep_points_chunked
        points = expand_grid(grid)
        frame = sweep_points_chunked(model, scenario, points, hardware, args.method, devices,
                                     chunk_points=args.chunk_points or DEFAULT_CHUNK_POINTS)
    if args.out and output_format == "parquet":
        frame.to_parquet(args.out, index=False)
    elif args.out:
        to_safe_csv(frame, args.out)
    else:
        to_safe_csv(frame, sys.stdout)
    failed = frame["error"] != ""
    first = f"; first error: {frame['error'][failed].iloc[0]}" if failed.any() else ""
    where = f", written to {args.out}" if args.out else ""
    print(f"llm-roofline sweep: {len(frame)} points ({int(failed.sum())} with errors) in "
          f"{time.perf_counter() - started:.2f} s{where}{first}", file=sys.stderr)


# ---- parser --------------------------------------------------------------------------------

def _number(kind: type, minimum: float, maximum: float):
    """An argparse type: a finite `kind` (int or float) from minimum to maximum, else a one-line usage error
    (a 400-digit number is refused before it is converted)."""
    noun = "a whole number" if kind is int else "a number"
    expected = f"{noun} from {minimum:,} to {int(maximum):,}"

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


MAX_WHOLE = 10**12          # beyond any batch, length, device count or GEMM dimension worth estimating
_positive_int = _number(int, 1, MAX_WHOLE)
_non_negative_int = _number(int, 0, MAX_WHOLE)
_non_negative_float = _number(float, 0, 1e15)
_timeout_seconds = _number(float, 0.1, 3600)


def _dtype(text: str) -> str:
    try:
        return check_dtype(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


DTYPE_HELP = f"one of {', '.join(DTYPES)}, or <int4|int8|fp4|fp8>_g<group> (one bf16 scale per group)"


def _add_model_source(parser) -> None:
    parser.add_argument("--revision", help="Hub revision: branch, tag or commit (default: main; bypasses the "
                                           "bundled catalog)")
    parser.add_argument("--token", help="Hugging Face token for gated repos (default: HF_TOKEN or the saved login)")
    parser.add_argument("--cache-dir", metavar="DIR", help="Hugging Face cache directory (default: HF_HUB_CACHE)")
    parser.add_argument("--offline", action="store_true", help="never reach the Hub; use catalog, files and cache")


def _add_scenario_arguments(parser) -> None:
    """The workload flags `estimate` and `sweep` share (one Scenario; `_scenario` builds it)."""
    parser.add_argument("--phase", default="request", choices=PHASES)
    parser.add_argument("--batch", type=_positive_int, default=1)
    parser.add_argument("--input-len", "--input-length", dest="input_len", type=_positive_int, default=1024)
    parser.add_argument("--output-len", "--output-length", dest="output_len", type=_positive_int, default=256)
    parser.add_argument("--context", "--context-length", dest="context", type=_non_negative_int, default=None,
                        help="decode: tokens already in the KV cache (default: --input-len)")
    parser.add_argument("--chunk-size", type=_positive_int, default=256)
    parser.add_argument("--method", default="roofline", choices=list(METHODS))
    _add_layout_arguments(parser)
    parser.add_argument("--micro-batches", type=_positive_int, default=None,
                        help="prefill micro-batches for the pipeline (default: largest divisor of batch <= pp)")
    parser.add_argument("--chunked-prefill", action="store_true",
                        help="request: simulate a chunked-prefill schedule of --chunk-size tokens per iteration")


def _add_layout_arguments(parser) -> None:
    """Dtypes and the parallel layout: the flags `estimate`, `sweep` and `serve` share."""
    parser.add_argument("--weight-dtype", default="bf16", type=_dtype, help=f"weights: {DTYPE_HELP}")
    parser.add_argument("--act-dtype", default="bf16", type=_dtype, help=f"activations: {DTYPE_HELP}")
    parser.add_argument("--kv-dtype", default="bf16", type=_dtype, help=f"KV cache: {DTYPE_HELP}")
    parser.add_argument("--tp", type=_positive_int, default=None, help="tensor-parallel ways (default 1)")
    parser.add_argument("--pp", type=_positive_int, default=None, help="pipeline stages (default 1)")
    parser.add_argument("--dp", type=_positive_int, default=None, help="data-parallel replicas (default 1)")
    parser.add_argument("--ep", type=_positive_int, default=1, help="expert-parallel ways (MoE models)")
    parser.add_argument("--devices", type=_positive_int, default=None,
                        help="tp x pp x dp; with all but one of them given, the missing one is inferred")
    parser.add_argument("--overlap-communication", action="store_true",
                        help="hide each collective behind the kernel producing its input")
    parser.add_argument("--collective-algorithm", default="ring", choices=COLLECTIVE_ALGORITHMS)
    parser.add_argument("--routing-skew", type=_non_negative_float, default=0.0,
                        help="MoE routing: Zipf exponent over the experts' popularity (0 = uniform routing)")
    parser.add_argument("--mla-decode", default="absorbed", choices=("absorbed", "naive"),
                        help="MLA models (DeepSeek): decode in the absorbed form serving engines run (default) "
                             "or the naive form transformers runs (docs/methods.md)")


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


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="llm-roofline", description="How fast would this LLM run on that chip, and why.")
    commands = parser.add_subparsers(dest="command", required=True)

    hardware = commands.add_parser("hardware", help="devices of the specs workbook").add_subparsers(dest="action", required=True)
    listing = hardware.add_parser("list", help="list devices")
    show = hardware.add_parser("show", help="one device's fields and derived peaks")
    show.add_argument("name")
    for sub, handler in ((listing, cmd_hardware_list), (show, cmd_hardware_show)):
        sub.add_argument("--specs", help="path to a specs workbook (default: bundled specs.xlsx)")
        sub.add_argument("--json", action="store_true")
        sub.set_defaults(handler=handler)

    template = hardware.add_parser("template", help="write a blank specs workbook to fill in")
    template.add_argument("path")
    template.set_defaults(handler=cmd_hardware_template)

    model = commands.add_parser("model", help="model configs").add_subparsers(dest="action", required=True)
    model_show = model.add_parser("show", help="parameters, layers, heads, KV bytes per token")
    model_show.add_argument("model", metavar="ID_OR_PATH")
    model_show.add_argument("--kv-dtype", default="bf16", type=_dtype, help=f"KV cache: {DTYPE_HELP}")
    model_show.add_argument("--json", action="store_true")
    _add_model_source(model_show)
    model_show.set_defaults(handler=cmd_model_show)

    gemm = commands.add_parser("gemm", help="one GEMM C[m,n] = A[m,k] @ B[k,n]")
    gemm.add_argument("--hardware", required=True)
    for dim in ("m", "n", "k"):
        gemm.add_argument(f"--{dim}", type=_positive_int, required=True)
    gemm.add_argument("--dtype", default="bf16", type=_dtype, help=f"A and B: {DTYPE_HELP}")
    gemm.add_argument("--method", default="roofline", choices=list(METHODS))
    gemm.add_argument("--specs")
    gemm.add_argument("--json", action="store_true")
    gemm.set_defaults(handler=cmd_gemm)

    est = commands.add_parser("estimate", help="estimate a model on a device")
    est.add_argument("--hardware", required=True)
    est.add_argument("--model", required=True, metavar="ID_OR_PATH")
    _add_scenario_arguments(est)
    est.add_argument("--specs")
    est.add_argument("--csv", metavar="PATH", help="write the kernel table as CSV")
    est.add_argument("--json", action="store_true")
    _add_model_source(est)
    est.set_defaults(handler=cmd_estimate)

    from engine.cli.serve import add_serve_parser
    add_serve_parser(commands, _number, _add_layout_arguments, _add_model_source, METHODS, cmd_serve)
    from engine.cli.serving_search import add_search_parser
    add_search_parser(commands, _number, _dtype, _add_model_source, METHODS, cmd_serving_search)

    sweep = commands.add_parser("sweep", help="every point of a grid of scenario and hardware values, one row each",
                                description="Sweep a grid of scenario and hardware fields (docs/sweeps.md); one "
                                            "row per point: the grid's fields, then latency, throughput, energy "
                                            "and memory columns.")
    sweep.add_argument("--hardware", help="the device (unless the grid sweeps 'device')")
    sweep.add_argument("--model", metavar="ID_OR_PATH", help="the model (unless the grid sweeps 'model')")
    _add_scenario_arguments(sweep)
    sweep.add_argument("--grid", action="append", metavar="FIELD=VALUES",
                       help="a swept field: comma-separated values (batch=1,8,64; device=H100-SXM,H200-SXM; "
                            "context_length=none,4096), a range start:stop:count (linear, ends included) or "
                            "log:start:stop:count (geometric); repeat for more fields (the first varies slowest)")
    sweep.add_argument("--grid-file", metavar="PATH",
                       help="a JSON object: field -> list of values (or a VALUES string)")
    sweep.add_argument("--out", metavar="PATH", help="write the table here (.csv or .parquet); default: CSV on stdout")
    sweep.add_argument("--format", choices=SWEEP_FORMATS, help="output format (default: from --out's extension)")
    sweep.add_argument("--dask", metavar="ADDRESS",
                       help="run on a Dask cluster: a scheduler address (tcp://host:8786) or 'local' (a LocalCluster "
                            "on this machine)")
    sweep.add_argument("--chunk-points", type=_positive_int, default=None,
                       help="points per task with --dask (default 10000); without --dask, points per in-process "
                            "chunk (default 10000; bounds memory)")
    sweep.add_argument("--dask-timeout", type=_timeout_seconds, default=10.0, metavar="SECONDS",
                       help="give up connecting to the --dask scheduler after this long (default 10)")
    sweep.add_argument("--max-points", type=_positive_int, default=DEFAULT_MAX_POINTS, metavar="N",
                       help=f"refuse grids of more points than this, before building them (default "
                            f"{DEFAULT_MAX_POINTS:,})")
    sweep.add_argument("--specs", help="path to a specs workbook (default: bundled specs.xlsx)")
    _add_model_source(sweep)
    sweep.set_defaults(handler=cmd_sweep)
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
