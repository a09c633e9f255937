"""The active-learning study's pages: its figures and the HTML section of ``prmkit lab study active``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from prmkit.lab.numbers import interval, points, ratio_interval
from prmkit.lab.study.core import log_fit, write_study_pages

# --- the report ------------------------------------------------------------------------------------

_ARMS = {"uniform": ("uniform", "C0", "o", "-"),
         "active_strict": ("active, selector's labels counted", "C3", "s", "-"),
         "active_paper": ("active, selected labels only (paper)", "C3", "s", ":"),
         "generations": ("generations (retrained selector)", "C2", "^", "-")}


def _plot_arms(summary: dict, arms: tuple[str, ...], path: Path, title: str) -> str:
    """Accuracy against labels (log x): per-seed points, the mean with its 95% CI, the fitted line."""
    from prmkit.evaluate.plots import plt, save_figure  # the Agg backend: set where plots is imported

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xs_all = []
    for j, arm in enumerate(arms):
        label, color, marker, style = _ARMS[arm]
        pts = summary["points"][arm]
        x = np.array([p["labels"] for p in pts], float)
        xs_all += list(x)
        shift = 1 + 0.025 * (j - (len(arms) - 1) / 2)  # keep overlapping points apart
        y = np.array([p["mean"] for p in pts]) * 100
        lo = y - np.array([p["ci95"][0] for p in pts]) * 100
        hi = np.array([p["ci95"][1] for p in pts]) * 100 - y
        hollow = "none" if style == ":" else color
        ax.errorbar(x * shift, y, yerr=[lo, hi], fmt=marker, color=color, mfc=hollow, capsize=3, label=label)
        for p in pts:
            ax.scatter([p["labels"] * shift] * len(p["per_seed"]), np.array(p["per_seed"]) * 100, s=10,
                       color=color, alpha=0.35, marker=marker)
        slope, intercept = log_fit(x, y / 100)
        grid = np.geomspace(x.min(), x.max(), 20)
        ax.plot(grid, 100 * (intercept + slope * np.log(grid)), color=color, alpha=0.8,
                linestyle=style if style != "-" else "--")
    ax.set_xscale("log")
    ticks = sorted(set(xs_all))
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:,.0f}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("labelled solutions (log scale)")
    ax.set_ylabel(f"best-of-{summary['n']} accuracy (%)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def _equal_labels_note(diffs: dict, budgets: list[int]) -> str:
    """What the paired differences at equal labels say beside the slope ratio (which reads only slopes:
    a steeper active line that starts lower gives a large factor while active sets are worse)."""
    below = [k for k in budgets if diffs[f"active-{k} - uniform-{k}"]["mean"] < 0]
    if not below:
        return ""
    above = [k for k in budgets if k not in below]
    return (" The slope ratio compares how fast the lines rise, not where they lie: at equal selected labels the "
            f"active sets are below uniform at {', '.join(map(str, below))} per problem"
            + (f" and above at {', '.join(map(str, above))}" if above else "") + " (paired differences below).")


def section_html(summary: dict, figures: list[Path]) -> str:
    """The study's HTML fragment (from ``<h2>``): protocol, factors, accuracy, what the selection changed."""
    import html

    from prmkit.evaluate.html import figure, table

    c = summary["config"]
    seeds = ", ".join(str(s) for s in summary["seeds"])
    head = summary["headline"]
    per_seed = ", ".join(f"{x:.2f}" for x in head["per_seed"])
    intro = (f"Seeds {seeds}. Per seed: {c['train_problems']} training problems x {c['candidates']} candidate "
             f"samples, each rated once by the simulated labellers; held out: {c['eval_problems']} problems x "
             f"{c['eval_samples']} samples, exact best-of-{c['n']} by the PRM's min step score. Every PRM trains "
             f"{summary['rm_steps']} optimiser steps of {summary['rm_batch_size']} solutions, or "
             f"{summary.get('rm_epochs', 0):g} passes over its labels where that is more. Selector: the uniform "
             f"PRM at {c['budgets'][0]} per problem; active sets: {c['wrong_share']:.0%} the most convincing wrong "
             "answers, the rest the most convincing of what remains, from the candidates the selector did not learn "
             "from. 95% CIs: bootstrap over seeds and held-out problems. Data-efficiency factor = slope(arm) / "
             "slope(uniform) of accuracy against ln(labels) (the paper's method; target &ge; 2, the paper: 2.6).")
    outcome = ("met" if head["conclusive"] else "met by the point estimate only, not by its CI" if head["point_estimate_met"]
               else "not met")
    verdict = (f"Headline: at equal selected labels, active - uniform {html.escape(_equal_labels_text(summary))}. "
               f"Beside it, the slope ratio ({html.escape(head['view'].replace('_', ' '))}): {ratio_interval(head)}, "
               f"per seed {per_seed}; the 2x target is {outcome}.")
    caveat = ("" if head["uniform_slope_positive"] else
              " The uniform arm's accuracy does not rise with labels here (slope &le; 0), so the ratio of slopes "
              "is undefined (shown as inf); read the differences below.")
    caveat += _equal_labels_note(summary["differences"], c["budgets"])
    if "ceilings" in summary:
        caveat += " " + html.escape(_ceilings_text(summary).replace("**", ""))
    parts = ["<h2>Active learning: convincing wrong answers against uniform selection</h2>",
             f"<p class='note'>{intro}</p>", f"<p><b>{verdict}</b>{caveat}</p>"]
    parts.append(table(*factor_rows(summary)))
    parts.append(table(*point_rows(summary)))
    parts.append("<p>Paired differences in best-of-N accuracy (points), same held-out problems; generation g "
                 "against uniform at the same cumulative labels:</p>" + table(*difference_rows(summary)))
    if "selection_effect" in summary:
        parts.append("<p>The selection effect: step AUROC on uniform held-out samples, active - uniform, and every "
                     "PRM below the floor:</p>" + table(*selection_rows(summary)))
    parts.extend(figure(p) for p in figures)
    return "\n".join(parts)


