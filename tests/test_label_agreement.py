"""Cohen's and Fleiss' kappa: textbook values and properties (hypothesis)."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.label.agreement import cohen_kappa, fleiss_kappa, percent_agreement, unit_counts

RATING = st.sampled_from([-1, 0, 1])
# No per-example deadline: the machine running the suite may be busy; these are pure and fast.
NO_DEADLINE = settings(deadline=None)


@st.composite
def two_raters(draw, min_size=1):
    a = draw(st.lists(RATING, min_size=min_size, max_size=40))
    b = draw(st.lists(RATING, min_size=len(a), max_size=len(a)))
    return a, b


@st.composite
def count_tables(draw):
    n_units = draw(st.integers(1, 15))
    return [draw(st.lists(st.integers(0, 6), min_size=3, max_size=3).filter(lambda r: sum(r) >= 2))
            for _ in range(n_units)]


def test_cohen_textbook_value():
    # Wikipedia's example: 50 items, 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> 0.4.
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_fleiss_textbook_value():
    # Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories -> 0.210.
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.210, abs=5e-4)


@NO_DEADLINE
@given(two_raters())
def test_cohen_symmetric_and_bounded(pair):
    a, b = pair
    k, k2 = cohen_kappa(a, b), cohen_kappa(b, a)
    assert (math.isnan(k) and math.isnan(k2)) or k == pytest.approx(k2)
    assert math.isnan(k) or -1 - 1e-9 <= k <= 1 + 1e-9


@NO_DEADLINE
@given(st.lists(RATING, min_size=2, max_size=40).filter(lambda a: len(set(a)) > 1))
def test_cohen_self_agreement_is_one(a):
    assert cohen_kappa(a, a) == pytest.approx(1.0)


@NO_DEADLINE
@given(two_raters(), st.permutations([-1, 0, 1]))
def test_cohen_invariant_under_renaming_categories(pair, perm):
    a, b = pair
    rename = dict(zip([-1, 0, 1], perm))
    k, k2 = cohen_kappa(a, b), cohen_kappa([rename[x] for x in a], [rename[x] for x in b])
    assert (math.isnan(k) and math.isnan(k2)) or k == pytest.approx(k2)


@NO_DEADLINE
@given(two_raters())
def test_cohen_equals_one_iff_perfect_agreement(pair):
    a, b = pair
    k = cohen_kappa(a, b)
    if not math.isnan(k):
        assert (k == pytest.approx(1.0)) == (percent_agreement(a, b) == 1.0)


@NO_DEADLINE
@given(two_raters())
def test_fleiss_with_two_raters_is_scotts_pi(pair):
    a, b = pair
    n = len(a)
    pooled = Counter(a) + Counter(b)
    p_e = sum((c / (2 * n)) ** 2 for c in pooled.values())
    p_o = percent_agreement(a, b)
    expected = math.nan if math.isclose(p_e, 1) else (p_o - p_e) / (1 - p_e)
    got = fleiss_kappa(unit_counts([[x, y] for x, y in zip(a, b)]))
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)


@given(count_tables(), st.randoms(use_true_random=False))
@settings(max_examples=60, deadline=None)
def test_fleiss_invariant_under_unit_and_category_order(table, rng):
    k = fleiss_kappa(table)
    units = list(table)
    rng.shuffle(units)
    order = [0, 1, 2]
    rng.shuffle(order)
    k2 = fleiss_kappa([[row[j] for j in order] for row in units])
    assert (math.isnan(k) and math.isnan(k2)) or k == pytest.approx(k2)
    assert math.isnan(k) or k <= 1 + 1e-9


@NO_DEADLINE
@given(st.lists(st.tuples(RATING, st.integers(2, 6)), min_size=1, max_size=20))
def test_fleiss_unanimous_units_give_one(units):
    table = unit_counts([[r] * n for r, n in units])
    k = fleiss_kappa(table)
    if len({r for r, _ in units}) > 1:
        assert k == pytest.approx(1.0)
    else:
        assert math.isnan(k)  # one category used by everyone: agreement by chance is certain


def test_errors_are_specific():
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa([1, 0], [1])
    with pytest.raises(ValueError, match="two or more"):
        fleiss_kappa([[1, 0, 0]])
    with pytest.raises(ValueError, match="not one of"):
        unit_counts([[2]])
