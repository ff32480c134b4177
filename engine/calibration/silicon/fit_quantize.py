"""The tables' activation-quantize constants per kind of matrix unit (h/gemm11, docs/accuracy.md).

Every constant of a leave-one-device-out fold is fitted first with one quantize latency and byte count per framework
(fit.fit_dtype_clock_block_scaled); then, with fit.QUANTIZE_BY_SCALE_UNITS, the quantize constants are refitted per
framework and kind of matrix unit (conditions.quantize_key: "<framework>/native" on matrix units with native block
scales, Blackwell; "<framework>/promoted" on the others, Hopper), every other constant held. "promoted" (kept) refits
only the promoted keys: the native units keep the framework's value fitted on every training device; "all" (tried, not
kept: B300 worse) refits both.
"""

from __future__ import annotations

import numpy as np

from engine.calibration.fit import objective
from engine.calibration.silicon.fit_grids import QUANTIZE_BYTES_GRID, QUANTIZE_LATENCY_GRID
from engine.estimators.gemm_condition import QUANTIZE_BYTES_PER_VALUE


def refit_quantize_by_units(groups: list, fitted: tuple, units: str = "promoted", rounds: int = 2) -> tuple:
    """`fitted` (fit_dtype_clock_block_scaled's values on `groups`, quantize keyed by framework) with the quantize
    latency and bytes refitted per DeviceGemms.quantize_key (`units` "promoted": only the promoted keys, the native
    units keep their framework's value through DeviceGemms.quantize_s' fallback; "all": both kinds), every other
    constant held, minimising the pooled objective."""
    if units not in ("promoted", "all"):
        raise ValueError(f"QUANTIZE_BY_SCALE_UNITS: {units!r}, expected 'promoted', 'all' or ''")
    measured = np.concatenate([g.measured for g in groups])
    done = np.concatenate([g.predicted_clock(*fitted[:5], fitted[6], fitted[8],
                                             native_scale_cycles=fitted[9].get(g.framework, 0.0)) for g in groups])
    framework_of = {g.quantize_key: g.framework for g in groups if g.quantize_stream_s is not None}
    refitted = [k for k in framework_of if units == "all" or k.endswith("/promoted")]
    latency = {**fitted[5], **{k: fitted[5].get(framework_of[k], 0.0) for k in refitted}}
    nbytes = {**fitted[7], **{k: fitted[7].get(framework_of[k], QUANTIZE_BYTES_PER_VALUE) for k in refitted}}
    def score(lat, nb):
        return objective(done + np.concatenate([np.broadcast_to(g.quantize_s(lat, nb), g.measured.shape)
                                                for g in groups]), measured)
    for _ in range(rounds):
        for key in sorted(refitted):
            latency[key] = float(min(QUANTIZE_LATENCY_GRID, key=lambda q: score({**latency, key: q}, nbytes)))
            nbytes[key] = float(min(QUANTIZE_BYTES_GRID, key=lambda b: score(latency, {**nbytes, key: b})))
    return fitted[:5] + (latency, fitted[6], nbytes) + fitted[8:]


def by_units(units: str, groups: list, fitted: tuple) -> tuple:
    """fit_dtype_clock_block_scaled's `fitted` on `groups`, its quantize constants refitted per kind of matrix unit
    (`units`: fit.QUANTIZE_BY_SCALE_UNITS; unchanged where it is off or nothing is quantized)."""
    return refit_quantize_by_units(groups, fitted, units) if units and fitted[5] else fitted
