"""The search study's pages: its figure, its tables (shared with ``docs/search.md``) and the HTML section of
``prmkit lab study search``."""

from __future__ import annotations

import functools
import math
from pathlib import Path

from prmkit.lab.numbers import interval, percent
from prmkit.lab.study.core import write_study_outputs

SCORER_NAMES = {"prm": "the lab PRM", "oracle": "the oracle (exact step truth)"}


def cells_of(summary: dict, scorer: str) -> list[dict]:
    """The summary's cells of ``scorer``, by budget then strategy in the summary's order."""
    order = {s: i for i, s in enumerate(summary["strategies"])}
    return sorted((c for c in summary["cells"] if c["scorer"] == scorer), key=lambda c: (c["n"], order[c["strategy"]]))


def accuracy_rows(summary: dict, scorer: str) -> tuple[list[str], list[list[str]]]:
    """Per budget and strategy: answer and valid-solution accuracy, each against best-of-N, cost, exploitation."""
    rows = []
    for c in cells_of(summary, scorer):
        own = c["strategy"] == "best_of_n"
        rows.append([str(c["n"]), c["strategy"], interval(c["gold"]),
                     "" if own else interval(c["vs_best_of_n"]["gold"], True), interval(c["valid"]),
                     "" if own else interval(c["vs_best_of_n"]["valid"], True),
                     f"{c['generated_tokens']:,.0f} + {c['prm_tokens']:,.0f}",
                     percent(c["exploitation"])])
    return (["N", "strategy", "answer accuracy", "- best-of-N", "valid-solution accuracy", "- best-of-N",
             "tokens per problem (generated + read by the PRM)", "right answers through a wrong step"], rows)


def ceiling_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Per budget: the pool's pass@N and step-judge limit (a valid solution among N samples)."""
    return (["N", "pass@N", "step-judge limit (a valid sample among N)"],
            [[str(c["n"]), interval(c["pass"]), interval(c["judge"])] for c in summary["ceilings"]])


def difficulty_rows(summary: dict, scorer: str, n: int) -> tuple[list[str], list[list[str]]]:
    """At budget ``n``: each strategy's answer accuracy per difficulty bin, and its difference from best-of-N."""
    bins = summary["difficulty"]["bins"]
    rows = []
    for c in (c for c in cells_of(summary, scorer) if c["n"] == n):
        row = [c["strategy"]]
        for name in bins:
            b = c["bins"][name]
            row.append("n/a" if not b["problems"] else percent(b["gold"]["mean"]) if c["strategy"] == "best_of_n"
                       else f"{percent(b['gold']['mean'])} ({interval(b['vs_best_of_n_gold'], True)})")
        rows.append(row)
    edges = summary["difficulty"]["edges"]
    names = [f"hard: pass@1 < {edges[0]:g} ({bins['hard']})", f"medium ({bins['medium']})",
             f"easy: pass@1 >= {edges[-1]:g} ({bins['easy']})"]
    return (["strategy", *names], rows)


def verdict(difference: dict) -> str:
    """The study's rule on a paired difference from best-of-N: ``beats`` where its 95% interval lies above 0,
    ``loses`` where below, else ``no difference``.

    >>> verdict({"mean": 0.1, "ci95": [0.02, 0.2]}), verdict({"mean": 0.0, "ci95": [-0.1, 0.1]})
    ('beats', 'no difference')
    """
    lo, hi = difference["ci95"]
    return "beats" if lo > 0 else "loses" if hi < 0 else "no difference"


def finding_lines(summary: dict) -> list[str]:
    """Per scorer and measure, the rule's reading at each budget: which strategies beat best-of-N and which lose
    to it (with their paired differences); the rest are no different."""
    out = []
    for scorer in summary["scorers"]:
        for measure, what in (("gold", "answer accuracy"), ("valid", "valid-solution accuracy")):
            parts = []
            for n in summary["budgets"]:
                cells = [c for c in cells_of(summary, scorer) if c["n"] == n and c["strategy"] != "best_of_n"]
                said = [f"{c['strategy']} {verdict(c['vs_best_of_n'][measure])} it "
                        f"({interval(c['vs_best_of_n'][measure], True)})" for c in cells
                        if verdict(c["vs_best_of_n"][measure]) != "no difference"]
                parts.append(f"N = {n}: " + ("; ".join(said) if said else "none differs"))
            out.append(f"With {SCORER_NAMES[scorer]}, {what} against best-of-N at the same N: " + ". ".join(parts) + ".")
    return out


