"""The synthetic-supervision study's pages: its figure and the HTML section of ``prmkit lab study synthetic``."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from prmkit.lab.numbers import interval
from prmkit.lab.study.config import METHODS, NAMES
from prmkit.lab.study.core import write_study_outputs

# --- figure and pages ---------------------------------------------------------------------------------

def plot_synthetic(summary: dict, path: Path) -> str:
    """Best-of-N accuracy against samples per problem (log x), one line per method with 95% CI bars."""
    from prmkit.evaluate.plots import plt, save_figure  # the Agg backend: set where plots is imported

    ks = sorted(int(k) for k in summary["labels"])
    fig, ax = plt.subplots(figsize=(6, 4))
    for j, m in enumerate(METHODS):
        cells = [summary["accuracy"][m][str(k)] for k in ks]
        y = np.array([100 * c["mean"] for c in cells])
        err = np.array([[y[i] - 100 * c["ci95"][0], 100 * c["ci95"][1] - y[i]] for i, c in enumerate(cells)]).T
        ax.errorbar(np.array(ks) * (1 + 0.03 * (j - 1)), y, yerr=err, marker="o", capsize=3, color=f"C{j}",
                    label=NAMES[m])
    large = summary["large_prm"][f"bon@{summary['n']}"]["mean"]
    ax.axhline(100 * large, color="C3", linestyle="--", alpha=0.7, label="the large PRM itself")
    ax.axhline(100 * summary["first_sample"]["mean"], color="grey", linestyle=":", alpha=0.7, label="first sample")
    ax.set_xscale("log")
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.minorticks_off()
    ax.set_xlabel(f"samples per training problem ({summary['config']['problems']} problems)")
    ax.set_ylabel(f"best-of-{summary['n']} accuracy (%)")
    ax.set_title(f"Synthetic supervision, seeds {', '.join(map(str, summary['seeds']))} (95% CI)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def results_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Accuracy per method and budget, the two gaps and the ordering's verdict, as (header, rows) of text."""
    rows = []
    for k in sorted(summary["labels"], key=int):
        o = summary["ordering"][k]
        verdict = ("holds" + (" (both CIs above 0)" if o["significant"] else " (not significant)")) if o["holds"] \
            else "does not hold: " + ", ".join(n for n in ("process>outcome", "outcome>answer") if not o[n]) + " fails"
        rows.append([k, f"{summary['labels'][k]:,}", *(interval(summary["accuracy"][m][k]) for m in METHODS),
                     *(interval(summary["differences"][d][k], True) for d in ("process-outcome", "outcome-answer")), verdict])
    n = summary["n"]
    return (["samples / problem", "labels", f"process @{n}", f"large-PRM outcome @{n}", f"answer check @{n}",
             "process - outcome", "outcome - answer", "process > outcome > answer"], rows)


def large_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """The large PRM per seed: held-out step AUROC, best-of-N, and how its labels agree with the oracle's."""
    rows = []
    differ = all("outcome_vs_answer" in v["large_prm"]["agreement"] for v in summary["per_seed"].values())
    for s, v in summary["per_seed"].items():
        lp, a = v["large_prm"], v["large_prm"]["agreement"]
        rows.append([s, f"{lp['step_auroc_eval']:.3f}", f"{100 * lp['bon@' + str(summary['n'])]:.1f}",
                     f"{100 * a['flagged']:.1f}", f"{100 * a['process_first_error']:.1f}", f"{100 * a['outcome']:.1f}",
                     f"{100 * a['answer_check']:.1f}", *([f"{100 * a['outcome_vs_answer']:.1f}"] if differ else []),
                     f"{100 * a['caught_right_answer_wrong_step']:.1f}"])
    return (["seed", "step AUROC (held out)", f"best-of-{summary['n']}", "flags a step (%)",
             "first error = oracle's (%)", "outcome label = oracle's (%)", "grade = oracle's outcome (%)",
             *(["its outcome label and the grade differ (%)"] if differ else []),
             "right answer, wrong step: flagged (%)"], rows)


def threshold_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """The large PRM's labels against the oracle's at each threshold, mean over seeds."""
    seeds = list(summary["per_seed"].values())
    rows = []
    for t in seeds[0]["large_prm"]["by_threshold"]:
        cells = [[s["large_prm"]["by_threshold"][t][key] for s in seeds]
                 for key in ("flagged", "process_first_error", "outcome", "answer_check", "caught_right_answer_wrong_step")]
        rows.append([t, *(f"{100 * np.mean(c):.1f}" for c in cells)])
    wrong = np.mean([s["large_prm"]["agreement"]["oracle_wrong"] for s in seeds])
    return (["P(negative) >", f"flags a step (%; oracle: {100 * wrong:.1f})", "first error = oracle's (%)",
             "outcome label = oracle's (%)", "grade = oracle's outcome (%)", "right answer, wrong step: flagged (%)"],
            rows)


