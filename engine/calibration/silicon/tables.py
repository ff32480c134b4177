"""Tidy readers of aiconfigurator's measured per-operation tables (SI units, provenance columns).

Every frame has the provenance columns of engine.calibration.silicon.files (system, op_family, framework,
version, source_file, collection_*, table_status, file_framework, file_version, device_label,
kernel_source), `device` (the workbook name, engine.calibration.silicon.package.SYSTEM_DEVICES; None where the
workbook has none) and `time_s` (the file's `latency`, milliseconds per call, / 1e3).

Column mapping per family (file column -> ours; checked on the installed 0.12.0 files):

  gemm/<fw>/<ver>/gemm_perf: C[m,n] = A[m,k] @ B[k,n]
      m, n, k -> m, n, k;  gemm_dtype -> file_dtype (bfloat16, fp8, fp8_block, nvfp4, int8_wo, int4_wo, sq)
      -> weight_dtype / activation_dtype / dtype in engine names (bf16, fp8, fp8_g128, nvfp4, int8, int4_g128)
  attention/<fw>/<ver>/context_attention_perf: one prefill attention (one layer), causal, no prefix
      batch_size -> batch; isl -> input_length (tokens per sequence); num_heads -> heads;
      num_key_value_heads -> kv_heads; head_dim; window_size (0: full attention); attn_dtype -> dtype;
      kv_cache_dtype -> kv_dtype; beam_width, step (always 0) dropped
  attention/<fw>/<ver>/generation_attention_perf: one decode attention step (one query token per sequence)
      batch_size -> batch; isl + step -> context_length (aiconfigurator's own loader keys the row by
      seq_len = isl + step; isl is 1, step runs 1..131071); prior_tokens = step (cached tokens before the
      new one); heads, kv_heads, head_dim, window_size, dtype, kv_dtype as above
  mla/<fw>/<ver>/context_mla_perf, generation_mla_perf: DeepSeek MLA attention core
      num_heads -> heads (query heads per device); tp_size -> tp; batch_size -> batch; isl -> input_length;
      generation: context_length = isl + step; mla_dtype -> dtype; kv_cache_dtype -> kv_dtype
  moe/<fw>/<ver>/moe_perf: the routed experts of one MoE layer (grouped GEMMs)
      num_tokens -> tokens (before routing); hidden_size -> hidden; inter_size -> intermediate;
      topk; num_experts -> experts; moe_tp_size -> moe_tp; moe_ep_size -> moe_ep; distribution (balanced,
      power_law_<alpha>: token-to-expert routing); moe_dtype -> file_dtype -> weight/activation dtype
  comm/nccl/<nccl ver>/nccl_perf and comm/<fw>/<ver>/custom_allreduce_perf: collectives
      op_name -> op (all_reduce, all_gather, reduce_scatter, all_to_all); num_gpus -> group_size;
      message_size -> elements (values in the message; time doubles from int8 to half at large sizes,
      so it counts elements, not bytes); nccl_dtype / allreduce_dtype -> file_dtype;
      message_bytes = elements x bytes per value (half, bfloat16 2; int8 1); implementation: nccl, or the
      custom all-reduce's `implementation` / `backend` column (else the framework)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.calibration.silicon.files import TableSpec, read_tables
from engine.calibration.silicon.package import SYSTEM_DEVICES

# file dtype -> (weight dtype, activation dtype) in engine names (engine/hardware/dtypes.py)
FILE_DTYPES = {
    "bfloat16": ("bf16", "bf16"), "float16": ("fp16", "fp16"), "half": ("fp16", "fp16"),
    "fp8": ("fp8", "fp8"), "fp8_block": ("fp8_g128", "fp8_g128"), "nvfp4": ("nvfp4", "nvfp4"),
    "int8_wo": ("int8", "bf16"), "int4_wo": ("int4_g128", "bf16"), "sq": ("int8", "int8"), "int8": ("int8", "int8"),
    "w4a16_mxfp4": ("mxfp4", "bf16"), "w4a8_mxfp4_mxfp8": ("mxfp4", "mxfp8"), "w4afp8": ("int4_g128", "fp8"),
}
VALUE_BYTES = {"half": 2.0, "float16": 2.0, "bfloat16": 2.0, "fp8": 1.0, "int8": 1.0, "float32": 4.0}
COLLECTIVE_OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
                  "alltoall": "all_to_all", "all_to_all": "all_to_all"}

GEMM = TableSpec("gemm", "gemm_perf", {"gemm_dtype": "file_dtype", "m": "m", "n": "n", "k": "k"},
                 whole={"m": 1, "n": 1, "k": 1})
_ATTENTION = {"batch_size": "batch", "isl": "input_length", "num_heads": "heads", "num_key_value_heads": "kv_heads",
              "head_dim": "head_dim", "attn_dtype": "file_dtype", "kv_cache_dtype": "file_kv_dtype"}
_ATTENTION_WHOLE = {"batch": 1, "input_length": 1, "heads": 1, "kv_heads": 1, "head_dim": 1, "window_size": 0}
CONTEXT_ATTENTION = TableSpec("attention", "context_attention_perf", _ATTENTION, whole=_ATTENTION_WHOLE,
                              optional={"window_size": ("window_size", 0)})
GENERATION_ATTENTION = TableSpec("attention", "generation_attention_perf", {**_ATTENTION, "step": "prior_tokens"},
                                 whole={**_ATTENTION_WHOLE, "prior_tokens": 0},
                                 optional={"window_size": ("window_size", 0)})
_MLA = {"batch_size": "batch", "isl": "input_length", "num_heads": "heads", "tp_size": "tp",
        "mla_dtype": "file_dtype", "kv_cache_dtype": "file_kv_dtype"}
_MLA_WHOLE = {"batch": 1, "input_length": 1, "heads": 1, "tp": 1}
CONTEXT_MLA = TableSpec("mla", "context_mla_perf", _MLA, whole=_MLA_WHOLE)
GENERATION_MLA = TableSpec("mla", "generation_mla_perf", {**_MLA, "step": "prior_tokens"},
                           whole={**_MLA_WHOLE, "prior_tokens": 0})
MOE = TableSpec("moe", "moe_perf", {"moe_dtype": "file_dtype", "num_tokens": "tokens", "hidden_size": "hidden",
                                    "inter_size": "intermediate", "topk": "topk", "num_experts": "experts",
                                    "moe_tp_size": "moe_tp", "moe_ep_size": "moe_ep", "distribution": "distribution"},
                whole={"tokens": 1, "hidden": 1, "intermediate": 1, "topk": 1, "experts": 1, "moe_tp": 1, "moe_ep": 1})
NCCL = TableSpec("comm", "nccl_perf", {"op_name": "file_op", "nccl_dtype": "file_dtype", "num_gpus": "group_size",
                                       "message_size": "elements"}, whole={"group_size": 1, "elements": 1})
CUSTOM_ALLREDUCE = TableSpec("comm", "custom_allreduce_perf",
                             {"op_name": "file_op", "allreduce_dtype": "file_dtype", "num_gpus": "group_size",
                              "message_size": "elements"}, whole={"group_size": 1, "elements": 1},
                             optional={"implementation": ("implementation", np.nan), "backend": ("backend", np.nan)})


def _finish(frame: pd.DataFrame) -> pd.DataFrame:
    frame.insert(1, "device", frame["system"].map(SYSTEM_DEVICES).astype(object))
    return frame


def _engine_dtypes(frame: pd.DataFrame, column: str = "file_dtype") -> pd.DataFrame:
    pairs = frame[column].map(lambda d: FILE_DTYPES.get(str(d), (str(d), str(d))))
    frame["weight_dtype"] = [w for w, _ in pairs]
    frame["activation_dtype"] = [a for _, a in pairs]
    frame["dtype"] = frame["weight_dtype"]
    return frame


def gemm_table(root=None, systems=None, frameworks=None) -> pd.DataFrame:
    """Measured GEMMs: m, n, k, file_dtype, weight_dtype, activation_dtype, dtype, time_s (+ provenance)."""
    return _finish(_engine_dtypes(read_tables(GEMM, root, systems, frameworks)))


def _attention_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    frame["dtype"] = frame["file_dtype"].map(lambda d: FILE_DTYPES.get(str(d), (str(d),) * 2)[1])
    frame["kv_dtype"] = frame["file_kv_dtype"].map(lambda d: FILE_DTYPES.get(str(d), (str(d),) * 2)[0])
    return frame


def context_attention_table(root=None, systems=None, frameworks=None) -> pd.DataFrame:
    """Prefill attention: batch, input_length, heads, kv_heads, head_dim, window_size, dtype, kv_dtype, time_s."""
    return _finish(_attention_dtypes(read_tables(CONTEXT_ATTENTION, root, systems, frameworks)))


def generation_attention_table(root=None, systems=None, frameworks=None) -> pd.DataFrame:
    """Decode attention: batch, prior_tokens, context_length (= input_length + prior_tokens), heads, ..."""
    frame = _attention_dtypes(read_tables(GENERATION_ATTENTION, root, systems, frameworks))
    frame["context_length"] = frame["input_length"] + frame["prior_tokens"]
    return _finish(frame)


def mla_table(phase: str, root=None, systems=None, frameworks=None) -> pd.DataFrame:
    """MLA attention core, phase 'context' or 'generation' (generation adds context_length)."""
    if phase not in ("context", "generation"):
        raise ValueError(f"MLA phase must be 'context' or 'generation', got {phase!r}")
    spec = CONTEXT_MLA if phase == "context" else GENERATION_MLA
    frame = _attention_dtypes(read_tables(spec, root, systems, frameworks))
    if phase == "generation":
        frame["context_length"] = frame["input_length"] + frame["prior_tokens"]
    return _finish(frame)


def moe_table(root=None, systems=None, frameworks=None) -> pd.DataFrame:
    """Routed experts of one MoE layer: tokens, hidden, intermediate, topk, experts, moe_tp, moe_ep,
    distribution, file_dtype, weight_dtype, activation_dtype, time_s."""
    return _finish(_engine_dtypes(read_tables(MOE, root, systems, frameworks)))


def collective_table(root=None, systems=None) -> pd.DataFrame:
    """NCCL and custom all-reduce collectives: op, group_size, elements, message_bytes, implementation, time_s."""
    nccl = read_tables(NCCL, root, systems)
    nccl["implementation"] = "nccl"
    custom = read_tables(CUSTOM_ALLREDUCE, root, systems)
    if len(custom):
        named = custom["implementation"].where(custom["implementation"].notna(), custom["backend"])
        custom["implementation"] = named.where(named.notna(), custom["framework"]).astype(str)
    frame = pd.concat([nccl, custom.drop(columns=["backend"], errors="ignore")], ignore_index=True)
    unknown = sorted(set(frame["file_op"].astype(str)) - set(COLLECTIVE_OPS))
    if unknown:
        source = frame.loc[frame["file_op"].astype(str) == unknown[0], "source_file"].iloc[0]
        raise ValueError(f"{source}: column 'op_name' has unknown collective {unknown[0]!r} "
                         f"(expected one of {', '.join(COLLECTIVE_OPS)})")
    frame["op"] = frame["file_op"].astype(str).map(COLLECTIVE_OPS)
    value_bytes = frame["file_dtype"].astype(str).map(VALUE_BYTES)
    if value_bytes.isna().any():
        row = frame[value_bytes.isna()].iloc[0]
        raise ValueError(f"{row['source_file']}: collective dtype {row['file_dtype']!r} has no known size "
                         f"(expected one of {', '.join(VALUE_BYTES)})")
    frame["value_bytes"] = value_bytes.to_numpy(dtype=float)
    frame["message_bytes"] = frame["elements"].to_numpy(dtype=float) * frame["value_bytes"]
    return _finish(frame)


READERS = {"gemm": gemm_table, "context_attention": context_attention_table,
           "generation_attention": generation_attention_table, "moe": moe_table}
