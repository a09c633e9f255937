"""Every best-of-N number for one pool: selection curves with confidence intervals, as one JSON-able dict.

``evaluate_pool`` runs best-of-N by each score column (exact), pass@N (exact), majority vote and
weighted vote by each column (Monte Carlo, standard error reported), and the first sample, then
bootstraps 95% intervals over problems with shared resamples. Metric names say what they measure::

    bon_acc@64[prm_min]      best-of-64 by the column prm_min, exact expectation
    weighted_acc@64[prm_min] reward-weighted vote of 64, Monte Carlo (mc_se beside it)
    maj_acc@64               majority vote of 64 over grader-equivalent answers, Monte Carlo
    pass@64                  an oracle picks a correct sample if any of the 64 is, exact
    first_acc                the first sample of every problem

Where the pool knows which samples are valid at every step (:attr:`~prmkit.evaluate.pool.Pool.valid`:
human step labels, a step oracle), a second gold beside answer accuracy, exact as best-of-N::

    step_limit@64            a perfect step judge: a valid-every-step sample is among the 64 (the most any
                             process scorer can reach; pass@64 is an outcome judge's)
    valid_acc@64[prm_min]    the sample best-of-64 by prm_min picks is valid at every step

Where the caller sorts the samples into classes (``classes``: a name per sample, pool order, such as a
step oracle's "valid", "right answer through a wrong step", "wrong with an immediate error"), the share
of each column's picks in each class, exact as best-of-N (the shares of one column sum to the chance
that an N-subset has a sample the column can pick, answered and scored: 1 where every sample is)::

    pick_share@64[prm_min][valid]   the sample best-of-64 by prm_min picks is of the class "valid"

>>> from prmkit.evaluate.pool import pool_from_lists
>>> pool = pool_from_lists([["1", "1", "2"]] * 4, [[1, 1, 0]] * 4, {"rm": [[.2, .3, .9]] * 4}, answer_key="exact")
>>> res = evaluate_pool(pool, ["rm"], [1, 3], n_boot=100)
>>> res["metrics"]["bon_acc@3[rm]"]["estimate"], res["metrics"]["pass@3"]["estimate"], res["metrics"]["maj_acc@3"]["estimate"]
(0.0, 1.0, 1.0)
"""

from __future__ import annotations

import numpy as np

from prmkit.evaluate.bon import (
    _padded_size,
    exact_bon,
    exact_pass,
    first_sample,
    level_expectation,
    score_levels,
)
from prmkit.evaluate.bootstrap import bootstrap_ci
from prmkit.evaluate.pool import Pool, truncation_note
from prmkit.evaluate.vote import vote_curves, vote_weights


def default_ns(m_pad: int) -> list[int]:
    """Powers of two up to the padded pool size, and the size itself.

    >>> default_ns(8), default_ns(12)
    ([1, 2, 4, 8], [1, 2, 4, 8, 12])
    """
    ns = [2 ** k for k in range(m_pad.bit_length()) if 2 ** k <= m_pad]
    return ns + ([m_pad] if ns[-1] != m_pad else [])


def evaluate_pool(pool: Pool, columns: list[str], ns: list[int] | None = None, pad_to: int | None = None,
                  vote: bool = True, weight_transform: str = "auto", target_se: float = 0.002,
                  n_boot: int = 2000, seed: int = 0, progress=None, per_problem: tuple[str, ...] = (),
                  classes: np.ndarray | None = None, class_names: tuple[str, ...] | None = None) -> dict:
    """Best-of-N, votes, pass@N and first sample for ``pool``; see the module docstring for the names.

    ``per_problem`` names curves (``bon_acc[prm_min]``, ``maj_acc``) whose per-problem values are kept
    in ``result["per_problem"]`` (``[problem][N]``), for intervals pooled over several pools' problems."""
    m_pad = _padded_size(pool, pad_to)
    ns = sorted(set(ns or default_ns(m_pad)))
    if ns[0] < 1 or ns[-1] > m_pad:
        raise ValueError(f"N must be between 1 and the padded pool size {m_pad} (got {ns}); see --pad-to")
    curves: dict[str, dict] = {}
    for col in columns:
        curves[f"bon_acc[{col}]"] = {"per_problem": exact_bon(pool, col, ns, m_pad), "method": "exact"}
    curves["pass"] = {"per_problem": exact_pass(pool, ns, m_pad), "method": "exact"}
    if pool.valid is not None:
        curves.update(gold_curves(pool, columns, ns, m_pad))
    if classes is not None:
        curves.update(pick_share_curves(pool, columns, classes, ns, m_pad, class_names))
    transforms = {}
    if vote:
        weights: dict[str, np.ndarray | None] = {"maj_acc": None}
        for col in columns:
            weights[f"weighted_acc[{col}]"], transforms[col] = vote_weights(pool.column(col), weight_transform)
        for name, est in vote_curves(pool, ns, weights, m_pad, target_se, seed=seed, progress=progress).items():
            curves[name] = _mc(est)
    first = first_sample(pool)
    kept = {name: np.round(curves[name]["per_problem"], 6).tolist() for name in per_problem}
    _add_intervals(curves, first, n_boot, seed)
    return {"pool": pool_summary(pool, m_pad), "ns": ns, "curves": curves, **({"per_problem": kept} if kept else {}),
            "metrics": _flat_metrics(curves, ns, first),
            "settings": {"columns": columns, "pad_to": m_pad, "vote_weight_transform": transforms,
                         "target_se": target_se, "bootstrap_resamples": n_boot, "ci_level": 0.95, "seed": seed}}


