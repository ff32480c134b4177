"""`llm-roofline serve`: a model served at a fixed concurrency (engine/serving, docs/serving.md)."""

from __future__ import annotations

import re

from engine.serving.presets import WORKLOAD_LABELS, WORKLOADS

DEFAULT_LENGTHS = (1024, 256)     # `serve`: a chat-like request


def add_serve_parser(commands, number, add_layout_arguments, add_model_source, methods, handler) -> None:
    """The `serve` subcommand: `number(kind, minimum, maximum)` makes bounded numeric argument types."""
    length = number(int, 1, 10_000_000)     # ServingOptions' bounds
    serve = commands.add_parser(
        "serve", help="simulate serving at a fixed concurrency (TTFT, TPOT, tokens/s)",
        description="Closed-loop serving simulation: --concurrency clients each send a request as soon as the "
                    "previous one finished; continuous batching with chunked prefill (docs/serving.md).")
    serve.add_argument("--hardware", required=True, help="device name in the specs workbook")
    serve.add_argument("--model", required=True, metavar="ID_OR_PATH", help="catalog id, Hub repo id or config.json")
    serve.add_argument("--concurrency", type=number(int, 1, 100_000), default=1,
                       help="clients, one request in flight each")
    add_workload_arguments(serve, length, DEFAULT_LENGTHS)
    serve.add_argument("--length-spread", type=number(float, 0, 0.99), default=0.0,
                       help="draw lengths uniformly from L(1-s)..L(1+s) (vLLM --random-range-ratio)")
    serve.add_argument("--token-budget", type=length, default=8192,
                       help="tokens per iteration (max_num_batched_tokens / max_num_tokens)")
    serve.add_argument("--max-batch", type=number(int, 1, 1_000_000), default=None,
                       help="requests admitted at once (max_num_seqs; default: as many as --token-budget decodes in "
                            "one iteration and the KV cache holds; the other clients wait)")
    serve.add_argument("--requests-per-client", type=number(int, 2, 1000), default=8,
                       help="requests each client sends (its last one is not measured: the run winds down)")
    serve.add_argument("--warmup-requests", type=number(int, 0, 100), default=0,
                       help="each client's first requests left out of the statistics")
    serve.add_argument("--stagger-start", action="store_true",
                       help="warm-up requests of 1/C..C/C of the output length: clients out of step")
    serve.add_argument("--backend", default="generic", choices=("generic", "vllm", "sglang", "trtllm"),
                       help="serving engine whose fitted host-side times apply (engine/serving/backends.py; trtllm: "
                            "NVIDIA devices only, by the workbook's vendor)")
    serve.add_argument("--iteration-overhead-ms", type=number(float, 0, 1e4), default=None,
                       help="host/framework time per iteration (default: the backend's fitted value; 0 for "
                            "roofline and hierarchical)")
    serve.add_argument("--request-overhead-ms", type=number(float, 0, 1e5), default=None,
                       help="client-side time per request, in TTFT and latency (default: the backend's fitted value)")
    serve.add_argument("--graph-latency-overlap", type=number(float, 0, 1), default=None,
                       help="share of each kernel's device latency hidden in a CUDA-graph decode step (default: the "
                            "backend's fitted value; realistic only)")
    serve.add_argument("--mixed-prefill", choices=("on", "off"), default=None,
                       help="prompt chunks share iterations with decoding (default: the backend's; SGLang off)")
    serve.add_argument("--eager-decode", action="store_true",
                       help="decode iterations launch kernels one by one (default: CUDA-graph decode)")
    serve.add_argument("--method", default="realistic", choices=[m for m in methods if m != "seed"],
                       help="how each iteration's kernels are timed: roofline (ideal peaks), hierarchical (cache "
                            "levels), realistic (calibrated on measured kernels), realistic-graph (CUDA-graph launch "
                            "everywhere); docs/methods.md")
    add_speculative_arguments(serve, number)
    add_layout_arguments(serve)      # dtypes, tp/pp/dp/ep/devices, overlap, collectives, routing skew, MLA decode
    serve.add_argument("--requests-csv", metavar="PATH", help="write every simulated request as CSV")
    serve.add_argument("--specs", help="path to a specs workbook (default: bundled specs.xlsx)")
    serve.add_argument("--json", action="store_true", help="print the result as JSON")
    add_model_source(serve)
    serve.set_defaults(handler=handler)


