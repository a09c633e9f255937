"""Did a run learn anything beyond the base rate? The plateau check every run ends with.

A run that stalls ends predicting the class prior: its loss sits at the prior's entropy. With a held-out
split the check is exact (:func:`plateau_check` against :func:`prior_loss`); without one it falls back on
the last logged training losses. Restarts reject a stalled run before choosing
(:func:`prmkit.train.restarts.pick`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

PLATEAU_LOGS = 5
"""Logged training losses (every ``log_every`` steps) whose mean is compared with the class-prior entropy
when there is no held-out split; read back from ``metrics.jsonl``, so a resumed run decides as the
uninterrupted one would."""
PLATEAU_MARGIN = 0.02


def logged_losses(out) -> list[float]:
    from prmkit.train.metrics import read_losses

    return read_losses(out) if (Path(out) / "metrics.jsonl").is_file() else []


def _targets(examples) -> np.ndarray | None:
    rows = [t for e in examples if e.token_targets is None for t in e.targets if t is not None]
    if not rows:
        return None
    arr = np.asarray(rows, dtype=float)
    return arr[:, None] if arr.ndim == 1 else arr


def _two_class(arr: np.ndarray) -> np.ndarray:
    """Targets as distributions over classes (a regression target p becomes ``[p, 1 - p]``)."""
    return np.concatenate([arr, 1.0 - arr], axis=1) if arr.shape[1] == 1 else arr


def class_prior_entropy(examples) -> float | None:
    """The loss of a model that knows only the base rate: the entropy (nats) of the mean target
    distribution over the supervised targets, or None for next-token examples."""
    arr = _targets(examples)
    if arr is None:
        return None
    mean = _two_class(arr).mean(axis=0)
    mean = mean[mean > 0]
    return float(-(mean * np.log(mean)).sum())


def prior_loss(train, held) -> float | None:
    """The held-out loss of a model that knows only the training base rate: the cross-entropy of the mean
    training target against every held-out target (None without both, or for next-token examples).

    >>> from types import SimpleNamespace as E
    >>> tr = [E(token_targets=None, targets=[[0.75, 0.25]]), E(token_targets=None, targets=[[0.75, 0.25]])]
    >>> round(prior_loss(tr, [E(token_targets=None, targets=[[1.0, 0.0]])]), 4)  # -ln 0.75
    0.2877
    """
    a, b = _targets(train), _targets(held)
    if a is None or b is None:
        return None
    mean = np.clip(_two_class(a).mean(axis=0), 1e-12, 1.0)
    return float(-(_two_class(b) * np.log(mean)).sum(axis=1).mean())


def plateau_check(run, recent: list[float], eval_loss: float | None = None) -> dict:
    """Whether the run learned only the base rate (or less).

    With a held-out split the test is exact: the held-out loss is no better than ``PLATEAU_MARGIN`` below
    the held-out loss of predicting the training base rate (:func:`prior_loss`). One logged training
    loss is one batch's (at a 14% base rate, 32 solutions hold about 4 positives), too noisy to tell a
    stall from a slow run: a stalled ORM ended at 0.48 against a prior of 0.40 and was not caught by it.
    Without a held-out split, the mean of the last logged training losses is compared with the class-prior
    entropy. ``{"train_loss_end", "prior_entropy", "eval_prior_loss", "plateau"}`` for the final metrics."""
    prior = class_prior_entropy(run.train)
    if prior is None or not recent:
        return {}
    end = float(np.mean(recent))
    held_prior = prior_loss(run.train, run.eval) if eval_loss is not None else None
    if held_prior is not None:
        stalled = eval_loss >= held_prior - PLATEAU_MARGIN
        said = f"the held-out loss ended at {eval_loss:.3f}, no better than the base rate's {held_prior:.3f}"
    else:
        stalled = abs(end - prior) <= PLATEAU_MARGIN
        said = f"the training loss ended at {end:.3f}, the class-prior entropy ({prior:.3f} nats)"
    if stalled:
        run.accelerator.print(f"warning: {said}: this run learned the base rate only; train longer, or "
                              "use --restarts to keep the best of several seeds")
    out = {"train_loss_end": end, "prior_entropy": prior, "plateau": bool(stalled)}
    if held_prior is not None:
        out["eval_prior_loss"] = held_prior
    return out


__all__ = ["PLATEAU_LOGS", "PLATEAU_MARGIN", "class_prior_entropy", "logged_losses", "plateau_check", "prior_loss"]
