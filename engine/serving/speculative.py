"""Speculative decoding as a serving option: a draft model (or the target's multi-token-prediction layers)
proposes k tokens, the target verifies them in one pass (docs/serving.md).

Per decode step of a request (one scheduler iteration):
- the draft runs k forward passes of one token each (a draft model, or the `mtp_layers` MTP layers of the
  target with its embedding and LM head), at the request's context;
- the target runs one verification pass of k + 1 tokens per request (k drafted + the bonus token);
- the request advances E = (1 - a^(k+1)) / (1 - a) tokens on average (k + 1 when a = 1), a the per-token
  acceptance rate (tokens accepted independently with probability a; the first rejection stops the run); or, with
  per-position rates r_1..r_k (drafted token i accepted with probability r_i once tokens 1..i-1 were),
  E = 1 + r_1 + r_1 r_2 + ... + r_1 ... r_k (aiconfigurator's MTP model; its default for DeepSeek's MTP is
  0.85, 0.3, 0, ...: a chained MTP layer's later guesses are rarely right).

In an iteration with prompt chunks, the draft also runs over the chunks (its own KV cache holds the prompt):
its first pass takes the chunks and one token per decoding request, the other k - 1 passes one token each.
The draft runs with the target's tp (or `draft_tp`; ep for MTP layers), unpipelined (pp = 1), on the same devices;
its weights and its KV cache come out of the memory left for the target's KV cache.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator, model_validator

from engine.hardware.dtypes import bytes_per_value


class SpeculativeDecoding(BaseModel):
    """A draft model (`draft_model`: a ModelConfig or a model id engine.load_model reads) or
    `mtp_layers` multi-token-prediction layers of the target (DeepSeek-V3: 1), `draft_tokens` k drafted
    per step and the per-token `acceptance_rate` a in [0, 1], or `acceptance_rates`: one rate per drafted position
    (k of them; the i-th: drafted token i accepted once tokens 1..i-1 were), which then replace `acceptance_rate`.
    `draft_tp`: the draft model's tensor parallelism (vLLM `draft_tensor_parallel_size`; None: the target's tp; 1: a
    whole draft on every device of the replica)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    draft_model: Optional[Any] = None
    mtp_layers: Optional[int] = Field(None, ge=1, le=16)
    draft_tokens: int = Field(3, ge=1, le=64)
    acceptance_rate: float = Field(0.7, ge=0.0, le=1.0)
    acceptance_rates: Optional[tuple[float, ...]] = None
    draft_tp: Optional[int] = Field(None, ge=1, le=4096)

    @field_validator("draft_model", mode="before")
    @classmethod
    def _load_draft(cls, value):
        if value is None or hasattr(value, "num_layers"):
            return value
        if isinstance(value, str):
            from engine.models.loading import load_model
            return load_model(value)
        raise ValueError("draft_model: expected a ModelConfig or a model id (catalog id, Hub repo id)")

    @model_validator(mode="after")
    def _one_drafter(self) -> "SpeculativeDecoding":
        if (self.draft_model is None) == (self.mtp_layers is None):
            raise ValueError("speculative decoding needs exactly one of draft_model (a smaller model) or "
                             "mtp_layers (the target's multi-token-prediction layers)")
        if self.draft_tp is not None and self.draft_model is None:
            raise ValueError("draft_tp applies to a draft model; MTP layers run with the target's tp")
        rates = self.acceptance_rates
        if rates is not None and (len(rates) != self.draft_tokens or not all(0.0 <= r <= 1.0 for r in rates)):
            raise ValueError(f"acceptance_rates: expected {self.draft_tokens} rates (one per drafted token) in [0, 1], "
                             f"got {list(rates)}")
        if getattr(self.draft_model, "automatic", False):
            raise ValueError(f"draft_model {self.draft_model.name} is decomposed automatically (traced); the "
                             "serving simulation needs a hand model as the draft")
        return self

    @field_serializer("draft_model")
    def _draft_name(self, value):
        return None if value is None else value.name

    @property
    def tokens_per_step(self) -> float:
        """E = (1 - a^(k+1)) / (1 - a), or 1 + r_1 + r_1 r_2 + ... with per-position rates: expected tokens a
        request advances per verification step."""
        if self.acceptance_rates is not None:
            return float(1.0 + np.sum(np.cumprod(self.acceptance_rates)))
        return expected_tokens_per_step(self.draft_tokens, self.acceptance_rate)

    @property
    def verify_tokens(self) -> int:
        """Tokens per request in the target's verification pass: k drafted + 1."""
        return self.draft_tokens + 1

    def drafter(self, model):
        """The model whose k passes draft the tokens: the draft model, or the target's MTP layers."""
        return self.draft_model if self.draft_model is not None else mtp_model(model, self.mtp_layers)

    def describe(self) -> str:
        who = f"draft model {self.draft_model.name}" if self.draft_model is not None else \
            f"{self.mtp_layers} MTP layer(s)"
        rate = (f"acceptance rates {', '.join(f'{r:g}' for r in self.acceptance_rates)}"
                if self.acceptance_rates is not None else f"acceptance rate {self.acceptance_rate:g}")
        return (f"speculative decoding: {who}, {self.draft_tokens} drafted tokens per step, {rate}: "
                f"{self.tokens_per_step:.3g} tokens per step on average")


