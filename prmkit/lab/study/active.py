"""``prmkit lab study active``: convincing wrong answers against uniform selection, at equal labels.

The paper's small-scale protocol (``../shared/docs/method.md``, "Active learning") in the lab, per run
seed (sizes from :class:`~prmkit.lab.study.config.ActiveConfig`):

1. **Candidates**: ``train_problems`` training problems x ``candidates`` samples, every sample rated
   once by the simulated labellers, so a sample two arms both choose carries the same label: the arms
   differ only in what they choose. A held-out pool (``eval_problems`` x ``eval_samples``) for best-of-N.
2. **Uniform arm**: ``k`` random samples per problem, for each ``k`` of ``budgets`` (nested: the
   first ``k`` of one random order per problem).
3. **Selector**: the uniform PRM at ``budgets[0]`` per problem (the paper trained its selector on one
   sample per problem) scores every candidate (``prm_min``).
4. **Active arm**: for each ``k``, :func:`prmkit.select.convincing_wrong_answer` picks ``k`` per
   problem among the candidates the selector did not learn from: ``wrong_share`` of them (over all
   problems together) the highest-scored wrong answers, the rest the highest-scored of what remains.
5. **Generations**: cumulative labels per problem follow ``budgets[:generations]`` (0: all); generation 1 is the
   uniform set (its model is the selector), each later one retrains the PRM on everything labelled so
   far, re-scores the remaining candidates and adds a convincing-wrong-answer batch.

Every set trains a PRM (``rm_steps`` optimiser steps, raised to ``rm_epochs`` passes over a larger set,
by the same rule for every arm) that is scored on the held-out pool: exact best-of-``n`` per problem and
step AUROC against the oracle. The data-efficiency factor is the ratio of the slopes of accuracy against
``ln(labels)`` (:func:`~prmkit.lab.study.core.slope_ratio`, the paper's method), with a bootstrap CI over
seeds and problems. Two views of the active arm's labels:
*strict* counts the selector's ``budgets[0]`` labels per problem too (it cannot select without them),
*paper* counts only the selected set (the paper's plots). ``count_selector`` picks the headline.

Job folders (``RUN_DIR/study-active/seed-S/``): ``data``,
``uniform-<k>`` (``uniform-<budgets[0]>`` is the selector and generation 1), ``active-<k>``,
``gen-<g>`` (g >= 2); each model folder keeps its training set (``train.jsonl.gz``), what it chose
(``chosen.json``), the model and its scores. A rerun skips every finished job.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prmkit.lab.jobs import init_worker
from prmkit.lab.run import RM_VERSION, uses_validation, validated_on
from prmkit.lab.study.active_pages import write_outputs
from prmkit.lab.study.core import (
    AGGREGATION,
    bon_per_problem,
    ceilings_per_problem,
    expected_steps,
    grouped,
    labels_recipe,
    log_fit,
    mean_ci,
    slope_ratio,
    solution_column,
    solution_scores,
    step_probabilities,
    with_rm_steps,
)
from prmkit.lab.study.protocol import Base, Seeded, Study, sampler
from prmkit.select import WRONG_GRADES, convincing_wrong_answer

NAME = "active"
SCORE = "prm_min"
VERSION = 3
"""Part of every job key: bump it when a job's output changes meaning."""


# --- pure: which sets, and how they are chosen -----------------------------------------------------

