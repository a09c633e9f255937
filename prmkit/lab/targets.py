"""The paper's ordering as the lab's targets, pooled over seeds: each gap with a 95% interval that
resamples seeds, then held-out problems (the per-problem best-of-N every evaluation keeps).

- in distribution, at the largest N: PRM > ORM > majority, each gap's interval above 0;
- the PRM - ORM gap larger at the largest N than at N = 4 (the paper's curves part as N grows);
- out of distribution: the same ordering, reported as found;
- no lottery: the PRM's step AUROC within :data:`SPREAD` across seeds.

PRM means ``prm_min`` (chosen before any run) unless a run's ``aggregation`` says ``product``. Every function
reads the evaluation results (``RUN_DIR/seed-S/evaluate/<pool>.json``) and returns plain numbers.

>>> r = {"ns": [1, 4], "per_problem": {"bon_acc[prm_min]": [[1, 1], [0, 1]], "bon_acc[orm]": [[0, 0], [0, 1]],
...                                    "maj_acc": [[0, 0], [0, 0]]}}
>>> g = pooled_gaps({0: r, 1: r}, n_boot=50)
>>> g["PRM@4 - ORM@4"]["mean"], g["ORM@4 - majority@4"]["mean"]
(0.5, 0.5)
"""

from __future__ import annotations

import numpy as np

from prmkit.lab.numbers import interval, points

ORM, MAJORITY = "bon_acc[orm]", "maj_acc"
POOL_NAMES = {"eval": "held-out pool", "ood": "OOD family"}
SMALL_N = 4
SPREAD = 0.03
"""The most the PRM's step AUROC may differ between seeds (max - min) for the run to be no lottery."""
FLOOR = 0.9
"""The least step AUROC on the oracle that any PRM of the run may have on any seed."""
STEP_AUROCS = {"PRM": "prm_step_auroc", "paper PRM": "prm_paper_step_auroc"}
"""The reward models whose step AUROC a run's headline holds, by the name its tables give them."""


def _per_problem(result: dict, curve: str, n: int) -> np.ndarray:
    return np.asarray(result["per_problem"][curve], float)[:, result["ns"].index(n)]


def pooled_gaps(results: dict, n_boot: int = 1000, seed: int = 0, aggregation: str = "min") -> dict:
    """For one pool's evaluations by seed: PRM - ORM, ORM - majority, PRM - majority at the largest N,
    PRM - ORM at N = 4, and how much larger the PRM - ORM gap is at the largest N than at 4; each as
    ``{mean, ci95, per_seed, above_zero}`` (fractions; problems must number the same in every seed). The PRM
    scores solutions by ``aggregation`` of its step probabilities."""
    from prmkit.lab.study.core import mean_ci

    prm = f"bon_acc[prm_{aggregation}]"
    first = next(iter(results.values()))
    top = max(first["ns"])
    diffs = {}
    for n in dict.fromkeys([top, SMALL_N]):
        if n not in first["ns"]:
            continue
        diffs[f"PRM@{n} - ORM@{n}"] = [_per_problem(r, prm, n) - _per_problem(r, ORM, n) for r in results.values()]
        diffs[f"ORM@{n} - majority@{n}"] = [_per_problem(r, ORM, n) - _per_problem(r, MAJORITY, n)
                                            for r in results.values()]
        diffs[f"PRM@{n} - majority@{n}"] = [_per_problem(r, prm, n) - _per_problem(r, MAJORITY, n)
                                            for r in results.values()]
    if top != SMALL_N and SMALL_N in first["ns"]:
        diffs[f"(PRM - ORM)@{top} - (PRM - ORM)@{SMALL_N}"] = [
            a - b for a, b in zip(diffs[f"PRM@{top} - ORM@{top}"], diffs[f"PRM@{SMALL_N} - ORM@{SMALL_N}"])]
    out = {}
    for name, per_seed in diffs.items():
        ci = mean_ci(np.stack(per_seed), n_boot=n_boot, seed=seed)
        out[name] = {**ci, "above_zero": ci["ci95"][0] > 0}
    return out


