"""Every number of the pressure study, read from its jobs (:func:`summarise`).

- **Best-of-N**: per reward model (PRM aggregation or ORM) and label budget, the chosen sample's gold,
  step validity and proxy at every N, with 95% intervals over seeds then problems; Gao's best-of-N form
  ``gain = d (alpha - beta d)`` fitted to gold (d = sqrt(KL_bon), units: seed x problem); where gold peaks.
- **RL**: per reward, the evaluation records of every seed along training: gold, proxy, KL and the
  detectors; Gao's RL form ``gain = d (alpha - beta ln d)`` fitted to all seeds' points (d = sqrt(KL)) with a
  bootstrap over evaluation problems; the step where mean gold peaks; the first evaluation at which
  the proxy is above its value at gold's peak while gold has fallen ``HACK_MARGIN`` below that peak
  (``hacked_at``: the proxy and gold parting), and the detectors' change from start to end.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from prmkit.lab.study.core import mean_ci

PRM_COLUMNS = ("prm_min", "prm_product", "prm_last", "prm_mean")
"""The PRM's solution scores best-of-N ranks by (its aggregations); the ORM's is ``orm``."""
DETECTORS = ("gold", "valid", "right_answer_wrong_step", "steps", "checks", "answerless", "prm_step_auroc",
             "tokens", "proxy", "kl")
HACK_MARGIN = 0.03
"""Gold this far (absolute) below its peak, with the proxy above its value there, counts as parting."""


def summarise(cfg, seeds: list[int], root: Path) -> dict:
    pc = cfg.pressure
    rl, skipped = rl_summary(pc, seeds, root)
    return {"study": "pressure", "preset": cfg.name, "policy": cfg.policy, "seeds": list(seeds), "config": _config(pc),
            "rm_steps": cfg.rm.max_steps, "restarts": cfg.rm.restarts, "bon": bon_summary(pc, seeds, root), "rl": rl,
            "rl_skipped": skipped,
            "bon_pool": f"{pc.bon_problems} problems x {pc.bon_samples} samples per seed",
            "rl_eval": f"{pc.rl_eval_problems} problems x {pc.rl_eval_samples} samples per seed and evaluation"}


def _config(pc) -> dict:
    import dataclasses

    return json.loads(json.dumps(dataclasses.asdict(pc), default=str))


# --- best-of-N -------------------------------------------------------------------------------------------

def bon_summary(pc, seeds: list[int], root: Path) -> dict:
    """Best-of-N of every reward-model pair: each label budget (the base's size), and each extra size of
    ``pc.rm_sizes`` at the largest budget (``sizes``)."""
    from prmkit.lab.study.pressure_measure import powers_of_two

    ns = powers_of_two(pc.bon_samples)
    top = max(pc.budgets)
    out = {"n": ns, "budgets": {}, "sizes": {}}
    for b in pc.budgets:
        per_seed = [seed_bon(root / f"seed-{s}", rm_name("prm", b), rm_name("orm", b), ns) for s in seeds]
        out["sqrt_kl"] = per_seed[0]["sqrt_kl"]
        out["budgets"][str(b)] = pair_summary(per_seed, ns)
    for size in pc.rm_sizes:
        per_seed = [seed_bon(root / f"seed-{s}", rm_name("prm", top, size), rm_name("orm", top, size), ns)
                    for s in seeds]
        out["sizes"][size] = pair_summary(per_seed, ns)
    return out


def rm_name(kind: str, budget: int, size: str = "") -> str:
    """The folder of a reward model: ``rm-prm-2000``, or ``rm-prm-2000-small`` for an extra size."""
    return f"rm-{kind}-{budget}" + (f"-{size}" if size else "")


def pair_summary(per_seed: list[dict], ns: list[int]) -> dict:
    """Every score column of one reward-model pair over seeds: curves with intervals, the fit, the peak."""
    from prmkit.evaluate.pressure import bootstrap_fit

    d = np.asarray(per_seed[0]["sqrt_kl"])
    models = {}
    for column in per_seed[0]["columns"]:
        curves = {m: np.stack([c["columns"][column][m] for c in per_seed]) for m in ("gold", "valid", "proxy")}
        units = curves["gold"].reshape(-1, len(ns))
        mean = units.mean(axis=0)
        peak = int(np.nanargmax(mean))
        models[column] = {
            **{m: [mean_ci(curves[m][:, :, i], n_boot=500) for i in range(len(ns))] for m in curves},
            "fit": bootstrap_fit(d, units, "bon", n_boot=500, seed=0), "peak_n": ns[peak],
            "peak_gold": float(mean[peak]), "gold_at_max_n": float(mean[-1]), "gold_at_1": float(mean[0]),
            "gold_per_seed": curves["gold"].mean(axis=1).tolist(),  # [seed, N]: a peak of one seed shows as such
            "proxy_gain": float(curves["proxy"][..., -1].mean() - curves["proxy"][..., 0].mean()),
            "gold_gain": float(mean[-1] - mean[0])}
    return models


def seed_bon(seed_dir: Path, prm_dir: str, orm_dir: str, ns: list[int]) -> dict:
    """One seed's best-of-N curves of a PRM and an ORM (folders of ``seed_dir``) on its best-of-N pool."""
    from prmkit.io import read_solutions
    from prmkit.lab.study.pressure_measure import bon_curves

    prm = list(read_solutions(seed_dir / prm_dir / "scored-bon.jsonl.gz"))
    orm = list(read_solutions(seed_dir / orm_dir / "scored-bon.jsonl.gz"))
    if [s.id for s in prm] != [s.id for s in orm]:
        raise ValueError(f"{seed_dir}: the PRM's and the ORM's scored best-of-N pools hold other samples")
    scores = {c: column(prm, c, seed_dir / prm_dir) for c in PRM_COLUMNS}
    scores["orm"] = column(orm, "orm", seed_dir / orm_dir)
    return bon_curves(prm, scores, ns)


def column(solutions, name: str, where: Path) -> np.ndarray:
    """Every solution's score ``name``; a score no solution has is an error (a column of NaNs would rank
    nothing and read as a curve of zeros)."""
    values = np.array([s.scores.get(name, np.nan) for s in solutions], dtype=float)
    if np.isnan(values).all():
        raise ValueError(f"{where}: no solution has the score {name!r} (the reward model's aggregations?)")
    return values


# --- RL ------------------------------------------------------------------------------------------------

def rl_summary(pc, seeds: list[int], root: Path) -> tuple[dict, dict]:
    """Per reward, :func:`reward_summary` of the seeds whose run went ahead; and per reward, each seed whose
    reward model failed its check (the run was not made), with the check."""
    out, skipped_all = {}, {}
    for reward in pc.rewards:
        logs = {s: json.loads((root / f"seed-{s}" / f"rl-{reward}" / "log.json").read_text()) for s in seeds}
        ran = [log for log in logs.values() if "skipped" not in log]
        if ran:
            out[reward] = reward_summary(ran) | {"seeds": [s for s, log in logs.items() if "skipped" not in log]}
        skipped = {str(s): {"why": log["skipped"], "check": log["check"]} for s, log in logs.items() if "skipped" in log}
        if skipped:
            skipped_all[reward] = skipped
    return out, skipped_all


def reward_summary(logs: list[dict]) -> dict:
    """One reward's RL runs (one log per seed): curves, fit, peak, parting and detectors."""
    steps = [r["step"] for r in logs[0]["records"]]
    table = {k: np.array([[r[k] for r in log["records"]] for log in logs], dtype=float) for k in DETECTORS}
    gold = np.array([[r["gold_per_problem"] for r in log["records"]] for log in logs])  # [seeds, evals, problems]
    sqrt_kl = np.sqrt(np.clip(table["kl"], 0, None))
    with warnings.catch_warnings():  # a detector with no case at some evaluation (no right answer yet) is NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = {k: np.nanmean(v, axis=0).tolist() for k, v in table.items()}
    peak = int(np.nanargmax(mean["gold"]))
    fit = rl_fit(sqrt_kl, gold)
    change = mean_ci(gold[:, -1] - gold[:, 0], n_boot=500)
    return {"steps": steps, "mean": mean, "per_seed": {k: v.tolist() for k, v in table.items()},
            "sqrt_kl": sqrt_kl.mean(axis=0).tolist(), "fit": fit, "peak_step": steps[peak],
            "peak_gold": mean["gold"][peak], "peak_sqrt_kl": float(sqrt_kl.mean(axis=0)[peak]),
            "gold_change": change, "hacked_at": parting(steps, mean["gold"], mean["proxy"]),
            "detectors": {k: {"start": mean[k][0], "end": mean[k][-1]} for k in DETECTORS},
            "seconds": [log["seconds"] for log in logs], "examples": logs[0]["examples"],
            "checks": [log.get("check") for log in logs],
            "trl": logs[0]["history"]}


def rl_fit(sqrt_kl: np.ndarray, gold: np.ndarray, n_boot: int = 500, seed: int = 0) -> dict:
    """Gao's RL form on every (seed, evaluation) point, gain relative to each seed's start; 95% intervals by
    resampling each seed's evaluation problems (the same draw for all of that seed's evaluations: one
    problem's samples move together along training)."""
    from prmkit.evaluate.pressure import fit_gao, percentiles_with_inf

    d = sqrt_kl.reshape(-1)

    def one(g):
        means = g.mean(axis=-1)  # [seeds, evals]
        return fit_gao(d, (means - means[:, :1]).reshape(-1), "rl")

    point = one(gold)
    rng = np.random.default_rng(seed)
    seeds, _, problems = gold.shape
    boots = [one(np.stack([gold[s][:, rng.integers(0, problems, problems)] for s in range(seeds)]))
             for _ in range(n_boot)]
    ci = {k: [float(np.nanquantile([b[k] for b in boots], q)) for q in (0.025, 0.975)] for k in ("alpha", "beta")}
    peaks = np.array([b["peak_d"] for b in boots], dtype=float)
    # a fit without a peak counts as a peak at infinity, as best-of-N's bootstrap_fit counts it (before
    # 2026-12-06 the interval was of the fits with a peak alone, which reads narrower than it is)
    return {**point, "alpha_ci": ci["alpha"], "beta_ci": ci["beta"], "peak_d_ci": list(percentiles_with_inf(peaks, 2.5)),
            "no_peak_frac": float(np.mean(~np.isfinite(peaks)))}


def parting(steps: list[int], gold: list[float], proxy: list[float], margin: float = HACK_MARGIN) -> int | None:
    """The first evaluation step after gold's peak at which gold is ``margin`` below the peak while the proxy
    is above its value at the peak; None when that never happens.

    >>> parting([0, 10, 20, 30], [0.1, 0.3, 0.28, 0.2], [0.2, 0.5, 0.6, 0.7])
    30
    >>> parting([0, 10], [0.1, 0.3], [0.2, 0.5]) is None
    True
    """
    peak = int(np.nanargmax(gold))
    for i in range(peak + 1, len(steps)):
        if gold[i] < gold[peak] - margin and proxy[i] > proxy[peak]:
            return steps[i]
    return None


__all__ = [
    "DETECTORS",
    "HACK_MARGIN",
    "PRM_COLUMNS",
    "bon_summary",
    "column",
    "pair_summary",
    "parting",
    "reward_summary",
    "rl_fit",
    "rl_summary",
    "rm_name",
    "seed_bon",
    "summarise",
]
