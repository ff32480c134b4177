"""`llm-roofline serving-search`: the serving design space of a model on one or more devices
(engine.serving_search, docs/serving.md "Design-space search")."""

from __future__ import annotations

from engine.cli.serve import add_speculative_arguments, add_workload_arguments, request_lengths, speculative_option

DEFAULT_LENGTHS = (1024, 1024)
# what --json prints (docs/serving.md "Design-space search" describes each)
JSON_KEYS = ("front", "best", "recommendation", "messages", "sla", "configurations")
TABLE_COLUMNS = (("layout", "layout", 16), ("concurrency", "clients", 7), ("token_budget", "budget", 6),
                 ("ttft_s", "TTFT ms", 8), ("tpot_s", "TPOT ms", 8), ("tokens_per_s_per_user", "tok/s/user", 10),
                 ("tokens_per_s_per_device", "tok/s/dev", 10), ("meets_sla", "SLA", 4))


def _list_of(number):
    """An argparse type: comma-separated values, each checked by `number`."""
    def parse(text: str):
        return tuple(number(part.strip()) for part in text.split(",") if part.strip())
    return parse


def add_search_parser(commands, number, dtype, add_model_source, methods, handler) -> None:
    positive, seconds = number(int, 1, 10**12), number(float, 1e-9, 1e6)
    search = commands.add_parser(
        "serving-search", help="Pareto front, best configuration under an SLA and fewest devices for a target",
        description="Search the serving design space: every parallel layout of --devices devices x concurrency x "
                    "token budget, screened in closed form, the front and the best simulated exactly as `serve` "
                    "does (docs/serving.md, Design-space search).")
    search.add_argument("--hardware", action="append", required=True,
                        help="device name in the specs workbook; repeat to compare devices")
    search.add_argument("--model", required=True, metavar="ID_OR_PATH", help="catalog id, Hub repo id or config.json")
    search.add_argument("--devices", type=positive, required=True, help="devices per configuration (tp x pp x dp)")
    add_workload_arguments(search, positive, DEFAULT_LENGTHS)
    search.add_argument("--ttft-max", type=seconds, default=None, help="SLA: most mean TTFT, seconds")
    search.add_argument("--tpot-max", type=seconds, default=None, help="SLA: most mean TPOT, seconds")
    search.add_argument("--latency-max", type=seconds, default=None, help="SLA: most mean request latency, seconds")
    target = search.add_mutually_exclusive_group()
    target.add_argument("--requests-per-s", type=number(float, 1e-9, 1e12), default=None,
                        help="recommend the fewest devices serving this many requests/s within the SLA")
    target.add_argument("--users", type=positive, default=None,
                        help="recommend the fewest devices serving this many concurrent users within the SLA")
    search.add_argument("--concurrency", type=_list_of(positive), default=None, metavar="C1,C2,...",
                        help="concurrencies to try (default 1,2,4,...,512)")
    search.add_argument("--token-budget", type=_list_of(positive), default=None, metavar="B1,B2,...",
                        help="token budgets per iteration to try (default 2048,8192)")
    search.add_argument("--method", default="realistic", choices=[m for m in methods if m != "seed"],
                        help="how iterations are timed (docs/methods.md)")
    search.add_argument("--exact", action="store_true",
                        help="simulate every configuration as `serve` does (slow) instead of screening first")
    search.add_argument("--weight-dtype", default="bf16", type=dtype, help="weights dtype (bf16, fp8, int4, ...)")
    search.add_argument("--act-dtype", default="bf16", type=dtype, help="activations dtype (bf16, fp8, ...)")
    search.add_argument("--kv-dtype", default="bf16", type=dtype, help="KV cache dtype (bf16, fp8, ...)")
    search.add_argument("--backend", default="generic", choices=("generic", "vllm", "sglang", "trtllm"),
                        help="serving engine whose fitted host-side times apply")
    add_speculative_arguments(search, number)
    search.add_argument("--disaggregated", action="store_true",
                        help="also search disaggregated serving: a prefill pool and a decode pool")
    search.add_argument("--prefill-hardware", help="device of the prefill pool (default: the first --hardware)")
    search.add_argument("--decode-hardware", help="device of the decode pool (default: the first --hardware)")
    search.add_argument("--dask", metavar="ADDRESS",
                        help="run the layouts on a Dask cluster: a scheduler address or 'local'")
    search.add_argument("--csv", metavar="PATH", help="write every configuration tried as CSV")
    search.add_argument("--specs", help="path to a specs workbook (default: bundled specs.xlsx)")
    search.add_argument("--json", action="store_true",
                        help="print JSON: front, best, recommendation, messages, sla, configurations (the count; "
                             "--all-configs adds configs); docs/serving.md describes each")
    search.add_argument("--all-configs", action="store_true", help="with --json, also every configuration tried")
    add_model_source(search)
    search.set_defaults(handler=handler)


