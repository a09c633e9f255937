"""Credit rules: step rewards sum to the solution reward, min-form return-to-go, monotonicity, bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prmkit.rl.credit import CREDIT_RULES, solution_reward, step_rewards

probs = st.lists(st.floats(0, 1), min_size=1, max_size=12)
rules = st.sampled_from(CREDIT_RULES)


@given(st.lists(st.floats(0, 1), max_size=12), rules)
def test_step_rewards_sum_to_the_solution_reward(p, rule):
    dense = step_rewards(p, rule)
    assert len(dense) == len(p)
    assert sum(dense) == pytest.approx(solution_reward(p, rule), abs=1e-9)


@given(probs)
def test_min_form_return_to_go_is_the_suffix_min(p):
    return_to_go = np.cumsum(step_rewards(p, "min")[::-1])[::-1]
    np.testing.assert_allclose(return_to_go, [min(p[t:]) for t in range(len(p))], atol=1e-9)


@given(probs)
def test_product_return_from_the_start_is_the_prefix_product(p):
    np.testing.assert_allclose(np.cumsum(step_rewards(p, "product")), np.cumprod(p), atol=1e-9)


@given(probs, st.data(), st.sampled_from(("min", "product", "sum")))
def test_rewards_are_monotone_in_each_step_score(p, data, rule):
    t = data.draw(st.integers(0, len(p) - 1))
    higher = list(p)
    higher[t] = data.draw(st.floats(p[t], 1))
    assert solution_reward(higher, rule) >= solution_reward(p, rule)


@given(probs, rules)
def test_bounds(p, rule):
    r = solution_reward(p, rule)
    assert 0.0 <= r <= (len(p) if rule == "sum" else 1.0)


@given(probs)
def test_product_at_most_min_and_more_steps_never_raise_the_min(p):
    assert solution_reward(p, "product") <= solution_reward(p, "min") + 1e-12
    # PURE's point: appending a step can only lower min-form credit, while summed credit grows with length.
    assert solution_reward(p + [1.0], "min") == solution_reward(p, "min")
    assert solution_reward(p + [0.5], "sum") > solution_reward(p, "sum")


def test_empty_solutions_earn_nothing():
    for rule in CREDIT_RULES:
        assert solution_reward([], rule) == 0.0 and step_rewards(np.array([]), rule) == []


def test_bad_inputs_are_errors_naming_the_choices():
    with pytest.raises(ValueError, match="min, product, sum, last"):
        solution_reward([0.5], "mean")
    with pytest.raises(ValueError, match="unknown credit rule"):
        step_rewards([0.5], "max")
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        solution_reward([0.5, 1.5], "min")
    with pytest.raises(ValueError, match="probabilities"):
        step_rewards([float("nan")], "sum")