def model_plans(a) -> list[dict]:
    """Every PRM of the study for an :class:`ActiveConfig` ``a``, in dependency order.

    A plan is a list of batches ``(strategy, k, scorer, used)``: ``uniform`` takes the next ``k`` of each
    problem's random order, ``active`` the convincing-wrong-answer set of ``k`` per problem ranked by the
    model ``scorer``, among the candidates no earlier batch took; ``used`` says whether the batch is in
    the training set (the active arm excludes, but does not train on, the selector's samples).

    >>> from prmkit.lab.study.config import ActiveConfig
    >>> [(m["name"], m["depth"], m["score_candidates"]) for m in model_plans(ActiveConfig(budgets=(1, 2, 4)))]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('uniform-1', 0, True), ('uniform-2', 0, False), ('uniform-4', 0, False), ('active-1', 1, False),
     ('active-2', 1, False), ('active-4', 1, False), ('gen-2', 1, True), ('gen-3', 2, False)]
    >>> model_plans(ActiveConfig(budgets=(1, 2, 4)))[-1]["plan"]
    [('uniform', 1, None, True), ('active', 1, 'uniform-1', True), ('active', 2, 'gen-2', True)]
    """
    b, g = a.budgets, a.n_generations
    selector = f"uniform-{b[0]}"
    out = [{"name": f"uniform-{k}", "plan": [("uniform", k, None, True)], "depth": 0,
            "score_candidates": k == b[0]} for k in b]
    out += [{"name": f"active-{k}", "plan": [("uniform", b[0], None, False), ("active", k, selector, True)],
             "depth": 1, "score_candidates": False} for k in b]
    plan = [("uniform", b[0], None, True)]
    previous = selector
    for gen in range(2, g + 1):
        plan = plan + [("active", b[gen - 1] - b[gen - 2], previous, True)]
        out.append({"name": f"gen-{gen}", "plan": plan, "depth": gen - 1, "score_candidates": gen < g})
        previous = f"gen-{gen}"
    return out


def uniform_orders(groups: list[list[int]], seed: int) -> list[list[int]]:
    """One random order of every problem's candidate indices (``groups`` as :func:`~core.grouped` gives)."""
    rng = np.random.default_rng([seed, 7])
    return [[g[i] for i in rng.permutation(len(g))] for g in groups]


def take_uniform(orders: list[list[int]], k: int, taken: set[int]) -> list[int]:
    """The next ``k`` of every problem's order that are not ``taken``.

    >>> take_uniform([[3, 1, 2], [5, 4]], 2, {1})
    [3, 2, 5, 4]
    """
    return [i for order in orders for i in [j for j in order if j not in taken][:k]]


def take_active(candidates: list, scores: np.ndarray, k: int, taken: set[int], wrong_share: float,
                wrong_grades: tuple[str, ...] = WRONG_GRADES, answered_only: bool = False) -> list[int]:
    """Indices of :func:`prmkit.select.convincing_wrong_answer` (``k`` per problem) among the candidates
    not ``taken``, ranked by ``scores`` (one per candidate); ``answered_only``: a wrong answer must be one."""
    free = [i for i in range(len(candidates)) if i not in taken]
    pool = [dataclasses.replace(candidates[i], scores={SCORE: float(scores[i])}) for i in free]
    where = {id(s): i for s, i in zip(pool, free)}
    chosen = convincing_wrong_answer(pool, k, score=SCORE, wrong_share=wrong_share, per_problem=True,
                                     wrong_grades=wrong_grades, answered_only=answered_only)
    return [where[id(s)] for s in chosen]


def choose(candidates: list, plan: list[tuple], scores: dict[str, np.ndarray], seed: int,
           wrong_share: float, wrong_grades: tuple[str, ...] = WRONG_GRADES,
           answered_only: bool = False) -> tuple[list[list[int]], list[int]]:
    """(every batch's candidate indices, the indices of the training set) of a plan (see :func:`model_plans`);
    ``scores`` maps each scorer named in the plan to one score per candidate."""
    orders = uniform_orders(grouped(candidates), seed)
    taken: set[int] = set()
    batches, used = [], []
    for strategy, k, scorer, use in plan:
        if strategy == "uniform":
            idx = take_uniform(orders, k, taken)
        elif strategy == "active":
            idx = take_active(candidates, scores[scorer], k, taken, wrong_share, wrong_grades, answered_only)
        else:
            raise ValueError(f"unknown batch strategy {strategy!r}")
        taken.update(idx)
        batches.append(idx)
        if use:
            used += idx
    return batches, used


