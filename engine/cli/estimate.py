"""`llm-roofline gemm` (one GEMM on a device) and `llm-roofline estimate` (a model on a device)."""

from __future__ import annotations

from engine.cli.arguments import (DTYPE_HELP, add_model_source, add_scenario_arguments, dtype, load_model,
                                  positive_int, scenario_of)
from engine.cli.printing import print_json
from engine.common import readable
from engine.common.table_safety import to_safe_csv
from engine.estimators import METHODS


def cmd_gemm(args) -> None:
    from engine.results.run import estimate_gemm
    from engine.hardware.specs import load_hardware
    hw = load_hardware(args.hardware, args.specs)
    row = estimate_gemm(hw, args.m, args.n, args.k, dtype=args.dtype, method=args.method)
    keys = ("m", "k", "n", "dtype", "macs", "flops", "bytes", "intensity", "compute_time_s", "memory_time_s",
            "time_s", "bound", "matrix_rate_dtype")
    result = {"hardware": hw.name, "method": args.method, **{k: row[k] for k in keys}}
    if args.json:
        print_json(result)
        return
    print(f"C[{args.m},{args.n}] = A[{args.m},{args.k}] @ B[{args.k},{args.n}] ({args.dtype}) on {hw.name}")
    print(f"  {result['flops']:.4g} FLOP, {result['bytes']:.4g} B, intensity {result['intensity']:.1f} FLOP/B")
    print(f"  time {result['time_s'] * 1e6:.2f} us ({result['bound']} bound)")


def cmd_estimate(args) -> None:
    from engine.results.run import estimate
    from engine.results.memory import fewest_devices
    from engine.hardware.specs import load_hardware
    hw = load_hardware(args.hardware, args.specs)
    model = load_model(args)
    scenario = scenario_of(args)
    result = estimate(hw, model, scenario, method=args.method)
    fewest = None if result.memory.fits else fewest_devices(hw, model, scenario)
    if args.csv:
        to_safe_csv(result.kernels, args.csv)
    if args.json:
        data = result.to_dict()
        if not result.memory.fits:
            data["fewest_devices"] = None if fewest is None else {"devices": fewest.devices, "tp": fewest.tp,
                                                                  "pp": fewest.pp}
        print_json(data)
        return
    print_estimate(result, hw, model, scenario, fewest)


def print_estimate(result, hw, model, scenario, fewest) -> None:
    """The estimate as text: the phases, latencies and throughput, then experts, schedule, energy, memory."""
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
    print(energy_line(result.energy, result.devices))
    print(memory_line(result.memory, result.devices))
    if not result.memory.fits:
        print(fewest_devices_line(model, fewest))
    for note in result.notes:
        print(f"note: {note}")


def energy_line(energy, devices: int) -> str:
    """One line: the request's energy, per token, tokens per joule and the average power against the TDP."""
    if energy is None:
        return "energy       unavailable (see note)"
    token_energy = energy["energy_per_token_j"]
    per_token = "" if token_energy is None else f", {readable.energy(token_energy)}/token"
    return (f"energy       {readable.energy(energy['request_energy_j'])} on {devices} device(s){per_token}, "
            f"{readable.significant(energy['tokens_per_j'] or 0)} tokens/J; average power "
            f"{energy['average_power_w'] or 0:,.0f} W"
            + (f" of {energy['tdp_w']:.0f} W TDP" if energy["tdp_w"] else "")
            + (" (EXCEEDS TDP)" if energy["exceeds_tdp"] else ""))


def memory_line(memory, devices: int) -> str:
    """One line: per-device use against capacity, whether it fits, the largest batch that does, and when it
    does not fit, why (the footprint's own sentence, which names what is too big)."""
    largest = "no batch fits" if memory.max_batch < 1 else f"largest batch that fits: {memory.max_batch:,}"
    verdict = "fits" if memory.fits else "DOES NOT FIT"
    line = (f"memory       {memory.total_bytes / 1e9:,.2f} GB of {memory.capacity_bytes / 1e9:,.1f} GB per device, "
            f"{verdict} ({largest}); {memory.total_all_devices_bytes / 1e9:,.1f} GB over {devices} device(s)")
    return line if memory.fits else f"{line}\nwhy          {memory.message}"


def fewest_devices_line(model, fewest) -> str:
    """One line, when the model does not fit: the fewest devices that would hold it."""
    if getattr(model, "automatic", False):
        return "fewest devices that fit: not searched (an automatically decomposed model runs on one device)"
    return "fewest devices that fit: " + ("none tried fits" if fewest is None else
                                         f"{fewest.devices} (tp={fewest.tp}, pp={fewest.pp})")


def experts_line(result, model) -> str:
    """One line: routed experts whose weights a device reads per MoE layer per step, per phase."""
    s = result.scenario
    held = model.num_experts // s.ep
    of = f"of {model.num_experts}" if s.ep == 1 else f"of the {held} held per device"
    values = ", ".join(f"{phase} {value:.2f}" for phase, value in result.experts_touched.items())
    routing = "uniform routing" if not s.routing_skew else f"routing skew {s.routing_skew:g}"
    return (f"experts      {values} {of} routed experts read per MoE layer per step "
            f"(top-{model.experts_per_token}, {routing})")


def add_gemm_parser(commands) -> None:
    gemm = commands.add_parser("gemm", help="one GEMM C[m,n] = A[m,k] @ B[k,n]")
    gemm.add_argument("--hardware", required=True)
    for dim in ("m", "n", "k"):
        gemm.add_argument(f"--{dim}", type=positive_int, required=True)
    gemm.add_argument("--dtype", default="bf16", type=dtype, help=f"A and B: {DTYPE_HELP}")
    gemm.add_argument("--method", default="roofline", choices=list(METHODS))
    gemm.add_argument("--specs")
    gemm.add_argument("--json", action="store_true")
    gemm.set_defaults(handler=cmd_gemm)


def add_estimate_parser(commands) -> None:
    est = commands.add_parser("estimate", help="estimate a model on a device")
    est.add_argument("--hardware", required=True)
    est.add_argument("--model", required=True, metavar="ID_OR_PATH")
    add_scenario_arguments(est)
    est.add_argument("--specs")
    est.add_argument("--csv", metavar="PATH", help="write the kernel table as CSV")
    est.add_argument("--json", action="store_true")
    add_model_source(est)
    est.set_defaults(handler=cmd_estimate)