def add_speculative_arguments(parser, number) -> None:
    """--draft-model / --mtp-layers with --draft-tokens and --acceptance-rate (engine/serving/speculative.py)."""
    group = parser.add_argument_group("speculative decoding")
    drafter = group.add_mutually_exclusive_group()
    drafter.add_argument("--draft-model", metavar="ID", default=None,
                         help="draft model (catalog id or Hub repo id) proposing --draft-tokens tokens per step")
    drafter.add_argument("--mtp-layers", type=number(int, 1, 16), default=None,
                         help="draft with the target's last N layers as multi-token-prediction layers (DeepSeek: 1)")
    group.add_argument("--draft-tokens", type=number(int, 1, 64), default=3,
                       help="tokens drafted per step, k (default 3)")
    group.add_argument("--draft-tp", type=number(int, 1, 4096), default=None,
                       help="the draft model's tensor parallelism (default: the target's tp; 1: a whole draft per "
                            "device)")
    group.add_argument("--acceptance-rate", type=number(float, 0, 1), default=0.7,
                       help="probability each drafted token is accepted, a (default 0.7): "
                            "(1 - a^(k+1)) / (1 - a) tokens per step")


def add_workload_arguments(parser, positive, default_lengths: tuple[int, int]) -> None:
    """--workload (a preset's lengths) and --input-len/--output-len, shared by `serve` and `serving-search`."""
    parser.add_argument("--workload", choices=tuple(WORKLOADS), default=None,
                        help="request lengths of a preset: " + "; ".join(WORKLOAD_LABELS.values()) +
                             " (--input-len/--output-len given win)")
    parser.add_argument("--input-len", "--input-length", dest="input_len", type=positive, default=None,
                        help=f"prompt tokens per request (default {default_lengths[0]}, or the --workload's)")
    parser.add_argument("--output-len", "--output-length", dest="output_len", type=positive, default=None,
                        help=f"generated tokens per request (default {default_lengths[1]}, or the --workload's)")


def request_lengths(args, default_lengths: tuple[int, int] = (1024, 256)) -> tuple[int, int]:
    """(input, output) tokens: --input-len/--output-len when given, else the --workload's, else the defaults."""
    preset = WORKLOADS[args.workload] if args.workload else default_lengths
    return (args.input_len if args.input_len is not None else preset[0],
            args.output_len if args.output_len is not None else preset[1])


def speculative_option(args):
    """The SpeculativeDecoding the flags ask for, or None."""
    if args.draft_model is None and args.mtp_layers is None:
        return None
    from engine.serving.speculative import SpeculativeDecoding
    return SpeculativeDecoding(draft_model=args.draft_model, mtp_layers=args.mtp_layers,
                               draft_tokens=args.draft_tokens, acceptance_rate=args.acceptance_rate,
                               draft_tp=args.draft_tp)


def serving_fields(args) -> dict:
    """serve()'s keyword fields from the parsed arguments."""
    overhead = None if args.iteration_overhead_ms is None else args.iteration_overhead_ms / 1e3
    per_request = None if args.request_overhead_ms is None else args.request_overhead_ms / 1e3
    input_length, output_length = request_lengths(args)
    return dict(concurrency=args.concurrency, input_length=input_length, output_length=output_length,
                speculative=speculative_option(args),
                length_spread=args.length_spread, token_budget=args.token_budget, max_batch=args.max_batch,
                requests_per_client=args.requests_per_client, warmup_requests=args.warmup_requests,
                stagger_start=args.stagger_start, backend=args.backend, iteration_overhead_s=overhead,
                request_overhead_s=per_request, graph_decode=not args.eager_decode,
                graph_latency_overlap=args.graph_latency_overlap,
                mixed_prefill=None if args.mixed_prefill is None else args.mixed_prefill == "on",
                weight_dtype=args.weight_dtype, activation_dtype=args.act_dtype, kv_dtype=args.kv_dtype,
                unquantized_modules=args.unquantized_modules, unquantized_dtype=args.unquantized_dtype,
                tp=args.tp, pp=args.pp, dp=args.dp, ep=args.ep, devices=args.devices,
                overlap_communication=args.overlap_communication, collective_algorithm=args.collective_algorithm,
                routing_skew=args.routing_skew, mla_decode=args.mla_decode)


