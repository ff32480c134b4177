"""An iteration that ends one prompt and starts the next: its chunks have unequal lengths and priors.

The realistic method times a row's attention as one fused kernel of alike sequences, recovering the query
tokens per sequence from the row's shape and MACs. Before the fix, a long cached chunk beside a short fresh
one gave an impossible shape (mean keys per query above the mean key span) and the kernel was timed as
thousands of one-token queries: 0.63 s for an iteration whose chunks take 35 ms and 14 ms alone.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from engine.kernels.attention_window import causal_pairs
from engine.estimators import get_method
from engine.models import load_model
from engine.workload.parallel import parallel_layout
from engine.decomposition.passes import ListedSequences
from engine.serving.cost import mixed_pass, time_pass
from engine.hardware.specs import load_specs
from engine.workload.scenario import Scenario


def _iteration(chunks, priors):
    return SimpleNamespace(decode_priors=np.zeros(0, dtype=np.int64), chunk_tokens=np.array(chunks, dtype=np.int64),
                           chunk_priors=np.array(priors, dtype=np.int64), completions=0)


def test_a_row_of_unequal_chunks_keeps_its_exact_pairs_with_a_consistent_span():
    new, prior = np.array([1000.0, 24.0]), np.array([7192.0, 0.0])
    totals = ListedSequences(np.zeros(2, dtype=np.int64), 1, new, prior).totals(None)
    pairs = 1000 * 7192 + 1000 * 1001 / 2 + 24 * 25 / 2               # by hand
    assert totals["pairs"][0] == pairs
    q = 512.0                                                          # mean query tokens per sequence
    span = totals["context"][0]
    assert 2 * (q * (span - q) + q * (q + 1) / 2) == pytest.approx(pairs)   # alike sequences, same pairs
    equal = ListedSequences(np.zeros(2, dtype=np.int64), 1, np.array([512.0, 512.0]),
                            np.array([100.0, 100.0])).totals(None)
    assert equal["context"][0] == 612.0                                # equal chunks keep their key span


@pytest.mark.parametrize("method", ["roofline", "realistic"])
def test_ending_one_prompt_and_starting_the_next_costs_about_the_two_chunks(method):
    hw = load_specs()["H200-SXM"]
    model = load_model("meta-llama/Llama-3.1-8B")
    scenario = Scenario.model_validate(dict(phase="request", batch=1, input_length=8192, output_length=64))
    iterations = [_iteration([1000, 24], [7192, 0]), _iteration([1000], [7192]), _iteration([24], [0])]
    both, long_alone, short_alone = time_pass(mixed_pass(iterations), 3, model, scenario, hw, get_method(method),
                                              parallel_layout(model, scenario))
    # one pass of the weights, two chunks of attention (realistic: 1,024 rows tile as well as 1,000, so the
    # pair may even take a little less than the long chunk alone)
    assert 0.95 * long_alone < both <= long_alone + short_alone
    assert causal_pairs(24.0, 0.0, None) == 300.0