# --- the tables (shared by the page and the docs generator, ``prmkit.lab.doctables``) -------------

def factor_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Each arm's data-efficiency factor against uniform, per seed, its slopes and equivalent labels."""
    f = summary["factors"]
    rows = []
    for arm in ("active_strict", "active_paper", "generations"):
        if arm in f:
            eq = ", ".join("-" if e is None else f"{e:.2f}" for e in f[arm]["equivalent_labels"])
            rows.append([_ARMS[arm][0], ratio_interval(f[arm]), ", ".join(f"{x:.2f}" for x in f[arm]["per_seed"]),
                         f"{100 * f[arm]['slope_arm']:.2f} / {100 * f[arm]['slope_baseline']:.2f}", eq])
    return (["arm against uniform", "factor [95% CI]", "per seed", "slopes (points per e-fold)",
             "uniform labels for equal accuracy / labels used, per point"], rows)


def point_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Every model's best-of-N with its CI, per seed, step AUROC per seed, and what its set holds."""
    pts = summary["points"]
    strict = {p["model"]: p["labels"] for p in pts["active_strict"]}
    rows = []
    for arm in ("uniform", "active_paper", "generations"):
        for p in pts[arm][1 if arm == "generations" else 0:]:  # generation 1 is the uniform set
            s = p["set"]
            labels = f"{p['labels']:,}"
            if arm == "active_paper":
                labels += f" ({strict[p['model']]:,} with the selector's)"
            answered = [points(s[k]) for k in _ANSWERED if k in s]
            rows.append([arm.split("_")[0], p["model"], labels, interval(p), ", ".join(points(x) for x in p["per_seed"]),
                         ", ".join(f"{x:.3f}" for x in p["step_auroc"]), points(s["wrong_answer"]), *answered,
                         points(s["wrong_step"]), points(s["found_error"]), f"{s['rated_steps']:.1f}"])
    extra = [_ANSWERED[k] for k in _ANSWERED if k in pts["uniform"][0]["set"]]  # summaries before them: without
    return (["arm", "model", "labels", f"best-of-{summary['n']} % [95% CI]", "per seed", "step AUROC per seed",
             "wrong answers %", *extra, "with a wrong step %", "labellers found an error %", "rated steps"], rows)


_ANSWERED = {"answered_wrong": "answered wrong %", "wrong_answer_no_wrong_step": "wrong answer, no wrong step %"}
"""Set statistics a summary holds from the study's version 3 on, with their columns."""


