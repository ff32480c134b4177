"""Many scenarios in one kernel table: every grid point's kernels stacked, with the point each row serves.

A sweep over batch and lengths does not decompose each point: the decomposition takes arrays (one value
per point) and the builder makes one row per point for each kernel, as it already does for the steps of
a request. For a `request`, the decode steps of every point are stacked too (one attention row per step,
the step-independent kernels once per point with count = layers x steps), so a whole grid of requests is
one table. `stacked_table` returns the columns plus, per row, the point it belongs to; the estimators time
it like any table and engine/explore/evaluation.py sums the rows per point.

Phases `prefill`, `decode` and `request` (without chunked prefill) of hand-modelled families stack; the
rest (phase `chunked`, chunked-prefill schedules, automatically traced models, the seed method) are
estimated point by point (engine/explore/grid.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.decomposition.auto import is_automatic
from engine.decomposition.passes import AttentionPart, ForwardPass
from engine.decomposition.transformer import add_forward_pass
from engine.kernels.table import KernelTableBuilder
from engine.workload.parallel import parallel_layout
from engine.workload.scenario import Scenario

STACKED_PHASES = ("prefill", "decode", "request")
ROW_FIELDS = ("batch", "input_length", "output_length", "context_length")


def can_stack(model, scenario: Scenario, method: str) -> bool:
    """Whether `scenario`'s points can share one stacked table (else: point by point)."""
    return (scenario.phase in STACKED_PHASES and not scenario.chunked_prefill and method != "seed"
            and not is_automatic(model))


@dataclass(frozen=True)
class PointValues:
    """The row fields of U points (context_length NaN: None, the decode context is input_length)."""

    batch: np.ndarray
    input_length: np.ndarray
    output_length: np.ndarray
    context_length: np.ndarray

    @property
    def size(self) -> int:
        return len(self.batch)

    @property
    def decode_context(self) -> np.ndarray:
        return np.where(np.isnan(self.context_length), self.input_length, self.context_length)


@dataclass(frozen=True)
class StackedTable:
    columns: dict[str, np.ndarray]     # the kernel table (count 0 on rows a point does not run)
    point: np.ndarray                  # row -> point index
    points: int
    micro_batches: np.ndarray          # per point: prefill micro-batches (the pipeline bubble's m)


def micro_batches(base: Scenario, batch: np.ndarray) -> np.ndarray:
    """Scenario.prefill_micro_batches for every batch value."""
    values = {int(b): base.model_copy(update={"batch": int(b)}).prefill_micro_batches for b in np.unique(batch)}
    return np.array([values[int(b)] for b in batch], dtype=float)


def stacked_table(model, base: Scenario, values: PointValues) -> StackedTable:
    """The kernel rows of every point of `values` (other fields from `base`) in one table.

    A one-token prompt reads its cache back (a KVCache_Read row) where longer prompts do not, so they
    cannot share a stack: engine/explore/grid.py stacks them apart."""
    one_token = values.input_length == 1
    if base.phase != "decode" and one_token.any() and not one_token.all():
        raise ValueError("one-token prompts and longer prompts need separate stacks")
    layout = parallel_layout(model, base)
    builder = KernelTableBuilder()
    maps: list[tuple[str, int, np.ndarray]] = []       # (phase, rows of a per-point add, row -> point)
    points = np.arange(values.size)
    micro = micro_batches(base, values.batch)
    if base.phase in ("prefill", "request"):
        sequences = values.batch // micro
        part = AttentionPart.uniform("", sequences, values.input_length, np.zeros(values.size), "Ma_Mqa",
                                     per_row_count=False)
        add_forward_pass(builder, model, base, ForwardPass("prefill", sequences * values.input_length, sequences,
                                                           micro, (part,), micro), layout)
        maps.append(("prefill", values.size, points))
    if base.phase == "decode":
        part = AttentionPart.uniform("", values.batch, 1, values.decode_context, "Va_Mqa", per_row_count=True)
        add_forward_pass(builder, model, base, ForwardPass("decode", values.batch, values.batch, 1, (part,)), layout)
        maps.append(("decode", values.size, points))
    if base.phase == "request" and (values.output_length > 1).any():
        _add_request_decode(builder, model, base, values, layout, maps)
    columns = builder.build_columns()
    return StackedTable(*_expand(columns, maps), values.size, micro)


def _add_request_decode(builder, model, base, values: PointValues, layout, maps) -> None:
    """Decode steps j = 1..O-1 of every point (the cache holds L + j - 1 tokens before step j)."""
    steps = np.maximum(values.output_length - 1, 0).astype(int)
    owner = np.repeat(np.arange(values.size), steps)               # step row -> point
    first = np.concatenate([[0], np.cumsum(steps)[:-1]])
    step = np.arange(owner.size) - first[owner] + 1                # j
    priors = values.input_length[owner] + step - 1.0
    batch = values.batch[owner]
    part = AttentionPart.uniform("", batch, 1, priors, "Va_Mqa", per_row_count=True)
    if owner.size != values.size:   # step-independent kernels once per point, counted over its steps
        fp = ForwardPass("decode", values.batch, values.batch, steps.astype(float), (part,))
        maps += [("decode", values.size, np.arange(values.size)), ("decode", owner.size, owner)]
    else:                           # as many steps as points: every kernel per step (lengths would be ambiguous)
        fp = ForwardPass("decode", batch, batch, 1, (part,))
        maps.append(("decode", owner.size, owner))
    add_forward_pass(builder, model, base, fp, layout)


def _expand(columns: dict, maps: list[tuple[str, int, np.ndarray]]) -> tuple[dict, np.ndarray]:
    """Row -> point for every row; a kernel with one row for all points of its phase is repeated per point."""
    group = columns["group"]
    if all(n == 1 for _, n, _ in maps) and group.size == group[-1] + 1:    # one point: one row per kernel
        return columns, np.zeros(group.size, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    lengths = np.diff(np.r_[starts, group.size])
    phase = np.asarray(columns["phase"])[starts].astype(str)
    take, point = [], []
    for start, length, name in zip(starts, lengths, phase):
        mapping = next((m for p, n, m in maps if p == name and n == length), None)
        if mapping is None:         # a scalar kernel: one row shared by every point of the phase
            mapping = np.unique(next(m for p, _, m in maps if p == name))
            rows = np.full(mapping.size, start)
        else:
            rows = start + np.arange(length)
        take.append(rows)
        point.append(mapping)
    index = np.concatenate(take)
    return {key: np.asarray(value)[index] for key, value in columns.items()}, np.concatenate(point)
