"""Calibration data, kernel rows built from measurements and the shipped fit (accuracy floors:
test_calibration_floors.py).

Accuracy floors use ../shared/calibration/vidur_llama2_ops.csv when present, else the bundled sample
(engine/data/vidur_llama2_ops_sample.csv), whose rows must be rows of the shared file.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.calibration import measurements as calibration
from engine.calibration.fit import fit_realistic
from engine.estimators.realistic import DEFAULT_CONSTANTS

FULL = calibration.SHARED_MEASUREMENTS
needs_full = pytest.mark.skipif(not FULL.exists(), reason="../shared/calibration/vidur_llama2_ops.csv not present")


@pytest.fixture(scope="module")
def measurements():
    return calibration.load_measurements()


@pytest.fixture(scope="module")
def tidy(measurements, devices):
    return calibration.predict(measurements, devices, ("roofline", "realistic"))


@needs_full
def test_bundled_sample_rows_are_rows_of_the_shared_file():
    full = calibration.read_raw(FULL).astype(str)
    sample = calibration.read_raw(calibration.BUNDLED_SAMPLE).astype(str)
    keys = list(full.columns)
    merged = sample.merge(full.drop_duplicates(), on=keys, how="left", indicator=True)
    assert (merged["_merge"] == "both").all()
    assert len(sample) == len(sample.drop_duplicates())


def test_bundled_sample_covers_every_device_and_kind():
    sample = calibration.load_measurements(calibration.BUNDLED_SAMPLE)
    counts = sample.groupby(["device", "kind"]).size()
    assert set(counts.index) == {(d, k) for d in ("A100-80GB-SXM", "H100-SXM") for k in calibration.KINDS}
    assert (counts >= 250).all()
    assert sample["tokens"].min() == 1 and sample["tokens"].max() == 4096


def test_kernel_rows_follow_the_decomposition_conventions():
    rows = pd.DataFrame([
        dict(device="H100-SXM", model="x", op="mlp_up_proj", kind="gemm", tokens=8, tp=1, m=8, n=22016, k=4096),
        dict(device="H100-SXM", model="x", op="mlp_act", kind="swiglu", tokens=8, tp=1, m=8, n=11008, k=0),
        dict(device="H100-SXM", model="x", op="input_layernorm", kind="rmsnorm", tokens=8, tp=1, m=8, n=4096, k=0),
        dict(device="H100-SXM", model="x", op="add", kind="residual_add", tokens=8, tp=1, m=8, n=4096, k=0),
    ]).assign(dtype="fp16", measured_s=1e-5)
    table = calibration.kernel_table(rows)
    assert list(table["op"]) == ["gemm", "activation", "norm", "residual"]
    assert table["bytes"][0] == 2 * (4096 * 22016 + 8 * 4096 + 8 * 22016)   # weights, A in, C out
    assert table["macs"][0] == 8 * 4096 * 22016
    assert table["bytes"][1] == 2 * 8 * 11008 * 3                          # gate and up in, out
    assert table["bytes"][2] == 2 * (8 * 4096 * 2 + 4096)                  # x in, y out, weight vector
    assert table["bytes"][3] == 2 * 8 * 4096 * 3                           # x and residual in, out


def test_unknown_hardware_is_named(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("hardware,model,op,kind,tokens,tp,m,n,k,dtype,median_ms\nTPU,x,add,residual_add,1,1,1,8,0,fp16,1\n")
    with pytest.raises(ValueError, match="'TPU'"):
        calibration.load_measurements(path)


def test_summary_by_hand():
    tidy = pd.DataFrame({"method": "m", "device": "d", "kind": ["gemm"] * 5,
                         "error": [0.1, -0.2, 0.3, -0.05, 0.0]})
    row = calibration.summary(tidy).iloc[0]
    assert row["count"] == 5
    assert row["median_abs_error"] == pytest.approx(0.1)
    assert row["p90_abs_error"] == pytest.approx(0.26)       # |e| sorted 0, .05, .1, .2, .3: 90% -> .2 + .6 x .1
    assert row["bias"] == pytest.approx(0.0)
    assert calibration.summary(tidy.assign(kind="rmsnorm"), by=("family",)).iloc[0]["family"] == "elementwise"


def test_tidy_predictions_have_every_column(tidy, measurements):
    assert list(tidy.columns) == [*calibration.MEASUREMENT_COLUMNS, "method", "predicted_s", "error"]
    assert len(tidy) == 2 * len(measurements)
    assert np.isfinite(tidy["predicted_s"]).all() and (tidy["predicted_s"] > 0).all()


@needs_full
def test_shipped_constants_are_the_fit_of_the_shared_data(devices):
    """specs.xlsx and realistic.py ship exactly what fit_realistic finds on the full measurement file."""
    fit = fit_realistic(calibration.load_measurements(FULL), devices)
    for name, device_fit in fit.devices.items():
        hw = devices[name]
        assert hw.achievable_matrix_fraction == device_fit.matrix_fraction
        assert hw.achievable_memory_bandwidth_fraction == device_fit.memory_fraction
        assert hw.kernel_latency_s == pytest.approx(device_fit.kernel_latency_s, rel=1e-12)
    assert fit.constants.kernel_classes == DEFAULT_CONSTANTS.kernel_classes
