"""Scenario: what the model is asked to do (phase, batch, lengths, dtypes) and on how many devices."""

from __future__ import annotations

import math
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.hardware.dtypes import check_dtype
from engine.workload.module_dtypes import check_modules

Phase = Literal["prefill", "decode", "chunked", "request"]
PHASES: tuple[str, ...] = ("prefill", "decode", "chunked", "request")
COLLECTIVE_ALGORITHMS: tuple[str, ...] = ("ring", "tree")


class Scenario(BaseModel):
    """One workload.

    - `prefill`: `batch` prompts of `input_length` tokens, one forward pass.
    - `decode`: one decode step for `batch` sequences whose KV cache already holds
      `context_length` tokens (default `input_length`); the step attends to context + 1 tokens.
    - `chunked`: one chunked-prefill iteration of `chunk_size` tokens that mixes prefill tokens
      of one prompt with decode tokens of running requests (mix as in the seed notebook).
    - `request`: prefill (which yields the first token) plus `output_length - 1` decode steps
      with a growing context, for a batch of `batch` requests that start together. With
      `chunked_prefill`, the requests run as a simulated chunked-prefill schedule instead
      (iterations of `chunk_size` tokens mixing prompt chunks and decode tokens; engine/decomposition/chunked.py).

    Parallelism (docs/parallelism.md): `tp` tensor-parallel ways, `pp` pipeline stages, `dp`
    data-parallel replicas, `ep` expert-parallel ways (MoE models only); `devices` = tp x pp x dp.
    `batch` is per data-parallel replica. Give any of tp, pp, dp (the others are 1), or `devices`
    with some of them: the ones not given multiply to devices / (product of those given); that is
    unambiguous when it is 1 (they are all 1) or when only one is missing (it takes the quotient);
    otherwise it is rejected. `devices` stays as given (None: tp x pp x dp, see `device_count`).
    `micro_batches` splits a prefill batch for the pipeline (None: `prefill_micro_batches`, the
    largest divisor of `batch` that is <= pp). `overlap_communication` hides each collective behind the kernel that
    produces its input (as async tensor parallelism / collective matmuls do); `collective_algorithm`
    picks ring or tree collectives.

    `routing_skew` (MoE models): how unevenly tokens pick experts, a Zipf exponent s over the experts'
    popularity ranks (a token picks the expert of rank j with probability proportional to j^-s, at most
    once); 0 is uniform routing. It sets how many distinct experts a batch touches, hence the expert
    weights a step reads (docs/methods.md, "Mixture of experts").

    `mla_decode` (multi-head latent attention models, DeepSeek-V2/V3): how decode tokens attend.
    "absorbed" (the default; what serving engines such as FlashMLA and vLLM run) folds kv_b_proj into
    the query and the output and attends over the cached latent; "naive" decodes as Hugging Face
    transformers does, decompressing the whole cached latent through kv_b_proj every step and running
    ordinary multi-head attention over the decompressed K/V. The KV cache holds the latent either way;
    prompts always run the naive form (docs/methods.md, "Multi-head latent attention").

    `unquantized_modules` / `unquantized_dtype`: the module groups a quantized checkpoint leaves out of its
    quantization (nvidia's NVFP4 exports keep attention, the router and the LM head in bf16, for example) and their
    dtype; every other weight takes `weight_dtype` (engine/workload/module_dtypes.py).

    `moe_dispatch` (MoE models with ep = tp > 1, no attention data parallelism): how tokens reach the experts.
    "all_to_all" (the default): each TP rank routes its share of the tokens and sends them to the experts' devices and
    back (AllToAll_dispatch / AllToAll_combine), the shares completed by the all-reduce; "all_reduce": every rank
    holds all the tokens already (attention's all-reduce replicated them), runs its own experts on those routed to
    them, and the MoE all-reduce sums the experts' outputs: no all-to-all (SGLang without a DeepEP-style
    `--moe-a2a-backend`, its default "none"). Wider expert groups (ep > tp) always dispatch (docs/parallelism.md).
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
    unquantized_modules: tuple[str, ...] = Field(
        (), description="module groups whose weights stay in unquantized_dtype while the rest take weight_dtype "
        "(a quantized checkpoint's excluded modules: attention, attention_qkv, attention_output, dense_mlp, "
        "shared_experts, router, embedding, lm_head); engine/workload/module_dtypes.py")
    unquantized_dtype: str = "bf16"

    tp: Optional[int] = Field(None, ge=1, le=4096, description="tensor-parallel ways")
    pp: Optional[int] = Field(None, ge=1, le=4096, description="pipeline-parallel stages")
    dp: Optional[int] = Field(None, ge=1, le=1_000_000, description="data-parallel replicas")
    ep: int = Field(1, ge=1, le=4096, description="expert-parallel ways (MoE models)")
    devices: Optional[int] = Field(None, ge=1, le=100_000_000, description="tp x pp x dp")
    micro_batches: Optional[int] = Field(None, ge=1, le=1_000_000, description="prefill micro-batches")
    overlap_communication: bool = False
    collective_algorithm: Literal["ring", "tree"] = "ring"
    chunked_prefill: bool = False
    routing_skew: float = Field(0.0, ge=0.0, le=10.0, description="MoE routing: Zipf exponent over the experts "
                                "(0 = uniform); engine/decomposition/moe.py")
    mla_decode: Literal["absorbed", "naive"] = Field("absorbed", description="MLA decode form: 'absorbed' "
                                                     "(serving engines) or 'naive' (transformers); "
                                                     "engine/decomposition/mla.py")
    moe_dispatch: Literal["all_to_all", "all_reduce"] = Field(
        "all_to_all", description="MoE layers with ep = tp: 'all_to_all' sends each TP rank's token share to the "
        "experts' devices; 'all_reduce' (SGLang's default moe_a2a_backend 'none') runs every rank's experts on the "
        "replicated tokens and sums their outputs in the all-reduce alone; engine/decomposition/moe.py")

    @field_validator("weight_dtype", "activation_dtype", "kv_dtype", "unquantized_dtype")
    @classmethod
    def _known_dtype(cls, value: str, info) -> str:
        return check_dtype(value, info.field_name)

    @field_validator("unquantized_modules", mode="before")
    @classmethod
    def _known_modules(cls, value) -> tuple[str, ...]:
        return check_modules(value)

    @model_validator(mode="after")
    def _resolve_layout(self) -> "Scenario":
        given = {name: getattr(self, name) for name in ("tp", "pp", "dp")}
        missing = [name for name, value in given.items() if value is None]
        if self.devices is not None and missing:
            known = math.prod(value for value in given.values() if value is not None)
            if self.devices % known:
                raise ValueError(f"devices={self.devices} is not a multiple of the given ways ({known}): "
                                 f"cannot infer {' and '.join(missing)}")
            rest = self.devices // known
            if rest > 1 and len(missing) > 1:
                raise ValueError(f"devices={self.devices} with {' and '.join(missing)} not given is ambiguous: "
                                 f"give all but one of tp, pp, dp (e.g. tp={rest})")
            given[missing[0]] = rest
        for name in ("tp", "pp", "dp"):
            self.__dict__[name] = given[name] if given[name] is not None else 1
        if self.devices is not None and self.devices != self.device_count:
            raise ValueError(f"devices={self.devices} but tp x pp x dp = {self.tp} x {self.pp} x {self.dp} "
                             f"= {self.device_count}")
        if self.micro_batches is not None and self.batch % self.micro_batches:
            raise ValueError(f"micro_batches={self.micro_batches} does not divide batch={self.batch}")
        if self.chunked_prefill:
            if self.phase != "request":
                raise ValueError(f"chunked_prefill applies to phase 'request', not {self.phase!r} "
                                 "(phase 'chunked' is one average chunk)")
            if self.chunk_size < self.batch:
                raise ValueError(f"chunk_size={self.chunk_size} must be at least batch={self.batch} with "
                                 "chunked_prefill (every running request decodes one token per iteration)")
        return self

    @property
    def device_count(self) -> int:
        """Devices in use: tp x pp x dp (equal to `devices` when that is given)."""
        return self.tp * self.pp * self.dp

    @property
    def prefill_micro_batches(self) -> int:
        """Micro-batches a prefill batch is split into for the pipeline: `micro_batches`, else the
        largest divisor of `batch` that is <= pp (pp for a batch that pp divides; 1 without a pipeline)."""
        if self.micro_batches is not None:
            return self.micro_batches
        if self.pp == 1 or self.batch == 1:      # the only divisor <= 1 (without the generator's cost)
            return 1
        return max(m for m in range(1, min(self.pp, self.batch) + 1) if self.batch % m == 0)

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