def set_stats(chosen: list, labelled: list) -> dict:
    """What a selection changes: shares of wrong answers (graded incorrect; ``answered_wrong``: with an answer), of
    solutions with a wrong step (the oracle's truth), of wrong answers with no wrong step (``wrong_answer_no_wrong_step``:
    under the oracle, solutions cut off before their answer), of records the labellers stopped at an error, and the
    mean number of rated steps."""
    from prmkit.lab.domains import oracle_labels

    n = max(len(chosen), 1)
    wrong_step = [any(x.rating == -1 for x in oracle_labels(s)) for s in chosen]
    wrong = [s.grade in WRONG_GRADES for s in chosen]
    return {"solutions": len(chosen),
            "wrong_answer": sum(wrong) / n,
            "answered_wrong": sum(w and s.answer is not None for w, s in zip(wrong, chosen)) / n,
            "wrong_step": sum(wrong_step) / n,
            "wrong_answer_no_wrong_step": sum(w and not ws for w, ws in zip(wrong, wrong_step)) / n,
            "found_error": sum(r.finish_reason == "found_error" for r in labelled) / n,
            "rated_steps": sum(len(r.ratings) for r in labelled) / n}


def equivalent_labels(labels_base, base_curve, labels_arm, arm_curve) -> list[float | None]:
    """Per arm point, the labels the baseline's fitted line needs for the same accuracy, over the labels
    the arm used (> 1: the arm is worth more labels than it cost); None where the baseline's slope is not
    positive.

    >>> [round(x, 6) for x in equivalent_labels([1, 2, 4], [0.1, 0.2, 0.3], [1, 2], [0.2, 0.3])]
    [2.0, 2.0]
    """
    slope, intercept = log_fit(labels_base, base_curve)
    if slope <= 0:
        return [None] * len(labels_arm)
    return [float(np.exp((y - intercept) / slope) / x) for x, y in zip(labels_arm, arm_curve)]


# --- jobs ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Data(Seeded):
    """Candidates (every one rated by the simulated labellers), the held-out pool and its oracle step truth
    (sampled by ``base`` under the ``lm`` policy)."""

    base: Base | None = None
    reads = ("domain", "generator", "policy", "labellers", "active.train_problems", "active.candidates",
             "active.eval_problems", "active.eval_samples")
    version = VERSION

    def run(self, out: Path) -> dict:
        from prmkit.io import write_records
        from prmkit.lab.domains import oracle_labels
        from prmkit.lab.labellers import label
        from prmkit.lab.pools import generate_pool

        cfg, seed, a, device = self.cfg, self.seed, self.cfg.active, self.device
        cands = generate_pool(cfg, seed, "train", problems=a.train_problems, samples=a.candidates, device=device)
        write_records(out / "candidates.jsonl.gz", cands)
        write_records(out / "labelled.jsonl.gz", label(cands, cfg.labellers, seed))
        pool = generate_pool(cfg, seed, "eval", problems=a.eval_problems, samples=a.eval_samples, device=device)
        write_records(out / "eval.jsonl.gz", pool)
        truth = [[x.rating for x in oracle_labels(s)] for s in pool]
        np.savez(out / "eval-truth.npz", values=np.array([r for t in truth for r in t], dtype=np.int8),
                 offsets=np.concatenate([[0], np.cumsum([len(t) for t in truth])]).astype(np.int64))
        wrong = float(np.mean([s.grade != "correct" for s in cands]))
        return {"candidates": len(cands), "eval": len(pool), "candidate_wrong_answer": round(wrong, 4)}


@dataclass(frozen=True)
class Valid(Seeded):
    """The seed's validation split: ``valid_samples`` uniform samples of each of ``valid_problems`` training problems
    past the candidates' (no arm can choose one), labelled by the same labellers in a stream of their own
    (:func:`prmkit.lab.labellers.label`). Read by every PRM of the seed whose recipe validates; a run whose recipe
    does not (the study protocol) never makes it."""

    base: Base | None = None
    reads = ("domain", "generator", "policy", "labellers", "active.train_problems", "active.valid_problems",
             "active.valid_samples")
    version = VERSION

    def run(self, out: Path) -> dict:
        from prmkit.io import write_records
        from prmkit.lab.labellers import label
        from prmkit.lab.pools import generate_pool

        cfg, a = self.cfg, self.cfg.active
        valid = generate_pool(cfg, self.seed, "train", problems=a.train_problems + a.valid_problems,
                              samples=a.valid_samples, device=self.device, skip=a.train_problems)
        write_records(out / VALID, label(valid, cfg.labellers, self.seed, stream=1))
        return {"valid": len(valid)}