def difference_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Paired differences in best-of-N (points) at equal labels, with CIs and per seed."""
    rows = [[k, interval(v, signed=True), ", ".join(f"{100 * x:+.1f}" for x in v["per_seed"])]
            for k, v in summary["differences"].items()]
    return ["paired difference", "mean pts [95% CI]", "per seed"], rows


def selection_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """The selection effect (:func:`prmkit.lab.study.active.selection_effect`): per budget the paired difference in
    step AUROC, then every PRM below the floor with its training loss beside its uniform sibling's."""
    e = summary["selection_effect"]
    rows = [[f"active-{d['per_problem']} - uniform-{d['per_problem']}", _auroc_interval(d),
             ", ".join(f"{x:+.3f}" for x in d["per_seed"]), ""] for d in e["auroc_difference"]]
    rows += [[f"{w['model']}, seed {w['seed']}", f"{w['step_auroc']:.3f}",
              _loss(w["final_loss"]) + (f" (its sibling {w['sibling']}: {_loss(w['sibling_loss'])})" if w["sibling"] else ""),
              w["reading"]] for w in e["below_floor"]]
    return ["step AUROC", "difference [95% CI] / value", "per seed / final training loss", "reading"], rows


def _auroc_interval(d: dict) -> str:
    lo, hi = d["ci95"]
    return f"{d['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def _loss(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _equal_labels_text(summary: dict) -> str:
    """The paired differences at equal selected labels, per budget (the headline: the summary's ``equal_labels``;
    its ``headline`` keeps the slope ratio under its first name), as one clause."""
    rows = summary.get("equal_labels") or [{"per_problem": k, **summary["differences"][f"active-{k} - uniform-{k}"]}
                                           for k in summary["config"]["budgets"]]
    return "; ".join(f"{r['per_problem']} per problem {interval(r, signed=True)} points" for r in rows)


STALLED = 0.8
"""A PRM whose step AUROC ends below this is named as a failed run in the findings (good runs reach 0.9+)."""


def findings(summary: dict) -> str:
    """What the run shows, stated from its numbers (markdown bullets; never pre-written)."""
    f, d, budgets = summary["factors"], summary["differences"], summary["config"]["budgets"]
    head = summary["headline"]
    every = all(x > 1 for x in f["active_strict"]["per_seed"]) and all(x > 1 for x in f["active_paper"]["per_seed"])
    target = ("met, with a CI above 2" if head["conclusive"] else "met by the point estimate, not by its CI"
              if head["point_estimate_met"] else "not met")
    at_equal = []
    for k in budgets:
        v = d[f"active-{k} - uniform-{k}"]
        side = "above" if v["ci95"][0] > 0 else "below" if v["ci95"][1] < 0 else "level with (CI spans 0)"
        at_equal.append(f"{side} uniform at {k} per problem ({interval(v, signed=True)} points)")
    bullets = ["**At equal selected labels** (the headline) active is " + "; ".join(at_equal) + ".",
               *([_ceilings_text(summary)] if "ceilings" in summary else []),
               (f"**The slope ratio** (the paper's measure, beside it) is {ratio_interval(f['active_strict'])} counting "
                f"the selector's labels, {ratio_interval(f['active_paper'])} counting only the selected ones; "
                f"{'above 1 on every seed in both views' if every else 'not above 1 on every seed'}. The 2x target "
                f"({head['view'].replace('_', ' ')}) is {target}.")]
    first_u, first_a = summary["points"]["uniform"][0], summary["points"]["active_paper"][0]
    cut_off = ""
    if "wrong_answer_no_wrong_step" in first_a["set"]:
        cut_off = (f"; {points(first_a['set']['wrong_answer_no_wrong_step'])}% are wrong answers with no wrong step "
                   f"(cut off before their answer) against {points(first_u['set']['wrong_answer_no_wrong_step'])}%")
    bullets.append(f"**What the selection changes** at {budgets[0]} per problem: {points(first_a['set']['wrong_answer'])}% "
                   f"wrong answers against {points(first_u['set']['wrong_answer'])}% uniform; "
                   f"{points(first_a['set']['wrong_step'])}% with a wrong step against {points(first_u['set']['wrong_step'])}%"
                   f"{cut_off}.")
    if "generations" in f:
        curve = " -> ".join(points(p["mean"]) for p in summary["points"]["generations"])
        gen = [f"{k}: {interval(v, signed=True)}" for k, v in d.items() if k.startswith("gen-")]
        bullets.append(f"**Generations**: {curve}, factor {ratio_interval(f['generations'])}; against uniform at the same "
                       "cumulative labels " + "; ".join(gen) + ".")
    if "selection_effect" in summary:
        bullets.append(_selection_text(summary["selection_effect"]))
    models = summary["models"]
    aurocs = [m["step_auroc"] for seed in models.values() for m in seed.values()]
    stalled = [f"{name} (seed {seed}, {m['step_auroc']:.3f})" for seed, ms in models.items() for name, m in ms.items()
               if m["step_auroc"] < STALLED]
    bullets.append(f"**Reward-model spread**: step AUROC of the study's {len(aurocs)} PRMs ranges "
                   f"{min(aurocs):.3f}-{max(aurocs):.3f} ({_runs_text(summary)}); "
                   + (f"{len(stalled)} below {STALLED}: " + ", ".join(stalled) if stalled else f"none below {STALLED}")
                   + (f"; {sum(x.startswith('uniform') for x in stalled)} of them on uniform sets" if stalled else "")
                   + ".")
    return "\n".join(f"- {b}" for b in bullets)


