"""The automatic-labels study's pages: tables, figure and the HTML section of ``prmkit lab study autolabel``.

Every ``*_rows`` function returns (header, rows) of text, shared by the HTML page and the generated
tables of ``docs/study-autolabel.md`` (:mod:`prmkit.lab.doctables`).
"""

from __future__ import annotations

import functools
import html
import math
from pathlib import Path

import numpy as np

from prmkit.lab.numbers import interval, percent
from prmkit.lab.study.autolabel import ARMS, METHODS
from prmkit.lab.study.autolabel_quality import REASONS
from prmkit.lab.study.core import write_study_outputs

LABEL_SETS = ("human", *METHODS)
NAMES = {"human": "simulated human (phase 2)", "mc": "mc (Math-Shepherd)", "omegaprm": "omegaprm",
         "judge": "judge (served PRM critic)", "consensus": "consensus (mc + judge)"}


def _spread(per_seed: list) -> str:
    """Mean with the per-seed range, in percent."""
    vals = [v for v in per_seed if v is not None and not math.isnan(v)]
    if not vals:
        return "n/a"
    return f"{100 * np.mean(vals):.1f} [{100 * min(vals):.1f}, {100 * max(vals):.1f}]"


def quality_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Each label set against the oracle: mean over seeds [min, max], percent."""
    rows = []
    for m in LABEL_SETS:
        q = summary["quality"][m]
        rows.append([NAMES[m], f"{np.mean(q['labelled_solutions']):,.0f}", f"{np.mean(q['labelled_steps']):,.0f}",
                     *(_spread(q[k]["per_seed"]) for k in ("wrong_precision", "wrong_recall", "first_error_accuracy",
                                                           "agreement_correctness", "agreement_value"))])
    return (["labels", "labelled solutions", "labelled steps", "precision of 'wrong'", "recall of 'wrong'",
             "first error = oracle's", "agrees with the step's correctness", "agrees with 'off track' (value)"], rows)


def reasons_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Disagreements with the oracle by reason, summed over seeds, per label set."""
    rows = [[r, *(f"{summary['quality'][m]['reasons'][r]:,}" for m in LABEL_SETS)] for r in REASONS]
    return (["disagreement", *LABEL_SETS], rows)


def hard_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Are on-track false alarms on hard problems? The pool's solve rate of their problems against all."""
    rows = [[m, _spread(summary["quality"][m].get("solve_rate_on_track_alarms", [])),
             _spread(summary["quality"][m].get("solve_rate", []))] for m in LABEL_SETS]
    return (["labels", "solve rate of problems with on-track false alarms (%)", "solve rate of all pool problems (%)"],
            rows)


def cost_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """What each automatic labeller cost per seed (means over seeds)."""
    pool = summary["pool"]
    rows = []
    def mean(values: list) -> float:
        vals = [v for v in values if v is not None]
        return float(np.mean(vals)) if vals else 0.0

    for m in METHODS:
        c = {k: mean(v) for k, v in summary["cost"][m].items()}
        rows.append([m, f"{c['rollouts']:,.0f}", f"{c['rollouts'] / pool:.1f}", f"{c['rollouts_sampled']:,.0f}",
                     f"{c['judge_calls']:,.0f}", f"{c['judge_unparseable']:,.0f}", f"{c['seconds']:.1f}",
                     f"{c['consensus_kept']:,.0f}" if m == "consensus" else ""])
    return (["method", "rollouts", "rollouts per solution", "rollouts sampled (cache misses)", "judge calls",
             "unreadable judge replies", "seconds", "solutions kept"], rows)


