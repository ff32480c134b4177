"""Roofline ceilings of a device: one compute ceiling per unit and dtype, one memory ceiling per level."""

from __future__ import annotations

import pandas as pd

from engine.hardware.device import Hardware

CEILING_COLUMNS = ("device", "kind", "label", "unit", "dtype", "level", "value", "ridge_point")


def roofline_ceilings(hardware: Hardware) -> pd.DataFrame:
    """Rows of ceilings for `hardware`.

    kind "compute": value in FLOP/s (matrix units per rated dtype, vector units at fp32);
    ridge_point = value / HBM bandwidth in FLOP/byte.
    kind "memory": value in B/s for each memory level the spec publishes (HBM, LLC, SRAM).
    """
    hbm = hardware.memory_bandwidth_bytes_per_s
    rows = []
    for dtype in hardware.matrix_dtypes:
        peak = hardware.matrix_flops_per_s(dtype)
        rows.append((hardware.name, "compute", f"matrix {dtype}", "matrix", dtype, "", peak, peak / hbm))
    vector = hardware.vector_flops_per_s
    rows.append((hardware.name, "compute", "vector fp32", "vector", "fp32", "", vector, vector / hbm))
    levels = (("HBM", hbm), ("LLC", hardware.llc_bandwidth_bytes_per_s), ("SRAM", hardware.sram_bandwidth_bytes_per_s))
    for level, bandwidth in levels:
        if bandwidth:
            rows.append((hardware.name, "memory", f"{level} bandwidth", "memory", "", level, bandwidth, float("nan")))
    return pd.DataFrame(rows, columns=list(CEILING_COLUMNS))
