"""One held-out fold of the silicon GEMM fit on the installed tables (tests/test_silicon_gemm_*.py): the held-out
device's groups and the constants fitted on every other device's groups of one dtype (200 rows per device and
framework). Skips when the calibration extra is absent. A fold is made once per test process (two test files share
H200's fp8_g128 fold)."""

from __future__ import annotations

import functools

import pytest

from engine.calibration.silicon import fit
from engine.hardware.specs import load_specs


# The devices whose folds the floors were measured on, trained on each other: the seven with HBM tables. The PCIe
# cards that joined the workbook later (L40S, RTX PRO 6000 Server, Arc Pro B60; h/newdev) are left out of these
# folds so the floors keep their oracle; their own held-out floor is tests/test_silicon_pcie_floor.py.
FLOOR_DEVICES = ("A100-80GB-SXM", "H100-SXM", "H200-SXM", "B200", "GB200", "B300", "GB300")


def floor_devices() -> dict:
    """The workbook's FLOOR_DEVICES ({name: Hardware})."""
    devices = load_specs()
    return {name: devices[name] for name in FLOOR_DEVICES}


@functools.cache
def _fit_rows():
    """The installed tables' rows the folds sample (the same for every fold: made once per test process)."""
    return fit.fit_rows(floor_devices(), rows_per_group=200)


@functools.cache
def _fold(dtype: str, held_out: str, options: tuple) -> tuple[list, list, tuple]:
    rows = _fit_rows()
    groups = fit.device_gemms(rows[rows["dtype"] == dtype], load_specs())
    training = [g for (device, _, _), g in groups.items() if device != held_out]
    return ([g for (device, _, _), g in groups.items() if device == held_out], training,
            fit.fit_dtype_clock_block_scaled(training, **dict(options)))


def held_out_fold_with_training(dtype: str, held_out: str, **fit_options) -> tuple[list, list, tuple]:
    """([held_out's groups], [the other devices' groups], fit.fit_dtype_clock_block_scaled(those, **fit_options))."""
    from engine.calibration import silicon
    if not silicon.is_installed():
        pytest.skip("aiconfigurator-core (calibration extra) absent")
    return _fold(dtype, held_out, tuple(sorted(fit_options.items())))


def held_out_fold(dtype: str, held_out: str, **fit_options) -> tuple[list, tuple]:
    """([held_out's groups], fit.fit_dtype_clock_block_scaled(other devices' groups, **fit_options))."""
    held, _, fitted = held_out_fold_with_training(dtype, held_out, **fit_options)
    return held, fitted
