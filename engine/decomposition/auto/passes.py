"""The forward passes a scenario runs (docs/methods.md "Phases"), for the automatic decomposition.

Kept here rather than borrowed from engine/decomposition/transformer.py so the automatic decomposition depends only on
the Scenario's phase, batch, lengths and chunk size. Parallelism and chunked-prefill schedules are not
modelled automatically yet: `check_supported` names the field.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AttentionPart:
    """`sequences` sequences attending alike: `new_tokens` each after `prior` cached ones (one per step)."""

    prefix: str          # "" for plain prefill/decode, "p"/"d" for the two halves of a chunk
    sequences: int
    new_tokens: int
    prior: np.ndarray
    matrix_type: str     # Ma_Mqa (many query tokens) or Va_Mqa (one query token)


@dataclass(frozen=True)
class ForwardPass:
    phase: str
    tokens: int          # tokens through the linear layers in one step
    logit_rows: int      # rows through the LM head in one step
    steps: int           # times this pass runs
    attention: tuple[AttentionPart, ...]


UNSUPPORTED_SETTINGS = {   # Scenario field -> value the automatic decomposition models
    "tp": 1, "pp": 1, "dp": 1, "ep": 1, "chunked_prefill": False,
}


def check_supported(scenario) -> None:
    """Raise ValueError naming a scenario setting the automatic decomposition does not model yet."""
    for name, plain in UNSUPPORTED_SETTINGS.items():
        value = getattr(scenario, name, plain)
        if value is not None and value != plain:
            raise ValueError(f"scenario {name}={value!r} is not modelled by the automatic decomposition yet "
                             f"(only {name}={plain!r}); use a hand-modelled model or drop the setting")


def forward_passes(s) -> list[ForwardPass]:
    one = np.array([0.0])
    if s.phase == "prefill":
        return [_prefill_pass(s)]
    if s.phase == "decode":
        return [_decode_pass(s.batch, np.array([float(s.decode_context)]))]
    if s.phase == "chunked":
        prefill_tokens, decode_tokens = s.chunk_mix()
        decode_context = s.context_length if s.context_length is not None else s.input_length + s.output_length // 2
        prefill_prior = max(0, (s.input_length - prefill_tokens) // 2)   # mean over the prompt's chunks
        parts = [AttentionPart("p", 1, prefill_tokens, one + prefill_prior, "Ma_Mqa")]
        if decode_tokens:
            parts.insert(0, AttentionPart("d", decode_tokens, 1, one + decode_context - 1, "Va_Mqa"))
        return [ForwardPass("chunked", s.chunk_size, 1 + decode_tokens, 1, tuple(parts))]
    passes = [_prefill_pass(s)]
    if s.output_length > 1:
        # decode step j = 1..O-1 feeds generated token j; the cache holds L + j - 1 tokens before it
        passes.append(_decode_pass(s.batch, s.input_length + np.arange(1, s.output_length, dtype=float) - 1))
    return passes


def _prefill_pass(s) -> ForwardPass:
    part = AttentionPart("", s.batch, s.input_length, np.array([0.0]), "Ma_Mqa")
    return ForwardPass("prefill", s.batch * s.input_length, s.batch, 1, (part,))


def _decode_pass(batch: int, priors: np.ndarray) -> ForwardPass:
    return ForwardPass("decode", batch, batch, len(priors), (AttentionPart("", batch, 1, priors, "Va_Mqa"),))
