"""`import engine` loads nothing heavy (issue 15); every public name still imports, and no public function
shares a module's name (engine.estimate lives in engine/results/run.py), so importing modules hides nothing."""

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
              "'engine.hardware.specs', 'engine.results.run') if m in sys.modules))")
    assert out == "[]"


def test_every_public_name_imports_and_estimate_builds_frames_on_first_use():
    out = run("import sys, engine\n"
              "for name in engine.__all__: getattr(engine, name)\n"
              "from engine import estimate, Scenario, load_hardware, load_model\n"
              "r = estimate(load_hardware('H100-SXM'), load_model('meta-llama/Llama-3.1-8B'), Scenario(phase='decode'))\n"
              "print(r._kernels is None, r._phases is None, len(r.kernels) > 0, r._kernels is r.kernels,\n"
              "      float(r.phases['time_s']['decode']) == r.tpot_s)")
    assert out == "True True True True True"


def test_no_public_function_is_named_like_a_module_and_all_stay_functions():
    """Issue 15: no module named like a function it exports, so importing every engine module hides nothing."""
    out = run("import importlib, pkgutil, engine\n"
              "clash = [n for n in engine.__all__ if importlib.util.find_spec(f'engine.{n}') is not None]\n"
              "for info in pkgutil.walk_packages(engine.__path__, 'engine.'):\n"
              "    if '.auto' not in info.name and not info.name.startswith('engine.cli.entry'):\n"
              "        importlib.import_module(info.name)\n"
              "print(clash, all(callable(getattr(engine, n)) and not isinstance(getattr(engine, n), type(engine))\n"
              "                 for n in ('estimate', 'decompose', 'decompose_seed', 'layout_sweep', 'sweep')))")
    assert out == "[] True"


def test_a_replaced_public_function_is_used_until_restored(monkeypatch):
    import engine
    original = engine.estimate
    monkeypatch.setattr(engine, "estimate", len)
    assert engine.estimate is len
    monkeypatch.undo()
    assert engine.estimate is original
