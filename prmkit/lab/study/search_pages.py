"""The search study's pages: its figure, its tables (shared with ``docs/search.md``) and the HTML section of
``prmkit lab study search``."""

from __future__ import annotations

import functools
import math
from pathlib import Path

from prmkit.lab.numbers import interval, percent
from prmkit.lab.study.core import write_study_outputs

SCORER_NAMES = {"prm": "the lab PRM", "oracle": "the oracle (exact step truth)"}


def cells_of(summary: dict, scorer: str, trees: bool = False) -> list[dict]:
    """The summary's cells of ``scorer`` (``trees``: the tree searches only), by budget then strategy."""
    order = {s: i for i, s in enumerate(summary["strategies"])}
    return sorted((c for c in summary["cells"] if c["scorer"] == scorer and (not trees or "vs_best_of_n_compute" in c)),
                  key=lambda c: (c["n"], order[c["strategy"]]))


def verdict(difference: dict) -> str:
    """The study's rule on a paired difference from best-of-N: ``beats`` where its 95% interval lies above 0,
    ``loses`` where below, else ``no difference``.

    >>> verdict({"mean": 0.1, "ci95": [0.02, 0.2]}), verdict({"mean": 0.0, "ci95": [-0.1, 0.1]})
    ('beats', 'no difference')
    """
    lo, hi = difference["ci95"]
    return "beats" if lo > 0 else "loses" if hi < 0 else "no difference"


def tokens(c: dict) -> str:
    return f"{c['generated_tokens']:,.0f} + {c['prm_tokens']:,.0f}"


def accuracy_rows(summary: dict, scorer: str) -> tuple[list[str], list[list[str]]]:
    """Per budget and strategy: answer and valid-solution accuracy, each against best-of-N at the same N, tokens,
    and the share of right answers reached through a wrong step."""
    rows = []
    for c in cells_of(summary, scorer):
        own, d = c["strategy"] == "best_of_n", c["vs_best_of_n"]
        rows.append([str(c["n"]), c["strategy"], interval(c["gold"]), "" if own else interval(d["gold"], True),
                     interval(c["valid"]), "" if own else interval(d["valid"], True), tokens(c),
                     interval(c["exploitation"])])
    return (["N", "strategy", "answer accuracy", "- best-of-N (same N)", "valid-solution accuracy",
             "- best-of-N (same N)", "tokens per problem (generated + read by the PRM)",
             "right answers through a wrong step"], rows)


def compute_rows(summary: dict, scorer: str) -> tuple[list[str], list[list[str]]]:
    """Each tree search against best-of-N at its own tokens per problem: N* per seed, the differences, the rule's
    verdict (capped: best-of-N read at the pool's size, with less compute than the tree)."""
    rows = []
    for c in cells_of(summary, scorer, trees=True):
        m = c["vs_best_of_n_compute"]
        cap = " (capped)" if m["capped"] else ""
        rows.append([str(c["n"]), c["strategy"], f"{c['cost']:,.0f}", ", ".join(f"{x:.0f}" for x in m["n_star"]),
                     interval(m["gold"], True), verdict(m["gold"]) + cap, interval(m["valid"], True),
                     verdict(m["valid"]) + cap])
    return (["N", "strategy", "tokens per problem", "best-of-N's N* per seed", "answer accuracy - best-of-N",
             "verdict", "valid-solution accuracy - best-of-N", "verdict"], rows)


def ceiling_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Per budget: the pool's pass@N and step-judge limit (a valid solution among N)."""
    return (["N", "pass@N", "step-judge limit (a valid sample among N)"],
            [[str(c["n"]), interval(c["pass"]), interval(c["judge"])] for c in summary["ceilings"]])


def difficulty_rows(summary: dict, scorer: str, measure: str) -> tuple[list[str], list[list[str]]]:
    """Each tree search's ``measure`` (gold or valid) per difficulty bin, with its difference from best-of-N at
    equal compute; best-of-N's own at the largest N for reference."""
    bins = summary["difficulty"]["bins"]

    def cell(b: dict, d: dict | None) -> str:
        if not b["problems"]:
            return "n/a"
        return percent(b[measure]["mean"]) + ("" if d is None else f" ({interval(d, True)}, {verdict(d)})")

    top = max(summary["budgets"])
    bon = next(c for c in cells_of(summary, scorer) if c["strategy"] == "best_of_n" and c["n"] == top)
    rows = [[str(top), "best_of_n", *(cell(bon["bins"][name], None) for name in bins)]]
    for c in cells_of(summary, scorer, trees=True):
        d = c["vs_best_of_n_compute"]["bins"]
        rows.append([str(c["n"]), c["strategy"], *(cell(c["bins"][name], d[name][measure]) for name in bins)])
    edges = summary["difficulty"]["edges"]
    names = [f"hard: pass@1 < {edges[0]:g} ({bins['hard']} problems)", f"medium ({bins['medium']})",
             f"easy: pass@1 >= {edges[-1]:g} ({bins['easy']})"]
    return (["N", "strategy", *names], rows)


MEASURES = (("gold", "answer accuracy"), ("valid", "valid-solution accuracy"))


