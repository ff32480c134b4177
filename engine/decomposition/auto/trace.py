"""Trace a Hugging Face causal LM on PyTorch's meta device: every matmul, attention and element-wise op.

Needs the `auto` extra (PyTorch and transformers). Nothing here allocates real memory or downloads
weights: the model is built from its config under `torch.device("meta")` (engine/decomposition/auto/
meta_model.py), and one forward pass runs under a TorchDispatchMode that sees every aten op
(engine/decomposition/auto/tracer.py; the op tables in aten_ops.py).

What is recorded (`Trace.events`, plain Python records, no torch objects):
- `TracedOp`: one aten op with the module call it ran in (module hooks keep a stack), the Python
  helper function it came from (e.g. `apply_rotary_pos_emb`), its operands (weight / activation /
  KV cache / constant, element counts) and its outputs. Matmuls carry their GEMM shape.
- `AttentionRecord`, `KVStoreRecord`, `ExpertsRecord`: attention calls, `Cache.update` calls and grouped
  expert GEMMs, caught at transformers' interfaces (engine/decomposition/auto/hooks.py).

Ops whose inputs are all weights, buffers or constants (no dependency on the tokens or the cache,
e.g. the rotary cos/sin table, `1 + weight`) are treated as precomputed and not recorded; a lookup in a
weight table (a learned position embedding indexed by positions) is recorded all the same, since a
serving engine gathers those rows for every token.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import torch

from transformers import DynamicCache

from engine.decomposition.auto.hooks import sdpa_hook, wrap_cache
from engine.decomposition.auto.meta_model import PreparedModel, TraceError, prepare_model
from engine.decomposition.auto.records import Gemm, Operand, Output, Trace, TracedOp, layer_of
from engine.decomposition.auto.tracer import ACTIVE_TRACERS, Tracer

_LOCK = threading.Lock()


def _accepts(model, name: str) -> bool:
    import inspect
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _new_cache(model):
    try:
        return DynamicCache(config=model.config)
    except TypeError:  # pragma: no cover - older signature
        return DynamicCache()


class _OnlyRepresentatives:
    """Within the block, the decoder-layer list holds only the representative layers."""

    def __init__(self, prepared: PreparedModel):
        self.prepared = prepared

    def __enter__(self):
        p = self.prepared
        if p.representatives is None:
            return self
        parent_path, _, attribute = p.layer_list.rpartition(".")
        self.parent = p.model.get_submodule(parent_path) if parent_path else p.model
        self.attribute = attribute
        self.original = getattr(self.parent, attribute)
        setattr(self.parent, attribute, torch.nn.ModuleList([self.original[i] for i in p.representatives]))
        return self

    def __exit__(self, *exc):
        if self.prepared.representatives is not None:
            setattr(self.parent, self.attribute, self.original)
        return False


def trace_forward(prepared: PreparedModel, batch: int, new_tokens: int, prior_tokens: int = 0,
                  logits_to_keep: int | None = 1) -> Trace:
    """Trace one forward pass: `batch` sequences of `new_tokens` tokens after `prior_tokens` cached ones.

    logits_to_keep: LM-head rows kept per sequence (the last positions), as serving engines compute;
    None keeps every position. Falls back to tracing every layer when representatives fail."""
    try:
        trace = _trace_cached(prepared, batch, new_tokens, prior_tokens, logits_to_keep)
        if _layers_ran_alike(trace, prepared):
            return trace
        reason = "layers built alike ran different ops"
    except TraceError as error:
        if prepared.representatives is None:
            raise
        reason = str(error)
    full = prepare_model(prepared.config_dict, None)
    trace = _trace_cached(full, batch, new_tokens, prior_tokens, logits_to_keep)
    trace.notes = trace.notes + (f"traced every layer ({reason} with representative layers)",)
    return trace


@lru_cache(maxsize=64)
def _trace_cached(prepared, batch, new_tokens, prior_tokens, logits_to_keep) -> Trace:
    model = prepared.model
    keep = logits_to_keep if _accepts(model, "logits_to_keep") else None
    notes = list(prepared.notes)
    if logits_to_keep is not None and keep is None:
        notes.append("the model's forward has no logits_to_keep: the LM head was traced for every position "
                     "and its rows were scaled to the last positions")
    with _LOCK, torch.no_grad(), _OnlyRepresentatives(prepared):
        cache = _new_cache(model)
        if prior_tokens:   # fill the cache with the earlier tokens (not traced)
            _fill_cache(prepared, cache, batch, prior_tokens, keep)
        tracer = _traced_forward(prepared, cache, batch, new_tokens, prior_tokens, keep)
    logit_rows = batch * (logits_to_keep if logits_to_keep is not None else new_tokens)
    trace = Trace(prepared.model_type, batch, new_tokens, prior_tokens, logit_rows, prepared.layers_total,
                  prepared.layers_traced, tracer.events, getattr(model, "base_model_prefix", "model") or "model",
                  dict(prepared.layer_weights), tuple(sorted(tracer.unrecognized)), tuple(notes))
    if logits_to_keep is not None and keep is None:
        _scale_lm_head(trace, model, batch * new_tokens, logit_rows)
    return trace


def _fill_cache(prepared, cache, batch: int, prior_tokens: int, keep) -> None:
    """Run the earlier tokens through the model (not traced) so the cache holds them."""
    fill = {"logits_to_keep": 1} if keep is not None else {}
    try:
        prepared.model(input_ids=torch.zeros(batch, prior_tokens, dtype=torch.long, device="meta"), use_cache=True,
                       past_key_values=cache, **fill)
    except Exception as error:
        raise TraceError(f"running {prepared.model_type} on the meta device failed: "
                         f"{type(error).__name__}: {error}") from error


def _traced_forward(prepared, cache, batch: int, new_tokens: int, prior_tokens: int, keep) -> Tracer:
    """One forward pass of the new tokens under a Tracer, with the cache, attention and module hooks on."""
    model = prepared.model
    tracer = Tracer()
    tracer.register_model(model)
    wrap_cache(cache, tracer)
    handles = tracer.attach(model)
    original_sdpa = torch.nn.functional.scaled_dot_product_attention
    torch.nn.functional.scaled_dot_product_attention = sdpa_hook(original_sdpa)
    ACTIVE_TRACERS.append(tracer)
    try:
        with tracer:
            input_ids = torch.zeros(batch, new_tokens, dtype=torch.long, device="meta")
            tracer.mark(input_ids, "act")
            model(input_ids=input_ids, **_forward_arguments(model, cache, batch, new_tokens, prior_tokens, keep))
    except Exception as error:
        raise TraceError(f"tracing {prepared.model_type} on the meta device failed: "
                         f"{type(error).__name__}: {error}") from error
    finally:
        ACTIVE_TRACERS.pop()
        torch.nn.functional.scaled_dot_product_attention = original_sdpa
        for handle in handles:
            handle.remove()
    return tracer


def _forward_arguments(model, cache, batch: int, new_tokens: int, prior_tokens: int, keep) -> dict:
    """The traced forward's keyword arguments (built under the tracer, as the positions are meta tensors)."""
    kwargs = {"use_cache": True, "past_key_values": cache}
    if keep is not None:
        kwargs["logits_to_keep"] = keep
    if _accepts(model, "position_ids"):
        # every sequence carries its own positions, as in a serving batch (HF would broadcast one
        # row of positions over the batch and look up / rotate with it once)
        positions = torch.arange(prior_tokens, prior_tokens + new_tokens, device="meta")
        kwargs["position_ids"] = positions.unsqueeze(0).expand(batch, new_tokens)
    return kwargs