# ServingOptions and Scenario fields as the flags that set them (the same units), for the engine's messages
FIELD_FLAGS = {"input_length": "--input-len", "output_length": "--output-len", "activation_dtype": "--act-dtype",
               **{name: "--" + name.replace("_", "-") for name in (
                   "concurrency", "length_spread", "token_budget", "max_batch", "requests_per_client",
                   "warmup_requests", "stagger_start", "backend", "graph_latency_overlap", "mixed_prefill",
                   "weight_dtype", "kv_dtype", "unquantized_modules", "unquantized_dtype", "tp", "pp", "dp", "ep",
                   "devices", "routing_skew", "mla_decode", "draft_tokens", "acceptance_rate", "draft_tp")}}
_FIELD = re.compile(r"(?<![\w-])(" + "|".join(sorted(FIELD_FLAGS, key=len, reverse=True)) + r")(=|(?=\W|$))")
_PLACE = re.compile(r"(^|; )(\w+):")          # one_line's "field: problem" parts


def in_flags(message: str) -> str:
    """An engine message with the serving fields it names written as `serve`'s flags: `token_budget=8192` ->
    `--token-budget 8192`, `max_batch` -> `--max-batch`, a validation error's `concurrency: ...` ->
    `--concurrency: ...`; other plain words (concurrency, backend) stay words."""
    def flag(match: re.Match) -> str:
        name, equals = match.group(1), match.group(2)
        if not equals and "_" not in name:
            return match.group(0)
        return FIELD_FLAGS[name] + (" " if equals else "")

    def place(match: re.Match) -> str:
        name = match.group(2)
        return match.group(1) + FIELD_FLAGS[name] + ":" if name in FIELD_FLAGS else match.group(0)
    return _FIELD.sub(flag, _PLACE.sub(place, message))


def print_serving(result) -> None:
    """The human-readable summary of a ServingResult."""
    s, o = result.scenario, result.options
    layout = ", ".join(f"{k}={getattr(s, k)}" for k in ("tp", "pp", "dp", "ep") if getattr(s, k) > 1) or "one device"
    print(f"{result.model} served on {result.devices} x {result.hardware} ({layout}), method {result.method}: "
          f"{o.concurrency} clients, {o.input_length} in / {o.output_length} out, token budget {o.token_budget}")
    m = result.metrics
    print(f"TTFT         mean {m['ttft_s'] * 1e3:.2f} ms, p50 {m['ttft_p50_s'] * 1e3:.2f}, p90 "
          f"{m['ttft_p90_s'] * 1e3:.2f}, p99 {m['ttft_p99_s'] * 1e3:.2f} ms")
    if m["tpot_s"] == m["tpot_s"]:
        print(f"TPOT         mean {m['tpot_s'] * 1e3:.3f} ms, p50 {m['tpot_p50_s'] * 1e3:.3f}, p90 "
              f"{m['tpot_p90_s'] * 1e3:.3f} ms")
    print(f"latency      mean {m['e2e_s']:.3f} s, p90 {m['e2e_p90_s']:.3f} s per request")
    print(f"tokens/s     {m['tokens_per_s']:.1f} output tokens/s in total, {m['tokens_per_s_per_device']:.1f} per "
          f"device, {m['tokens_per_s_per_user']:.1f} per user; {m['requests_per_s']:.3f} requests/s")
    measured = int(result.requests["measured"].sum())
    print(f"measured     {measured} of {len(result.requests)} requests: {o.measured_rule()}")
    print(f"simulated    {len(result.iterations)} iterations, {len(result.requests)} requests; "
          f"KV cache {result.kv_capacity_bytes / 1e9:.2f} GB per device; host overhead "
          f"{result.iteration_overhead_s * 1e3:.3g} ms per iteration, {o.request_overhead_s * 1e3:.3g} ms per request")
    for note in result.notes:
        print(f"note: {in_flags(note)}")
