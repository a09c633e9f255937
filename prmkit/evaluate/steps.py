"""Step-level metrics: ProcessBench F1 with a threshold chosen on a dev split, AUROC, accuracy, calibration.

A scalar PRM gives every step a score (higher = more likely correct). Its predicted first error is the
first step whose score falls below a threshold ``t`` (-1 when none does). ProcessBench (2412.06559), per
subset: ``a`` = exact-index accuracy on erroneous solutions (label >= 0), ``b`` = accuracy on correct
ones (label -1, predicted -1), ``F1 = 2ab / (a + b)``; the headline is the mean F1 over subsets.

The threshold is chosen on a separate dev split, to maximise the mean dev F1 over subsets, and
reported. With prefix minima ``m_i = min(s_0..s_i)``, a solution is judged right for ``t`` in an
interval: ``(m_L, m_{L-1}]`` for a first error at ``L`` (``m_{-1} = +inf``), ``(-inf, m_last]`` for a
correct solution. So F1 only changes at those endpoints and the best threshold is one of the right
endpoints: the search is exact, not a grid.

>>> sols = StepSet("toy", [[0.9, 0.2, 0.8], [0.9, 0.8]], [1, -1])
>>> first_error_predictions(sols, 0.5).tolist()
[1, -1]
>>> processbench_f1(sols, 0.5)["f1"]
1.0
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class StepSet:
    """One subset of step-scored solutions: per-solution step scores and first-error labels (-1: none).

    ``step_labels`` (optional) gives every step 1 (correct), 0 (wrong) or -1 (unlabelled) for the
    step-level metrics; by default steps before the first error are correct, the first error is wrong
    and later steps are unlabelled (what ProcessBench knows).
    """

    name: str
    scores: list[list[float]]
    labels: list[int]
    step_labels: list[list[int]] | None = None
    ids: list[str] = field(default_factory=list)

    def __post_init__(self):
        if len(self.scores) != len(self.labels):
            raise ValueError(f"{self.name}: {len(self.scores)} scored solutions but {len(self.labels)} labels")
        for i, (s, label) in enumerate(zip(self.scores, self.labels)):
            if not -1 <= label < len(s):
                raise ValueError(f"{self.name}[{i}]: first-error label {label} but {len(s)} scored steps")

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, mask: np.ndarray, name: str | None = None) -> StepSet:
        keep = np.flatnonzero(mask)
        pick = lambda xs: [xs[i] for i in keep] if xs else xs
        return StepSet(name or self.name, pick(self.scores), pick(self.labels), pick(self.step_labels),
                       pick(self.ids))

    def flat_step_labels(self) -> tuple[np.ndarray, np.ndarray]:
        """All labelled steps: (scores, labels 1 correct / 0 wrong)."""
        s, y = [], []
        for i, (scores, label) in enumerate(zip(self.scores, self.labels)):
            given = self.step_labels[i] if self.step_labels else None
            ys = given if given is not None else _default_step_labels(len(scores), label)
            s.extend(scores)
            y.extend(ys)
        s_arr, y_arr = np.asarray(s, dtype=float), np.asarray(y, dtype=int)
        keep = (y_arr >= 0) & ~np.isnan(s_arr)
        return s_arr[keep], y_arr[keep]


def _default_step_labels(n: int, first_error: int) -> list[int]:
    if first_error < 0:
        return [1] * n
    return [1] * first_error + [0] + [-1] * (n - first_error - 1)


def first_error_predictions(data: StepSet, threshold: float) -> np.ndarray:
    """Index of the first step scoring below ``threshold``, -1 when none does."""
    out = np.full(len(data), -1)
    for i, scores in enumerate(data.scores):
        below = np.flatnonzero(np.asarray(scores, dtype=float) < threshold)
        if below.size:
            out[i] = below[0]
    return out


def processbench_f1(data: StepSet, threshold: float) -> dict:
    """ProcessBench accuracy on erroneous and correct solutions and their harmonic mean, at ``threshold``."""
    pred = first_error_predictions(data, threshold)
    labels = np.asarray(data.labels)
    err, ok = labels >= 0, labels < 0
    a = float(np.mean(pred[err] == labels[err])) if err.any() else float("nan")
    b = float(np.mean(pred[ok] == -1)) if ok.any() else float("nan")
    return {"n": len(data), "n_erroneous": int(err.sum()), "n_correct": int(ok.sum()),
            "acc_erroneous": a, "acc_correct": b, "f1": harmonic_mean(a, b)}


def harmonic_mean(a: float, b: float) -> float:
    """``2ab / (a + b)``, 0 when both are 0.

    >>> harmonic_mean(0.5, 1.0)
    0.6666666666666666
    """
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)


def correct_intervals(data: StepSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per solution, the thresholds ``(lo, hi]`` that judge it right, and whether it is erroneous."""
    lo, hi = np.empty(len(data)), np.empty(len(data))
    for i, (scores, label) in enumerate(zip(data.scores, data.labels)):
        prefix_min = np.minimum.accumulate(np.asarray(scores, dtype=float)) if scores else np.array([])
        if label < 0:
            lo[i], hi[i] = -np.inf, (prefix_min[-1] if prefix_min.size else np.inf)
        else:
            lo[i], hi[i] = prefix_min[label], (prefix_min[label - 1] if label > 0 else np.inf)
    return lo, hi, np.asarray(data.labels) >= 0


