"""Sweeps on a Dask cluster: the grid's points split into chunks, each chunk swept on a worker.

    from engine.explore.dask_cluster import sweep_grid_dask
    frame = sweep_grid_dask(model, scenario, {"batch": [1, 8, 64], "memory_bandwidth": range(1000, 9000, 250)},
                            hardware=engine.load_hardware("H100-SXM"), address="tcp://scheduler:8786")

Every chunk runs engine.explore.grid.sweep_points on a contiguous slice of the expanded grid, so the result is
the frame engine.explore.grid.sweep_grid gives in one process, row for row and bit for bit (tests/test_grid_dask.py).
The model, the base device, the device list and the scenario travel to the workers once (scattered);
workers need this package installed at the same version (docs/sweeps.md). Dask is imported only when a
sweep runs here: the engine imports without it.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any, Mapping, Optional, Sequence

import pandas as pd

from engine.explore.grid import DEVICE_FIELD, MODEL_FIELD, GridError, check_fields, expand_grid, sweep_points
from engine.explore.model_axis import model_choices
from engine.hardware.device import Hardware
from engine.workload.scenario import Scenario

DEFAULT_CHUNK_POINTS = 10_000
DEFAULT_CONNECT_TIMEOUT_S = 10.0
LOCAL = "local"
INSTALL_HINT = 'Dask sweeps need dask.distributed: pip install "dask[distributed]"'


def sweep_grid_dask(model, scenario: Scenario, grid: Mapping[str, Sequence[Any]], hardware: Optional[Hardware] = None,
                    method: str = "roofline", devices: Optional[Mapping[str, Hardware]] = None, *, client=None,
                    address: Optional[str] = None, chunk_points: int = DEFAULT_CHUNK_POINTS,
                    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S) -> pd.DataFrame:
    """engine.explore.grid.sweep_grid on Dask workers, `chunk_points` points per task.

    The cluster: `client` (a dask.distributed.Client) when given, else a Client connected to `address`
    (a scheduler address such as "tcp://host:8786"; GridError when none answers within `connect_timeout`
    seconds), else (address None or "local") a LocalCluster on this machine (one single-threaded worker
    process per core), closed again when the sweep is done. Several models ({id: model} or a list) add a
    `model` axis as engine.explore.grid.sweep_grid does."""
    models = model_choices(model)
    if models is not None:
        grid, model = ({MODEL_FIELD: list(models), **grid} if MODEL_FIELD not in grid else grid), models
    return sweep_points_dask(model, scenario, expand_grid(grid), hardware, method, devices, client=client,
                             address=address, chunk_points=chunk_points, connect_timeout=connect_timeout)


def sweep_points_dask(model, scenario: Scenario, points: pd.DataFrame, hardware: Optional[Hardware] = None,
                      method: str = "roofline", devices: Optional[Mapping[str, Hardware]] = None, *, client=None,
                      address: Optional[str] = None, chunk_points: int = DEFAULT_CHUNK_POINTS,
                      connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S) -> pd.DataFrame:
    """engine.explore.grid.sweep_points on Dask workers (sweep_grid_dask for an explicit list of points)."""
    size = check_chunk_points(chunk_points)
    check_fields(list(points.columns))
    if model is None and MODEL_FIELD not in points.columns:
        raise GridError("no model: pass one or sweep the 'model' field")
    if hardware is None and DEVICE_FIELD not in points.columns:
        raise GridError("no hardware: pass a device or sweep the 'device' field")
    devices = _resolve_devices(points, devices)
    chunks = [points.iloc[start:start + size] for start in range(0, len(points), size)] or [points]
    with _client(client, address, connect_timeout) as dask_client:
        [shared] = dask_client.scatter([(model, scenario, hardware, devices)], broadcast=True, hash=False)
        run = uuid.uuid4().hex
        futures = [dask_client.submit(_sweep_chunk, shared, chunk, method, key=f"llm-roofline-sweep-{run}-{i}")
                   for i, chunk in enumerate(chunks)]
        try:
            frames = dask_client.gather(futures)
        finally:
            dask_client.cancel(futures + [shared])
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def sweep_points_chunked(model, scenario: Scenario, points: pd.DataFrame, hardware: Optional[Hardware] = None,
                         method: str = "roofline", devices: Optional[Mapping[str, Hardware]] = None,
                         chunk_points: int = DEFAULT_CHUNK_POINTS) -> pd.DataFrame:
    """sweep_points in this process, `chunk_points` at a time (bounds the memory of a huge sweep)."""
    size = check_chunk_points(chunk_points)
    if len(points) <= size:
        return sweep_points(model, scenario, points, hardware, method, devices)
    devices = _resolve_devices(points, devices)
    frames = [sweep_points(model, scenario, points.iloc[start:start + size], hardware, method, devices)
              for start in range(0, len(points), size)]
    return pd.concat(frames, ignore_index=True)


def check_chunk_points(chunk_points) -> int:
    if isinstance(chunk_points, bool) or not isinstance(chunk_points, int) or chunk_points < 1:
        raise GridError(f"chunk_points = {chunk_points!r}: expected a whole number >= 1")
    return chunk_points


def _sweep_chunk(shared: tuple, chunk: pd.DataFrame, method: str) -> pd.DataFrame:
    model, scenario, hardware, devices = shared
    return sweep_points(model, scenario, chunk, hardware, method, devices)


def _resolve_devices(points: pd.DataFrame, devices: Optional[Mapping[str, Hardware]]):
    """The devices a swept `device` column names, loaded here once (unknown names fail before any task
    starts, with sweep_grid's message) rather than from the workbook on every worker."""
    if DEVICE_FIELD not in points.columns:
        return devices
    from engine.explore.grid import resolve_device
    names = dict.fromkeys(points[DEVICE_FIELD].astype(str).tolist())
    return {name: resolve_device(name, devices) for name in names}


@contextlib.contextmanager
def _client(client, address: Optional[str], connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S):
    """The given client; else one on `address`; else one on a LocalCluster (both closed afterwards)."""
    if client is not None:
        yield client
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as error:
        raise ImportError(f"{INSTALL_HINT} ({error})") from None
    if address is not None and address != LOCAL:
        with _connect(Client, address, connect_timeout) as connected:
            yield connected
        return
    # one single-threaded worker process per core: the work is numpy and Python under the GIL
    with LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as local:
        yield local


def _connect(client_class, address: str, timeout: float):
    """A Client on `address`, or GridError when no scheduler answers within `timeout` seconds."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 3600:
        raise GridError(f"connect_timeout = {timeout!r}: expected seconds from 0 to 3600")
    try:
        return client_class(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as error:
        raise GridError(f"no Dask scheduler answered at {address!r} within {timeout:g} s ({error}); check the "
                        "address and that the scheduler runs, or allow longer (--dask-timeout)") from None
