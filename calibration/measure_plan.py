"""What calibration/measure_gpu.py measures: shapes taken from the bundled catalog's config.json files.

Every item becomes one CSV row in the measurement layout (calibration/README.md). GEMMs follow the
decomposition's conventions: C[m, n] = A[m, k] @ W[k, n] with m = tokens; attn_qkv's n is the fused
q + k + v width per tensor-parallel rank, mlp_up_proj's n the fused up + gate width, swiglu's n the
intermediate width per rank, rmsnorm/residual_add's n the hidden size.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

CATALOG = Path(__file__).resolve().parent.parent / "engine" / "models" / "catalog"

GEMM_MODELS = ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B")
GEMM_TP = (1, 2, 4, 8)
GEMM_TOKENS = (1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
ELEMENTWISE_TOKENS = (1, 16, 64, 256, 1024, 4096, 16384)
PREFILL = ((1, 512), (1, 2048), (1, 8192), (4, 1024), (4, 4096), (16, 512), (16, 2048))   # (batch, length)
DECODE = tuple((b, c) for b in (1, 8, 32, 128) for c in (512, 2048, 8192, 32768))         # (batch, context)
# Whole decode steps (the model must fit in GPU memory with its KV cache): model -> (batch, context) pairs.
STEPS = {"meta-llama/Llama-3.1-8B": tuple((b, c) for b in (1, 8, 32, 64) for c in (512, 2048, 8192))
         + tuple((b, 1024) for b in (2, 4, 16, 128, 256)),
         "meta-llama/Llama-2-7b-hf": tuple((b, c) for b in (1, 8, 32) for c in (512, 2048))}
# Whole prefill passes (every layer, logits of the last token only): model -> (batch, length) pairs.
PREFILL_STEPS = {"meta-llama/Llama-3.1-8B": ((1, 128), (1, 512), (1, 1024), (1, 2048), (1, 4096), (1, 8192),
                                             (4, 1024), (4, 2048), (8, 1024), (16, 512)),
                 "meta-llama/Llama-2-7b-hf": ((1, 1024), (1, 4096), (4, 1024))}
FP8_GEMM_TP = (1, 8)
FP8_GEMM_TOKENS = (16, 64, 128, 256, 512, 1024, 2048, 4096, 8192)     # torch._scaled_mm needs m % 16 == 0

QUICK = dict(gemm_models=("meta-llama/Llama-3.1-8B",), gemm_tp=(8,), gemm_tokens=(1, 16),
             elementwise_tokens=(1, 16), prefill=((1, 64),), decode=((2, 64),), steps={}, prefill_steps={},
             fp8_tp=(8,), fp8_tokens=(16,))


@dataclass(frozen=True)
class Item:
    kind: str                 # gemm, swiglu, rmsnorm, residual_add, attention_prefill, attention_decode, decode_step
    model: str
    op: str
    tp: int = 1
    tokens: int = 0
    m: Optional[int] = None
    n: Optional[int] = None
    k: Optional[int] = None
    batch: Optional[int] = None
    context: Optional[int] = None
    dtype: Optional[str] = None   # None: the run's --dtype; "fp8": e4m3 inputs, bf16 output (torch._scaled_mm)


def load_config(model: str) -> dict:
    path = CATALOG / (model.replace("/", "--") + ".json")
    if not path.exists():
        raise ValueError(f"model {model!r} is not in the bundled catalog ({CATALOG})")
    return json.loads(path.read_text())


def dims(config: dict) -> dict:
    heads = config["num_attention_heads"]
    return dict(hidden=config["hidden_size"], ffn=config["intermediate_size"], heads=heads,
                kv_heads=config.get("num_key_value_heads") or heads,
                head_dim=config.get("head_dim") or config["hidden_size"] // heads, vocab=config["vocab_size"])


def gemm_items(model: str, tps, tokens) -> list[Item]:
    d = dims(load_config(model))
    items = []
    for tp in tps:
        if d["heads"] % tp or d["ffn"] % tp:
            continue
        kv = max(d["kv_heads"] // tp, 1)
        shapes = {"attn_qkv": ((d["heads"] // tp + 2 * kv) * d["head_dim"], d["hidden"]),
                  "attn_o": (d["hidden"], d["heads"] // tp * d["head_dim"]),
                  "mlp_up_proj": (2 * d["ffn"] // tp, d["hidden"]),
                  "mlp_down_proj": (d["hidden"], d["ffn"] // tp)}
        if tp == 1:
            shapes["lm_head"] = (d["vocab"], d["hidden"])
        for t in tokens:
            items += [Item("gemm", model, op, tp, t, t, n, k) for op, (n, k) in shapes.items()]
    return items


def elementwise_items(model: str, tps, tokens) -> list[Item]:
    d = dims(load_config(model))
    items = []
    for t in tokens:
        items += [Item("rmsnorm", model, "input_layernorm", 1, t, t, d["hidden"], 0),
                  Item("residual_add", model, "add", 1, t, t, d["hidden"], 0)]
        items += [Item("swiglu", model, "mlp_act", tp, t, t, d["ffn"] // tp, 0) for tp in tps if d["ffn"] % tp == 0]
    return items


def attention_items(model: str, tps, prefill, decode) -> list[Item]:
    items = []
    for tp in tps:
        items += [Item("attention_prefill", model, "attention", tp, b * s, batch=b, context=s) for b, s in prefill]
        items += [Item("attention_decode", model, "attention", tp, b, batch=b, context=c) for b, c in decode]
    return items


def step_items(steps: dict, kind: str = "decode_step") -> list[Item]:
    """Whole-model steps: decode (one new token per sequence, `context` cached) or prefill (`context` tokens)."""
    return [Item(kind, model, kind, 1, b if kind == "decode_step" else b * c, batch=b, context=c)
            for model, pairs in steps.items() for b, c in pairs]


def fp8_gemm_items(model: str, tps, tokens) -> list[Item]:
    """The bf16 GEMM shapes again with fp8 (e4m3) inputs and per-tensor scales, as fp8 serving runs them."""
    from dataclasses import replace
    return [replace(item, dtype="fp8") for item in gemm_items(model, tps, tokens)]


def build(kinds, quick: bool = False) -> list[Item]:
    """The items of the requested kind groups (ceilings are measured separately), most valuable first."""
    q = QUICK if quick else dict(gemm_models=GEMM_MODELS, gemm_tp=GEMM_TP, gemm_tokens=GEMM_TOKENS,
                                 elementwise_tokens=ELEMENTWISE_TOKENS, prefill=PREFILL, decode=DECODE, steps=STEPS,
                                 prefill_steps=PREFILL_STEPS, fp8_tp=FP8_GEMM_TP, fp8_tokens=FP8_GEMM_TOKENS)
    attention_tp = q["gemm_tp"] if quick else (1, 8)
    groups = {
        "decode_step": lambda: step_items(q["steps"]),
        "prefill_step": lambda: step_items(q["prefill_steps"], "prefill_step"),
        "attention": lambda: [i for m in q["gemm_models"] for i in attention_items(m, attention_tp, q["prefill"],
                                                                                    q["decode"])],
        "gemm": lambda: [i for m in q["gemm_models"] for i in gemm_items(m, q["gemm_tp"], q["gemm_tokens"])],
        "gemm_fp8": lambda: [i for m in q["gemm_models"] for i in fp8_gemm_items(m, q["fp8_tp"], q["fp8_tokens"])],
        "elementwise": lambda: [i for m in q["gemm_models"] for i in elementwise_items(m, (1, 8) if not quick
                                                                                       else q["gemm_tp"],
                                                                                       q["elementwise_tokens"])],
    }
    unknown = sorted(set(kinds) - set(groups))
    if unknown:
        raise ValueError(f"unknown kind group(s) {unknown}; expected some of {', '.join(groups)}")
    return [item for name in groups if name in kinds for item in groups[name]()]
