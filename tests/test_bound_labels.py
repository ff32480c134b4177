"""Bound codes kept by the estimators (engine/estimators/bound_labels.py) give what the object comparisons give."""

import numpy as np

from engine.estimators.bound_labels import codes_of, labelled
from engine.results.columns import bound_codes

LABELS = np.array(["memory", "compute", "overhead"], dtype=object)


def test_kept_codes_give_the_sorted_present_labels_and_positions():
    column = labelled(LABELS, np.array([0, 2, 0, 0, 2], dtype=np.intp))     # "compute" absent
    labels, codes = bound_codes({"bound": column})
    assert labels == ["memory", "overhead"]                                  # sorted, present only
    assert codes.tolist() == [0, 1, 0, 0, 1] and codes.dtype == np.intp
    assert column.tolist() == ["memory", "overhead", "memory", "memory", "overhead"]


def test_a_changed_copy_is_labelled_by_comparison():
    column = labelled(LABELS, np.array([1, 0, 1], dtype=np.intp))
    changed = column.copy()
    changed[1] = "communication"
    assert codes_of(changed) is None
    labels, codes = bound_codes({"bound": changed})
    assert labels == ["communication", "compute"] and codes.tolist() == [1, 0, 1]


def test_codes_are_dropped_with_their_column():
    column = labelled(LABELS, np.array([1], dtype=np.intp))
    key = id(column)
    del column
    from engine.estimators import bound_labels
    assert key not in bound_labels._CODES
