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
The rows around the attention are arithmetic on the pass's token count, so a structure met with a second token
count (a sweep over the prompt length or the chunk size) is also traced with the count as a variable
(engine/common/traced.py): a TokenTemplate replays that arithmetic for any count (kept only where it reproduces the
pass it was traced beside, bit for bit; passes that need the count's value, MoE routing, keep building in full).
What is kept is structure (rows of a model on a layout), never a result: the estimate computes every time.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Hashable, Optional

import numpy as np

from engine.common.kept import touch, trim
from engine.common.traced import Traced, compile_traced
from engine.kernels.table import KernelTableBuilder, TableSegment

PASS_TEMPLATES_KEPT = 64      # structures kept (a template is a few kB: the rows of one pass without its attention)


@dataclass(frozen=True)
class PassTemplate:
    """A pass's rows before its attention rows, how many attention kernels it had, and the rows after them."""

    before: TableSegment
    attention_kernels: int
    after: TableSegment


_KEPT: OrderedDict[int, tuple] = OrderedDict()  # hash(key) -> (key, PassTemplate, or None: built once so far)
_FAMILIES: OrderedDict[int, tuple] = OrderedDict()  # hash(key without tokens) -> (key, TokenTemplate or a state)
_SEEN, _NOT_TRACEABLE = "seen", "not traceable"
_NO_TOKENS = object()


@dataclass(frozen=True)
class TokenTemplate:
    """A pass's rows before and after its attention rows for any token count: `before` and `after` give the rows'
    lengths and strings, `evaluate(tokens)` their NUMBER_COLUMNS values (the operations the decomposition did on
    the token count, replayed: engine/common/traced.py)."""

    before: TableSegment
    after: TableSegment
    evaluate: Callable


def add_pass(builder: KernelTableBuilder, key: Optional[Hashable], build_pass: Callable[[], None],
             add_attention_rows: Callable[[], None], tokens=_NO_TOKENS,
             trace_pass: Optional[Callable[[Traced], None]] = None) -> None:
    """Add a pass's kernels to `builder`: `build_pass()` adds all of them (calling `builder.mark()` just before and
    just after its attention rows), `add_attention_rows()` only the attention rows. With a template kept for `key`
    (None: no template) the recorded rows are appended around add_attention_rows(); without one the pass is built
    in full, and the second time a structure is built its rows around the marks are kept (a prefill of each new
    length is built once: recording it would cost more than it saves). The key is hashed once per pass.

    With `tokens` given, `key` leaves the token count out and the recorded rows are kept per (key, tokens); a
    structure seen with a second token count is also traced (`trace_pass(variable)` builds the pass with the token
    count as a `Traced` variable) into a TokenTemplate, which then gives the rows of any token count (a sweep over
    the prompt length). A pass whose rows need the token count's value (MoE routing) keeps only the first kind."""
    try:
        code = hash(key) if key is not None else None
    except TypeError:           # an unhashable value in the key (a model field that slipped past validation)
        code = None
    if code is None:
        build_pass()
        return
    if tokens is _NO_TOKENS:
        _add_by_value(builder, code, key, build_pass, add_attention_rows)
        return
    value_key = (key, tokens)
    value_code = hash((code, tokens))
    entry = _KEPT.get(value_code)
    if entry is not None and entry[1] is not None and entry[0] == value_key:
        touch(_KEPT, value_code)
        _add_from_template(builder, entry[1], build_pass, add_attention_rows)
        return
    family = _FAMILIES.get(code)
    if family is None or family[0] != key:        # a new structure
        _keep(_FAMILIES, code, (key, _SEEN))
    elif family[1].__class__ is TokenTemplate:
        touch(_FAMILIES, code)
        _add_from_token_template(builder, family[1], tokens, build_pass, add_attention_rows)
        return
    elif family[1] is _SEEN and trace_pass is not None and (entry is None or entry[0] != value_key):
        template = _trace(builder, trace_pass, tokens, build_pass)    # builds the pass in full
        if template is not None:
            _keep(_FAMILIES, code, (key, template))
            return
        _keep(_FAMILIES, code, (key, _NOT_TRACEABLE))
    _add_by_value(builder, value_code, value_key, build_pass, add_attention_rows)


def _add_by_value(builder: KernelTableBuilder, code: int, key: Hashable, build_pass: Callable[[], None],
                  add_attention_rows: Callable[[], None]) -> None:
    entry = _KEPT.get(code)
    if entry is None or entry[0] != key:          # a new structure (or another with the same hash): remember it
        _keep(_KEPT, code, (key, None))
        build_pass()
    elif entry[1] is None:                        # the second pass of this structure: keep its rows
        _build_and_record(builder, code, key, build_pass)
    else:
        touch(_KEPT, code)                        # kept the longest: the structures used last
        _add_from_template(builder, entry[1], build_pass, add_attention_rows)


def _trace(builder: KernelTableBuilder, trace_pass: Callable[[Traced], None], tokens,
           build_pass: Callable[[], None]) -> Optional[TokenTemplate]:
    """A TokenTemplate of the pass, or None (the builder as it was) where the pass cannot be traced. With a template,
    the pass is built in full too, and the template is kept only if it gives that pass's own rows, bit for bit."""
    start, marks = builder.size, len(builder.marks)
    try:
        trace_pass(Traced.variable())
        spans = builder.marks[marks:]
        if len(spans) != 2:
            return None
        before, after = builder.segment(start, spans[0]), builder.segment(spans[1], builder.size)
        if before.wide or after.wide or any(length != 1 for length in before.lengths + after.lengths):
            return None
        template = TokenTemplate(before, after, compile_traced([list(before.numbers), list(after.numbers)]))
    except Exception:       # noqa: BLE001  a probe: whatever stops the trace (NotTraceable where the pass reads
        return None         # the tokens' value) leaves the pass to the direct build, which raises its own errors
    finally:
        builder.truncate(start)
        del builder.marks[marks:]
    build_pass()
    spans = builder.marks[marks:]
    if spans != [start + len(before.lengths), after.start] or builder.size != after.start + len(after.lengths):
        return None                               # other rows than traced
    built_before, built_after = builder.segment(start, spans[0]), builder.segment(spans[1], builder.size)
    if (built_before.lengths, built_before.strings, built_after.lengths, built_after.strings) != (
            before.lengths, before.strings, after.lengths, after.strings) or built_before.wide or built_after.wide:
        return None
    try:
        numbers_before, numbers_after = template.evaluate(tokens)
    except ArithmeticError:
        return None
    return template if _same_bits(numbers_before + numbers_after, built_before.numbers + built_after.numbers) else None


def _same_bits(actual: list, expected: tuple) -> bool:
    """The two lists of numbers give the same float64 bits (as build_columns converts them)."""
    if len(actual) != len(expected):
        return False
    convert = np.fromiter
    return bool(np.array_equal(convert(actual, dtype=float).view(np.uint64),
                               convert(expected, dtype=float).view(np.uint64)))


def _add_from_token_template(builder: KernelTableBuilder, template: TokenTemplate, tokens,
                             build_pass: Callable[[], None], add_attention_rows: Callable[[], None]) -> None:
    try:
        before, after = template.evaluate(tokens)
    except ArithmeticError:                       # e.g. a division by zero tokens: the direct path says what
        build_pass()
        return
    builder.extend_numbers(template.before, before)
    add_attention_rows()
    if builder.size != template.after.start:      # another number of attention kernels: build the pass in full
        builder.truncate(template.before.start)
        build_pass()
        return
    builder.extend_numbers(template.after, after)


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
    _keep(_KEPT, code, (key, PassTemplate(builder.segment(start, spans[0]), spans[1] - spans[0],
                                          builder.segment(spans[1], builder.size))))


def _keep(kept: OrderedDict, code: int, entry: tuple) -> None:
    kept[code] = entry
    trim(kept, PASS_TEMPLATES_KEPT)    # the least recently used out


def templates() -> int:
    """How many structures have a template for their token count (tests)."""
    return sum(entry[1] is not None for entry in _KEPT.values())


def token_templates() -> int:
    """How many structures have a template for any token count (tests)."""
    return sum(entry[1].__class__ is TokenTemplate for entry in _FAMILIES.values())


def clear() -> None:
    """Forget the kept templates (tests; the estimate caches do not need it: templates hold no results)."""
    _KEPT.clear()
    _FAMILIES.clear()
