"""Fuzzing what people type (hypothesis, a few hundred cases): config.json fields and files, CLI numbers and
grids, dashboard URL parameters and Explore ranges.

Every case asserts the same two things: no exception escapes but the project's own error types, and every
message names its place (the config field, the CLI option, the URL parameter). Where nothing is refused,
nothing the user entered is silently changed (URL parameters round-trip).
"""

from __future__ import annotations

import io
import os
import re
from contextlib import redirect_stderr

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.resolve import resolve_lengths, resolve_scenario
from dashboard.state import SCALAR_PARAMETERS, ValuesError, parse_query, to_query
from engine.decomposition.auto import AutoDecompositionError, available
from engine.cli.entry import build_parser
from engine.explore.grid_spec import GridArgumentError, sweep_grid_arguments
from engine.models import ModelConfig, ModelConfigError
from engine.models.validation import parse_config_json

SCALE = int(os.environ.get("FUZZ_SCALE", "0"))     # FUZZ_SCALE=20: twenty times the cases, new ones each run


def fast(examples: int):
    """Settings for CI: a fixed number of derandomized cases, no per-case deadline (FUZZ_SCALE for more)."""
    return settings(max_examples=examples * max(SCALE, 1), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow], derandomize=not SCALE)

TINY_LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 3,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "max_position_embeddings": 128}
TINY_MIXTRAL = {**TINY_LLAMA, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2}
TINY_GPT2 = {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 64}
TINY_GEMMA2 = {**TINY_LLAMA, "model_type": "gemma2", "head_dim": 16, "sliding_window": 32}
BASES = [TINY_LLAMA, TINY_MIXTRAL, TINY_GPT2, TINY_GEMMA2]
FIELDS = sorted(set().union(*BASES) | {"head_dim", "sliding_window", "layer_types", "num_experts_per_tok",
                                       "tie_word_embeddings", "rms_norm_eps", "partial_rotary_factor",
                                       "architectures", "n_inner", "moe_intermediate_size"})

ABSURD_INTS = st.one_of(st.integers(-3, 300), st.integers(2**20, 2**70), st.integers(-(2**70), -4))
VALUES = st.one_of(ABSURD_INTS, st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                   st.booleans(), st.none(), st.lists(st.integers(-2, 4), max_size=4),
                   st.lists(st.sampled_from(["full_attention", "sliding_attention", "x"]), max_size=4),
                   st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))
CHANGES = st.dictionaries(st.sampled_from(FIELDS), VALUES, min_size=1, max_size=3)
NAMED_FIELD = re.compile(r"config\.json field '([\w.]+)'")


def names_a_field(message: str, data: dict) -> bool:
    """The message names a config.json field of `data` (or one the family requires and `data` lacks)."""
    found = NAMED_FIELD.search(message)
    if found:
        return found.group(1).rsplit(".", 1)[-1] in set(data) | set(FIELDS) | {"model_type"}
    return "is inconsistent" in message and any(field in message for field in data)


@fast(200)
@given(base=st.sampled_from(BASES), changes=CHANGES)
def test_hand_parser_raises_only_field_errors(base, changes):
    data = {**base, **changes}
    try:
        ModelConfig.from_hf_config(data, name="fuzz")
    except ModelConfigError as error:
        assert names_a_field(str(error), data), str(error)


@pytest.mark.skipif(not available()[0], reason="the 'auto' extra (torch, transformers) is not installed")
@fast(30)
@given(base=st.sampled_from(BASES), changes=CHANGES)
def test_automatic_path_raises_only_project_errors_naming_the_field(base, changes):
    from engine.decomposition.auto import AutoModel
    data = {**base, **changes}
    try:
        AutoModel(data, name="fuzz")
    except ModelConfigError as error:
        assert names_a_field(str(error), data), str(error)
    except AutoDecompositionError as error:       # transformers refused: its message names the field
        assert any(field in str(error) for field in data), str(error)


JSON_TEXT = st.one_of(
    st.binary(max_size=64),
    st.integers(1, 3000).map(lambda depth: "[" * depth + "]" * depth),
    st.integers(1, 3000).map(lambda depth: '{"a":' * depth + "1" + "}" * depth),
    st.integers(4000, 6000).map(lambda digits: '{"hidden_size": ' + "7" * digits + "}"),
    st.text(max_size=40),
)


@fast(60)
@given(content=JSON_TEXT)
def test_config_file_content_gives_an_object_or_an_error_naming_the_file(content):
    try:
        assert isinstance(parse_config_json(content, "'fuzz.json'"), dict)
    except ModelConfigError as error:
        assert "'fuzz.json'" in str(error)


