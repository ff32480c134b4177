"""Scenario: what the model is asked to do (phase, batch, lengths, dtypes)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine.dtypes import check_dtype

Phase = Literal["prefill", "decode", "chunked", "request"]
PHASES: tuple[str, ...] = ("prefill", "decode", "chunked", "request")


class Scenario(BaseModel):
    """One workload.

    - `prefill`: `batch` prompts of `input_length` tokens, one forward pass.
    - `decode`: one decode step for `batch` sequences whose KV cache already holds
      `context_length` tokens (default `input_length`); the step attends to context + 1 tokens.
    - `chunked`: one chunked-prefill iteration of `chunk_size` tokens that mixes prefill tokens
      of one prompt with decode tokens of running requests (mix as in the seed notebook).
    - `request`: prefill (which yields the first token) plus `output_length - 1` decode steps
      with a growing context, for a batch of `batch` requests that start together.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    phase: Phase = "request"
    batch: int = Field(1, ge=1, le=1_000_000)
    input_length: int = Field(1024, ge=1, le=100_000_000)
    output_length: int = Field(256, ge=1, le=100_000_000)
    context_length: Optional[int] = Field(None, ge=0, le=100_000_000)
    chunk_size: int = Field(256, ge=1, le=100_000_000)
    weight_dtype: str = "bf16"
    activation_dtype: str = "bf16"
    kv_dtype: str = "bf16"

    @field_validator("weight_dtype", "activation_dtype", "kv_dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        return check_dtype(value)

    @property
    def decode_context(self) -> int:
        """Tokens already in the KV cache before the decode step (decode phase)."""
        return self.input_length if self.context_length is None else self.context_length

    def chunk_mix(self) -> tuple[int, int]:
        """(prefill tokens, decode tokens) in one chunk, in proportion to input/output lengths."""
        decode_tokens = self.chunk_size * self.output_length // (self.input_length + self.output_length)
        return self.chunk_size - decode_tokens, decode_tokens

    def max_tokens_in_context(self) -> int:
        """The longest sequence this scenario builds (to check against the model's positions)."""
        if self.phase == "prefill":
            return self.input_length
        if self.phase == "decode":
            return self.decode_context + 1
        return self.input_length + self.output_length