def expected_tokens_per_step(draft_tokens: int, acceptance_rate: float) -> float:
    """(1 - a^(k+1)) / (1 - a), and k + 1 when a = 1 (every drafted token and the bonus token accepted)."""
    k, a = int(draft_tokens), float(acceptance_rate)
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def mtp_model(model, layers: int):
    """The target's last `layers` layers as a model of their own (sharing its embedding and LM head): what
    one multi-token-prediction pass runs."""
    if layers > model.num_layers:
        raise ValueError(f"mtp_layers={layers} is more than {model.name}'s {model.num_layers} layers")
    data = model.model_dump()
    data.update(name=f"{model.name} MTP", num_layers=layers, moe_layers=tuple(model.moe_layers[-layers:]),
                layer_attention=tuple(model.layer_attention[-layers:]), multi_token_prediction_layers=0)
    return type(model).model_validate(data)


def draft_scenario(spec: SpeculativeDecoding, drafter, replica):
    """The draft's layout: `draft_tp` (else the target replica's tp), unpipelined; the replica's ep (and the dp
    an expert-parallel group spans) only where the draft has experts."""
    tp = spec.draft_tp or replica.tp
    experts = bool(getattr(drafter, "num_experts", 0))
    return type(replica).model_validate({**replica.model_dump(), "tp": tp, "pp": 1, "ep": replica.ep if experts else 1,
                                         "dp": replica.dp if experts else 1, "devices": None, "micro_batches": None})


def draft_weight_bytes(spec: SpeculativeDecoding, drafter, layout, weight_dtype: str) -> float:
    """Bytes of the draft's weights on one device: a whole draft model, or the MTP layers (their embedding
    and LM head are the target's) with each layer's projection of [embedding, hidden] (2h x h) and two norms."""
    from engine.results.memory import layer_weights_per_device, weights_per_device
    if spec.draft_model is not None:
        return weights_per_device(drafter, layout, weight_dtype)[0]
    h = drafter.hidden_size
    extra = spec.mtp_layers * (2 * h * h + 2 * h)
    return (layer_weights_per_device(drafter, layout) + extra) * bytes_per_value(weight_dtype)


def draft_kv_per_token(drafter, layout, kv_dtype: str) -> float:
    """Bytes of the draft's KV cache per token on one device."""
    from engine.results.memory import kv_share_per_device
    return drafter.kv_cache_bytes_per_token(kv_dtype) * kv_share_per_device(drafter, layout)


def draft_times(plan, spec: SpeculativeDecoding, drafter, scenario, hardware, method, layout,
                graph_method=None) -> np.ndarray:
    """Seconds the draft adds to every iteration of `plan` (module docstring)."""
    from engine.serving.cost import (decode_grid, decode_iterations, distinct_mixed, grid_pass, interpolate_grid,
                                     mixed_pass, time_pass)
    k = spec.draft_tokens
    times = np.zeros(plan.iterations)
    if plan.mixed:
        index = np.array([it.index for it in plan.mixed])
        distinct, which = distinct_mixed(plan)
        times[index] = time_pass(mixed_pass(distinct), len(distinct), drafter, scenario, hardware, method,
                                 layout)[which]
    # the draft's one-token passes: k per decode-only iteration, k - 1 more in iterations with prompt chunks
    index, batch, prior = decode_iterations(plan) if plan.segments else (np.zeros(0, int), np.zeros(0), np.zeros(0))
    passes = np.full(len(index), float(k))
    decoding = [it for it in plan.mixed if len(it.decode_priors)]
    if decoding and k > 1:
        index = np.concatenate([index, [it.index for it in decoding]]).astype(np.int64)
        batch = np.concatenate([batch, [float(len(it.decode_priors)) for it in decoding]])
        prior = np.concatenate([prior, [float(np.mean(it.decode_priors)) for it in decoding]])
        passes = np.concatenate([passes, np.full(len(decoding), float(k - 1))])
    if len(index):
        prior = prior + (k - 1) / 2.0          # the draft's passes attend to p, p + 1, ..., p + k - 1 tokens
        batches, contexts = decode_grid(batch, prior)
        grid = time_pass(grid_pass(batches, contexts), len(batches) * len(contexts), drafter, scenario, hardware,
                         graph_method or method, layout)
        np.add.at(times, index, passes * interpolate_grid(grid, batches, contexts, batch, prior))
    return times