def findings(summary: dict) -> str:
    """:func:`finding_lines` as a markdown list (docs/search.md)."""
    return "\n".join(f"- {line}" for line in finding_lines(summary))


def prm_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    return accuracy_rows(summary, "prm")


def oracle_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    return accuracy_rows(summary, "oracle")


def difficulty_prm_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    return difficulty_rows(summary, "prm", max(summary["budgets"]))


def difficulty_oracle_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    return difficulty_rows(summary, "oracle", max(summary["budgets"]))


def plot_search(summary: dict, path: Path) -> str:
    """Accuracy against tokens per problem (log x): one line per strategy, the PRM solid, the oracle dashed; answer
    accuracy left, valid-solution accuracy right."""
    from prmkit.evaluate.plots import plt, save_figure  # the Agg backend: set where plots is imported

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, measure, title in zip(axes, ("gold", "valid"), ("answer accuracy", "valid-solution accuracy")):
        for j, strategy in enumerate(summary["strategies"]):
            for scorer, style in (("prm", "-"), ("oracle", "--")):
                cells = [c for c in cells_of(summary, scorer) if c["strategy"] == strategy]
                if cells:
                    ax.plot([c["cost"] for c in cells], [100 * c[measure]["mean"] for c in cells], style, marker="o",
                            color=f"C{j}", label=f"{strategy} ({scorer})")
        ax.set_xscale("log")
        ax.set_xlabel("tokens per problem (generated + scored by the PRM)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("%")
    axes[1].legend(fontsize=7, ncol=2)
    fig.suptitle(f"Search on the lab policy, seeds {', '.join(map(str, summary['seeds']))}", fontsize=10)
    return save_figure(fig, path)


def section_html(summary: dict, figure_path: Path) -> str:
    """The study's HTML fragment (from ``<h2>``), included verbatim in the lab report."""
    from prmkit.evaluate.html import figure, table

    aurocs = ", ".join("n/a" if math.isnan(a) else f"{a:.3f}" for a in summary["prm_step_auroc"])
    note = (f"<p>The lab policy ({summary['policy']}, pass@1 {interval(summary['policy_pass1'])}) searched on "
            f"{summary['problems']} held-out problems per seed (seeds {', '.join(map(str, summary['seeds']))}), "
            f"M = {summary['m']}. Best-of-N and weighted best-of-N are read from disjoint subsets of a pool of "
            f"{max(summary['budgets'])} samples per problem; beam search, DVTS and particle filtering run step by step. "
            f"The PRM's step AUROC on the pool, per seed: {aurocs}. Accuracy in %, 95% bootstrap intervals (seeds, "
            f"then problems); differences paired by problem.</p>")
    parts = ["<h2>Search with a PRM (beam, DVTS, particles against best-of-N)</h2>", note,
             "<ul>" + "".join(f"<li>{line}</li>" for line in finding_lines(summary)) + "</ul>", figure(Path(figure_path)),
             "<h3>Ceilings of the pool</h3>", table(*ceiling_rows(summary))]
    for scorer in summary["scorers"]:
        parts += [f"<h3>With {SCORER_NAMES[scorer]}</h3>", table(*accuracy_rows(summary, scorer)),
                  (f"<p class='note'>By difficulty at N = {max(summary['budgets'])} (answer accuracy; in brackets "
                   "the difference from best-of-N):</p>"), table(*difficulty_rows(summary, scorer, max(summary["budgets"])))]
    return "\n".join(parts)


write_outputs = functools.partial(write_study_outputs, name="search", plot=plot_search, section_html=section_html)
"""``figures/search.png``, ``section.html`` and the standalone ``report.html``."""

__all__ = ["accuracy_rows", "ceiling_rows", "difficulty_oracle_rows", "difficulty_prm_rows", "difficulty_rows",
           "finding_lines", "findings", "oracle_rows", "plot_search", "prm_rows", "section_html", "verdict",
           "write_outputs"]