def ceilings_text(summary: dict) -> str:
    """The held-out pool's ceilings at best-of-N, where the summary holds them (from rm_epochs on), as a clause.

    >>> ceilings_text({}), ceilings_text({"n": 16, "ceilings": {k: {"mean": 0.5, "ci95": [0.4, 0.6]} for k in ("pass", "step_judge")}})
    ('', '; the most any scorer could reach: pass@16 50.0 [40.0, 60.0], the step-judge limit 50.0 [40.0, 60.0]')
    """
    if "ceilings" not in summary:
        return ""
    c, n = summary["ceilings"], summary["n"]
    return f"; the most any scorer could reach: pass@{n} {interval(c['pass'])}, the step-judge limit {interval(c['step_judge'])}"


def steps_text(summary: dict) -> str:
    """The small models' optimiser steps: one number, or per budget where passes raise the caps, and "at most"
    where they stop early (summaries that record it).

    >>> steps_text({"rm_steps": 100}), steps_text({"rm_steps": 600, "rm_steps_per_budget": {"1": 600, "16": 2000},
    ...                                            "rm": {"early_stop_patience": 4}})
    ('100 steps', 'at most 600 to 2,000 steps by budget')
    """
    caps = sorted(set((summary.get("rm_steps_per_budget") or {}).values())) or [summary["rm_steps"]]
    text = f"{caps[0]:,} steps" if len(caps) == 1 else f"{caps[0]:,} to {caps[-1]:,} steps by budget"
    return ("at most " if summary.get("rm", {}).get("early_stop_patience") else "") + text


def section_html(summary: dict, figure_path: Path) -> str:
    """The study's HTML fragment (from ``<h2>``), included verbatim in the lab report."""
    from prmkit.evaluate.html import figure, table

    c, n = summary["config"], summary["n"]
    held = [k for k, o in summary["ordering"].items() if o["holds"]]
    teacher = ("" if c.get("teacher", "prm") == "prm" else
               "<b>Teacher: the exact oracle</b> (a perfect large PRM; the large PRM below is only a reference). ")
    note = (f"<p>{teacher}A large PRM ({summary['large_prm']['labels']:,} simulated labels, {summary['large_prm']['steps']} steps"
            f"{' at most' if summary.get('rm', {}).get('early_stop_patience') else ''}) "
            f"labels fresh samples of {c['problems']} training problems per seed; the same solutions are labelled "
            f"three ways: its process labels (steps up to its first predicted error, P(negative) &gt; {c['threshold']}), "
            f"its outcome labels, and final-answer checking. Small reward models ({steps_text(summary)}) learn "
            f"from each; best-of-{n} on {c['eval_problems']} held-out problems x {c['eval_samples']} samples per seed. "
            f"Accuracy in %, mean over seeds {', '.join(map(str, summary['seeds']))} with 95% bootstrap intervals "
            f"(seeds, then problems); differences are paired on the same problems. The paper's ordering "
            f"(process &gt; large-PRM outcome &gt; answer checking) holds on the means at "
            f"{len(held)} of {len(summary['ordering'])} budgets.</p>")
    rows = [[s, k, *(f"{100 * v['accuracy'][f'{m}@{k}']:.1f}" for m in METHODS)]
            for s, v in summary["per_seed"].items() for k in sorted(summary["labels"], key=int)]
    return "\n".join([
        "<h2>Synthetic supervision (a large PRM labels data for small reward models)</h2>", note,
        table(*results_rows(summary)), figure(Path(figure_path)),
        (f"<p class='note'>first sample: {interval(summary['first_sample'])}; the large PRM itself, best-of-{n}: "
         f"{interval(summary['large_prm'][f'bon@{n}'])}{ceilings_text(summary)}.</p>"),
        "<h3>The large PRM and its labels (against the oracle, on the fresh samples)</h3>", table(*large_rows(summary)),
        ("<p class='note'>Its labels at other thresholds (a diagnostic, mean over seeds; training used "
         f"{c['threshold']}):</p>"), table(*threshold_rows(summary)),
        f"<details><summary>per seed: best-of-{n} accuracy (%)</summary>"
        + table(["seed", "samples / problem", *(NAMES[m] for m in METHODS)], rows) + "</details>"])


write_outputs = functools.partial(write_study_outputs, name="synthetic", plot=plot_synthetic, section_html=section_html)
"""``figures/synthetic.png``, ``section.html`` and the standalone ``report.html``."""

__all__ = ["large_rows", "plot_synthetic", "results_rows", "section_html", "threshold_rows", "write_outputs"]