VALID = "valid.jsonl.gz"
"""The seed's shared validation split in a :class:`Valid` folder."""


def eval_metrics(pool: list, probs: list[np.ndarray], truth_file: Path, n: int) -> tuple[np.ndarray, float]:
    """(exact best-of-``n`` per held-out problem by ``prm_min``, step AUROC against the oracle)."""
    from prmkit.evaluate.steps import auroc

    bon = bon_per_problem(pool, solution_scores(probs), n)
    with np.load(truth_file) as d:
        values, offsets = d["values"], d["offsets"]
    scores, labels = [], []
    for i, p in enumerate(probs):
        t = values[offsets[i]:offsets[i + 1]][:len(p)]
        scores.append(p[:len(t), 0])
        labels.append((t >= 0).astype(int))
    return bon, auroc(np.concatenate(scores), np.concatenate(labels))


@dataclass(frozen=True)
class Model(Seeded):
    """Choose a plan's training set, train a PRM on its labels, score the held-out pool (and, for a
    selector, every candidate), and evaluate it. The plan's scorers are the models that rank its active
    batches; ``wrong_grades`` and ``answered_only`` are set only for a plan that selects (they change nothing
    else); ``valid``, the seed's validation split, only where the recipe validates."""

    base: Base = None
    data: Data = None
    plan: tuple = ()
    score_candidates: bool = False
    wrong_grades: tuple | None = None
    answered_only: bool | None = None
    valid: Valid | None = None
    reads = ("rm", "active.n", "active.wrong_share", "active.rm_steps", "active.rm_epochs")

    version = (VERSION, RM_VERSION)

    @property
    def labels(self) -> int:
        """Labelled solutions it trains on: its plan's batches in the training set, per problem, x the problems."""
        return sum(k for _, k, _, used in self.plan if used) * self.cfg.active.train_problems

    @property
    def plan_kind(self) -> str:
        """A selector also scores every candidate: priced apart from the models that only train and evaluate."""
        return "Selector" if self.score_candidates else "Model"

    @property
    def work(self) -> float:
        """The optimiser steps ``--plan`` expects it to train (:func:`~prmkit.lab.study.core.expected_steps`). Scoring
        the held-out pool adds about the same to every model, and a selector's scoring of every candidate is priced
        in its own kind (:attr:`plan_kind`), so steps alone order the rest."""
        return expected_steps(rm_recipe(self.cfg, self.labels))

    def run(self, out: Path) -> dict:
        from prmkit.io import read_solutions, write_records
        from prmkit.lab.rm import train_and_score

        init_worker()
        cfg, seed, a, data = self.cfg, self.seed, self.cfg.active, Path(self.data.folder)
        plan = [(st, k, scorer.folder if scorer else None, u) for st, k, scorer, u in self.plan]
        cands = list(read_solutions(data / "candidates.jsonl.gz"))
        labelled = list(read_solutions(data / "labelled.jsonl.gz"))
        scores = {d: solution_column(Path(d) / "scored-candidates.jsonl.gz", f"prm_{AGGREGATION}")
                  for _, _, d, _ in plan if d}
        batches, used = choose(cands, [tuple(b) for b in plan], scores, seed, a.wrong_share, self.wrong_grades,
                               bool(self.answered_only))
        train = [labelled[i] for i in used]
        write_records(out / "train.jsonl.gz", train)
        ids = [[cands[i].id for i in b] for b in batches]
        (out / "chosen.json").write_text(json.dumps({"batches": ids}) + "\n")
        pools = {"eval": str(data / "eval.jsonl.gz")}
        if self.score_candidates:
            pools["candidates"] = str(data / "candidates.jsonl.gz")
        rm = rm_recipe(cfg, len(train), Path(self.valid.folder) / VALID if self.valid else None)
        info = train_and_score(out, "prm", out / "train.jsonl.gz", rm, seed, self.base.model_dir, pools, "prm",
                               self.progress, self.device)
        pool = list(read_solutions(data / "eval.jsonl.gz"))
        bon, step_auroc = eval_metrics(pool, step_probabilities(out / "scored-eval.jsonl.gz"), data / "eval-truth.npz", a.n)
        np.save(out / "bon.npy", bon)
        return {**info, "labels": len(train), "bon": float(bon.mean()), "step_auroc": step_auroc,
                "validated_on": "shared" if rm.eval_data else "own" if uses_validation(rm) else "none",
                "set": set_stats([cands[i] for i in used], train),
                "batches": [set_stats([cands[i] for i in b], [labelled[i] for i in b]) for b in batches]}