def gold_curves(pool: Pool, columns: list[str], ns: list[int], m_pad: int) -> dict[str, dict]:
    """The step-judge limit and each column's valid-solution accuracy, per problem (needs ``pool.valid``)."""
    valid = pool.valid & pool.has_answer
    out = {"step_limit": {"per_problem": exact_pass(pool, ns, m_pad, valid), "method": "exact"}}
    for col in columns:
        levels = score_levels(pool, col, valid.astype(float))
        out[f"valid_acc[{col}]"] = {"per_problem": level_expectation(levels, pool.n_problems, m_pad, ns),
                                    "method": "exact"}
    return out


def pick_share_curves(pool: Pool, columns: list[str], classes: np.ndarray, ns: list[int], m_pad: int,
                      names: tuple[str, ...] | None = None) -> dict[str, dict]:
    """Per column and class of sample (``classes``: a name per sample, pool order), the share of the column's
    best-of-N picks in that class, per problem: ``pick_share[column][class]``, for every class of ``names`` (a
    class no sample has gets zeros, so pools of several seeds line up; default: the classes of the answered
    samples, since a class of unanswered ones is never picked).

    >>> from prmkit.evaluate.pool import pool_from_lists
    >>> pool = pool_from_lists([["1", "2"]], [[1, 0]], {"rm": [[.2, .9]]}, answer_key="exact")
    >>> c = pick_share_curves(pool, ["rm"], np.array(["right", "wrong"]), [1, 2], 2)
    >>> c["pick_share[rm][wrong]"]["per_problem"].tolist(), c["pick_share[rm][right]"]["per_problem"].tolist()
    ([[0.5, 1.0]], [[0.5, 0.0]])
    """
    classes = np.asarray(classes)
    if classes.shape != (pool.n_samples,):
        raise ValueError(f"classes: one per sample expected ({pool.n_samples}), got shape {classes.shape}")
    out = {}
    for col in columns:
        for name in names or sorted(set(classes[pool.has_answer].tolist())):
            levels = score_levels(pool, col, ((classes == name) & pool.has_answer).astype(float))
            out[f"pick_share[{col}][{name}]"] = {"per_problem": level_expectation(levels, pool.n_problems, m_pad, ns),
                                                 "method": "exact"}
    return out


def _mc(est) -> dict:
    return {"per_problem": est.per_problem, "method": "monte_carlo", "mc_se": est.se.tolist(),
            "mc_rounds": est.rounds.tolist()}


def _add_intervals(curves: dict, first: np.ndarray, n_boot: int, seed: int) -> None:
    """Estimates and bootstrap intervals for every curve, with one shared set of resamples."""
    names = list(curves)
    stacked = np.concatenate([curves[k]["per_problem"] for k in names] + [first[:, None]], axis=1)
    low, high = bootstrap_ci(stacked, n_boot=n_boot, seed=seed)
    means = stacked.mean(axis=0)
    at = 0
    for name in names:
        width = curves[name]["per_problem"].shape[1]
        curves[name].update(estimate=means[at:at + width].tolist(), ci_low=low[at:at + width].tolist(),
                            ci_high=high[at:at + width].tolist())
        del curves[name]["per_problem"]
        at += width
    curves["first_acc"] = {"method": "exact", "estimate": [float(means[-1])], "ci_low": [float(low[-1])],
                           "ci_high": [float(high[-1])]}


def metric_name(curve: str, n: int) -> str:
    """``bon_acc[rm]`` at 64 is ``bon_acc@64[rm]``; ``pass`` at 64 is ``pass@64``.

    >>> metric_name("bon_acc[rm]", 64), metric_name("pass", 64)
    ('bon_acc@64[rm]', 'pass@64')
    """
    base, bracket, col = curve.partition("[")
    return f"{base}@{n}" + (f"[{col}" if bracket else "")