FINDING_NS = (4, 16, 64)
"""The N at which the findings table reports every gap with the ceilings beside it (and the pool's largest N)."""


def arms(aggregation: str = "min") -> dict:
    """The per-problem curves of each comparison (:mod:`prmkit.lab.arms`), the PRM's by ``aggregation``: the
    equal-data pair, the paper's arms.

    >>> arms("product")["paper"]["answer"]
    ('bon_acc[prm_paper_product]', 'bon_acc[orm_paper]')
    """
    return {"equal": {"answer": (f"bon_acc[prm_{aggregation}]", ORM), "valid": (f"valid_acc[prm_{aggregation}]", "valid_acc[orm]")},
            "paper": {"answer": (f"bon_acc[prm_paper_{aggregation}]", "bon_acc[orm_paper]"),
                      "valid": (f"valid_acc[prm_paper_{aggregation}]", "valid_acc[orm_paper]")}}

ARM_NAMES = {"equal": "equal data (both on the same 2,000 uniform solutions)",
             "paper": "the paper's data arms (PRM: chosen convincing wrong answers; ORM: 10x uniform, graded)"}


def has_gold(results: dict, arm: str = "equal", aggregation: str = "min") -> bool:
    """Whether every evaluation kept the per-problem second gold (valid-solution accuracy, the ceilings)
    for the comparison ``arm`` with the PRM by ``aggregation``."""
    curves = arms(aggregation)[arm]
    needed = (*curves["answer"], *curves["valid"], "pass", "step_limit")
    return all(all(c in r.get("per_problem", {}) for c in needed) for r in results.values())


def pooled_findings(results: dict, n_boot: int = 1000, seed: int = 0, arm: str = "equal",
                    aggregation: str = "min") -> list[dict]:
    """Per N (4, 16, 64 and the largest): PRM - ORM on answer accuracy and on valid-solution accuracy, pooled
    over seeds then problems with 95% intervals, beside the ceilings (pass@N, the step-judge limit) and
    the two arms' own numbers, so a gap is read against how much room there was. Findings, not targets.

    >>> r = {"ns": [4], "per_problem": {"bon_acc[prm_min]": [[1], [0]], "bon_acc[orm]": [[1], [1]],
    ...      "maj_acc": [[0], [0]], "pass": [[1], [1]], "step_limit": [[1], [0]], "valid_acc[prm_min]": [[1], [0]],
    ...      "valid_acc[orm]": [[0], [0]]}}
    >>> [(f["N"], f["answer"]["mean"], f["valid"]["mean"], f["step_limit"]) for f in pooled_findings({0: r}, 20)]
    [(4, -0.5, 0.5, 0.5)]
    """
    from prmkit.lab.study.core import mean_ci

    first = next(iter(results.values()))
    ns = [n for n in dict.fromkeys([*FINDING_NS, max(first["ns"])]) if n in first["ns"]]
    out = []
    for n in ns:
        def stacked(curve, n=n):
            return np.stack([_per_problem(r, curve, n) for r in results.values()])

        row = {"N": n}
        for name, (prm, orm) in arms(aggregation)[arm].items():
            ci = mean_ci(stacked(prm) - stacked(orm), n_boot=n_boot, seed=seed)
            row[name] = {**ci, "ci_covers_0": ci["ci95"][0] <= 0 <= ci["ci95"][1]}
            row[f"{name}_prm"], row[f"{name}_orm"] = float(stacked(prm).mean()), float(stacked(orm).mean())
        row["pass"], row["step_limit"] = float(stacked("pass").mean()), float(stacked("step_limit").mean())
        row["majority"] = float(stacked(MAJORITY).mean())
        out.append(row)
    return out


