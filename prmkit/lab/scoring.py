"""Scored lab pools as prmkit records, and every number the lab reports on them.

:func:`merge_scored` puts every score of a pool into its records (each model's own file, written by
``prmkit score``, plus the label-free scores), under the names prmkit uses elsewhere:

- PRM (the run's full label budget): ``Step.scores`` ``p_pos``, ``p_neg``, ``p_correct``; solution
  scores ``prm_min``, ``prm_product``, ``prm_last``, ``prm_mean`` (:mod:`prmkit.evaluate.aggregate`);
- ORM: ``orm``, P(correct) at the last step's end;
- label-free, from the base model alone: ``likelihood_mean`` (mean token log-probability of the
  solution's steps), ``likelihood_min`` (its least likely token), and per step ``base_logp_min``;
- the label-budget sweep (budget ``B``): ``prmB_min``, ``prmB_product`` (and the other aggregations),
  ``ormB``.

:func:`evaluate_scored` reads such a file back with :func:`prmkit.evaluate.pool.load_pool` and runs
:func:`prmkit.evaluate.curves.evaluate_pool` (exact best-of-N and pass@N, Monte-Carlo majority and
weighted votes, bootstrap CIs), plus the step-level AUROC of the PRM against the oracle's truth
(``lab.oracle_labels``: ratings +1 and 0 are correct, -1 wrong), overall and per kind of error.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from prmkit.lab.likelihood import LABEL_FREE

PRM_AGGREGATIONS = ("min", "product", "last", "mean")
VOTED = ("prm_min", "prm_product", "orm")
"""Columns whose reward-weighted vote is estimated (Monte Carlo); the others get best-of-N only."""
PER_PROBLEM = ("bon_acc[prm_min]", "bon_acc[prm_product]", "bon_acc[orm]", "maj_acc", "pass", "step_limit",
               "valid_acc[prm_min]", "valid_acc[prm_product]", "valid_acc[orm]")
"""Curves whose per-problem values each evaluation keeps, for gaps pooled over seeds then problems: the two
arms (the PRM by either score a run's findings may read, ``LabConfig.aggregation``) and majority on answer
accuracy and on valid-solution accuracy, and both ceilings."""
PAPER_COLUMNS = ("prm_paper_min", "prm_paper_product", "orm_paper")
"""The paper's data arms (:mod:`prmkit.lab.arms`), in a run that trains them: best-of-N (no votes) and the
same per-problem curves as the equal-data pair."""


def merge_scored(out: Path, base_file, scored_files: list) -> int:
    """Write ``base_file``'s records (the pool with its label-free scores) into ``out`` with every solution
    and step score of ``scored_files`` (each the same records, scored by one model: ``prmkit score``)."""
    from prmkit.io import read_solutions, write_records

    sols = list(read_solutions(base_file))
    for path in scored_files:
        for sol, other in zip(sols, read_solutions(path), strict=True):
            if sol.id != other.id:
                raise ValueError(f"{path}: record {other.id!r} where {base_file} has {sol.id!r}")
            sol.scores.update(other.scores)
            for step, scored in zip(sol.steps, other.steps, strict=True):
                step.scores.update(scored.scores)
    return write_records(out, sols)


def step_auroc(path, score_key: str = "p_correct") -> dict:
    """AUROC of a step score against the oracle's truth: overall, per oracle reason of the wrong steps, and, in
    a domain with delayed errors (plans), per kind of error: immediate (visible on its line) or delayed. The same
    again over each solution's steps up to and including its first wrong one (``to_first_error``): what a PRM
    trained as in PRM800K's phase 2 learns to do, find the first mistake (in the plans domain many wrong steps
    come after the first: a dead end makes every later day that passes a deadline wrong too). And where the score
    puts each solution's first error (``first_error_location``: ProcessBench's accuracies and F1, and the share of
    first errors found at their step, per kind)."""
    from prmkit.io import read_solutions
    from prmkit.lab.domains import domain_of

    scores, truth, reasons, kinds, early, delayed = [], [], [], [], [], False
    solutions = []  # per solution: its scored steps' scores, the index of its first wrong one (-1: none), its kind
    for sol in read_solutions(path):
        domain = domain_of(sol)
        delayed = delayed or bool(domain.delayed)
        steps = [s for s in sol.steps if s.taken is not None]
        before_error, own, first, first_kind = True, [], -1, ""
        for step, lab in zip(steps, domain.oracle.oracle_labels(sol)):
            if score_key in step.scores:
                scores.append(step.scores[score_key])
                truth.append(int(lab.rating >= 0))
                reasons.append(lab.reason)
                kinds.append(domain.error_kind(lab.reason) or "")
                early.append(before_error)
                if before_error and lab.rating == -1:
                    first, first_kind = len(own), kinds[-1]
                own.append(step.scores[score_key])
            before_error = before_error and lab.rating != -1
        if own:
            solutions.append((own, first, first_kind))
    s, y, r, k = np.asarray(scores, float), np.asarray(truth, int), np.asarray(reasons), np.asarray(kinds)
    out = _aurocs(s, y, r, k, delayed)
    if "by_reason" in out:
        keep = np.asarray(early, bool)
        out["to_first_error"] = _aurocs(s[keep], y[keep], r[keep], k[keep], delayed)
        out["first_error_location"] = first_error_location(solutions)
    return out


def first_error_location(solutions: list[tuple[list[float], int, str]], seed: int = 0) -> dict:
    """ProcessBench's measure of ``solutions`` (each: step scores, the index of its first wrong step or -1, that
    error's kind or ""), as ``prmkit eval steps`` takes it: the threshold below which a step is the predicted first
    error is chosen on a seeded random half (the dev half: a model's probabilities need not be calibrated to 0.5)
    and the other half is measured: accuracy on the erroneous solutions (first error found at exactly its step),
    on the correct ones (no step below the threshold), their F1, and the erroneous accuracy per kind of error.

    >>> sols = [([0.9, 0.2], 1, "delayed"), ([0.9, 0.8], -1, ""), ([0.3, 0.9], 0, "immediate")] * 4
    >>> loc = first_error_location(sols)
    >>> loc["f1"], loc["found_by_kind"]["immediate"]["found"], 0.3 < loc["threshold"] <= 0.8
    (1.0, 1.0, True)
    """
    from prmkit.evaluate.steps import (
        StepSet,
        choose_threshold,
        first_error_predictions,
        processbench_f1,
        split_dev,
    )

    data = StepSet("pool", [own for own, _, _ in solutions], [first for _, first, _ in solutions],
                   ids=[str(i) for i in range(len(solutions))])
    dev, test = split_dev(data, 0.5, seed)
    threshold = choose_threshold([dev])[0]
    out = {**processbench_f1(test, threshold), "threshold": threshold, "threshold_chosen_on": f"dev half, {len(dev)}"}
    predicted, labels = first_error_predictions(test, threshold), np.asarray(test.labels)
    kinds = np.asarray([solutions[int(i)][2] for i in test.ids])
    out["found_by_kind"] = {str(kind): {"found": float(np.mean(predicted[kinds == kind] == labels[kinds == kind])),
                                        "solutions": int((kinds == kind).sum())}
                            for kind in sorted(set(kinds[labels >= 0])) if kind}
    return out


def _aurocs(s: np.ndarray, y: np.ndarray, r: np.ndarray, k: np.ndarray, delayed: bool) -> dict:
    from prmkit.evaluate.steps import auroc

    if s.size == 0 or y.min() == y.max():
        return {"auroc": float("nan"), "steps": int(s.size)}
    out = {"auroc": auroc(s, y), "steps": int(s.size), "wrong_steps": int((y == 0).sum()), "by_reason": _auroc_by(s, y, r)}
    if delayed:
        out["by_kind"] = _auroc_by(s, y, k)
    return out


def _auroc_by(s: np.ndarray, y: np.ndarray, group: np.ndarray) -> dict:
    """Per group of the wrong steps: the AUROC of the score telling that group's wrong steps from every right
    step, and how many wrong steps it has."""
    from prmkit.evaluate.steps import auroc

    out = {}
    for name in sorted(set(group[y == 0])):
        keep = (y == 1) | (group == name)
        out[str(name)] = {"auroc": auroc(s[keep], y[keep]), "wrong_steps": int((group == name).sum())}
    return out


def evaluate_scored(path, cfg, seed: int) -> dict:
    """Best-of-N curves with CIs for every column, votes, pass@N, the sweep, step AUROC; ``headline`` numbers."""
    from prmkit.evaluate.curves import default_ns, evaluate_pool
    from prmkit.evaluate.pool import load_pool

    reading = OracleReading()
    pool = load_pool(path, answer_key="exact", step_truth=reading)  # the oracle: the second gold
    classes = reading.classes_in(pool)
    ns = default_ns(int(pool.sizes.max()))
    kw = {"ns": ns, "target_se": cfg.vote_target_se, "n_boot": cfg.bootstrap, "seed": seed, "classes": classes,
          "class_names": PICK_CLASSES}
    result = evaluate_pool(pool, list(VOTED), vote=True, per_problem=PER_PROBLEM + _pick_curves(VOTED), **kw)
    others = [f"prm_{h}" for h in PRM_AGGREGATIONS if f"prm_{h}" not in VOTED] + list(LABEL_FREE)
    paper = [c for c in PAPER_COLUMNS if c in pool.scores]
    others += paper
    kept = tuple(f"{curve}[{c}]" for c in paper for curve in ("bon_acc", "valid_acc")) + _pick_curves(paper)
    _merge(result, evaluate_pool(pool, others, vote=False, per_problem=kept, **kw))
    sweep = {}
    for budget in sorted(cfg.label_budgets):
        cols = [f"prm{budget}_min", f"prm{budget}_product", f"orm{budget}"]
        if budget != cfg.labelled and all(c in pool.scores for c in cols):  # the sweep scores the eval pool only
            sweep[budget] = evaluate_pool(pool, cols, vote=False, **{**kw, "classes": None, "class_names": None})["metrics"]
    result["sweep"] = {str(k): v for k, v in sweep.items()}
    result["steps"] = {"prm": step_auroc(path, "p_correct"), "likelihood": step_auroc(path, "base_logp_min")}
    if "prm_paper_min" in paper:
        result["steps"]["prm_paper"] = step_auroc(path, "prm_paper_p_correct")
    result["headline"] = headline(result)
    return result


PICK_CLASSES = ("valid", "right_answer_wrong_step", "wrong_delayed_only", "wrong_immediate")
"""What the oracle makes of a sample, the classes of best-of-N picks: valid at every step (so its answer is right);
a right answer through a wrong step; a wrong answer whose every error is delayed (in plans: every constraint kept,
the plan only later than it could be, "valid but wasteful", or led into a dead end); a wrong answer with an error
visible on its line. In a domain without delayed errors (the ledger) ``wrong_delayed_only`` is always 0."""


def pick_class(solution, labels) -> str:
    """The class of :data:`PICK_CLASSES` of ``solution``, from its oracle ``labels`` and its grade (a lab solution's
    is the oracle's, written when it was sampled)."""
    from prmkit.lab.domains import domain_of

    kinds = {domain_of(solution).error_kind(label.reason) for label in labels if label.rating == -1}
    if not kinds:
        return "valid"
    if solution.grade == "correct":
        return "right_answer_wrong_step"
    return "wrong_delayed_only" if kinds == {"delayed"} else "wrong_immediate"


class OracleReading:
    """``load_pool``'s step truth from the oracle (``Pool.valid``: no step rated -1) that also notes each sample's
    class of :data:`PICK_CLASSES` on the way, so the file is read once."""

    def __init__(self):
        self.problems: list[str] = []
        self.classes: list[str] = []

    def __call__(self, solution) -> list[int]:
        from prmkit.lab.domains import oracle_labels

        labels = oracle_labels(solution)
        self.problems.append(solution.problem.id if solution.problem.id is not None else solution.problem.problem)
        self.classes.append(pick_class(solution, labels))
        return [label.rating for label in labels]

    def classes_in(self, pool) -> np.ndarray:
        """The classes in ``pool``'s order (problems by first appearance, the file's order within each): ``load_pool``
        asks for the step truth of every sample it keeps, once, in file order."""
        if len(self.classes) != pool.n_samples:
            raise ValueError(f"the oracle read {len(self.classes)} samples where the pool holds {pool.n_samples}")
        index = {p: i for i, p in enumerate(pool.problem_ids)}
        order = np.argsort([index[p] for p in self.problems], kind="stable")
        return np.asarray(self.classes)[order]


def _pick_curves(columns) -> tuple[str, ...]:
    """The pick-share curves of ``columns``, one per class of :data:`PICK_CLASSES`, kept per problem."""
    return tuple(f"pick_share[{c}][{k}]" for c in columns for k in PICK_CLASSES)


def _merge(into: dict, other: dict) -> None:
    for key in ("curves", "metrics", "per_problem"):
        if key in other:
            into.setdefault(key, {}).update({k: v for k, v in other[key].items() if k not in into[key]})
    into["settings"]["columns"] = list(dict.fromkeys(into["settings"]["columns"] + other["settings"]["columns"]))


def headline(result: dict) -> dict:
    """The numbers the lab's targets are about, at the largest N and at 16 (percent; AUROC as a fraction)."""
    m = result["metrics"]
    top = max(result["ns"])
    mid = 16 if 16 in result["ns"] else top
    out = {}
    for n in dict.fromkeys([top, mid]):
        for h in PRM_AGGREGATIONS:
            out[f"prm_{h}@{n}"] = m[f"bon_acc@{n}[prm_{h}]"]["estimate"]
        out[f"orm@{n}"] = m[f"bon_acc@{n}[orm]"]["estimate"]
        out[f"majority@{n}"] = m[f"maj_acc@{n}"]["estimate"]
        out[f"weighted_prm_min@{n}"] = m[f"weighted_acc@{n}[prm_min]"]["estimate"]
        out[f"weighted_orm@{n}"] = m[f"weighted_acc@{n}[orm]"]["estimate"]
        for c in LABEL_FREE:
            out[f"{c}@{n}"] = m[f"bon_acc@{n}[{c}]"]["estimate"]
        out[f"label_free@{n}"] = max(out[f"{c}@{n}"] for c in LABEL_FREE)
        out[f"pass@{n}"] = m[f"pass@{n}"]["estimate"]
        out[f"step_limit@{n}"] = m[f"step_limit@{n}"]["estimate"]
        for col in ("prm_min", "orm"):
            out[f"valid_{col}@{n}"] = m[f"valid_acc@{n}[{col}]"]["estimate"]
        for col in PAPER_COLUMNS:
            if f"bon_acc@{n}[{col}]" in m:
                out[f"{col}@{n}"] = m[f"bon_acc@{n}[{col}]"]["estimate"]
                out[f"valid_{col}@{n}"] = m[f"valid_acc@{n}[{col}]"]["estimate"]
    out["first_sample"] = m["first_acc"]["estimate"]
    out["prm_step_auroc"] = result["steps"]["prm"]["auroc"]
    out.update(first_error_aurocs(result["steps"]))
    out["likelihood_step_auroc"] = result["steps"]["likelihood"]["auroc"]
    if "prm_paper" in result["steps"]:
        out["prm_paper_step_auroc"] = result["steps"]["prm_paper"]["auroc"]
    out["N"] = top
    return out


def first_error_aurocs(steps: dict) -> dict:
    """Each PRM's step AUROC over steps up to the first wrong one (``prm_first_error_auroc``, the paper PRM's
    ``prm_paper_first_error_auroc``) and, in a domain with delayed errors, per kind (``...[immediate]``,
    ``...[delayed]``); its ProcessBench F1 at locating the first error (``prm_first_error_f1``) and, per kind, the
    share of first errors it finds at their step (``prm_first_error_found[immediate]``, ...): headline numbers."""
    out = {}
    for model in ("prm", "prm_paper"):
        first = steps.get(model, {}).get("to_first_error")
        if first is None:
            continue
        out[f"{model}_first_error_auroc"] = first["auroc"]
        for kind, v in first.get("by_kind", {}).items():
            out[f"{model}_first_error_auroc[{kind}]"] = v["auroc"]
        location = steps[model]["first_error_location"]
        out[f"{model}_first_error_f1"] = location["f1"]
        for kind, v in location["found_by_kind"].items():
            out[f"{model}_first_error_found[{kind}]"] = v["found"]
    return out


def sweep_rows(result: dict, labelled: int) -> list[dict]:
    """Per label budget: PRM (min, product) and ORM best-of-N at the largest N, with the majority for reference."""
    top = max(result["ns"])
    m = result["metrics"]
    rows = defaultdict(dict)
    for budget, metrics in result.get("sweep", {}).items():
        rows[int(budget)] = {"prm_min": metrics[f"bon_acc@{top}[prm{budget}_min]"]["estimate"],
                             "prm_product": metrics[f"bon_acc@{top}[prm{budget}_product]"]["estimate"],
                             "orm": metrics[f"bon_acc@{top}[orm{budget}]"]["estimate"]}
    rows[labelled] = {"prm_min": m[f"bon_acc@{top}[prm_min]"]["estimate"],
                      "prm_product": m[f"bon_acc@{top}[prm_product]"]["estimate"],
                      "orm": m[f"bon_acc@{top}[orm]"]["estimate"]}
    maj = m[f"maj_acc@{top}"]["estimate"]
    return [{"labelled": b, **rows[b], "majority": maj} for b in sorted(rows)]


__all__ = ["LABEL_FREE", "PICK_CLASSES", "PRM_AGGREGATIONS", "OracleReading", "evaluate_scored", "headline", "merge_scored",
           "pick_class", "step_auroc", "sweep_rows"]
