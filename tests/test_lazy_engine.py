"""`import engine` loads nothing heavy (issue 15); every public name still imports, and names that share their
module's name (engine.estimate, engine.decompose, ...) stay the functions after those modules are imported."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_engine_loads_no_pandas_openpyxl_or_workbook():
    out = run("import sys, engine; print(sorted(m for m in ('pandas', 'openpyxl', 'numpy', 'pydantic', "
              "'engine.specs', 'engine.estimate') if m in sys.modules))")
    assert out == "[]"


def test_every_public_name_imports_and_estimate_builds_frames_on_first_use():
    out = run("import sys, engine\n"
              "for name in engine.__all__: getattr(engine, name)\n"
              "from engine import estimate, Scenario, load_hardware, load_model\n"
              "r = estimate(load_hardware('H100-SXM'), load_model('meta-llama/Llama-3.1-8B'), Scenario(phase='decode'))\n"
              "print(r._kernels is None, r._phases is None, len(r.kernels) > 0, r._kernels is r.kernels,\n"
              "      float(r.phases['time_s']['decode']) == r.tpot_s)")
    assert out == "True True True True True"


def test_functions_named_like_their_modules_stay_functions():
    out = run("import engine, engine.estimate, engine.decompose, engine.decompose_seed, engine.layout_sweep\n"
              "from engine.estimate import updated_scenario\n"
              "print(all(callable(getattr(engine, n)) and not isinstance(getattr(engine, n), type(engine))\n"
              "          for n in ('estimate', 'decompose', 'decompose_seed', 'layout_sweep')),\n"
              "      engine.estimate.__module__, engine.models.__name__)")
    assert out == "True engine.estimate engine.models"


def test_a_replaced_public_function_is_used_until_restored(monkeypatch):
    import engine
    original = engine.estimate
    monkeypatch.setattr(engine, "estimate", len)
    assert engine.estimate is len
    monkeypatch.undo()
    assert engine.estimate is original
