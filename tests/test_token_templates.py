"""Token templates (engine/decomposition/pass_template.py TokenTemplate, engine/common/traced.py): a pass whose rows
around its attention come from a template traced at other token counts gives exactly the table of a pass built in
full, over prompt lengths 1..131072 (odd ones included), sliding windows, attention sinks, tensor/pipeline
parallelism, micro-batches, other dtypes and the seed's average chunk (chunk size swept); MoE routing and latent
attention need the tokens' value and keep building in full."""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine
from engine.common.traced import NotTraceable, Traced, as_float, compile_traced
from engine.decomposition import pass_template
from engine.decomposition.transformer import decompose_columns
from engine.kernels.table import KernelTableBuilder
from tests.test_pass_template import assert_same_table, built_in_full

LENGTHS = (1, 2, 3, 17, 1023, 1024, 1025, 4097, 65535, 131072, 7)
CASES = [
    ("meta-llama/Llama-3.1-70B", dict(phase="prefill"), LENGTHS),
    ("meta-llama/Llama-3.1-8B", dict(phase="prefill", batch=3, tp=4), (5, 6, 999, 1000, 131071)),
    ("meta-llama/Llama-3.1-8B", dict(phase="prefill", batch=4, pp=2, micro_batches=2), (16, 17, 333, 4096)),
    ("google/gemma-2-9b", dict(phase="prefill", tp=2), (3, 4, 4095, 4096, 4097, 9000)),
    ("openai/gpt-oss-20b", dict(phase="prefill"), (10, 11, 200)),                       # MoE, sinks, windows
    ("EleutherAI/pythia-1b", dict(phase="prefill", activation_dtype="fp8", kv_dtype="fp8"), (7, 8, 513)),
    ("meta-llama/Llama-3.1-8B", dict(phase="request", output_length=3), (31, 32, 33, 1025)),
    ("mistralai/Mixtral-8x7B-v0.1", dict(phase="prefill", tp=2), (12, 13, 14)),        # MoE: built in full
    ("deepseek-ai/DeepSeek-V3", dict(phase="prefill"), (12, 13, 14)),                   # MLA: built in full
]


def _scenario(fields: dict, length: int) -> engine.Scenario:
    return engine.Scenario(**fields, input_length=length)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_token_templates_equal_passes_built_in_full(case, monkeypatch):
    model_id, fields, lengths = CASES[case]
    model = engine.load_model(model_id)
    expected = [built_in_full(model, _scenario(fields, length)) for length in lengths]
    pass_template.clear()
    evaluated = []
    extend_numbers = KernelTableBuilder.extend_numbers
    monkeypatch.setattr(KernelTableBuilder, "extend_numbers",
                        lambda self, segment, numbers: (evaluated.append(1), extend_numbers(self, segment, numbers)))
    for length, table in zip(lengths, expected):
        assert_same_table(decompose_columns(model, _scenario(fields, length)), table)
    dense = model.num_moe_layers == 0 and model.attention_kind != "mla"
    assert bool(evaluated) == dense, "dense passes come from a token template from the third length on"
    assert pass_template.token_templates() == (1 if dense else 0)


def test_a_chunk_size_sweep_uses_the_token_template():
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    scenarios = [engine.Scenario(phase="chunked", input_length=2048, output_length=256, batch=8, chunk_size=size)
                 for size in (256, 257, 512, 1000, 2048)]
    expected = [built_in_full(model, scenario) for scenario in scenarios]
    pass_template.clear()
    for scenario, table in zip(scenarios, expected):
        assert_same_table(decompose_columns(model, scenario), table)
    assert pass_template.token_templates() == 1


def test_a_template_traced_with_one_token_type_is_not_used_for_another():
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    pass_template.clear()
    for length in (10, 11, 12):
        decompose_columns(model, engine.Scenario(phase="prefill", input_length=length))
    assert pass_template.token_templates() == 1
    decompose_columns(model, engine.Scenario(phase="prefill", input_length=12, kv_dtype="fp8"))
    assert pass_template.token_templates() == 1 and len(pass_template._FAMILIES) == 2


def test_a_template_that_does_not_reproduce_its_own_pass_is_dropped(monkeypatch):
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    original = pass_template.compile_traced

    def off_by_one_ulp(lists):
        evaluate = original(lists)
        return lambda tokens: tuple([np.nextafter(value, math.inf) if index == 3 else value
                                     for index, value in enumerate(numbers)] for numbers in evaluate(tokens))

    monkeypatch.setattr(pass_template, "compile_traced", off_by_one_ulp)
    pass_template.clear()
    for length in (10, 11, 12, 13):
        decompose_columns(model, engine.Scenario(phase="prefill", input_length=length))
    assert pass_template.token_templates() == 0
    assert pass_template._FAMILIES[next(iter(pass_template._FAMILIES))][1] == pass_template._NOT_TRACEABLE


