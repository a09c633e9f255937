"""Step-score aggregation: product, min, last, mean."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.evaluate.aggregate import AGGREGATIONS, aggregate, aggregate_ragged, parse_score_spec

probs = st.lists(st.floats(0, 1), min_size=1, max_size=12)


@given(probs)
def test_product_is_at_most_min_on_unit_interval(xs):
    assert aggregate(xs, "product") <= aggregate(xs, "min") + 1e-12


@given(probs)
def test_min_at_most_mean_and_last(xs):
    assert aggregate(xs, "min") <= aggregate(xs, "mean") + 1e-12
    assert aggregate(xs, "min") <= aggregate(xs, "last")


@settings(max_examples=50)
@given(st.lists(st.lists(st.floats(0, 1), max_size=6), max_size=8), st.sampled_from(AGGREGATIONS))
def test_ragged_equals_one_by_one(solutions, how):
    values = [x for s in solutions for x in s]
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in solutions])]).astype(int)
    got = aggregate_ragged(values, offsets, how)
    want = [aggregate(s, how) for s in solutions]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_unknown_aggregation_is_an_error():
    with pytest.raises(ValueError, match="unknown aggregation"):
        aggregate([0.5], "max")
    with pytest.raises(ValueError, match="unknown aggregation"):
        parse_score_spec("p:median")