def prm_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """PRMs trained on each arm: what they learned from and how they did on the held-out pool."""
    n, rows = summary["n"], []
    for arm, (method, source, which) in ARMS.items():
        r = summary["prm"][arm]
        learned = f"{method}, {'soft values' if source == 'value' else 'hard labels'}, " + (
            "the whole pool" if which == "all" else "omegaprm's rollout budget")
        cost = [c for c in r["cost"] if c is not None]
        base = [arm, learned, f"{np.mean(r['solutions']):,.0f}", f"{np.mean(r['wrong_steps']):,.0f}",
                f"{np.mean(cost):,.0f}" if cost else "people"]
        if not r["trained"]:
            rows.append([*base, "not trained: fewer labelled solutions than one batch", "", ""])
            continue
        aur = r["step_auroc"]
        rows.append([*base, f"{np.nanmean(aur):.3f} [{np.nanmin(aur):.3f}, {np.nanmax(aur):.3f}]",
                     interval(r[f"bon@{n}"]), "" if arm == "human" else interval(r["minus_human"], True)])
    return (["arm", "labels", "solutions", "wrong steps", "cost (rollouts + judge calls)",
             "step AUROC (held out) mean [min, max]", f"best-of-{n} (%)", "minus human (points)"], rows)


def difference_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    n = summary["n"]
    return (["paired difference", f"best-of-{n} (points, 95% CI)"],
            [[name, interval(c, True)] for name, c in summary["differences"].items()])


def findings(summary: dict) -> str:
    """What the numbers say, stated from them (never pre-written)."""
    q, n = summary["quality"], summary["n"]
    best = max(METHODS, key=lambda m: q[m]["first_error_accuracy"]["mean"])
    claim = summary["value_not_correctness"]
    cover = np.mean(q[best]["labelled_solutions"]) / summary["pool"]
    parts = [(f"of the automatic labellers, {best} finds the oracle's first error most often "
              f"({percent(q[best]['first_error_accuracy']['mean'])}% of the {100 * cover:.0f}% of solutions it labels; "
              f"simulated people {percent(q['human']['first_error_accuracy']['mean'])}%)"),
             ("mc labels agree more with 'the solution is off track' than with the oracle's step ratings in every "
              "seed (" + ", ".join(f"{100 * v:.1f} vs {100 * c:.1f}%" for v, c in
                                   zip(claim["agreement_value"], claim["agreement_correctness"])) + ")")
             if claim["holds_every_seed"] else
             "mc labels do not agree more with 'off track' than with the oracle's ratings in every seed"]
    d = summary["differences"]
    for name in ("consensus - mc", "consensus@cost - mc@cost"):
        if name in d:
            c = d[name]
            verdict = "helps" if c["ci95"][0] > 0 else "hurts" if c["ci95"][1] < 0 else "neither helps nor hurts"
            parts.append(f"consensus filtering {verdict} best-of-{n} ({name}: {interval(c, True)} points)")
    above = [a for a, r in summary["prm"].items() if r["trained"] and a != "human" and r["minus_human"]["ci95"][0] > 0]
    below = [a for a, r in summary["prm"].items() if r["trained"] and a != "human" and r["minus_human"]["ci95"][1] < 0]
    parts.append("PRMs above the human-label PRM (CI above 0): " + (", ".join(above) or "none")
                 + "; below it (CI below 0): " + (", ".join(below) or "none"))
    return "As measured: " + "; ".join(parts) + "."