def search_arguments(args) -> dict:
    """engine.serving_search()'s keyword arguments (not hardware, model, client) from the parsed arguments."""
    from engine.serving.sla import SLA
    input_length, output_length = request_lengths(args, DEFAULT_LENGTHS)
    sla = SLA(ttft_max_s=args.ttft_max, tpot_max_s=args.tpot_max, latency_max_s=args.latency_max)
    return dict(devices=args.devices, input_length=input_length,
                output_length=output_length, sla=None if sla.is_empty else sla, method=args.method,
                concurrencies=args.concurrency, token_budgets=args.token_budget, requests_per_s=args.requests_per_s,
                concurrent_users=args.users, disaggregated=args.disaggregated,
                prefill_hardware=args.prefill_hardware, decode_hardware=args.decode_hardware, exact=args.exact,
                weight_dtype=args.weight_dtype, activation_dtype=args.act_dtype, kv_dtype=args.kv_dtype,
                backend=args.backend, speculative=speculative_option(args))


def run_search(args, model, print_json) -> None:
    from engine.serving.search import serving_search
    from engine.hardware.specs import load_hardware
    devices = {name: load_hardware(name, args.specs) for name in dict.fromkeys(args.hardware)}
    kwargs = search_arguments(args)
    for key in ("prefill_hardware", "decode_hardware"):
        if kwargs[key] and kwargs[key] not in devices:
            kwargs[key] = load_hardware(kwargs[key], args.specs)
    if args.dask:
        from engine.explore.dask_cluster import _client
        with _client(None, args.dask) as client:
            result = serving_search(devices, model, client=client, **kwargs)
    else:
        result = serving_search(devices, model, **kwargs)
    if args.csv:
        result.configs.to_csv(args.csv, index=False)
    if args.json:
        data = result.to_dict()
        if not args.all_configs:
            data.pop("configs")
        data["configurations"] = int(len(result.configs))
        print_json(data)
    else:
        print_search(result)


def print_search(result) -> None:
    """The front per device as a table, then the best, the recommendation and the layouts left out."""
    configs = result.configs
    print(f"{len(configs)} configurations, {int(configs['fits'].sum())} run, {int(configs['exact'].sum())} "
          f"simulated exactly; SLA: {result.sla.describe() if result.sla else 'none'}")
    for (device, mode), front in result.front.groupby(["device", "mode"], sort=False):
        print(f"\nPareto front, {device} ({mode}):")
        print("  ".join(f"{title:>{width}}" for _, title, width in TABLE_COLUMNS))
        for row in front.sort_values("tokens_per_s_per_user").to_dict("records"):
            print("  ".join(f"{_cell(name, row.get(name)):>{width}}" for name, _, width in TABLE_COLUMNS))
    print()
    for message in result.messages:
        print(message)
    left_out = configs[~configs["fits"]].drop_duplicates(["device", "layout"])     # the first reason of each layout
    for row in left_out.head(12).to_dict("records"):
        print(f"left out: {row['device']} {row['layout']}: {row['reason']}")
    if len(left_out) > 12:
        print(f"left out: {len(left_out) - 12} more layouts (--csv writes every configuration with its reason)")


def _cell(name: str, value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    if name in ("ttft_s", "tpot_s"):
        return f"{value * 1e3:.1f}"
    if name in ("tokens_per_s_per_user", "tokens_per_s_per_device"):
        return f"{value:.1f}"
    if name == "meets_sla":
        return "yes" if value else "no"
    if name in ("concurrency", "token_budget"):
        return str(int(value))
    return str(value)

