"""prmkit.lab.numbers: one way to write a number, a signed interval signed at both bounds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from prmkit.lab.numbers import interval, points

share = st.floats(-1, 1, allow_nan=False)


@given(share, share, share)
def test_a_signed_interval_reads_back_with_every_sign(mean, a, b):
    lo, hi = sorted((a, b))
    text = interval({"mean": mean, "ci95": [lo, hi]}, signed=True)
    centre, bounds = text.split(" [")
    parts = [centre, *bounds.rstrip("]").split(", ")]
    assert all(p[0] in "+-" for p in parts)
    assert all(abs(float(p) - 100 * x) <= 0.05 + 1e-9 for p, x in zip(parts, (mean, lo, hi)))


@given(share)
def test_points_are_percent_with_one_decimal(x):
    assert abs(float(points(x)) - 100 * x) <= 0.05 + 1e-9 and points(x, signed=True).lstrip("+") == points(x)
