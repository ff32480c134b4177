"""Pass templates (engine/decomposition/pass_template.py): a pass built around a kept template gives exactly the
table of a pass built in full, across sweeps of the context and the output length, for dense, sliding-window, MoE,
attention-sink and tensor/pipeline-parallel models; a template is reused only by a pass of its structure."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.decomposition import pass_template
from engine.decomposition.transformer import decompose_columns
from engine.kernels.table import KernelTableBuilder

MODELS = ("meta-llama/Llama-3.1-8B", "google/gemma-2-9b", "mistralai/Mixtral-8x7B-v0.1", "openai/gpt-oss-20b",
          "EleutherAI/pythia-1b")

SWEEPS = [
    [dict(phase="decode", batch=2, context_length=context) for context in (100, 101, 5000)],
    [dict(phase="decode", batch=1, context_length=context, tp=2, pp=2) for context in (64, 65, 66)],
    [dict(phase="request", batch=3, input_length=40, output_length=output) for output in (9, 9, 17, 17, 9)],
    [dict(phase="request", batch=1, input_length=length, output_length=5, tp=2) for length in (30, 31, 30)],
    [dict(phase="prefill", batch=2, input_length=length, micro_batches=2, pp=2) for length in (16, 16, 48, 16)],
]


def assert_same_table(actual: dict, expected: dict) -> None:
    assert list(actual) == list(expected)
    for key, values in expected.items():
        same = np.array_equal(actual[key], values, equal_nan=values.dtype != object)
        assert same and actual[key].dtype == values.dtype, key


def built_in_full(model, scenario) -> dict:
    pass_template.clear()
    return decompose_columns(model, scenario)


@pytest.mark.parametrize("model_id", MODELS)
@pytest.mark.parametrize("sweep", range(len(SWEEPS)))
def test_templated_passes_equal_passes_built_in_full(model_id, sweep, monkeypatch):
    model = engine.load_model(model_id)
    scenarios = [engine.Scenario(**fields) for fields in SWEEPS[sweep]]
    expected = [built_in_full(model, scenario) for scenario in scenarios]
    pass_template.clear()
    appended = []
    extend = KernelTableBuilder.extend
    monkeypatch.setattr(KernelTableBuilder, "extend", lambda self, segment: (appended.append(1), extend(self, segment)))
    for scenario, table in zip(scenarios, expected):
        assert_same_table(decompose_columns(model, scenario), table)
    assert appended, "no pass was built from a template"


def test_a_sweep_over_the_context_reuses_one_template(monkeypatch):
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    pass_template.clear()
    built = []
    original = pass_template._build_and_record
    monkeypatch.setattr(pass_template, "_build_and_record", lambda *args: (built.append(1), original(*args)))
    for context in (10, 11, 12, 13):
        decompose_columns(model, engine.Scenario(phase="decode", context_length=context))
    assert len(built) == 1 and pass_template.templates() == 1     # recorded on the second pass
    decompose_columns(model, engine.Scenario(phase="decode", context_length=10, batch=2))    # other tokens
    decompose_columns(model, engine.Scenario(phase="decode", context_length=10, kv_dtype="fp8"))
    assert len(built) == 1 and len(pass_template._KEPT) == 3     # new structures: seen once, not recorded


def test_latent_attention_keeps_no_template():
    pass_template.clear()
    decompose_columns(engine.load_model("deepseek-ai/DeepSeek-V3"), engine.Scenario(phase="decode"))
    decompose_columns(engine.load_model("deepseek-ai/DeepSeek-V3"), engine.Scenario(phase="decode"))
    assert pass_template.templates() == 0


def test_another_number_of_attention_rows_builds_the_pass_in_full():
    def build(builder, attention_rows):
        builder.add(phase="decode", name="before", type="Norm", op="norm", unit="vector", dtype="bf16", m=1)
        builder.mark()
        for index in range(attention_rows):
            builder.add(phase="decode", name=f"attention{index}", type="Softmax", op="softmax", unit="vector",
                        dtype="bf16", m=attention_rows)
        builder.mark()
        builder.add(phase="decode", name="after", type="Norm", op="norm", unit="vector", dtype="bf16",
                    overlap_group=attention_rows)

    def table(attention_rows):
        builder = KernelTableBuilder()
        pass_template.add_pass(builder, "key", lambda: build(builder, attention_rows),
                               lambda: build(_Only(builder), attention_rows))
        return builder.build_columns()

    pass_template.clear()
    first, second = table(2), table(3)
    assert list(first["name"]) == ["before", "attention0", "attention1", "after"]
    assert list(second["name"]) == ["before", "attention0", "attention1", "attention2", "after"]
    assert list(second["overlap_group"]) == [-1, -1, -1, -1, 3] and list(second["group"]) == [0, 1, 2, 3, 4]
    assert list(table(2)["m"]) == [1, 2, 2, 0]


class _Only:
    """A builder view that adds only the rows between the marks (what add_attention_rows adds)."""

    def __init__(self, builder):
        self.builder, self.marks, self.inside = builder, 0, False

    def mark(self):
        self.inside = not self.inside

    def add(self, **columns):
        if self.inside:
            self.builder.add(**columns)