def plot(summary: dict, path: Path) -> str:
    """Best-of-N per arm (95% CI) beside the arm's step AUROC, and each label set's first-error accuracy."""
    from prmkit.evaluate.plots import plt, save_figure  # the Agg backend: set where plots is imported

    arms = [a for a in ARMS if summary["prm"][a]["trained"]]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    y = np.arange(len(arms))
    mean = np.array([100 * summary["prm"][a][f"bon@{summary['n']}"]["mean"] for a in arms])
    ci = np.array([[100 * v for v in summary["prm"][a][f"bon@{summary['n']}"]["ci95"]] for a in arms])
    ax1.errorbar(mean, y, xerr=np.abs(ci.T - mean), fmt="o", capsize=3, color="C0")
    ax1.axvline(mean[arms.index("human")], color="0.5", linestyle=":", label="human-label PRM")
    ax1.set_yticks(y, arms)
    ax1.invert_yaxis()
    ax1.set_xlabel(f"best-of-{summary['n']} accuracy (%), 95% CI")
    ax1.grid(alpha=0.3)
    ax1.legend(fontsize=8, loc="lower left")  # the arms sit right of the CI bars' left ends there
    sets = list(LABEL_SETS)
    acc = [100 * summary["quality"][m]["first_error_accuracy"]["mean"] for m in sets]
    ax2.barh(np.arange(len(sets)), acc, color=["0.5", "C1", "C2", "C3", "C4"])
    ax2.set_yticks(np.arange(len(sets)), sets)
    ax2.invert_yaxis()
    ax2.set_xlabel("first error = the oracle's (%), training pool")
    ax2.grid(alpha=0.3, axis="x")
    fig.suptitle(f"Automatic labels, seeds {', '.join(map(str, summary['seeds']))}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def example_text(ex: dict) -> str:
    """One example disagreement as plain text: the problem, then every step with the oracle's rating, the
    label, mc's value and an arrow at the step the example is about."""
    lines = []
    for i, text in enumerate(ex["steps"]):
        value = ex["values"][i]
        label = ex["labels"][i]
        mark = "  <--" if i == ex["step"] else ""
        said = "." if label is None else f"{label:+d}"
        v = "" if value is None else f" value {value:.2f}"
        lines.append(f"{i:>2} oracle {ex['oracle'][i]:+d}  label {said}{v}  {text.splitlines()[0]}{mark}")
    return ex["problem"] + "\n\n" + "\n".join(lines)


def examples_markdown(summary: dict) -> str:
    """Every example disagreement of mc's labels (first seed), each under its reason, as markdown."""
    return "\n\n".join(f"*{ex['reason']}* (step {ex['step']}):\n\n```\n{example_text(ex)}\n```"
                         for ex in summary["examples"])


def _example_html(ex: dict) -> str:
    return (f"<p><b>{html.escape(ex['reason'])}</b> (step {ex['step']})</p><pre>"
            + html.escape(example_text(ex)) + "</pre>")


def section_html(summary: dict, figure_path: Path) -> str:
    from prmkit.evaluate.html import figure, table

    c = summary["config"]
    intro = (f"<p>Per seed, {summary['pool']:,} solutions of the train split are labelled five ways: the simulated "
             f"labellers (PRM800K phase 2) and <code>prmkit label auto</code> with mc, omegaprm, judge and consensus "
             f"(k = {c['k']} rollouts per probed prefix from the lab's rule-based generator, graded by the oracle's "
             f"answer check). <b>The judge is a stand-in for an LLM judge</b>: a lab PRM trained on {c['judge_labels']} "
             f"simulated human labels of other problems, served by <code>prmkit serve --critic</code> and asked with "
             f"ProcessBench's critique prompt through the openai client; it names the first step whose P(correct) is "
             f"below {c['judge_threshold']}. Each PRM below trains {summary['rm_steps']} steps on one arm's labels "
             f"({summary.get('restarts', 1)} restarts, the best kept by step AUROC on a held-out tenth of those labels) and is "
             f"evaluated on {html.escape(summary['eval'])}; seeds {', '.join(map(str, summary['seeds']))}, 95% bootstrap "
             f"intervals over seeds and problems, differences paired on the same problems.</p>")
    examples = "".join(_example_html(e) for e in summary["examples"])
    return "\n".join([
        "<h2>Study: automatic step labels against the oracle</h2>", intro,
        "<h3>Label quality (training pool, against the oracle)</h3>", table(*quality_rows(summary)),
        "<h3>Where they disagree with the oracle, and why</h3>", table(*reasons_rows(summary)),
        "<ul>" + "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in REASONS.items()) + "</ul>",
        table(*hard_rows(summary)),
        "<h3>Cost</h3>", table(*cost_rows(summary)),
        "<h3>PRMs trained on each label source</h3>", table(*prm_rows(summary)), table(*difference_rows(summary)),
        figure(Path(figure_path)), f"<p>{html.escape(findings(summary))}</p>",
        (f"<details><summary>example disagreements of mc labels (seed {summary['seeds'][0]})</summary>"
         f"{examples}</details>")])


write_outputs = functools.partial(write_study_outputs, name="autolabel", plot=plot, section_html=section_html)
"""``figures/autolabel.png``, ``section.html`` and the standalone ``report.html``."""


__all__ = ["cost_rows", "difference_rows", "example_text", "examples_markdown", "findings", "hard_rows", "plot", "prm_rows", "quality_rows", "reasons_rows",
           "section_html", "write_outputs"]
