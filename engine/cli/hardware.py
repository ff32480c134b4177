"""`llm-roofline hardware list | show | template`: the devices of the specs workbook."""

from __future__ import annotations

from engine.cli.printing import print_fields, print_json


def cmd_hardware_list(args) -> None:
    from engine.hardware.specs import load_specs
    devices = load_specs(args.specs)
    if args.json:
        print_json([{"name": hw.name, "vendor": hw.vendor, "kind": hw.kind} for hw in devices.values()])
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
    print_fields(hardware_summary(load_hardware(args.name, args.specs)), args.json)


def cmd_hardware_template(args) -> None:
    from engine.hardware.specs import write_template
    write_template(args.path)
    print(f"wrote a blank specs workbook to {args.path}: fill in a device column, then use --specs {args.path}")


def add_hardware_parser(commands) -> None:
    hardware = commands.add_parser("hardware", help="devices of the specs workbook").add_subparsers(dest="action",
                                                                                                  required=True)
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