def _ceilings_text(summary: dict) -> str:
    """The most any scorer could reach on the held-out pool, beside the best PRM of the study."""
    c, n = summary["ceilings"], summary["n"]
    best = max((p for arm in ("uniform", "active_paper", "generations") for p in summary["points"].get(arm, [])),
               key=lambda p: p["mean"])
    return (f"**The ceilings** at best-of-{n}: pass@{n} {interval(c['pass'])}, the step-judge limit "
            f"{interval(c['step_judge'])}; the study's best PRM ({best['model']}) reaches {interval(best)}.")


def _selection_text(e: dict) -> str:
    """The selection effect as one bullet: step AUROC active - uniform per budget, the PRMs below the floor by reading."""
    diffs = "; ".join(f"{d['per_problem']} per problem {_auroc_interval(d)}" for d in e["auroc_difference"])
    weak = e["below_floor"]
    by = {r: [w for w in weak if w["reading"] == r] for r in ("selection effect", "did not fit", "weak")}
    named = "; ".join(f"{r}: " + ", ".join(f"{w['model']} (seed {w['seed']}, {w['step_auroc']:.3f})" for w in ws)
                      for r, ws in by.items() if ws)
    return (f"**The selection effect**: step AUROC on uniform held-out samples, active - uniform, {diffs}. "
            + (f"{len(weak)} PRMs below the lab's floor of {e['floor']}, {named}." if weak
               else f"No PRM below the lab's floor of {e['floor']}.")
            + " (The spread below names failed runs at a lower mark, 0.8.)")


def _runs_text(summary: dict) -> str:
    """How each PRM was trained, from the summary's recipe (summaries before it was recorded: single runs).

    >>> _runs_text({}), _runs_text({"rm": {"restarts": 3, "early_stop_patience": 4}})
    ('single runs, no restarts', 'the best of 3 restarts each, stopped early on held-out labels')
    """
    rm = summary.get("rm") or {}
    restarts = rm.get("restarts", 1)
    text = "single runs, no restarts" if restarts <= 1 else f"the best of {restarts} restarts each"
    return text + (", stopped early on held-out labels" if rm.get("early_stop_patience", 0) > 0 else "")


def write_outputs(out: Path, cfg, summary: dict, command: str) -> None:
    """``figures/*.png``, ``section.html`` and the standalone ``report.html`` of the study."""
    figs = [_plot_arms(summary, ("uniform", "active_strict", "active_paper"),
                       out / "figures" / "active-vs-uniform.png", "Convincing-wrong-answer selection vs uniform")]
    if "generations" in summary["factors"]:
        figs.append(_plot_arms(summary, ("uniform", "generations"), out / "figures" / "generations.png",
                               "Generations: label, retrain the selector, re-score, select"))
    write_study_pages(out, f"prmkit lab study active: preset {cfg.name}", section_html(summary, [Path(p) for p in figs]),
                      cfg, summary["timings"], command)

__all__ = ["difference_rows", "factor_rows", "findings", "point_rows", "section_html", "selection_rows", "write_outputs"]
