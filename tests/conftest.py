"""Shared fixtures: the bundled workbook, catalog models, and paths to shared calibration data."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def devices():
    from engine.specs import load_specs
    return load_specs()


@pytest.fixture(scope="session")
def llama8b():
    from engine.models import load_model
    return load_model("meta-llama/Llama-3.1-8B")


@pytest.fixture(scope="session")
def llama70b():
    from engine.models import load_model
    return load_model("meta-llama/Llama-3.1-70B")