def test_traced_arithmetic_replays_in_order_with_the_same_types():
    t = Traced.variable()
    shared = t * 3
    values = [shared, shared / t, 1.0 / 3 * t * 7, (t + 1) // 2, -t - 0.5, 2 - t, as_float(t * 5), 4, float("nan"),
              np.float64(2.5), -0.0]
    evaluate = compile_traced([values, [shared + 1]])
    for x in (1, 2, 7, 2**52 + 1, 3.5):
        first, second = evaluate(x)
        expected = [x * 3, x * 3 / x, 1.0 / 3 * x * 7, (x + 1) // 2, -x - 0.5, 2 - x, float(x * 5), 4, float("nan"),
                    np.float64(2.5), -0.0]
        assert [type(value) for value in first] == [type(value) for value in expected]
        assert np.array_equal(np.array(first, dtype=float).view(np.uint64),
                              np.array(expected, dtype=float).view(np.uint64)), x
        assert second == [x * 3 + 1]


@pytest.mark.parametrize("use", [bool, float, int, lambda t: t < 3, lambda t: t == 3, lambda t: t ** 2,
                                 lambda t: np.asarray(t, dtype=float), lambda t: np.multiply(2.0, t),
                                 lambda t: max(t, 1), math.ceil])
def test_reading_a_traced_value_refuses(use):
    with pytest.raises(TypeError):          # NotTraceable is a TypeError, as numpy's refusal of ufuncs
        use(Traced.variable())


def test_arrays_cannot_be_compiled():
    with pytest.raises(NotTraceable):
        compile_traced([[np.array([1.0, 2.0]) * Traced.variable()]])


def test_a_pass_that_names_its_rows_by_the_token_count_is_not_traced():
    def build(builder, tokens):
        builder.add(phase="prefill", name=f"before{tokens}", type="Norm", op="norm", unit="vector", dtype="bf16",
                    m=tokens, vector_flops=tokens * 3)
        builder.mark()
        builder.add(phase="prefill", name="attention", type="Softmax", op="softmax", unit="vector", dtype="bf16")
        builder.mark()
        builder.add(phase="prefill", name="after", type="Norm", op="norm", unit="vector", dtype="bf16", m=tokens)

    def table(tokens):
        builder = KernelTableBuilder()
        pass_template.add_pass(builder, "key", lambda: build(builder, tokens), lambda: None, tokens,
                               lambda variable: build(builder, variable))
        return builder.build_columns()

    pass_template.clear()
    for tokens in (5, 6, 7, 8):
        columns = table(tokens)
        assert list(columns["name"]) == [f"before{tokens}", "attention", "after"]
        assert list(columns["vector_flops"]) == [tokens * 3, 0, 0] and list(columns["m"]) == [tokens, 0, tokens]
    assert pass_template.token_templates() == 0


def test_a_traceable_toy_pass_is_evaluated_for_new_token_counts():
    def build(builder, tokens, attention=True):
        builder.add(phase="prefill", name="before", type="Norm", op="norm", unit="vector", dtype="bf16",
                    m=tokens, n=tokens * 7 / tokens, vector_flops=tokens * 3 + 0.5)
        builder.mark()
        builder.add(phase="prefill", name="attention", type="Softmax", op="softmax", unit="vector", dtype="bf16")
        builder.mark()
        builder.add(phase="prefill", name="after", type="Gemm", op="gemm", unit="matrix", dtype="bf16", macs=tokens * 9)

    def table(tokens):
        builder = KernelTableBuilder()
        pass_template.add_pass(builder, "key", lambda: build(builder, tokens),
                               lambda: builder.add(phase="prefill", name="attention", type="Softmax", op="softmax",
                                                   unit="vector", dtype="bf16"),
                               tokens, lambda variable: build(builder, variable))
        return builder.build_columns()

    pass_template.clear()
    for tokens in (5, 6, 7, 2**40 + 3):
        columns = table(tokens)
        assert list(columns["vector_flops"]) == [tokens * 3 + 0.5, 0, 0]
        assert list(columns["matrix_flops"]) == [0, 0, 2.0 * tokens * 9] and list(columns["n"]) == [7.0, 0, 0]
    assert pass_template.token_templates() == 1
