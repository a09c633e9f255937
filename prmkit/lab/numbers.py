"""How the lab writes a number: percent or points with one decimal, and an estimate with its interval.

One module, so that every report page, study page and docs table spells a number the same way; a signed
interval signs its bounds too (``+1.7 [-0.5, +3.0]``), so a bound below 0 is never read as above it.

>>> points(0.0172), points(0.0172, signed=True), points(-0.005, signed=True)
('1.7', '+1.7', '-0.5')
>>> interval({"mean": 0.017, "ci95": [-0.005, 0.03]}, signed=True)
'+1.7 [-0.5, +3.0]'
>>> interval({"estimate": 0.34, "ci95": [0.3, 0.38]})
'34.0 [30.0, 38.0]'
"""

from __future__ import annotations

import math


def points(x: float, signed: bool = False) -> str:
    """A share as percent (a difference of shares as points), one decimal; ``signed``: always a sign."""
    return f"{100 * x:+.1f}" if signed else f"{100 * x:.1f}"


def percent(x) -> str:
    """:func:`points`, or ``n/a`` for a number that was not measured (None or NaN).

    >>> percent(0.25), percent(None), percent(float("nan"))
    ('25.0', 'n/a', 'n/a')
    """
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else points(x)


def ratio(x: float) -> str:
    """A factor with two decimals, ``inf`` where it is unbounded; :func:`ratio_interval` with its interval.

    >>> ratio(2.456), ratio(float("inf")), ratio_interval({"factor": 1.5, "ci95": [0.9, float("inf")]})
    ('2.46', 'inf', '1.50 [0.90, inf]')
    """
    return "inf" if not math.isfinite(x) else f"{x:.2f}"


def ratio_interval(f: dict) -> str:
    """``factor [lo, hi]`` of a summary's ``{"factor", "ci95"}``, in :func:`ratio`."""
    return f"{ratio(f['factor'])} [{ratio(f['ci95'][0])}, {ratio(f['ci95'][1])}]"


def interval(c: dict, signed: bool = False) -> str:
    """``mean [lo, hi]`` of a summary's ``{"mean" or "estimate", "ci95": [lo, hi]}``, in :func:`points`."""
    centre = c["mean"] if "mean" in c else c["estimate"]
    lo, hi = c["ci95"]
    return f"{points(centre, signed)} [{points(lo, signed)}, {points(hi, signed)}]"


__all__ = ["interval", "percent", "points", "ratio", "ratio_interval"]
