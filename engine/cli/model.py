"""`llm-roofline model show`: a model's parameters, layers, heads and KV-cache bytes per token."""

from __future__ import annotations

from engine.cli.arguments import DTYPE_HELP, add_model_source, dtype, load_model
from engine.cli.printing import print_fields


def cmd_model_show(args) -> None:
    model = load_model(args)
    summary = model.summary()
    summary["kv_cache_bytes_per_token"] = model.kv_cache_bytes_per_token(args.kv_dtype)
    summary["kv_dtype"] = args.kv_dtype
    print_fields(summary, args.json)


def add_model_parser(commands) -> None:
    model = commands.add_parser("model", help="model configs").add_subparsers(dest="action", required=True)
    model_show = model.add_parser("show", help="parameters, layers, heads, KV bytes per token")
    model_show.add_argument("model", metavar="ID_OR_PATH")
    model_show.add_argument("--kv-dtype", default="bf16", type=dtype, help=f"KV cache: {DTYPE_HELP}")
    model_show.add_argument("--json", action="store_true")
    add_model_source(model_show)
    model_show.set_defaults(handler=cmd_model_show)
