"""Confidence intervals by bootstrap over problems.

The uncertainty that matters for a best-of-N curve is which problems happened to be in the test set:
the per-problem expectations are resampled with replacement, the mean recomputed ``n_boot`` times,
and the percentile interval reported. All columns (every method, every N) share the same resamples,
so differences between methods are paired.

>>> import numpy as np
>>> lo, hi = bootstrap_ci(np.array([[0.0], [1.0]] * 50), n_boot=500, seed=0)
>>> bool(0.35 < lo[0] < 0.5 < hi[0] < 0.65)
True
"""

from __future__ import annotations

import numpy as np

_CELLS = 1 << 22  # resample counts per block (bounds memory for many problems)


def bootstrap_means(values: np.ndarray, n_boot: int = 2000, seed: int = 0) -> np.ndarray:
    """Means of ``n_boot`` resamples of the rows of ``values`` (problems, columns): (n_boot, columns)."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    p = values.shape[0]
    if p == 0:
        raise ValueError("no problems to bootstrap over")
    rng = np.random.default_rng(seed)
    out = np.empty((n_boot, values.shape[1]))
    block = max(1, _CELLS // p)
    for start in range(0, n_boot, block):
        size = min(block, n_boot - start)
        counts = rng.multinomial(p, np.full(p, 1.0 / p), size=size)
        out[start:start + size] = counts @ values / p
    return out


def bootstrap_ci(values: np.ndarray, n_boot: int = 2000, level: float = 0.95, seed: int = 0):
    """Percentile interval of the mean over problems, per column: (low, high) arrays."""
    if not 0 < level < 1:
        raise ValueError(f"confidence level {level} must be between 0 and 1")
    means = bootstrap_means(values, n_boot, seed)
    tail = (1 - level) / 2 * 100
    return np.percentile(means, tail, axis=0), np.percentile(means, 100 - tail, axis=0)
