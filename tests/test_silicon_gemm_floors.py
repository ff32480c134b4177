"""Cross-validated floors of the bf16 GEMM clock-and-power form on AIConfigurator's measured tables.

Leave-one-device-out: engine/calibration/silicon/fit.py's fit_dtype_clock fits (gemm_matrix_efficiency, gemm_latency_cycles,
gemm_power_j_per_flop, gemm_split_k_cycles) on the other devices' trtllm bf16 GEMMs (600 per device, n, k >= 128,
fixed sample) and the held-out device is scored against its floor. The floors sit just above the measured LODO
errors, narrow enough that a 15% change of any of the four fitted constants (in every fold) breaks one. Needs the
`calibration` extra (aiconfigurator-core); skipped without it.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.calibration import silicon
from engine.calibration.silicon import fit
from engine.hardware.specs import load_specs

pytestmark = pytest.mark.skipif(not silicon.is_installed(), reason="aiconfigurator-core (calibration extra) absent")

# device -> (median |error| at most, p90 |error| at most), measured leave-one-device-out (2026-11-26):
# A100 9.2% / 26.1%, B200 10.4 / 23.2, B300 10.7 / 27.9, GB200 11.3 / 24.0, GB300 9.4 / 23.7, H100 7.4 / 17.3,
# H200 7.6 / 16.9 (the additive form, kernel_latency + a per-dtype extra: A100 17.1% median)
FLOORS = {"A100-80GB-SXM": (0.095, 0.265), "B200": (0.107, 0.24), "B300": (0.11, 0.285), "GB200": (0.116, 0.245),
          "GB300": (0.097, 0.242), "H100-SXM": (0.077, 0.177), "H200-SXM": (0.078, 0.172)}
CONSTANTS = ("efficiency", "latency_cycles", "joules_per_flop", "split_k_cycles")


@pytest.fixture(scope="module")
def folds():
    """{device: (held-out DeviceGemms, constants fitted on the others, the others' additive-form constants)}."""
    devices = load_specs()
    rows = fit.fit_rows(devices, frameworks=("trtllm",), rows_per_group=600)
    groups = fit.device_gemms(rows[rows["dtype"] == "bf16"], devices)
    out = {}
    for (device, _), held_out in groups.items():
        training = [g for (d, _), g in groups.items() if d != device]
        out[device] = (held_out, fit.fit_dtype_clock(training), fit.fit_dtype(training))
    return out


def violations(folds, change: tuple[str, float] | None = None) -> list[str]:
    found = []
    for device, (held_out, constants, _) in folds.items():
        constants = list(constants)
        if change:
            constants[CONSTANTS.index(change[0])] *= change[1]
        error = np.abs(held_out.predicted_clock(*constants) / held_out.measured - 1.0)
        median, p90 = FLOORS[device]
        if np.median(error) > median or np.quantile(error, 0.9) > p90:
            found.append(f"{device}: median {np.median(error):.3f} (<= {median}), p90 {np.quantile(error, 0.9):.3f} "
                         f"(<= {p90})")
    return found


def test_every_device_left_out_meets_its_floor(folds):
    assert set(folds) == set(FLOORS)
    assert violations(folds) == []


@pytest.mark.parametrize("factor", [0.85, 1.15])
@pytest.mark.parametrize("constant", CONSTANTS)
def test_a_15_percent_change_of_a_fitted_constant_breaks_a_floor(folds, constant, factor):
    assert violations(folds, (constant, factor)) != []


def test_the_clock_form_generalises_to_a100_where_the_additive_form_does_not(folds):
    """A100 (1.41 GHz) left out: its GEMM floor is cycles at its own clock, not Hopper's and Blackwell's seconds."""
    held_out, clock, additive = folds["A100-80GB-SXM"]
    clock_error = np.median(np.abs(held_out.predicted_clock(*clock) / held_out.measured - 1.0))
    additive_error = np.median(np.abs(held_out.predicted(*additive) / held_out.measured - 1.0))
    assert clock_error < 0.095 < 0.15 < additive_error