def _scale_lm_head(trace: Trace, model, tokens: int, rows: int) -> None:
    head = model.get_output_embeddings()
    path = next((name for name, module in model.named_modules() if module is head), None)
    for i, event in enumerate(trace.events):
        if isinstance(event, TracedOp) and event.kind == "gemm" and event.site.module == path \
                and event.gemm.m == tokens:
            g = event.gemm
            new = Gemm(rows, g.k, g.n, g.batch, g.weight_elements, g.bias_elements)
            outputs = tuple(Output(o.serial, o.elements * rows // tokens, o.floating, o.itemsize)
                            for o in event.outputs)
            inputs = tuple(Operand(o.serial, o.kind, o.elements * rows // tokens if o.kind != "weight" else o.elements,
                                   o.floating, o.itemsize) for o in event.inputs)
            trace.events[i] = TracedOp(event.kind, event.aten, event.site, inputs, outputs,
                                       event.vector_flops * rows / tokens, new)


def _event_signature(event) -> tuple:
    site = event.site
    _, pattern = layer_of(site.module)
    if isinstance(event, TracedOp):
        return ("op", event.kind, event.aten, pattern, site.helper, event.gemm,
                tuple((o.kind, o.elements) for o in event.inputs), tuple(o.elements for o in event.outputs),
                event.vector_flops)
    fields = {k: v for k, v in vars(event).items() if k not in ("site", "inputs")}
    return (type(event).__name__, pattern, site.helper, tuple(sorted(fields.items())))


def _layers_ran_alike(trace: Trace, prepared: PreparedModel) -> bool:
    """Representatives of one class of layers must have run identical op sequences."""
    if prepared.representatives is None:
        return True
    per_layer: dict[int, list] = {}
    for event in trace.events:
        layer, _ = layer_of(event.site.module)
        if layer is not None:
            per_layer.setdefault(layer, []).append(_event_signature(event))
    if set(per_layer) != set(range(prepared.layers_traced)):
        return False
    return all(per_layer[p] == per_layer[group[0]] for group in prepared.layer_classes for p in group)
