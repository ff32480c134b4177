"""Unbounded work is refused before it starts: huge grids, huge numbers, deep grid files, a scheduler that
never answers. Each refusal is one line naming the option and, for grids, the limit and how to raise it."""

from __future__ import annotations

import importlib.util
import json
import resource
import time

import pytest

from tests.test_cli import assert_one_line_error, run

MODEL = ("--model", "meta-llama/Llama-3.1-8B", "--hardware", "H100-SXM")


def timed(*args):
    started = time.perf_counter()
    done = run(*args, check=False)
    return done, time.perf_counter() - started


def test_a_billion_point_range_is_refused_before_any_value_is_made():
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done, seconds = timed("sweep", *MODEL, "--grid", "batch=1:10:1000000000")
    assert_one_line_error(done, "--grid batch=1:10:1000000000", "1,000,000,000", "1,000,000", "--max-points")
    assert seconds < 30
    # the child's peak memory: far below the 7.45 GiB a billion float64 values take
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < max(before, 1) + 2 * 2**20   # KiB: < 2 GiB


def test_grids_multiplying_past_the_limit_name_the_product():
    done, _ = timed("sweep", *MODEL, "--grid", "batch=1:5000:5000", "--grid", "input_length=1:4000:4000")
    assert_one_line_error(done, "20,000,000 points", "5,000 batch x 4,000 input_length", "--max-points")


def test_max_points_sets_the_limit_both_ways():
    done, _ = timed("sweep", *MODEL, "--grid", "batch=1,2,4,8", "--max-points", "3")
    assert_one_line_error(done, "4 points", "more than the 3")
    done, _ = timed("sweep", *MODEL, "--grid", "batch=1,2,4,8", "--max-points", "4")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.strip().splitlines()) == 1 + 4           # header + one row per point


@pytest.mark.parametrize("option", ["--m", "--n", "--k"])
def test_a_400_digit_gemm_dimension_is_a_usage_error(option):
    dims = {"--m": "32", "--n": "64", "--k": "128", option: "9" * 400}
    done, _ = timed("gemm", "--hardware", "H100-SXM", *[x for pair in dims.items() for x in pair])
    assert_one_line_error(done, f"argument {option}", "1,000,000,000,000", "400 characters")


@pytest.mark.parametrize("value, words", [("1e400", "expected a whole number"), ("-3", ">= 1"),
                                          ("10000000000000", "1,000,000,000,000")])
def test_scenario_numbers_are_bounded(value, words):
    done, _ = timed("estimate", *MODEL, "--batch", value)
    assert_one_line_error(done, "argument --batch", words)


def test_a_grid_file_nested_ten_thousand_deep_is_refused(tmp_path):
    path = tmp_path / "grid.json"
    path.write_text('{"batch": ' + "[" * 10_000 + "]" * 10_000 + "}")
    done, _ = timed("sweep", *MODEL, "--grid-file", str(path))
    assert_one_line_error(done, f"--grid-file {path}", "nested deeper than")


@pytest.mark.parametrize("make, words", [
    (lambda p: p.mkdir(), "Is a directory"),
    (lambda p: None, "No such file"),
    (lambda p: p.write_text(json.dumps({"batch": [1] * 1_200_000})), "1,200,000 points"),
])
def test_grid_file_problems_name_the_file(tmp_path, make, words):
    path = tmp_path / "grid.json"
    make(path)
    done, _ = timed("sweep", *MODEL, "--grid-file", str(path))
    assert_one_line_error(done, f"--grid-file {path}", words)


def test_an_unwritable_output_names_the_path(tmp_path):
    done, _ = timed("estimate", *MODEL, "--csv", str(tmp_path / "missing-folder" / "k.csv"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "missing-folder" in done.stderr


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="dask.distributed is not installed")
def test_an_unreachable_scheduler_times_out_quickly():
    done, seconds = timed("sweep", *MODEL, "--grid", "batch=1,2", "--dask", "tcp://127.0.0.1:1",
                          "--dask-timeout", "2")
    assert_one_line_error(done, "tcp://127.0.0.1:1", "within 2 s", "--dask-timeout")
    assert seconds < 30


@pytest.mark.parametrize("minimum, maximum, value, words", [
    (0, 0.99, "2", "from 0 to 0.99"),                  # was "from 0 to 0": the fraction cut to a whole number
    (0.1, 3600, "4000", "from 0.1 to 3,600"),
    (1, 10**12, "10000000000000", "from 1 to 1,000,000,000,000")])
def test_a_bound_is_shown_as_written(minimum, maximum, value, words):
    from argparse import ArgumentTypeError

    from engine.cli.arguments import number
    kind = int if isinstance(maximum, int) and isinstance(minimum, int) else float
    with pytest.raises(ArgumentTypeError, match=words):
        number(kind, minimum, maximum)(value)
