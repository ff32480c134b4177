"""Energy and power: per-kernel activities x per-operation energies from the spec, plus static power x time.

Per occurrence of a kernel (one device's view, as in the kernel table):

    dynamic = MACs x pJ/MAC (the format the matrix units run the kernel's dtype in)
            + vector FLOPs x pJ/FLOP
            + HBM bytes x pJ/B (+ LLC and SRAM bytes x pJ/B where the hierarchical method gives them)
            + link bytes x 8 x pJ/bit
    static  = static power x time_s
    energy  = dynamic + static

The energies are estimates (scripts/build_specs.py cites them); a device whose spec lacks one that the
estimate needs has no energy (`Estimate.energy` is None and a note says which value is missing).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

import numpy as np

from engine.common.arrays import SHORT_ROWS, all_true, any_true, finite
from engine.common.sums import weighted_sum
from engine.hardware.device import Hardware
from engine.results.columns import KernelColumns

ENERGY_COLUMNS = ("matrix_energy_j", "vector_energy_j", "hbm_energy_j", "llc_energy_j", "sram_energy_j",
                  "link_energy_j", "static_energy_j", "energy_j")


def _column(kernels, name: str) -> np.ndarray:
    if name not in kernels:
        return np.zeros(len(kernels["count"]))
    return finite(kernels[name])


def _mac_energy(hardware: Hardware, rate_dtype: str) -> Optional[float]:
    if rate_dtype == "vector":
        return None if hardware.vector_energy_j_per_flop is None else 2.0 * hardware.vector_energy_j_per_flop
    return getattr(hardware, f"matrix_energy_j_per_mac_{rate_dtype}")


def kernel_energy(kernels, hardware: Hardware) -> tuple[Optional[dict], list[str]]:
    """Per-occurrence energy columns (joules) for every kernel row, or (None, [why]) when the spec lacks a value.
    `kernels`: a kernel DataFrame or a dict of column arrays (engine/explore/evaluation.py)."""
    fast = _short_table_energy(kernels, hardware)
    if fast is not None:
        return fast, []
    missing = []
    macs = _column(kernels, "macs") * (np.asarray(kernels["unit"]) == "matrix" if "unit" in kernels else 1.0)
    per_mac = np.zeros(len(macs))
    positive = macs > 0
    if any_true(positive):
        dtypes = np.asarray(kernels["dtype"])
        for dtype in dict.fromkeys(dtypes[positive].tolist()):
            rate = hardware.matrix_rate_dtype(dtype)
            value = _mac_energy(hardware, rate)
            if value is None:
                missing.append(f"matrix_energy_per_mac_{rate}" if rate != "vector" else "vector_energy_per_flop")
            else:
                per_mac[dtypes == dtype] = value
    vector_flops = _column(kernels, "vector_flops")
    link_bytes = _column(kernels, "link_bytes")
    hbm = _column(kernels, "hbm_bytes") if "hbm_bytes" in kernels else _column(kernels, "bytes")
    needed = [("vector_energy_per_flop", hardware.vector_energy_j_per_flop, any_true(vector_flops > 0)),
              ("memory_energy_per_byte", hardware.memory_energy_j_per_byte, True),
              ("link_energy_per_bit", hardware.link_energy_j_per_bit, any_true(link_bytes > 0)),
              ("static_power", hardware.static_power_w, True)]
    missing += [key for key, value, used in needed if used and value is None]
    if missing:
        keys = ", ".join(dict.fromkeys(missing))
        return None, [f"energy unavailable: {hardware.name} has no {keys} in the specs workbook"]
    notes = []
    out = {
        "matrix_energy_j": macs * per_mac,
        "vector_energy_j": vector_flops * (hardware.vector_energy_j_per_flop or 0.0),
        "hbm_energy_j": hbm * hardware.memory_energy_j_per_byte,
        "link_energy_j": link_bytes * 8.0 * (hardware.link_energy_j_per_bit or 0.0),
        "static_energy_j": np.asarray(kernels["time_s"], dtype=float) * hardware.static_power_w,
    }
    no_traffic = set()
    for level, value in (("llc", hardware.llc_energy_j_per_byte), ("sram", hardware.sram_energy_j_per_byte)):
        if f"{level}_bytes" not in kernels:    # no traffic at the level: zeros (0 x a finite energy is +0)
            out[f"{level}_energy_j"] = np.zeros(len(macs))
            no_traffic.add(f"{level}_energy_j")
            continue
        traffic = _column(kernels, f"{level}_bytes")
        if value is None and any_true(traffic > 0):
            notes.append(f"energy: {hardware.name} has no {level}_energy_per_byte; {level} traffic is left out")
        out[f"{level}_energy_j"] = traffic * (value or 0.0)
    # the sum starts 0 + matrix, so no partial sum is -0.0 and adding +0.0 changes no bit: the zeros are skipped
    out["energy_j"] = sum(out[c] for c in ENERGY_COLUMNS[:-1] if c not in no_traffic)
    return out, notes


_ZERO, _INFINITY = np.array(0.0), np.array(np.inf)    # 0-d operands: no conversion of a Python scalar per call
_INPUTS = ("macs", "vector_flops", "bytes", "link_bytes", "time_s")     # per row, in the order of _COEFFICIENTS' rows


def _short_table_energy(kernels, hardware: Hardware) -> Optional[dict]:
    """kernel_energy's columns of a short table (a prefill or a decode step) without traffic at the LLC or SRAM, in one
    multiplication: the rows of [macs, vector FLOPs, HBM bytes, link bytes, time_s] times per-row coefficients
    [pJ/MAC of the row's dtype where its unit is matrix (else 0), pJ/FLOP, pJ/B, 8 x pJ/bit, static W] kept per
    (device, dtype column, unit column). The same bits as kernel_energy's steps: (macs x unit) x energy =
    macs x (unit x energy) and (link x 8) x energy = link x (8 x energy) (x 8 and x 0/1 are exact), and the
    sum 0 + matrix + vector + hbm + link + static is np.add.reduce over the rows from 0.0 in that order. None (the
    general path) where the table is longer, has LLC/SRAM/HBM traffic columns or no unit column, a value is not
    finite, or the device lacks an energy."""
    if ("llc_bytes" in kernels or "sram_bytes" in kernels or "hbm_bytes" in kernels or "unit" not in kernels
            or not all(name in kernels for name in _INPUTS) or len(kernels["count"]) > SHORT_ROWS):
        return None
    coefficients = _coefficients(hardware, tuple(np.asarray(kernels["dtype"]).tolist()),
                                 tuple(np.asarray(kernels["unit"]).tolist()))
    if coefficients is None:
        return None
    values = np.array([kernels[name] for name in _INPUTS], dtype=float)
    if not all_true((values >= _ZERO) & (values < _INFINITY)):   # NaN, infinities (nan_to_num) or a negative value
        return None
    energies = np.multiply(values, coefficients)
    zeros = np.zeros((2, energies.shape[1]))
    matrix, vector, hbm, link, static = energies
    return {"matrix_energy_j": matrix, "vector_energy_j": vector, "hbm_energy_j": hbm, "link_energy_j": link,
            "static_energy_j": static, "llc_energy_j": zeros[0], "sram_energy_j": zeros[1],
            "energy_j": np.add.reduce(energies, axis=0, initial=0.0)}


@lru_cache(maxsize=256)
def _coefficients(hardware: Hardware, dtypes: tuple, units: tuple) -> Optional[np.ndarray]:
    """_short_table_energy's per-row coefficients (read-only), None where an energy is missing, not finite or
    negative (a zero's sign would then differ from the general path's). With every input >= 0 a row whose dtype has
    no positive MACs has macs 0 (x 0 or x its energy: +0 either way), so each row's energy of its dtype is used."""
    per_mac = {}
    try:
        for dtype in dict.fromkeys(dtypes):
            per_mac[dtype] = _mac_energy(hardware, hardware.matrix_rate_dtype(dtype))
    except (AttributeError, KeyError, ValueError):      # a dtype without a matrix rate: the general path decides
        return None
    constants = (hardware.vector_energy_j_per_flop, hardware.memory_energy_j_per_byte, hardware.link_energy_j_per_bit,
                 hardware.static_power_w, *per_mac.values())
    if any(value is None or not 0.0 <= value < float("inf") for value in constants):
        return None
    rows = len(dtypes)
    matrix = [per_mac[dtype] * (unit == "matrix") for dtype, unit in zip(dtypes, units)]
    coefficients = np.array([matrix, [hardware.vector_energy_j_per_flop] * rows,
                             [hardware.memory_energy_j_per_byte] * rows, [8.0 * hardware.link_energy_j_per_bit] * rows,
                             [hardware.static_power_w] * rows], dtype=float)
    coefficients.setflags(False)
    return coefficients


def add_energy(kernels, hardware: Hardware) -> list[str]:
    """Add the ENERGY_COLUMNS to `kernels` (per occurrence) when the spec allows; returns notes.
    `kernels`: a kernel DataFrame or engine/report_columns.KernelColumns."""
    columns, notes = kernel_energy(kernels, hardware)
    if columns is not None:
        add = kernels.add if isinstance(kernels, KernelColumns) else kernels.__setitem__
        for name in ENERGY_COLUMNS:
            add(name, columns[name])
        add("total_energy_j", np.asarray(kernels["count"], dtype=float) * columns["energy_j"])
    return notes


def energy_tokens(phase: str, batch, input_length, output_length, dp: int):
    """The tokens energy is counted per (all dp replicas): prompt tokens for a prefill, one per sequence
    for a decode step, output tokens otherwise (scalars or numpy arrays)."""
    if phase == "prefill":
        return dp * batch * input_length
    if phase == "decode":
        return dp * batch
    return dp * batch * output_length


def energy_summary(kernels, hardware: Hardware, scenario) -> Optional[dict]:
    """Energy per phase, per request (all devices) and per token; average power against TDP.

    The kernel table is one device's view, so the energy of all devices is devices x that device's energy
    (every device of a tp/pp group runs its share; dp replicas each serve their own batch). Tokens are
    output tokens (prefill-only scenarios: input tokens).
    """
    if "energy_j" not in kernels:
        return None
    count = np.asarray(kernels["count"], dtype=float)
    columns = {c: np.asarray(kernels[c], dtype=float) for c in ("energy_j", "time_s") + ENERGY_COLUMNS[:-1]}
    phase = np.asarray(kernels["phase"])
    phases = {}
    names = list(dict.fromkeys(phase.tolist()))
    if len(names) == 1 and all(values.flags.c_contiguous for values in (count, *columns.values())):
        # one phase, every array contiguous: the phase's sums are the device's, one weighted sum each
        device = phases[str(names[0])] = {c: weighted_sum(values, count) for c, values in columns.items()}
        components = {c: device[c] for c in ENERGY_COLUMNS[:-1]}
    else:
        for name in names:
            if len(names) == 1:     # every row: contiguous arrays as the selections below are
                n, selected = np.ascontiguousarray(count), {c: np.ascontiguousarray(v) for c, v in columns.items()}
            else:
                rows = phase == name
                n, selected = count[rows], {c: values[rows] for c, values in columns.items()}
            phases[str(name)] = {c: weighted_sum(values, n) for c, values in selected.items()}
        device = {c: weighted_sum(columns[c], count) for c in ("energy_j", "time_s")}
        components = {c: weighted_sum(columns[c], count) for c in ENERGY_COLUMNS[:-1]}
    device_energy, device_time = device["energy_j"], device["time_s"]
    devices = scenario.device_count
    s = scenario
    tokens = energy_tokens(s.phase, s.batch, s.input_length, s.output_length, s.dp)
    energy = device_energy * devices
    power = device_energy / device_time if device_time > 0 else None
    tdp = hardware.tdp_w
    return {
        "phases": phases,
        "energy_per_device_j": device_energy,
        "request_energy_j": energy,
        "tokens": float(tokens),
        "energy_per_token_j": energy / tokens if tokens else None,
        "tokens_per_j": tokens / energy if energy > 0 else None,
        "average_power_w": power,
        "tdp_w": tdp,
        "exceeds_tdp": bool(power is not None and tdp is not None and power > tdp),
        "components_j": components,
    }


def tdp_note(summary: Optional[dict], hardware: Hardware) -> list[str]:
    if summary is None or not summary["exceeds_tdp"]:
        return []
    return [f"estimated average power {summary['average_power_w']:.0f} W exceeds {hardware.name}'s TDP "
            f"{summary['tdp_w']:.0f} W: the chip would throttle, so the time estimate is optimistic"]