def finding_lines(summary: dict) -> list[str]:
    """Per scorer and measure, the rule's reading at equal compute at each budget: which tree searches beat
    best-of-N and which lose to it (with their paired differences); the rest are no different."""
    out = []
    for scorer in summary["scorers"]:
        for measure, what in MEASURES:
            parts = []
            for n in summary["budgets"]:
                said = []
                for c in (c for c in cells_of(summary, scorer, trees=True) if c["n"] == n):
                    m = c["vs_best_of_n_compute"]
                    if verdict(m[measure]) != "no difference":
                        said.append(f"{c['strategy']} {verdict(m[measure])} it ({interval(m[measure], True)}"
                                    + (", capped" if m["capped"] else "") + ")")
                parts.append(f"N = {n}: " + ("; ".join(said) if said else "none differs"))
            out.append(f"With {SCORER_NAMES[scorer]}, {what} against best-of-N at the same tokens: "
                       + ". ".join(parts) + ".")
    return out


def findings(summary: dict) -> str:
    """:func:`finding_lines` as a markdown list (docs/search.md)."""
    return "\n".join(f"- {line}" for line in finding_lines(summary))


def with_prm_rows(summary: dict):
    return accuracy_rows(summary, "prm")


def with_oracle_rows(summary: dict):
    return accuracy_rows(summary, "oracle")


def compute_prm_rows(summary: dict):
    return compute_rows(summary, "prm")


def compute_oracle_rows(summary: dict):
    return compute_rows(summary, "oracle")


def difficulty_prm_rows(summary: dict):
    return difficulty_rows(summary, "prm", "gold")


def difficulty_prm_valid_rows(summary: dict):
    return difficulty_rows(summary, "prm", "valid")


def recipe_rows(record: dict) -> tuple[list[str], list[list[str]]]:
    """``scripts/search_prm_recipe.py``'s record: each label budget tried, its PRM's step AUROC per development
    seed against the floor, in the rule's order.

    >>> r = {"floor": 0.9, "tried": [{"labels": 2000, "seeds": [0, 1], "prm_step_auroc": [0.85, 0.95], "passes": False}]}
    >>> recipe_rows(r)[1]
    [['2,000', '0.850, 0.950', '0.850', 'no']]
    """
    if not record["tried"]:
        raise ValueError("the recipe record tried no budget")
    rows = [[f"{t['labels']:,}", ", ".join(f"{a:.3f}" for a in t["prm_step_auroc"]), f"{min(t['prm_step_auroc']):.3f}",
             "yes" if t["passes"] else "no"] for t in record["tried"]]
    return ["labelled solutions", f"step AUROC, seeds {', '.join(map(str, record['tried'][0]['seeds']))}", "lowest",
            f"all at least {record['floor']}"], rows


def agreement_rows(record: dict) -> tuple[list[str], list[list[str]]]:
    """``scripts/search_label_agreement.py``'s record: per seed, the training labels against the oracle, and the PRM
    trained on them where the run's summary was there to read.

    >>> r = {"seeds": [0], "prm_step_auroc": [0.9], "per_seed": [{"labelled_steps": 10, "wrong_share": 0.1,
    ...      "label_auroc": 0.95, "wrong_labelled_wrong": 0.94, "valid_labelled_wrong": 0.04}]}
    >>> agreement_rows(r)[1]
    [['0', '10', '10.0', '0.950', '94.0', '4.0', '0.900']]
    """
    prm = record.get("prm_step_auroc") or [None] * len(record["seeds"])
    rows = [[str(s), f"{a['labelled_steps']:,}", f"{100 * a['wrong_share']:.1f}", f"{a['label_auroc']:.3f}",
             f"{100 * a['wrong_labelled_wrong']:.1f}", f"{100 * a['valid_labelled_wrong']:.1f}",
             "-" if p is None else f"{p:.3f}"] for s, a, p in zip(record["seeds"], record["per_seed"], prm)]
    return ["seed", "labelled steps", "wrong by the oracle %", "labels' step AUROC", "wrong steps labelled -1 %",
            "valid steps labelled -1 %", "PRM's step AUROC (pool)"], rows


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
            f"M = {summary['m']}. Best-of-N and weighted best-of-N are read from a pool of {summary['pool']} samples "
            f"per problem; beam search, DVTS and particle filtering run step by step. The PRM's step AUROC on the "
            f"pool, per seed: {aurocs}. Accuracy in %, 95% bootstrap intervals (seeds, then problems; within a "
            f"difficulty bin and for the share through a wrong step, problems pooled); differences paired by "
            f"problem.</p>")
    parts = ["<h2>Search with a PRM (beam, DVTS, particles against best-of-N)</h2>", note,
             "<ul>" + "".join(f"<li>{line}</li>" for line in finding_lines(summary)) + "</ul>", figure(Path(figure_path)),
             "<h3>Ceilings of the pool</h3>", table(*ceiling_rows(summary))]
    for scorer in summary["scorers"]:
        parts += [f"<h3>With {SCORER_NAMES[scorer]}: at equal compute</h3>", table(*compute_rows(summary, scorer)),
                  "<p class='note'>At equal N:</p>", table(*accuracy_rows(summary, scorer))]
        for measure, what in MEASURES:
            parts += [(f"<p class='note'>By difficulty ({what}; in brackets the difference from best-of-N at "
                       "equal compute):</p>"), table(*difficulty_rows(summary, scorer, measure))]
    return "\n".join(parts)


write_outputs = functools.partial(write_study_outputs, name="search", plot=plot_search, section_html=section_html)
"""``figures/search.png``, ``section.html`` and the standalone ``report.html``."""

__all__ = ["MEASURES", "accuracy_rows", "ceiling_rows", "compute_oracle_rows", "compute_prm_rows", "compute_rows",
           "difficulty_prm_rows", "difficulty_prm_valid_rows", "difficulty_rows", "finding_lines", "findings",
           "plot_search", "section_html", "tokens", "verdict", "with_oracle_rows", "with_prm_rows", "write_outputs"]