# --- the study -------------------------------------------------------------------------------------

def stages(cfg, ctx):
    """The base (first: under the ``lm`` policy it samples the pools), data, then the models generation by
    generation (each ranked by models of the one before)."""
    base = ctx.base(cfg)
    data = {s: Data(str(ctx.seed_dir(s) / "data"), cfg, s, sampler(cfg, base), device=ctx.device) for s in ctx.seeds}
    validates = cfg.active.valid_problems > 0 and uses_validation(rm_recipe(cfg))
    valid = {s: Valid(str(ctx.seed_dir(s) / "valid"), cfg, s, sampler(cfg, base), device=ctx.device) if validates
             else None for s in ctx.seeds}
    yield from [("base", [base]), ("data", [*data.values(), *(v for v in valid.values() if v)])]
    models = model_plans(cfg.active)
    made = {s: {} for s in ctx.seeds}
    for depth in range(max(m["depth"] for m in models) + 1):
        stage = []
        for s in ctx.seeds:
            for m in (m for m in models if m["depth"] == depth):
                plan = tuple((st, k, made[s][d] if d else None, u) for st, k, d, u in m["plan"])
                selects = any(st == "active" for st, *_ in m["plan"])
                made[s][m["name"]] = Model(str(ctx.seed_dir(s) / m["name"]), cfg, s, base, data[s], plan,
                                           m["score_candidates"], cfg.active.wrong_grades if selects else None,
                                           cfg.active.answered_only if selects else None, valid[s], **ctx.how)
                stage.append(made[s][m["name"]])
        yield stage_name(depth, cfg.active.n_generations), stage


def stage_name(depth: int, generations: int) -> str:
    """The name of the stage of models at ``depth`` (0: uniform, 1: active, then the later generations).

    >>> [stage_name(d, 3) for d in range(3)], [stage_name(d, 1) for d in range(2)]
    (['uniform (selector, generation 1)', 'active, generation 2', 'generation 3'], ['uniform (selector)', 'active'])
    """
    if depth >= 2:
        return f"generation {depth + 1}"
    suffix = f", generation {depth + 1}" if generations >= 2 else ""
    return ("uniform (selector{})", "active{}")[depth].format(suffix)


def rm_recipe(cfg, labels: int = 0, valid: Path | None = None):
    """The recipe of a PRM trained on ``labels`` solutions: ``active.rm_steps`` (0 keeps ``rm.max_steps``), raised
    to ``active.rm_epochs`` passes over the set (:func:`~prmkit.lab.study.core.labels_recipe`); where it reads
    held-out labels (restarts, early stopping) and the seed's shared split ``valid`` exists, validated on that
    (:func:`prmkit.lab.run.validated_on`).

    >>> from prmkit.lab.study.config import study_preset
    >>> [rm_recipe(study_preset("active"), n).max_steps for n in (500, 1000, 2000)]
    [300, 300, 500]
    """
    return validated_on(labels_recipe(with_rm_steps(cfg, cfg.active.rm_steps), cfg.active.rm_epochs, labels), valid)