def findings_rows(findings: dict) -> tuple[list[str], list[list[str]]]:
    """The pooled findings of every pool as table rows (percent; gaps in points), ceilings beside each gap."""
    rows = [[POOL_NAMES[p], str(f["N"]), points(f["pass"]), points(f["step_limit"]), points(f["majority"]),
             f"{points(f['answer_prm'])} / {points(f['answer_orm'])}", interval(f["answer"], signed=True),
             f"{points(f['valid_prm'])} / {points(f['valid_orm'])}", interval(f["valid"], signed=True)]
            for p, rows in findings.items() for f in rows]
    return ["pool", "N", "pass@N (outcome-judge ceiling)", "step-judge limit", "majority",
            "answer acc. PRM / ORM", "PRM - ORM, answer [95% CI]", "valid-solution acc. PRM / ORM",
            "PRM - ORM, valid solution [95% CI]"], rows


def auroc_spread(aurocs: list[float]) -> dict:
    """A PRM's step AUROC across seeds: its range, whether it is within :data:`SPREAD`, and whether every
    seed's is at least :data:`FLOOR`.

    >>> s = auroc_spread([0.98, 0.97, 0.895])
    >>> s["within"], s["lowest"], s["above_floor"]
    (False, 0.895, False)
    """
    spread = float(max(aurocs) - min(aurocs))
    return {"values": [float(a) for a in aurocs], "spread": spread, "least": SPREAD, "within": spread <= SPREAD,
            "lowest": float(min(aurocs)), "floor": FLOOR, "above_floor": min(aurocs) >= FLOOR}


def auroc_spreads(headlines: list[dict]) -> dict:
    """:func:`auroc_spread` for every PRM of :data:`STEP_AUROCS` that each seed's headline holds."""
    return {name: auroc_spread([h[key] for h in headlines]) for name, key in STEP_AUROCS.items()
            if all(key in h for h in headlines)}


def pooled_rows(pooled: dict, spreads: dict) -> tuple[list[str], list[list[str]]]:
    """The pooled gaps of every pool and each PRM's AUROC spread (:func:`auroc_spreads`) as table rows
    (points; shared by the report and the docs generator)."""
    rows = [[POOL_NAMES[p], name, interval(g, signed=True),
             ", ".join(points(x, signed=True) for x in g["per_seed"]), "yes" if g["above_zero"] else "no"]
            for p, gaps in pooled.items() for name, g in gaps.items()]
    for name, spread in spreads.items():
        floor = (f"; lowest {spread['lowest']:.3f}, {'at least' if spread['above_floor'] else 'below'} "
                 f"{spread['floor']:.2f}" if "floor" in spread else "")  # older summaries lack the floor
        rows.append([POOL_NAMES["eval"], f"{name} step AUROC, max - min over seeds", f"{spread['spread']:.3f}",
                     ", ".join(f"{a:.3f}" for a in spread["values"]),
                     f"{'within' if spread['within'] else 'beyond'} {spread['least']:.2f}{floor}"])
    return ["pool", "gap (points)", "pooled mean [95% CI]", "per seed", "CI above 0"], rows


PICKERS = {"PRM min": "prm_min", "PRM product": "prm_product", "ORM": "orm", "paper PRM min": "prm_paper_min",
           "paper PRM product": "prm_paper_product", "paper ORM": "orm_paper"}
"""The scorers whose best-of-N picks are sorted by class (:data:`prmkit.lab.scoring.PICK_CLASSES`), by table name."""