def _flat_metrics(curves: dict, ns: list[int], first: np.ndarray) -> dict:
    out = {}
    for name, c in curves.items():
        if name == "first_acc":
            out[name] = {"estimate": c["estimate"][0], "ci95": [c["ci_low"][0], c["ci_high"][0]], "method": "exact"}
            continue
        for j, n in enumerate(ns):
            entry = {"estimate": c["estimate"][j], "ci95": [c["ci_low"][j], c["ci_high"][j]], "method": c["method"]}
            if "mc_se" in c:
                entry.update(mc_se=c["mc_se"][j], mc_rounds=c["mc_rounds"][j])
            out[metric_name(name, n)] = entry
    return out


def pool_summary(pool: Pool, m_pad: int) -> dict:
    """What the numbers were computed on: sizes, answerless samples, samples left out as ungradable (the
    grader could not decide them), grade conflicts within answer groups."""
    return {"format": pool.format, "problems": pool.n_problems, "samples": pool.n_samples,
            "samples_per_problem": [int(pool.sizes.min()), int(pool.sizes.max())], "pad_to": m_pad,
            "answerless": int((~pool.has_answer).sum()), "correct": int(pool.correct.sum()),
            "valid": None if pool.valid is None else int((pool.valid & pool.has_answer).sum()),
            "ungradable_left_out": pool.ungradable,
            "score_columns": {k: _missing(pool, k) for k in pool.scores},
            "answer_groups_with_mixed_grades": pool.group_conflicts}


def _missing(pool: Pool, column: str) -> dict:
    """Samples without a score in ``column``, the problems they are in, and how many lost steps to truncation."""
    gone = np.isnan(pool.scores[column])
    problems = int(np.count_nonzero(np.bincount(pool.problem_index()[gone], minlength=pool.n_problems)))
    return {"missing": int(gone.sum()), "missing_problems": problems, "truncated": pool.truncated.get(column, {})}


def missing_score_notes(result: dict) -> list[str]:
    """One warning per score column some samples lack: how many, and what the numbers did with them.

    Such a sample is never chosen by that column, yet it still takes its slot among the N drawn (a draw
    whose scored samples have no answer counts as wrong), so ``bon_acc[col]`` can sit below
    ``pass@1``; it casts no vote in ``weighted_acc[col]``. pass@N, maj_acc and first_acc use every sample.
    """
    pool, notes = result["pool"], []
    for col in result["settings"]["columns"]:
        info = pool["score_columns"].get(col, {})
        if not info.get("missing"):
            continue
        vote = f", and they cast no vote in weighted_acc[{col}]" if f"weighted_acc[{col}]" in result["curves"] else ""
        notes.append(f"warning: {info['missing']} of {pool['samples']} samples (in {info['missing_problems']} of "
                     f"{pool['problems']} problems) have no score '{col}': bon_acc[{col}] never picks them, though "
                     f"they take their slot among the N drawn (a draw with no scored answer counts as wrong){vote}; "
                     f"pass@N, maj_acc and first_acc count every sample")
        lost = info.get("truncated") or {}
        if lost:
            n = sum(lost.values())
            who = "All of them" if n == info["missing"] else f"{n} of them"
            notes.append(f"  {truncation_note(who, lost, col)}")
    return notes


def curve_rows(result: dict) -> tuple[list[str], list[list[str]]]:
    """The curves of a result as text cells: (method names, one row per N of ``N, estimate [ci] ±se``),
    in percent, pass@N first, then best-of-N, then the rest (the terminal table and the report's)."""
    curves = {k: v for k, v in result["curves"].items() if k != "first_acc"}
    order = sorted(curves, key=lambda k: (k != "pass", k != "step_limit", not k.startswith("bon"), k))
    rows = []
    for j, n in enumerate(result["ns"]):
        row = [str(n)]
        for name in order:
            c = curves[name]
            cell = f"{100 * c['estimate'][j]:.1f} [{100 * c['ci_low'][j]:.1f}, {100 * c['ci_high'][j]:.1f}]"
            if "mc_se" in c:
                cell += f" ±{100 * c['mc_se'][j]:.2f}"
            row.append(cell)
        rows.append(row)
    return order, rows


def format_table(result: dict) -> str:
    """A terminal table: one row per N, one column per method, ``estimate [ci]`` in percent, ``±se`` for MC."""
    order, rows = curve_rows(result)
    header = ["N"] + order
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(r, widths)).rstrip() for r in [header] + rows]
    first = result["curves"]["first_acc"]
    lines.append(f"first_acc {100 * first['estimate'][0]:.1f} [{100 * first['ci_low'][0]:.1f}, "
                 f"{100 * first['ci_high'][0]:.1f}]   (accuracy %, 95% bootstrap CI over problems; "
                 f"±: Monte-Carlo standard error)")
    ungradable = result["pool"].get("ungradable_left_out", 0)
    note = [f"{ungradable} samples left out as ungradable (grade unparseable: the grader could not decide them)"]
    return "\n".join(lines + missing_score_notes(result) + (note if ungradable else []))
