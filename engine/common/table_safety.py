"""Tables written for spreadsheets never carry live formulas (OWASP: CSV injection).

A spreadsheet opening a CSV or XLSX evaluates a cell that begins with `=`, `+`, `-` or `@` (and,
in some programs, after a leading tab or carriage return) as a formula: a device name such as
`=HYPERLINK("http://...")` would become a live link or worse. OWASP's advice: prefix such a cell
with a single quote, which spreadsheets show as text. Only text is touched; numbers, negative ones
included, stay numbers.

    neutralise_text("=1+1")          -> "'=1+1"
    neutralise_table(frame)          -> a copy safe to write with to_excel
    to_safe_csv(frame, path)         -> neutralised CSV, every carriage return inside a quoted cell

A carriage return inside a cell must be quoted, or a spreadsheet starts a new row there (and a
formula after it would run). Python's csv module quotes only the characters of its line ending, so
when some text holds a CR the CSV gets RFC 4180's CRLF line endings (which quote it); else LF.
"""

from __future__ import annotations

from typing import Any, Optional

import pandas as pd

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_text(value: Any) -> Any:
    """`value` with a leading `'` when it is text a spreadsheet would read as a formula; else unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def _is_text_column(column: pd.Series) -> bool:
    dtype = column.dtype
    return (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
            or isinstance(dtype, pd.CategoricalDtype))


def neutralise_table(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells and column names are neutralised (numbers untouched)."""
    out = frame.copy(deep=False)   # numeric columns are shared, never written to
    for position in range(out.shape[1]):
        column = out.iloc[:, position]
        if not _is_text_column(column):
            continue
        if isinstance(column.dtype, pd.CategoricalDtype):
            column = column.astype(object)
        texts = column.map(neutralise_text)
        if not texts.equals(column):
            out.isetitem(position, texts)
    out.columns = [neutralise_text(name) for name in out.columns]
    return out


def _holds_carriage_return(frame: pd.DataFrame) -> bool:
    texts = [frame.iloc[:, i] for i in range(frame.shape[1]) if _is_text_column(frame.iloc[:, i])]
    return any(isinstance(name, str) and "\r" in name for name in frame.columns) or any(
        column.map(lambda value: isinstance(value, str) and "\r" in value).any() for column in texts)


def to_safe_csv(frame: pd.DataFrame, target: Optional[Any] = None, index: bool = False) -> Optional[str]:
    """frame.to_csv(target) with formula-like text neutralised and carriage returns quoted."""
    safe = neutralise_table(frame)
    line_end = "\r\n" if _holds_carriage_return(safe) else "\n"
    return safe.to_csv(target, index=index, lineterminator=line_end)
