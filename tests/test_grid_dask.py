"""Sweeps on Dask (engine/explore/dask_cluster.py): a LocalCluster of two worker processes gives, bit for bit, the frame
engine.explore.grid.sweep_grid gives in one process (itself checked point by point against engine.estimate in
tests/test_grid.py), whatever the chunking."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from dask.distributed import Client, LocalCluster, get_task_stream

import engine
from engine.explore.grid import GridError, sweep_grid
from engine.explore.dask_cluster import sweep_grid_dask, sweep_points_chunked
from tests.conftest import REPO

LLAMA8 = engine.load_model("meta-llama/Llama-3.1-8B")
DECODE = engine.Scenario(phase="decode", batch=4, input_length=512)
# NVL-AX has no energy values (NaN energy columns); a 200,000-token context is too long for the
# model (an error per point); 3 x 2 x 3 x 3 = 54 points
MIXED = {"batch": [1, 3, 64], "memory_bandwidth": [2000, 3350.5], "device": ["H100-SXM", "B200", "NVL-AX"],
         "context_length": [None, 4096, 200_000]}


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as connected:
        yield connected


def test_mixed_grid_on_two_workers_equals_one_process(client):
    expected = sweep_grid(LLAMA8, DECODE, MIXED)
    assert (expected["error"] != "").sum() == 18 and expected["error"].str.contains("max_position_embeddings").any()
    assert expected["energy_j"].notna().sum() == 24          # H100-SXM and B200 points that run: 2 x 3 x 2 x 2
    with get_task_stream(client) as stream:
        got = sweep_grid_dask(LLAMA8, DECODE, MIXED, client=client, chunk_points=7)
    chunks = [t for t in stream.data if str(t["key"]).startswith("llm-roofline-sweep-")]
    assert len(chunks) == 8                                        # ceil(54 / 7) tasks on the workers
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert got.equals(expected)
    assert list(got["batch"]) == [1] * 18 + [3] * 18 + [64] * 18   # the grid's order, not the finishing order


def test_connecting_by_address_and_another_method(client):
    scenario = engine.Scenario(phase="request", batch=2, input_length=256, output_length=4)
    grid = {"input_length": [1, 128, 1024], "matrix_tflops": [400, 989.5], "output_length": [1, 3]}
    expected = sweep_grid(LLAMA8, scenario, grid, hardware=engine.load_hardware("H100-SXM"), method="realistic")
    got = sweep_grid_dask(LLAMA8, scenario, grid, hardware=engine.load_hardware("H100-SXM"), method="realistic",
                          address=client.scheduler.address, chunk_points=5)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert (got["error"] == "").all() and (got["ttft_s"] > 0).all()


def test_several_models_on_two_workers_equal_one_process(client):
    models = {"gpt2": engine.load_model("openai-community/gpt2"), "llama": LLAMA8}
    grid = {"batch": [1, 8], "tp": [1, 2]}
    expected = sweep_grid(models, DECODE, grid, hardware=engine.load_hardware("H100-SXM"))
    got = sweep_grid_dask(models, DECODE, grid, hardware=engine.load_hardware("H100-SXM"), client=client,
                          chunk_points=3)
    assert list(got["model"]) == ["gpt2"] * 4 + ["llama"] * 4       # the model axis added first, as in one process
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_chunked_in_one_process_is_identical():
    expected = sweep_grid(LLAMA8, DECODE, MIXED)
    from engine.explore.grid import expand_grid
    for size in (1, 10, 54, 1000):
        got = sweep_points_chunked(LLAMA8, DECODE, expand_grid(MIXED), chunk_points=size)
        pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_bad_input_fails_before_any_task(client):
    with pytest.raises(GridError, match="chunk_points"):
        sweep_grid_dask(LLAMA8, DECODE, {"batch": [1]}, client=client, chunk_points=0)
    with pytest.raises(GridError, match="NoSuchChip"):
        sweep_grid_dask(LLAMA8, DECODE, {"device": ["H100-SXM", "NoSuchChip"]}, client=client)
    with pytest.raises(GridError, match="cannot sweep 'bandwidth'"):
        sweep_grid_dask(LLAMA8, DECODE, {"bandwidth": [1]}, client=client)
    with pytest.raises(GridError, match="no hardware"):
        sweep_grid_dask(LLAMA8, DECODE, {"batch": [1]}, client=client)
    with pytest.raises(GridError, match="no model"):
        sweep_grid_dask(None, DECODE, {"batch": [1]}, hardware=engine.load_hardware("H100-SXM"), client=client)


def test_a_worker_error_reaches_the_caller(client):
    with pytest.raises(GridError, match="memory_bandwidth"):
        sweep_grid_dask(LLAMA8, DECODE, {"memory_bandwidth": [-5.0, 100.0]}, hardware=engine.load_hardware("H100-SXM"),
                        client=client, chunk_points=1)


def test_engine_imports_without_dask():
    code = (
        "import sys\n"
        "sys.modules['dask'] = sys.modules['distributed'] = sys.modules['dask.distributed'] = None\n"
        "import engine\n"
        "assert callable(engine.sweep_grid) and callable(engine.sweep_points)\n"
        "run = engine.sweep_grid_dask\n"
        "model, hw = engine.load_model('meta-llama/Llama-3.1-8B'), engine.load_hardware('H100-SXM')\n"
        "assert len(engine.sweep_grid(model, engine.Scenario(phase='decode'), {'batch': [1, 2]}, hardware=hw)) == 2\n"
        "try:\n"
        "    run(model, engine.Scenario(phase='decode'), {'batch': [1]}, hardware=hw)\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert 'pip install "dask[distributed]"' in done.stdout
    check_lazy = "import sys, engine; engine.sweep_grid_dask; print('dask' in sys.modules)"
    plain = subprocess.run([sys.executable, "-c", check_lazy], capture_output=True, text=True, cwd=REPO, timeout=120,
                           check=False)
    assert plain.stdout.strip() == "False", plain.stderr


def test_results_are_numbers_not_objects(client):
    got = sweep_grid_dask(LLAMA8, DECODE, {"batch": [1, 2, 3]}, hardware=engine.load_hardware("H100-SXM"),
                          client=client, chunk_points=2)
    assert got["tpot_s"].dtype == np.float64 and str(got["devices"].dtype) == "Int64"
    assert got["tpot_s"].is_monotonic_increasing
