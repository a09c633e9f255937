"""The float-kernel target's noise floor (prmkit.lab.targets.noise_parts, problems_for): pure maths, property-tested."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.lab.targets import noise_parts, problems_for

runs_x_problems = st.tuples(st.integers(2, 6), st.integers(2, 40), st.integers(0, 2**31 - 1))


def _values(shape_seed) -> np.ndarray:
    runs, problems, seed = shape_seed
    return np.random.default_rng(seed).random((runs, problems))


@settings(max_examples=60, deadline=None)
@given(runs_x_problems, st.floats(-0.3, 0.3))
def test_a_shift_of_every_problem_is_quality_not_noise(shape_seed, shift):
    """Moving one run's every problem by the same amount moves its mean, not the pairs' per-problem noise."""
    values = _values(shape_seed)
    shifted = values.copy()
    shifted[0] += shift
    a, b = noise_parts(values), noise_parts(shifted)
    assert b["disagreement"] == pytest.approx(a["disagreement"], abs=1e-12)
    assert b["pair_noise_rms"] == pytest.approx(a["pair_noise_rms"], abs=1e-3)


@settings(max_examples=60, deadline=None)
@given(runs_x_problems)
def test_copies_of_one_run_have_no_spread(shape_seed):
    runs, problems, seed = shape_seed
    row = np.random.default_rng(seed).random(problems)
    parts = noise_parts(np.tile(row, (runs, 1)))
    assert (parts["pair_rms"], parts["pair_noise_rms"], parts["sd"], parts["quality_sd"]) == (0, 0, 0, 0)


@settings(max_examples=60, deadline=None)
@given(runs_x_problems)
def test_the_parts_add_up(shape_seed):
    """The quality part never exceeds the whole spread, and the measured pair difference is the mean of squared
    mean differences (what ``pair_rms`` says it is)."""
    values = _values(shape_seed)
    parts = noise_parts(values)
    assert 0 <= parts["quality_sd"] <= parts["sd"] + 1e-9
    means = values.mean(axis=1)
    diffs = [means[i] - means[j] for i in range(len(means)) for j in range(i + 1, len(means))]
    assert parts["pair_rms"] == pytest.approx(100 * np.sqrt(np.mean(np.square(diffs))), abs=1e-3)


def test_equal_runs_are_read_as_noise():
    """Runs that differ only by independent per-problem picks (equal quality) leave almost no quality part,
    and a measured pair difference near the problems' own."""
    rng = np.random.default_rng(0)
    values = (rng.random((12, 2000)) < 0.35).astype(float)
    parts = noise_parts(values)
    assert parts["quality_sd"] < 0.5 * parts["sd"]
    assert parts["pair_rms"] == pytest.approx(parts["pair_noise_rms"], rel=0.3)


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-4, 0.25), st.floats(0.5, 5.0))
def test_problems_for_is_the_smallest_pool_within_tolerance(disagreement, tolerance):
    n = problems_for({"disagreement": disagreement}, tolerance)
    assert 1.96 * 100 * np.sqrt(disagreement / n) <= tolerance + 1e-9
    if n > 1:
        assert 1.96 * 100 * np.sqrt(disagreement / (n - 1)) > tolerance - 1e-9


def test_one_run_is_refused():
    with pytest.raises(ValueError, match="two runs"):
        noise_parts(np.zeros((1, 5)))
