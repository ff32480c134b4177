"""The forward passes a scenario runs (docs/methods.md "Phases"): one definition, shared by the hand
decomposition (engine/decomposition/transformer.py) and the automatic one (engine/decomposition/auto/).

- prefill: the prompts of `batch` sequences, `input_length` tokens each, in `prefill_micro_batches`
  micro-batches (the pipeline's), no cached tokens;
- decode: one token per sequence after `decode_context` cached ones;
- chunked: the seed's single average chunk of `chunk_size` tokens: decode tokens in proportion to the
  output length (each after the mean decode context), the rest one prompt's chunk (after half the
  prompt's earlier chunks, the mean over its chunks);
- request: the prefill, then decode steps j = 1 .. output_length - 1 (the cache holds
  input_length + j - 1 tokens before step j), or the chunked-prefill schedule (engine/decomposition/chunked.py).
"""

from __future__ import annotations

import numpy as np

from engine.decomposition.chunked import chunked_request_pass
from engine.decomposition.passes import AttentionPart, ForwardPass
from engine.workload.scenario import Scenario


def forward_passes(scenario: Scenario) -> list[ForwardPass]:
    """The passes of `scenario`'s phase (module docstring)."""
    if scenario.phase == "prefill":
        return [prefill_pass(scenario)]
    if scenario.phase == "decode":
        return [decode_pass(scenario.batch, np.array([float(scenario.decode_context)]))]
    if scenario.phase == "chunked":
        return [average_chunk_pass(scenario)]
    if scenario.chunked_prefill:
        return [chunked_request_pass(scenario)]
    passes = [prefill_pass(scenario)]
    if scenario.output_length > 1:
        # decode step j = 1..O-1 feeds generated token j; the cache holds L + j - 1 tokens before it
        cached_tokens = scenario.input_length + np.arange(1, scenario.output_length, dtype=float) - 1
        passes.append(decode_pass(scenario.batch, cached_tokens))
    return passes


def prefill_pass(scenario: Scenario) -> ForwardPass:
    """The prompts, one micro-batch per step."""
    micro_batches = scenario.prefill_micro_batches
    sequences = scenario.batch // micro_batches
    part = AttentionPart.uniform("", sequences, scenario.input_length, np.array([0.0]), "Ma_Mqa")
    return ForwardPass("prefill", sequences * scenario.input_length, sequences, micro_batches, (part,),
                       micro_batches)


def decode_pass(batch: int, cached_tokens: np.ndarray) -> ForwardPass:
    """One token per sequence, one step per value of `cached_tokens` (the cache before the step)."""
    part = AttentionPart.uniform("", batch, 1, cached_tokens, "Va_Mqa")
    return ForwardPass("decode", batch, batch, len(cached_tokens), (part,))


def average_chunk_pass(scenario: Scenario) -> ForwardPass:
    """The seed's average chunk: `d` decode tokens beside one prompt's chunk of chunk_size - d tokens."""
    prefill_tokens, decode_tokens = scenario.chunk_mix()
    if scenario.context_length is not None:
        decode_context = scenario.context_length
    else:
        decode_context = scenario.input_length + scenario.output_length // 2
    prompt_cached = max(0, (scenario.input_length - prefill_tokens) // 2)   # mean over the prompt's chunks
    one_row = np.array([0.0])
    parts = [AttentionPart.uniform("p", 1, prefill_tokens, one_row + prompt_cached, "Ma_Mqa")]
    if decode_tokens:
        parts.insert(0, AttentionPart.uniform("d", decode_tokens, 1, one_row + decode_context - 1, "Va_Mqa"))
    return ForwardPass("chunked", scenario.chunk_size, 1 + decode_tokens, 1, tuple(parts))