def summarise(cfg, seeds: list[int], out: Path) -> dict:
    """Every number of the study from its job folders: per model and seed, per arm with CIs, the factors."""
    a = cfg.active
    b, P = list(a.budgets), a.train_problems
    models = [m["name"] for m in model_plans(a)]
    done = {s: {m: json.loads((out / f"seed-{s}" / m / "done.json").read_text()) for m in models}
            for s in seeds}
    bon = {m: np.stack([np.load(out / f"seed-{s}" / m / "bon.npy") for s in seeds]) for m in models}
    gens = [f"uniform-{b[0]}"] + [f"gen-{g}" for g in range(2, a.n_generations + 1)]
    arms = {"uniform": ([f"uniform-{k}" for k in b], [k * P for k in b]),
            "active_strict": ([f"active-{k}" for k in b], [(k + b[0]) * P for k in b]),
            "active_paper": ([f"active-{k}" for k in b], [k * P for k in b]),
            "generations": (gens, [k * P for k in b[:a.n_generations]])}
    acc = {arm: np.stack([bon[m] for m in names], axis=1) for arm, (names, _) in arms.items()}
    points = {arm: [{"model": m, "labels": x, **mean_ci(bon[m]),
                     "step_auroc": [done[s][m]["step_auroc"] for s in seeds],
                     "set": _mean_stats([done[s][m]["set"] for s in seeds])}
                    for m, x in zip(names, xs)] for arm, (names, xs) in arms.items()}
    factors = {arm: slope_ratio(arms[arm][1], acc[arm], acc["uniform"], baseline_labels=arms["uniform"][1])
               for arm in ("active_strict", "active_paper")}
    if a.n_generations >= 2:
        n_g = a.n_generations
        factors["generations"] = slope_ratio(arms["generations"][1], acc["generations"], acc["uniform"][:, :n_g],
                                             baseline_labels=arms["uniform"][1][:n_g])
    curve = {arm: acc[arm].mean(axis=(0, 2)) for arm in acc}
    for arm in ("active_strict", "active_paper", "generations"):
        if arm in factors:
            factors[arm]["equivalent_labels"] = equivalent_labels(arms["uniform"][1], curve["uniform"],
                                                                  arms[arm][1], curve[arm])
    diffs = {f"active-{k} - uniform-{k}": mean_ci(bon[f"active-{k}"] - bon[f"uniform-{k}"]) for k in b}
    for k in (k for k in b if k + b[0] in b):  # equal labels in the strict view
        diffs[f"active-{k} with the selector's labels - uniform-{k + b[0]}"] = mean_ci(
            bon[f"active-{k}"] - bon[f"uniform-{k + b[0]}"])
    diffs.update({f"{g} - uniform-{k}": mean_ci(bon[g] - bon[f"uniform-{k}"]) for g, k in zip(gens[1:], b[1:])})
    head = "active_strict" if a.count_selector else "active_paper"
    head_factor = factors[head]["factor"]
    rm = rm_recipe(cfg)
    auroc = {m: [done[s][m]["step_auroc"] for s in seeds] for m in models}
    losses = {m: [done[s][m].get("final_loss") for s in seeds] for m in models}
    return {"study": NAME, "seeds": list(seeds), "config": dataclasses.asdict(a), "n": a.n,
            "rm_steps": rm.max_steps, "rm_batch_size": rm.batch_size, "rm_epochs": a.rm_epochs,
            "rm_steps_per_labels": {str(x): rm_recipe(cfg, x).max_steps for x in sorted({k * P for k in b})},
            "validation": validation_record(a, {done[s][m].get("validated_on", "none") for s in seeds for m in models}),
            "equal_labels": [{"per_problem": k, "labels": k * P, **diffs[f"active-{k} - uniform-{k}"]} for k in b],
            "selection_effect": selection_effect(b, seeds, auroc, losses),
            "ceilings": eval_ceilings(out, seeds, a.n),
            "headline": {"view": head, **{k: factors[head][k] for k in ("factor", "ci95", "per_seed")},
                         "target": 2.0, "point_estimate_met": bool(np.isfinite(head_factor) and head_factor >= 2.0),
                         "conclusive": bool(factors[head]["ci95"][0] >= 2.0),
                         "uniform_slope_positive": factors[head]["slope_baseline"] > 0},
            "factors": factors, "points": points, "differences": diffs,
            "batches": {s: {m: done[s][m]["batches"] for m in models} for s in seeds},
            "models": {s: {m: {k: done[s][m].get(k) for k in ("labels", "bon", "step_auroc", "seconds",
                                                               "train_seconds", "score_seconds", "final_loss")}
                           for m in models} for s in seeds}}


