"""The kernel table: one row per kernel, columnar, built from numpy arrays.

Columns (per occurrence unless said otherwise):
  phase, name, type, op, unit, dtype   strings (type follows the seed: Ma_Mw, Va_Mqa, KVCache, ...)
  m, k, n, batch                      GEMM shape C[m,n] = A[m,k] @ B[k,n], `batch` independent GEMMs
  context                             attention context in tokens (NaN for other kernels)
  attention_window                    sliding-window attention: keys a query attends at most (NaN: full
                                      attention, and every kernel that is not attention)
  kv_value_bytes                      attention rows: bytes per K/V value the fused attention kernel reads, the
                                      KV cache's dtype (K/V expanded from a latent: the activation dtype);
                                      NaN on every other kernel
  count                               occurrences in the phase (layers x steps)
  macs, matrix_flops, vector_flops, flops
  weight_bytes, activation_bytes, kv_bytes, bytes
  link_bytes, group_size              collectives: bytes each device sends over its links, devices in the group;
                                      grouped MoE GEMMs (Expert_*): group_size = the GEMM problems of the launch,
                                      the experts the device holds (0 and 1 for every other kernel)
  overlap_group                       collectives: the `group` of the kernel it may hide behind (-1: none)
  group                               rows added by one `add` call (decode steps of one kernel)

The table describes what ONE device does: with tensor/pipeline parallelism, shapes, bytes and
counts are per device (docs/parallelism.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter

import numpy as np
import pandas as pd

from engine.common.arrays import SHORT_ROWS, all_true, equal_to
from engine.common.traced import Traced

STRING_COLUMNS = ("phase", "name", "type", "op", "unit", "dtype")
NUMBER_COLUMNS = (
    "m", "k", "n", "batch", "context", "attention_window", "kv_value_bytes", "count", "macs", "matrix_flops",
    "vector_flops", "weight_bytes", "activation_bytes", "kv_bytes", "link_bytes", "group_size", "overlap_group",
)
KERNEL_COLUMNS = STRING_COLUMNS + NUMBER_COLUMNS + ("flops", "bytes", "group")

# FLOP per element for element-wise work on the vector units (a convention, stated once).
FLOPS_PER_ELEMENT = {
    "rmsnorm": 4.0,      # square, accumulate, multiply by rsqrt, multiply by weight
    "layernorm": 7.0,    # mean, subtract, square, accumulate, normalise, weight, bias
    "residual": 1.0,     # one add
    "rotary": 3.0,       # x*cos + rotate(x)*sin: two multiplies and an add per element
    "softmax": 5.0,      # scale, max, subtract, exp, sum-and-divide per score element
    "gate_multiply": 1.0,
    "softcap": 3.0,      # Gemma 2 logit soft-capping cap * tanh(x / cap): divide, tanh, multiply
}
ACTIVATION_FLOPS = {"silu": 4.0, "swish": 4.0, "gelu": 8.0, "relu": 1.0}


# Kernel families for charts that stack by group rather than by kernel.
FAMILY_BY_NAME = {
    "Embedding": "embedding & head", "LM_head": "embedding & head",
    "Norm_attn": "norms & residuals", "Norm_ffn": "norms & residuals", "Norm_final": "norms & residuals",
    "Norm_post_attn": "norms & residuals", "Norm_post_ffn": "norms & residuals", "Norm_qk": "norms & residuals",
    "Norm_q_a": "norms & residuals", "Norm_kv_a": "norms & residuals",
    "Residual_attn": "norms & residuals", "Residual_ffn": "norms & residuals",
    "Q/K/V*W": "attention projections", "O*W": "attention projections", "Rotary": "attention projections",
    # multi-head latent attention (engine/decomposition/mla.py)
    "Q*W": "attention projections", "Q_a*W": "attention projections", "QKV_a*W": "attention projections",
    "Q_b*W": "attention projections",
    "KV_a*W": "attention projections", "KV_b*W": "attention projections", "Q*W_UK": "attention projections",
    "O*W_UV": "attention projections",
    "FFN_up": "MLP", "FFN_gate": "MLP", "FFN_act": "MLP", "FFN_down": "MLP",
    "Pipeline_bubble": "pipeline bubble",
    "MoE_router": "MoE", "MoE_topk": "MoE", "Expert_up": "MoE", "Expert_gate": "MoE", "Expert_act": "MoE", "Expert_down": "MoE",
    "MoE_combine": "MoE", "Shared_up": "MoE", "Shared_gate": "MoE", "Shared_act": "MoE", "Shared_down": "MoE",
}
COLLECTIVE_PREFIXES = ("AllReduce_", "AllGather_", "ReduceScatter_", "AllToAll_", "SendRecv_")
SLIDING_SUFFIX = " (sliding)"   # kernels of sliding-window layers: "Q*gK (sliding)", "KVCache_Read (sliding)"


def kernel_family(name: str) -> str:
    """The family a kernel belongs to (attention core for KV traffic, scores, softmax, ...)."""
    if name.startswith(COLLECTIVE_PREFIXES):
        return "communication"
    name = name.removesuffix(SLIDING_SUFFIX)
    if name not in FAMILY_BY_NAME and name[:1] in ("d", "p") and name[1:] in FAMILY_BY_NAME:
        name = name[1:]          # the decode / prefill part of a chunk (dQ*W_UK, pKV_b*W)
    return FAMILY_BY_NAME.get(name, "attention core")


def activation_flops(hidden_act: str) -> float:
    """FLOP per element of an MLP activation function (gelu variants count as gelu)."""
    name = hidden_act.lower()
    for key, flops in ACTIVATION_FLOPS.items():
        if key in name:
            return flops
    return ACTIVATION_FLOPS["gelu"]


_PLAIN_NUMBERS = (int, float)   # values `add` stores as they are
_PLAIN_TYPES = frozenset(_PLAIN_NUMBERS)
# add_row: every column's default (the keyword defaults of `add`; the strings have none and are required) and the
# getters of the NUMBER_COLUMNS values before and after matrix_flops (computed from macs) and of the strings
_ROW_DEFAULTS = {"m": 0, "k": 0, "n": 0, "batch": 1, "context": np.nan, "attention_window": np.nan,
                 "kv_value_bytes": np.nan, "count": 1,
                 "macs": 0, "vector_flops": 0, "weight_bytes": 0, "activation_bytes": 0, "kv_bytes": 0, "link_bytes": 0,
                 "group_size": 1, "overlap_group": -1, "name": None, "type": None, "op": None, "unit": None,
                 "dtype": None}
_ROW_FIELDS = len(_ROW_DEFAULTS)
_MATRIX_FLOPS_AT = NUMBER_COLUMNS.index("matrix_flops")
_NUMBERS_BEFORE_MATRIX_FLOPS = itemgetter(*NUMBER_COLUMNS[:_MATRIX_FLOPS_AT])
_NUMBERS_AFTER_MATRIX_FLOPS = itemgetter(*NUMBER_COLUMNS[_MATRIX_FLOPS_AT + 1:])
_ROW_STRINGS = itemgetter(*STRING_COLUMNS[1:])


@dataclass(frozen=True)
class TableSegment:
    """Kernels as a KernelTableBuilder recorded them (`segment`), starting at group id `start`: one length per
    kernel, its NUMBER_COLUMNS and STRING_COLUMNS values in flat tuples, {(group, column): array} of longer values."""

    start: int
    lengths: tuple
    numbers: tuple
    strings: tuple
    wide: dict


class KernelTableBuilder:
    """Collects kernels; each `add` may pass arrays (one value per decode step) or scalars."""

    def __init__(self) -> None:
        # per `add`, in flat lists (one conversion to numpy each in build_columns): its row count, the first value of
        # each NUMBER_COLUMNS entry, the STRING_COLUMNS values, and {(add index, column index): array of > 1 values}
        self._lengths: list[int] = []
        self._numbers: list = []
        self._strings: list = []
        self._wide: dict[tuple[int, int], np.ndarray] = {}
        self.marks: list[int] = []      # kernel counts a decomposition marked (`mark`: the pass templates' spans)

    @property
    def size(self) -> int:
        """Kernels added so far (the group id the next one gets)."""
        return len(self._lengths)

    def mark(self) -> None:
        """Note the current size (engine/decomposition/pass_template.py reads where a pass's rows change)."""
        self.marks.append(len(self._lengths))

    def segment(self, start: int, end: int) -> TableSegment:
        """The kernels added from `start` to `end` (group ids), to append again with `extend`."""
        numbers, strings = len(NUMBER_COLUMNS), len(STRING_COLUMNS)
        return TableSegment(start, tuple(self._lengths[start:end]), tuple(self._numbers[start * numbers:end * numbers]),
                            tuple(self._strings[start * strings:end * strings]),
                            {key: values for key, values in self._wide.items() if start <= key[0] < end})

    def extend(self, segment: TableSegment) -> None:
        """Append the kernels of `segment`; they keep their group ids (and the ids their rows name in
        `overlap_group`), so the builder must hold exactly the kernels before it."""
        if segment.start != len(self._lengths):
            raise ValueError(f"a table segment recorded at kernel {segment.start} appended at {len(self._lengths)}")
        self._lengths.extend(segment.lengths)
        self._numbers.extend(segment.numbers)
        self._strings.extend(segment.strings)
        self._wide.update(segment.wide)

    def extend_numbers(self, segment: TableSegment, numbers: list) -> None:
        """Append the kernels of `segment` with `numbers` (its NUMBER_COLUMNS values in the same flat order, plain
        numbers) in place of its own: a pass template evaluated for another token count."""
        if segment.start != len(self._lengths):
            raise ValueError(f"a table segment recorded at kernel {segment.start} appended at {len(self._lengths)}")
        self._lengths.extend(segment.lengths)
        self._numbers.extend(numbers)
        self._strings.extend(segment.strings)

    def truncate(self, size: int) -> None:
        """Drop the kernels added after the first `size`."""
        del self._lengths[size:], self._numbers[size * len(NUMBER_COLUMNS):], self._strings[size * len(STRING_COLUMNS):]
        for key in [key for key in self._wide if key[0] >= size]:
            del self._wide[key]

    def add(self, *, phase: str, name: str, type: str, op: str, unit: str, dtype: str,
            m=0, k=0, n=0, batch=1, count=1, context=np.nan, attention_window=np.nan, kv_value_bytes=np.nan, macs=0,
            vector_flops=0, weight_bytes=0, activation_bytes=0, kv_bytes=0, link_bytes=0, group_size=1,
            overlap_group=-1) -> int:
        """Add one kernel (array values: one row per decode step / iteration); returns its group id."""
        plain = macs.__class__ in _PLAIN_NUMBERS or macs.__class__ is Traced    # Traced: a pass template's trace
        matrix_flops = 2.0 * macs if plain else np.multiply(2.0, macs)
        numbers = [m, k, n, batch, context, attention_window, kv_value_bytes, count, macs, matrix_flops, vector_flops,
                   weight_bytes, activation_bytes, kv_bytes, link_bytes, group_size, overlap_group]  # NUMBER_COLUMNS
        return self._append(numbers, (phase, name, type, op, unit, dtype))

    def add_row(self, phase: str, columns: dict) -> int:
        """`add(phase=phase, **columns)` from a dict (the decomposition's fast path: no keyword re-binding)."""
        merged = {**_ROW_DEFAULTS, **columns}
        if len(merged) != _ROW_FIELDS:
            raise TypeError(f"add_row: unknown kernel columns {sorted(set(columns) - set(_ROW_DEFAULTS))}")
        macs = merged["macs"]
        numbers = [*_NUMBERS_BEFORE_MATRIX_FLOPS(merged),
                   2.0 * macs if macs.__class__ in _PLAIN_NUMBERS or macs.__class__ is Traced
                   else np.multiply(2.0, macs),
                   *_NUMBERS_AFTER_MATRIX_FLOPS(merged)]    # NUMBER_COLUMNS
        strings = _ROW_STRINGS(merged)
        if None in strings:
            raise KeyError(f"add_row: {STRING_COLUMNS[1 + strings.index(None)]!r} is required")
        return self._append(numbers, (phase, *strings))

    def _append(self, numbers: list, strings: tuple) -> int:
        index = len(self._lengths)
        rows = 1
        if not _PLAIN_TYPES.issuperset(map(type, numbers)):     # arrays (a request's decode steps) to unpack
            sized = False
            for column, value in enumerate(numbers):
                if value.__class__ in _PLAIN_NUMBERS:    # the common case: nothing to unpack
                    continue
                if isinstance(value, np.ndarray):
                    size = value.size
                    if value.ndim:
                        if not sized or size > rows:
                            rows = size
                        sized = True
                    if size > 1:
                        self._wide[index, column] = value
                    numbers[column] = value.item(0)
        self._lengths.append(rows)
        self._numbers.extend(numbers)
        self._strings.extend(strings)
        return index

    def build_columns(self, read_only: bool = False) -> dict[str, np.ndarray]:
        """The table as a dict of numpy arrays (the engine's fast internal form); `read_only`: every array
        read-only (the number and string columns by their two blocks, not one by one)."""
        adds = len(self._lengths)
        single = sum(self._lengths) == adds      # one row per kernel (a prefill or decode step)
        if not single or self._wide:
            lengths = np.array(self._lengths, dtype=np.int64)
            ends = np.cumsum(lengths)
        # scalars (and one-value arrays) repeat over their rows; longer arrays are copied in place
        # np.fromiter: the values converted one by one as np.array converts them, without its shape discovery
        firsts = np.fromiter(self._numbers, dtype=float, count=len(self._numbers)).reshape(adds, len(NUMBER_COLUMNS))
        numbers = np.ascontiguousarray(firsts.T)        # one contiguous row per column
        if not single:
            numbers = np.repeat(numbers, lengths, axis=1)
        for (i, column), values in self._wide.items():
            numbers[column, ends[i] - lengths[i]:ends[i]] = values
        if read_only:                                   # before its rows are taken: views made later inherit it
            numbers.setflags(False)
        data: dict[str, np.ndarray] = dict(zip(NUMBER_COLUMNS, numbers))
        strings = np.fromiter(self._strings, dtype=object, count=len(self._strings)).reshape(adds, len(STRING_COLUMNS))
        strings = np.ascontiguousarray(strings.T) if single else np.repeat(strings.T, lengths, axis=1)
        if read_only:
            strings.setflags(False)
        data.update(zip(STRING_COLUMNS, strings))
        data["group"] = np.arange(adds) if single else np.repeat(np.arange(adds), lengths)
        data["flops"] = data["matrix_flops"] + data["vector_flops"]
        data["bytes"] = data["weight_bytes"] + data["activation_bytes"] + data["kv_bytes"]
        if read_only:                        # the rows of the two blocks are read-only views already
            for name in ("group", "flops", "bytes"):
                data[name].setflags(False)
        return {c: data[c] for c in KERNEL_COLUMNS}

    def build(self) -> pd.DataFrame:
        return pd.DataFrame(self.build_columns())


def as_columns(table) -> dict[str, np.ndarray]:
    """A kernel table (DataFrame or dict of arrays) as a dict of numpy arrays."""
    if isinstance(table, pd.DataFrame):
        return {c: table[c].to_numpy() for c in table.columns}
    return dict(table)


def group_runs(groups) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """np.unique(groups, return_index=True, return_inverse=True) of a `group` column (inverse flat), without
    sorting when the groups are 0, 1, 2, ... each one contiguous run (the builder's order)."""
    groups = np.asarray(groups)
    rows = len(groups)
    if rows and groups[-1] == rows - 1 and all_true(groups == np.arange(rows)):   # one row per group (one step)
        return np.arange(rows).astype(groups.dtype), np.arange(rows, dtype=np.intp), groups.astype(np.intp)
    if len(groups) and groups[0] == 0:
        starts = np.flatnonzero(groups[1:] != groups[:-1]) + 1
        if all_true(groups[starts] == np.arange(1, len(starts) + 1)):
            first = np.concatenate(([0], starts)).astype(np.intp)
            return np.arange(len(first)).astype(groups.dtype), first, groups.astype(np.intp)
    codes, first, inverse = np.unique(groups, return_index=True, return_inverse=True)
    return codes, first, inverse.reshape(-1)



def column_equals(columns: dict, key: str, value: str) -> np.ndarray:
    """Per row: columns[key] == value, compared once per `group` (a group's rows share every string column)
    when the table has the builder's groups, else row by row."""
    values = np.asarray(columns[key])
    if "group" not in columns or len(values) < SHORT_ROWS:
        return equal_to(values, value)
    _, first, inverse = group_runs(columns["group"])
    return (values[first] == value)[inverse]
