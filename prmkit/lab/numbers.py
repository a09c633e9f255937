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


def points(x: float, signed: bool = False) -> str:
    """A share as percent (a difference of shares as points), one decimal; ``signed``: always a sign."""
    return f"{100 * x:+.1f}" if signed else f"{100 * x:.1f}"


def interval(c: dict, signed: bool = False) -> str:
    """``mean [lo, hi]`` of a summary's ``{"mean" or "estimate", "ci95": [lo, hi]}``, in :func:`points`."""
    centre = c["mean"] if "mean" in c else c["estimate"]
    lo, hi = c["ci95"]
    return f"{points(centre, signed)} [{points(lo, signed)}, {points(hi, signed)}]"


__all__ = ["interval", "points"]
