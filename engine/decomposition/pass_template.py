"""Pass templates (fast path, issue 15): the kernels of a forward pass that do not depend on its attention, kept per
structure and reused by the next pass of that structure.

A pass's kernels split into the rows before its attention rows (embedding, norm, Q/K/V projection, rotary, KV
store), the attention rows (`[KVCache_Read,] Q*gK, Softmax, Q*gK*gV` per layer kind: they read the context) and
the rows after them (output projection, residuals, MLP or experts, collectives, final norm, LM head). The rows
before and after depend only on what the caller's key names (engine/decomposition/transformer.py
`pass_structure`: the model, the per-device layout, the dtypes, the tokens and logit rows of one step, the step
count, the kinds of attention parts, where the pass starts in the table), not on the context or cached tokens. A
sweep over the context of a decode step, or over the output length of a request, builds them once: the next pass
of that structure appends the recorded rows (the same numbers, so results are bit-identical) and computes only its
attention rows. A pass whose attention rows come out in a different number than recorded is built in full.
What is kept is structure (rows of a model on a layout), never a result: the estimate computes every time.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Hashable, Optional

from engine.common.kept import touch, trim
from engine.kernels.table import KernelTableBuilder, TableSegment

PASS_TEMPLATES_KEPT = 64      # structures kept (a template is a few kB: the rows of one pass without its attention)


@dataclass(frozen=True)
class PassTemplate:
    """A pass's rows before its attention rows, how many attention kernels it had, and the rows after them."""

    before: TableSegment
    attention_kernels: int
    after: TableSegment


_KEPT: OrderedDict[int, tuple] = OrderedDict()  # hash(key) -> (key, PassTemplate, or None: built once so far)


def add_pass(builder: KernelTableBuilder, key: Optional[Hashable], build_pass: Callable[[], None],
             add_attention_rows: Callable[[], None]) -> None:
    """Add a pass's kernels to `builder`: `build_pass()` adds all of them (calling `builder.mark()` just before and
    just after its attention rows), `add_attention_rows()` only the attention rows. With a template kept for `key`
    (None: no template) the recorded rows are appended around add_attention_rows(); without one the pass is built
    in full, and the second time a structure is built its rows around the marks are kept (a prefill of each new
    length is built once: recording it would cost more than it saves). The key is hashed once per pass."""
    try:
        code = hash(key) if key is not None else None
    except TypeError:           # an unhashable value in the key (a model field that slipped past validation)
        code = None
    if code is None:
        build_pass()
        return
    entry = _KEPT.get(code)
    if entry is None or entry[0] != key:          # a new structure (or another with the same hash): remember it
        _keep(code, (key, None))
        build_pass()
    elif entry[1] is None:                        # the second pass of this structure: keep its rows
        _build_and_record(builder, code, key, build_pass)
    else:
        touch(_KEPT, code)                        # kept the longest: the structures used last
        _add_from_template(builder, entry[1], build_pass, add_attention_rows)


def _add_from_template(builder: KernelTableBuilder, template: PassTemplate, build_pass: Callable[[], None],
                       add_attention_rows: Callable[[], None]) -> None:
    builder.extend(template.before)
    add_attention_rows()
    if builder.size != template.after.start:      # another number of attention kernels: build the pass in full
        builder.truncate(template.before.start)
        build_pass()
        return
    builder.extend(template.after)


def _build_and_record(builder: KernelTableBuilder, code: int, key: Hashable, build_pass: Callable[[], None]) -> None:
    start, marks = builder.size, len(builder.marks)
    build_pass()
    spans = builder.marks[marks:]
    if len(spans) != 2:         # not one span of attention rows (e.g. latent attention): no template
        return
    _keep(code, (key, PassTemplate(builder.segment(start, spans[0]), spans[1] - spans[0],
                                   builder.segment(spans[1], builder.size))))


def _keep(code: int, entry: tuple) -> None:
    _KEPT[code] = entry
    trim(_KEPT, PASS_TEMPLATES_KEPT)    # the least recently used out


def templates() -> int:
    """How many structures have a template (tests)."""
    return sum(entry[1] is not None for entry in _KEPT.values())


def clear() -> None:
    """Forget the kept templates (tests; the estimate caches do not need it: templates hold no results)."""
    _KEPT.clear()
