"""The hand decomposition reads like the math (issue 15): short functions, the model's declared fields rather
than duck typing, and one definition of the forward passes shared with the automatic decomposition."""

from __future__ import annotations

import ast

import numpy as np

from tests.conftest import REPO

HAND = sorted(p for p in (REPO / "engine" / "decomposition").glob("*.py"))
MAX_FUNCTION_LINES = 60


def test_no_hand_decomposition_function_over_the_limit():
    long = [f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in HAND for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long


def test_the_spine_reads_the_models_declared_fields():
    """No getattr(model, ..., default) and no closures handed to the MLA/MoE modules (lambdas or nested defs)."""
    for name in ("transformer.py", "attention.py", "mla.py", "moe.py", "phases.py", "pass_kernels.py"):
        tree = ast.parse((REPO / "engine" / "decomposition" / name).read_text())
        duck = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "getattr" and getattr(node.args[0], "id", None) == "model"]
        assert not duck, f"{name}: getattr(model, ...) at lines {duck}"
        nested = [inner.name for outer in ast.walk(tree) if isinstance(outer, ast.FunctionDef)
                  for inner in ast.walk(outer) if inner is not outer and isinstance(inner, ast.FunctionDef)]
        lambdas = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Lambda)]
        assert not nested and not lambdas, f"{name}: closures {nested} {lambdas}"


def test_the_automatic_decomposition_runs_the_hand_forward_passes():
    from engine.decomposition.auto import passes as auto_passes
    from engine.decomposition.phases import forward_passes
    from engine.workload.scenario import Scenario
    assert auto_passes.forward_passes is forward_passes
    request = forward_passes(Scenario(phase="chunked", batch=1, input_length=600, output_length=200, chunk_size=256,
                                      context_length=None))[0]
    decode, prefill = request.attention
    # chunk_mix: 256 * 200 // 800 = 64 decode tokens, 192 prompt tokens after (600 - 192) // 2 = 204 cached ones;
    # the decode tokens attend 600 + 100 - 1 cached tokens each
    assert (decode.alike.sequences, decode.alike.new_tokens, float(decode.alike.prior[0])) == (64, 1, 699.0)
    assert (prefill.alike.sequences, prefill.alike.new_tokens, float(prefill.alike.prior[0])) == (1, 192, 204.0)
    assert prefill.pairs[0] == 192 * 204 + 192 * 193 / 2


def test_a_listed_part_recomputes_itself_for_a_sliding_window():
    from engine.decomposition.passes import AttentionPart, ListedSequences
    listed = ListedSequences(np.array([0, 0, 1]), 2, np.array([10.0, 1.0, 4.0]), np.array([100.0, 300.0, 0.0]))
    part = AttentionPart.from_listed("p", "Ma_Mqa", listed).windowed(128)
    # row 0: 10 queries after 100 keys see min(100 + i, 128) keys each; one query after 300 sees 128
    assert part.pairs[0] == sum(min(100 + i, 128) for i in range(1, 11)) + 128
    assert part.pairs[1] == 4 * 5 / 2
    assert part.cache_tokens[0] == (100 + 10) + (127 + 1)      # min(prior, w - 1) + new, both from the cache
    assert part.fresh_tokens[1] == 4.0 and part.window == 128