def pooled_picks(results: dict, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """What each scorer's best-of-N picks are, pooled over seeds then problems with 95% intervals: per scorer and N
    (1: the pool's own mix, 16 and the largest), the share of picks in each class the evaluations kept per problem
    (``pick_share[column][class]``); [] for evaluations from before 2026-12-06.

    >>> r = {"ns": [1, 4], "per_problem": {"pick_share[orm][valid]": [[0.5, 1.0]], "pick_share[orm][wrong_immediate]":
    ...      [[0.5, 0.0]]}}
    >>> [(p["scorer"], p["N"], p["shares"]["valid"]["mean"]) for p in pooled_picks({0: r}, 20)]
    [('ORM', 1, 0.5), ('ORM', 4, 1.0)]
    """
    from prmkit.lab.study.core import mean_ci

    first = next(iter(results.values()))
    ns = [n for n in dict.fromkeys([1, 16, max(first["ns"])]) if n in first["ns"]]
    out = []
    for name, column in PICKERS.items():
        prefix = f"pick_share[{column}]["
        kept = [{c[len(prefix):-1] for c in r.get("per_problem", {}) if c.startswith(prefix)} for r in results.values()]
        if not all(kept):  # a seed without the scorer's picks (an older evaluation, or no such arm)
            continue
        classes = sorted(set().union(*kept))
        for n in ns:
            shares = {k: mean_ci(np.stack([_share(r, f"{prefix}{k}]", n) for r in results.values()]),
                                 n_boot=n_boot, seed=seed) for k in classes}
            out.append({"scorer": name, "N": n, "shares": shares})
    return out


def _share(result: dict, curve: str, n: int) -> np.ndarray:
    """A pick-share curve at ``n``; zeros where the evaluation has none (it wrote curves only for the classes of its
    answered samples before 2026-12-06: a class it lacked was never picked)."""
    if curve in result["per_problem"]:
        return _per_problem(result, curve, n)
    return np.zeros(len(next(iter(result["per_problem"].values()))))


PICK_LABELS = {"valid": "valid at every step", "right_answer_wrong_step": "right answer, a wrong step",
               "wrong_delayed_only": "wrong answer, delayed errors only", "wrong_immediate": "wrong answer, an immediate error"}
"""Column headings of the classes of picks (a domain without delayed errors has no ``wrong_delayed_only``: "-")."""


def picks_rows(picks: dict) -> tuple[list[str], list[list[str]]]:
    """Pooled picks of every pool (:func:`pooled_picks`) as table rows: percent of picks per class, 95% intervals."""
    rows = []
    for p, pool_rows in picks.items():
        mix = next(row for row in pool_rows if row["N"] == 1)  # N = 1 picks at random: one row for every scorer
        for row in [mix, *(row for row in pool_rows if row["N"] != 1)]:
            rows.append([POOL_NAMES[p], "any (a random pick)" if row is mix else row["scorer"],
                         "1 (the pool's mix)" if row is mix else str(row["N"]),
                         *(interval(row["shares"][k]) if k in row["shares"] else "-" for k in PICK_LABELS)])
    return ["pool", "scorer", "N", *(f"{label} (% of picks)" for label in PICK_LABELS.values())], rows


def has_per_problem(results: dict, aggregation: str = "min") -> bool:
    """Whether every evaluation kept the per-problem curves the pooled gaps need, the PRM's by ``aggregation``
    (older ones did not)."""
    needed = (f"bon_acc[prm_{aggregation}]", ORM, MAJORITY)
    return all(all(c in r.get("per_problem", {}) for c in needed) for r in results.values())


__all__ = [
    "ARM_NAMES",
    "FINDING_NS",
    "FLOOR",
    "KERNEL_TOLERANCE",
    "PICKERS",
    "PICK_LABELS",
    "POOL_NAMES",
    "SMALL_N",
    "SPREAD",
    "STEP_AUROCS",
    "arms",
    "auroc_spread",
    "auroc_spreads",
    "findings_rows",
    "has_gold",
    "has_per_problem",
    "kernel_differences",
    "noise_parts",
    "picks_rows",
    "pooled_findings",
    "pooled_gaps",
    "pooled_picks",
    "pooled_rows",
    "problems_for",
]


KERNEL_TOLERANCE = 2.0
"""Points by which any scorer's best-of-64 may move between two runs that differ only in float kernels
(1 against 2 torch threads per worker, or two machines): the issue's target for numbers that survive."""


def kernel_differences(a: dict, b: dict, n: int = 64) -> dict:
    """Every number at ``N = n`` that two run summaries share, on the seeds both ran (a one-seed rerun against
    a five-seed run compares that seed), per seed and pool, side by side in points, with the largest absolute
    difference and whether it is within :data:`KERNEL_TOLERANCE`.

    >>> a = {"seeds": [0], "results": {"0": {"eval": {"orm@64": 0.96, "pass@64": 1.0, "N": 64}}}}
    >>> b = {"seeds": [0], "results": {"0": {"eval": {"orm@64": 0.883, "pass@64": 1.0, "N": 64}}}}
    >>> d = kernel_differences(a, b)
    >>> d["rows"][0], round(d["largest"], 1), d["within"]
    (['0', 'eval', 'orm@64', 96.0, 88.3, 7.7], 7.7, False)
    """
    seeds = [s for s in a["seeds"] if s in b["seeds"]]
    if not seeds:
        raise ValueError(f"the runs share no seed ({a['seeds']} and {b['seeds']}): nothing to compare")
    rows = []
    for seed in map(str, seeds):
        for pool, values in a["results"][seed].items():
            other = b["results"][seed].get(pool, {})
            if not isinstance(values, dict) or not isinstance(other, dict):  # the budget sweep: a list
                continue
            for key, value in values.items():
                if key.endswith(f"@{n}") and isinstance(value, (int, float)) and key in other:
                    x, y = 100 * value, 100 * other[key]
                    rows.append([seed, pool, key, round(x, 1), round(y, 1), round(abs(x - y), 1)])
    largest = max((r[5] for r in rows), default=0.0)
    return {"n": n, "seeds": seeds, "rows": rows, "largest": largest, "tolerance": KERNEL_TOLERANCE,
            "within": largest <= KERNEL_TOLERANCE}


def noise_parts(values: np.ndarray) -> dict:
    """The spread of several training runs' best-of-N on one pool, split in two (points).

    ``values``: (runs, problems), each run's expected best-of-N accuracy per problem. Two runs of equal quality
    still pick differently problem by problem, so their means differ by the pool's own noise: per pair, the
    variance of the per-problem differences over the number of problems. Per pair of runs:

    - ``pair_rms``: the root mean square of the two means' difference, as measured;
    - ``pair_noise_rms``: what it would be from the problems alone (equal quality);
    - ``sd``: the runs' means' standard deviation; ``quality_sd`` the part of it the problems do not explain
      (``sd**2 - pair_noise_rms**2 / 2``, floored at 0);
    - ``disagreement``: the mean per-problem variance of a pair's difference (fractions squared), which sets the
      noise at any pool size (:func:`problems_for`).

    >>> p = noise_parts(np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]]))
    >>> p["pair_rms"], p["pair_noise_rms"], p["quality_sd"]
    (0.0, 0.0, 0.0)
    """
    values = np.asarray(values, float)
    runs, problems = values.shape
    if runs < 2 or problems < 2:
        raise ValueError(f"noise_parts needs at least two runs and two problems, got {runs} x {problems}")
    a, b = np.triu_indices(runs, k=1)
    diffs = values[a] - values[b]  # (pairs, problems)
    disagreement = float(np.mean(diffs.var(axis=1, ddof=1)))
    pair_noise = np.sqrt(disagreement / problems)
    sd = float(values.mean(axis=1).std(ddof=1))
    return {"runs": runs, "problems": problems,
            "pair_rms": round(100 * float(np.sqrt(np.mean(diffs.mean(axis=1) ** 2))), 4),
            "pair_noise_rms": round(100 * float(pair_noise), 4), "sd": round(100 * sd, 4),
            "quality_sd": round(100 * float(np.sqrt(max(sd ** 2 - pair_noise ** 2 / 2, 0.0))), 4),
            "disagreement": disagreement}


def problems_for(parts: dict, tolerance: float = KERNEL_TOLERANCE, z: float = 1.96) -> int:
    """Problems a pool needs for two runs of equal quality to land within ``tolerance`` points of each other in
    95% of pairs (``z`` = 1.96), at the per-problem ``disagreement`` :func:`noise_parts` measured.

    >>> problems_for({"disagreement": 0.25}, tolerance=2.0)
    2401
    """
    return int(np.ceil(parts["disagreement"] * (z * 100 / tolerance) ** 2))