# ----------------------------------------------------------------------------------------- CLI

NUMBER_TEXT = st.one_of(st.integers(-(10**500), 10**500).map(str), st.floats().map(repr),
                        st.text(alphabet="0123456789.eE+-x ", min_size=1, max_size=40), st.text(max_size=10))
OPTIONS = [("gemm", "--m"), ("gemm", "--k"), ("estimate", "--batch"), ("estimate", "--input-len"),
           ("estimate", "--context"), ("estimate", "--routing-skew"), ("sweep", "--max-points"),
           ("sweep", "--dask-timeout"), ("sweep", "--chunk-points")]
REQUIRED = {"gemm": ["--hardware", "H100-SXM", "--m", "1", "--n", "1", "--k", "1"],
            "estimate": ["--hardware", "H100-SXM", "--model", "m"], "sweep": []}


@fast(80)
@given(command_option=st.sampled_from(OPTIONS), text=NUMBER_TEXT)
def test_cli_numbers_are_bounded_or_refused_naming_the_option(command_option, text):
    command, option = command_option
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        try:
            args = build_parser().parse_args([command, *REQUIRED[command], f"{option}={text}"])
        except SystemExit as exit_:
            assert exit_.code == 2
            assert f"argument {option}" in stderr.getvalue(), stderr.getvalue()
            return
    value = getattr(args, option[2:].replace("-", "_").replace("input_len", "input_len"))
    assert value is not None and 0 <= value <= 10**15


GRID_FIELDS = ["batch", "input_length", "context_length", "memory_bandwidth", "weight_dtype", "phase",
               "chunked_prefill", "nonsense"]
GRID_TEXT = st.one_of(st.text(alphabet="0123456789:,.elog-noe", max_size=30), NUMBER_TEXT,
                      st.tuples(st.integers(-5, 10**6), st.integers(-5, 10**12), st.integers(-5, 10**10))
                      .map(lambda t: f"{t[0]}:{t[1]}:{t[2]}"))


@fast(80)
@given(field=st.sampled_from(GRID_FIELDS), text=GRID_TEXT)
def test_grid_values_are_parsed_within_the_limit_or_refused_naming_the_flag(field, text):
    try:
        grid = sweep_grid_arguments([f"{field}={text}"], None, max_points=1000)
    except GridArgumentError as error:
        assert str(error).startswith(f"--grid {field}="), str(error)
        return
    assert 1 <= len(grid[field]) <= 1000


# ----------------------------------------------------------------------------------------- URL

URL_KEYS = list(SCALAR_PARAMETERS) + ["edit.H100-SXM", "clone.MINE", "bogus"]
URL_TEXT = st.one_of(st.text(max_size=30), NUMBER_TEXT, st.sampled_from(["/etc/passwd", "~root/.bashrc", "../x",
                                                                          "1:1e308:200", "log:1:1e300:5", "0",
                                                                          "10000000", "200000", "1"]))


@fast(120)
@given(params=st.dictionaries(st.sampled_from(URL_KEYS), URL_TEXT, min_size=1, max_size=4))
def test_url_parameters_warn_naming_the_parameter_and_keep_what_they_accept(params, llama8b):
    state, warnings = parse_query(params)
    for warning in warnings:
        assert any(f"URL parameter {key}" in warning or repr(key) in warning for key in params), warning
    accepted = {key for key in params if key in SCALAR_PARAMETERS and not any(f"parameter {key}=" in w
                                                                               for w in warnings)}
    again, _ = parse_query(to_query(state))
    for key in accepted:                         # nothing accepted is lost on the way back to the URL
        attribute = SCALAR_PARAMETERS[key][0]
        assert getattr(again, attribute) == getattr(state, attribute)
    fitted, length_warnings = resolve_lengths(state, llama8b)
    assert all(re.match(r"URL parameters? (ctx|in|out|chunk)=", w) for w in length_warnings), length_warnings
    _, scenario_warnings = resolve_scenario(fitted)
    assert all("URL parameter" in w for w in scenario_warnings), scenario_warnings


AXIS_FIELDS = ["batch", "input_length", "context_length", "tp", "memory_bandwidth", "matrix_tflops", "clock"]


@fast(80)
@given(field=st.sampled_from(AXIS_FIELDS), text=URL_TEXT)
def test_explore_axis_values_are_bounded_or_refused_naming_the_parameter(field, text, devices):
    from dashboard.views.explore import axis_values
    try:
        values, _ = axis_values(field, text, "x", "1:2:2", devices)
    except ValuesError as error:
        assert "(URL parameter ex.xv)" in str(error), str(error)
        return
    assert all(0 <= value <= 1e12 for value in values)