def f1_at_thresholds(data: StepSet, thresholds: np.ndarray) -> np.ndarray:
    """ProcessBench F1 of one subset at every threshold at once (sorted searches, no loop over thresholds)."""
    lo, hi, err = correct_intervals(data)

    def accuracy(mask):
        if not mask.any():
            return np.full(thresholds.size, np.nan)
        inside = np.searchsorted(np.sort(lo[mask]), thresholds, "left") - np.searchsorted(np.sort(hi[mask]), thresholds, "left")
        return inside / mask.sum()

    a, b = accuracy(err), accuracy(~err)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(a + b > 0, 2 * a * b / (a + b), 0.0)


def choose_threshold(dev: list[StepSet]) -> tuple[float, float, np.ndarray, np.ndarray]:
    """The threshold maximising the mean dev F1 over subsets (the smallest such, on ties).

    Returns (threshold, its mean dev F1, the candidate thresholds, the mean F1 at each).

    >>> t, f1, _, _ = choose_threshold([StepSet("d", [[0.9, 0.2], [0.8, 0.7], [0.3]], [1, -1, 0])])
    >>> t, f1
    (0.7, 1.0)
    """
    his = np.concatenate([correct_intervals(d)[1] for d in dev])
    all_scores = np.concatenate([np.asarray(s, dtype=float) for d in dev for s in d.scores] + [np.array([])])
    if all_scores.size == 0:
        raise ValueError("no scored steps on the dev split to choose a threshold from")
    candidates = his[np.isfinite(his)]
    if np.isinf(his).any():  # "flag step 0 always" is a right endpoint too: just above every score
        candidates = np.append(candidates, np.nextafter(all_scores.max(), np.inf))
    candidates = np.unique(candidates)
    curves = np.stack([f1_at_thresholds(d, candidates) for d in dev])
    mean = np.nanmean(curves, axis=0)
    best = int(np.argmax(mean))
    return float(candidates[best]), float(mean[best]), candidates, mean


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for ``labels == 1``, ties counted as half (Mann-Whitney).

    >>> auroc(np.array([0.9, 0.8, 0.3, 0.8]), np.array([1, 1, 0, 0]))
    0.875
    """
    pos, neg = int((labels == 1).sum()), int((labels == 0).sum())
    if pos == 0 or neg == 0:
        return float("nan")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    average_rank = np.cumsum(counts) - (counts - 1) / 2.0  # 1-based mid-rank of each distinct score
    ranks = average_rank[inverse]
    return float((ranks[labels == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))


def reliability(probs: np.ndarray, labels: np.ndarray, bins: int = 10) -> dict:
    """Equal-width bins on [0, 1]: per bin the mean confidence, the accuracy and the count; and the ECE.

    ECE = sum over bins of (count / total) * |accuracy - confidence|.

    >>> r = reliability(np.array([0.9, 0.9, 0.1, 0.1]), np.array([1, 0, 0, 0]))
    >>> round(r["ece"], 3)
    0.25
    """
    if probs.size and (probs.min() < 0 or probs.max() > 1):
        raise ValueError("calibration needs probabilities in [0, 1]; these scores are not")
    which = np.minimum((probs * bins).astype(int), bins - 1)
    count = np.bincount(which, minlength=bins)
    conf = np.bincount(which, weights=probs, minlength=bins) / np.maximum(count, 1)
    acc = np.bincount(which, weights=labels, minlength=bins) / np.maximum(count, 1)
    ece = float(np.sum(count / max(probs.size, 1) * np.abs(acc - conf)))
    return {"ece": ece, "bin_edges": np.linspace(0, 1, bins + 1).tolist(), "confidence": conf.tolist(),
            "accuracy": acc.tolist(), "count": count.tolist()}


def split_dev(data: StepSet, fraction: float, seed: int = 0) -> tuple[StepSet, StepSet]:
    """A seeded random split of one subset into (dev, test)."""
    if not 0 < fraction < 1:
        raise ValueError(f"dev fraction {fraction} must be between 0 and 1")
    rng = np.random.default_rng([seed, len(data)])
    dev = np.zeros(len(data), dtype=bool)
    dev[rng.permutation(len(data))[: max(1, round(fraction * len(data)))]] = True
    return data.subset(dev, data.name), data.subset(~dev, data.name)


def step_metrics(test: list[StepSet], dev: list[StepSet], bins: int = 10) -> dict:
    """Everything ``prmkit eval steps`` reports: threshold from ``dev``, ProcessBench F1 and step metrics on ``test``."""
    threshold, dev_f1, candidates, curve = choose_threshold(dev)
    per_subset = {d.name: processbench_f1(d, threshold) for d in test}
    scores, labels = (np.concatenate(x) for x in zip(*(d.flat_step_labels() for d in test)))
    out = {"threshold": threshold, "threshold_chosen_on": [f"{d.name} (dev, {len(d)})" for d in dev],
           "dev_mean_f1": dev_f1, "subsets": per_subset,
           "mean_f1": float(np.mean([s["f1"] for s in per_subset.values()])),
           "step_auroc": auroc(scores, labels), "labelled_steps": int(labels.size),
           "step_accuracy": float(np.mean((scores >= threshold) == (labels == 1))) if labels.size else float("nan"),
           "dev_f1_curve": {"threshold": candidates.tolist(), "mean_f1": curve.tolist()}}
    if scores.size and scores.min() >= 0 and scores.max() <= 1:
        out["calibration"] = reliability(scores, labels, bins)
    else:
        out["calibration"] = None  # scores are not probabilities: ECE is undefined
    return out