def validation_record(a, validated_on: set[str]) -> dict:
    """How the study's PRMs validated (``shared``: the seed's split; ``own``: a tenth of their own labels; ``none``)
    and the shared split's size per seed (0 where no model read it)."""
    return {"validated_on": sorted(validated_on),
            "solutions_per_seed": a.valid_problems * a.valid_samples if "shared" in validated_on else 0}


def eval_ceilings(out: Path, seeds: list[int], n: int) -> dict:
    """pass@``n`` and the step-judge limit of the held-out pool (:func:`~prmkit.lab.study.core.ceilings_per_problem`),
    with CIs over seeds then problems: the most any PRM of the study could reach."""
    from prmkit.io import read_solutions

    per = [ceilings_per_problem(list(read_solutions(out / f"seed-{s}" / "data" / "eval.jsonl.gz")), n) for s in seeds]
    return {k: mean_ci(np.stack([p[k] for p in per])) for k in ("pass", "step_judge")}


def selection_effect(budgets: list[int], seeds: list[int], auroc: dict, losses: dict, floor: float | None = None) -> dict:
    """What selecting did to the PRMs' step discrimination on uniform held-out samples, measured: per budget the
    paired difference in step AUROC (oracle) active - uniform over seeds, and every PRM below the lab's floor
    (:data:`prmkit.lab.targets.FLOOR`) with its final training loss beside its uniform sibling's (same seed and
    labels per problem; a generation's sibling is uniform at its cumulative labels). A selected PRM that fitted its
    set at least as well as its sibling and still fell below the floor is a *selection effect* (it fits the chosen
    set and fails to generalise); one whose loss stayed above its sibling's did not fit (a stall); a uniform PRM
    below the floor is *weak*, no selection involved; a loss not recorded leaves the reading *unknown*. The reading
    is approximate: a selected set's labels are more often negative than a uniform one's, so equal losses are not
    equal fits; a loss at or below the sibling's on the harder set is the conservative side of it.

    >>> e = selection_effect([1], [0, 1], {"uniform-1": [0.95, 0.96], "active-1": [0.70, 0.97]},
    ...                      {"uniform-1": [0.40, 0.41], "active-1": [0.05, 0.30]}, floor=0.9)
    >>> round(e["auroc_difference"][0]["mean"], 3), e["below_floor"]
    (-0.12, [{'model': 'active-1', 'seed': 0, 'step_auroc': 0.7, 'final_loss': 0.05, 'sibling': 'uniform-1', 'sibling_loss': 0.4, 'reading': 'selection effect'}])
    """
    from prmkit.lab.targets import FLOOR

    floor = FLOOR if floor is None else floor
    diff = [{"per_problem": k, **mean_ci(np.subtract(auroc[f"active-{k}"], auroc[f"uniform-{k}"])[:, None])}
            for k in budgets]
    sibling = {m: f"uniform-{m.split('-')[1]}" if m.startswith("active-") else
               f"uniform-{budgets[int(m.split('-')[1]) - 1]}" if m.startswith("gen-") else None for m in auroc}
    weak = []
    for m, xs in auroc.items():
        for i, (s, x) in enumerate(zip(seeds, xs)):
            if x >= floor:
                continue
            sib = sibling[m]
            row = {"model": m, "seed": s, "step_auroc": x, "final_loss": losses[m][i], "sibling": sib,
                   "sibling_loss": losses[sib][i] if sib else None}
            row["reading"] = ("weak" if sib is None else "unknown" if None in (row["final_loss"], row["sibling_loss"])
                              else "selection effect" if row["final_loss"] <= row["sibling_loss"] else "did not fit")
            weak.append(row)
    return {"floor": floor, "auroc_difference": diff, "below_floor": weak}


def _mean_stats(stats: list[dict]) -> dict:
    return {k: float(np.mean([s[k] for s in stats])) for k in stats[0]}


STUDY = Study(NAME, stages, summarise, write_outputs)

__all__ = [
    "STUDY",
    "Valid",
    "choose",
    "equivalent_labels",
    "model_plans",
    "rm_recipe",
    "selection_effect",
    "set_stats",
    "summarise",
    "take_active",
    "take_uniform",
    "uniform_orders",
    "write_outputs",
]
