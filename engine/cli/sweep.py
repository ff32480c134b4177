"""`llm-roofline sweep`: every point of a grid of scenario and hardware values, one row each (docs/sweeps.md)."""

from __future__ import annotations

import sys

from engine.cli.arguments import (add_model_source, add_scenario_arguments, load_model, positive_int, scenario_of,
                                  timeout_seconds)
from engine.common.table_safety import to_safe_csv
from engine.explore.grid_spec import DEFAULT_MAX_POINTS, GridArgumentError, sweep_grid_arguments

SWEEP_FORMATS = ("csv", "parquet")


def sweep_format(args) -> str:
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

    from engine.explore.grid import DEVICE_FIELD, MODEL_FIELD
    from engine.hardware.specs import load_hardware, load_specs
    started = time.perf_counter()
    output_format = sweep_format(args)
    grid = checked_grid(args)
    scenario = scenario_of(args)
    model = None if MODEL_FIELD in grid else load_model(args)
    hardware = load_hardware(args.hardware, args.specs) if args.hardware else None
    devices = load_specs(args.specs) if args.specs and DEVICE_FIELD in grid else None
    frame = sweep_frame(args, grid, model, scenario, hardware, devices)
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


def checked_grid(args) -> dict:
    """The grid of --grid and --grid-file, with what it does not sweep given by --model and --hardware."""
    from engine.explore.grid import DEVICE_FIELD, MODEL_FIELD
    grid = sweep_grid_arguments(args.grid, args.grid_file, args.max_points)
    if not grid:
        raise GridArgumentError("sweep: give at least one --grid FIELD=VALUES or a --grid-file")
    if args.chunk_points is not None and args.chunk_points < 1:
        raise GridArgumentError(f"--chunk-points: expected a whole number >= 1, got {args.chunk_points}")
    if MODEL_FIELD not in grid and not args.model:
        raise GridArgumentError("sweep: give --model ID_OR_PATH or sweep models with --grid model=ID,ID")
    if DEVICE_FIELD not in grid and not args.hardware:
        raise GridArgumentError("sweep: give --hardware NAME or sweep devices with --grid device=NAME,NAME")
    return grid


def sweep_frame(args, grid, model, scenario, hardware, devices):
    """The swept table: on a Dask cluster with --dask, else in-process in chunks of --chunk-points."""
    if args.dask:
        try:
            import dask.distributed  # noqa: F401

            from engine.explore.dask_cluster import DEFAULT_CHUNK_POINTS, sweep_grid_dask
        except ImportError:
            raise GridArgumentError('--dask needs dask.distributed: pip install "dask[distributed]"') from None
        return sweep_grid_dask(model, scenario, grid, hardware, args.method, devices, address=args.dask,
                               chunk_points=args.chunk_points or DEFAULT_CHUNK_POINTS,
                               connect_timeout=args.dask_timeout)
    from engine.explore.dask_cluster import DEFAULT_CHUNK_POINTS, sweep_points_chunked
    from engine.explore.grid import expand_grid
    points = expand_grid(grid)
    return sweep_points_chunked(model, scenario, points, hardware, args.method, devices,
                                chunk_points=args.chunk_points or DEFAULT_CHUNK_POINTS)


def add_sweep_parser(commands) -> None:
    sweep = commands.add_parser("sweep", help="every point of a grid of scenario and hardware values, one row each",
                                description="Sweep a grid of scenario and hardware fields (docs/sweeps.md); one "
                                            "row per point: the grid's fields, then latency, throughput, energy "
                                            "and memory columns.")
    sweep.add_argument("--hardware", help="the device (unless the grid sweeps 'device')")
    sweep.add_argument("--model", metavar="ID_OR_PATH", help="the model (unless the grid sweeps 'model')")
    add_scenario_arguments(sweep)
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
    sweep.add_argument("--chunk-points", type=positive_int, default=None,
                       help="points per task with --dask (default 10000); without --dask, points per in-process "
                            "chunk (default 10000; bounds memory)")
    sweep.add_argument("--dask-timeout", type=timeout_seconds, default=10.0, metavar="SECONDS",
                       help="give up connecting to the --dask scheduler after this long (default 10)")
    sweep.add_argument("--max-points", type=positive_int, default=DEFAULT_MAX_POINTS, metavar="N",
                       help=f"refuse grids of more points than this, before building them (default "
                            f"{DEFAULT_MAX_POINTS:,})")
    sweep.add_argument("--specs", help="path to a specs workbook (default: bundled specs.xlsx)")
    add_model_source(sweep)
    sweep.set_defaults(handler=cmd_sweep)
