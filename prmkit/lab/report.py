"""The lab run's page: ``RUN_DIR/report.html``, self-contained, every seed shown.

Sections: the command that reproduces the run; the lab's targets checked per seed; a table of
the headline numbers per seed (held-out pool and OOD family) with 95% bootstrap CIs; best-of-N
figures per seed; the label-budget sweep when the run has one; step-level AUROC per kind of error;
wall time per stage; the sections of the studies run in the same folder (``study-*/section.html``,
see :mod:`prmkit.lab.study`); every number at every N (:func:`prmkit.evaluate.html.bon_section`); the page is built from
prmkit's templates (:mod:`prmkit.evaluate.html`); the configuration, collapsed, one row per field
(:func:`prmkit.evaluate.html.config_block`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from markupsafe import Markup

from prmkit.evaluate.html import bon_section, figure, page, table
from prmkit.evaluate.plots import plot_bon
from prmkit.io import atomic_output
from prmkit.lab.numbers import interval
from prmkit.lab.scoring import sweep_rows
from prmkit.lab.targets import (
    ARM_NAMES,
    POOL_NAMES,
    auroc_spreads,
    findings_rows,
    has_gold,
    has_per_problem,
    picks_rows,
    pooled_findings,
    pooled_gaps,
    pooled_picks,
    pooled_rows,
)

POOLS = tuple(POOL_NAMES)
"""The pools every lab run evaluates: held out, the held-out family."""
PLOTTED = ("pass", "maj_acc", "bon_acc[prm_min]", "bon_acc[prm_product]", "bon_acc[orm]",
           "bon_acc[likelihood_mean]", "bon_acc[likelihood_min]", "weighted_acc[prm_min]")
TARGETS = (("PRM@N - ORM@N", "prm_min@{N}", "orm@{N}", 0.15),
           ("PRM@N - majority@N", "prm_min@{N}", "majority@{N}", 0.15),
           ("PRM@16 - label-free@16", "prm_min@16", "label_free@16", 0.10))
"""The lab's targets: (name, PRM metric, baseline metric, least gap). PRM means ``prm_min``, the
aggregation chosen before any run (the study found min more robust than the product); step AUROC
must reach :data:`AUROC_TARGET`. N is the pool's largest N (64 in the default preset)."""
AUROC_TARGET = 0.90


def check_targets(headline: dict) -> dict:
    """Each target's gap (fractions) and whether it is met, for one seed's held-out headline."""
    n = headline["N"]
    out = {}
    for name, a, b, least in TARGETS:
        ka, kb = a.format(N=n), b.format(N=n)
        if ka not in headline or kb not in headline:
            continue
        gap = headline[ka] - headline[kb]
        out[name.replace("@N", f"@{n}")] = {"gap": gap, "least": least, "met": gap >= least, "direction": gap > 0}
    auroc = headline["prm_step_auroc"]
    out["PRM step AUROC"] = {"value": auroc, "least": AUROC_TARGET, "met": auroc >= AUROC_TARGET}
    return out


def _load(run_dir: Path, seed: int, pool: str) -> dict:
    return json.loads((run_dir / f"seed-{seed}" / "evaluate" / f"{pool}.json").read_text())


def _ci(result: dict, metric: str) -> str:
    m = result["metrics"].get(metric)
    return "-" if m is None else interval(m)


def headline_rows(result: dict) -> list[tuple[str, str]]:
    n = max(result["ns"])
    rows = [(f"PRM {h}@{n}", _ci(result, f"bon_acc@{n}[prm_{h}]")) for h in ("min", "product", "last", "mean")]
    rows += [(f"ORM@{n}", _ci(result, f"bon_acc@{n}[orm]")), (f"majority@{n}", _ci(result, f"maj_acc@{n}")),
             (f"weighted vote (PRM min)@{n}", _ci(result, f"weighted_acc@{n}[prm_min]")),
             (f"weighted vote (ORM)@{n}", _ci(result, f"weighted_acc@{n}[orm]"))]
    for k in dict.fromkeys([16, n]):
        if k in result["ns"]:
            rows += [(f"label-free: likelihood mean@{k}", _ci(result, f"bon_acc@{k}[likelihood_mean]")),
                     (f"label-free: likelihood min@{k}", _ci(result, f"bon_acc@{k}[likelihood_min]"))]
            if k != n:
                rows.append((f"PRM min@{k}", _ci(result, f"bon_acc@{k}[prm_min]")))
    rows += [(f"pass@{n}", _ci(result, f"pass@{n}")), ("first sample", _ci(result, "first_acc")),
             ("PRM step AUROC", f"{result['steps']['prm']['auroc']:.3f}"),
             ("likelihood step AUROC (base model, step's least likely token)",
              f"{result['steps']['likelihood']['auroc']:.3f}")]
    return rows


def seed_table(results: dict[int, dict]) -> str:
    seeds = sorted(results)
    rows = [[name] + [dict(headline_rows(results[s]))[name] for s in seeds] for name, _ in headline_rows(results[seeds[0]])]
    return table(["metric (%, 95% CI)"] + [f"seed {s}" for s in seeds], rows)


def targets_table(checks: dict[int, dict]) -> str:
    seeds = sorted(checks)
    names = list(checks[seeds[0]])
    rows = []
    for name in names:
        cells = []
        for s in seeds:
            c = checks[s][name]
            value = f"{c['value']:.3f}" if "value" in c else f"{100 * c['gap']:+.1f} pts"
            cells.append(f"{value} {'met' if c['met'] else 'MISSED'}")
        least = checks[seeds[0]][name]["least"]
        rows.append([name, f">= {least:.2f}" if name.endswith("AUROC") else f">= {100 * least:.0f} pts"] + cells)
    return table(["target", "needs"] + [f"seed {s}" for s in seeds], rows)


def _plot(result: dict, path: Path, title: str) -> str:
    shown = {k: v for k, v in result["curves"].items() if k in PLOTTED or k == "first_acc"}
    return plot_bon({"ns": result["ns"], "curves": shown}, path, title=title)


def _plot_sweep(rows_by_seed: dict[int, list[dict]], path: Path) -> str:
    import matplotlib.pyplot as plt

    from prmkit.evaluate.plots import legend_below, save_figure

    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for i, (seed, rows) in enumerate(sorted(rows_by_seed.items())):
        x = [r["labelled"] for r in rows]
        for j, (key, label) in enumerate((("prm_min", "PRM (min)"), ("orm", "ORM"), ("majority", "majority"))):
            ax.plot(x, [100 * r[key] for r in rows], marker="o", color=f"C{j}", alpha=0.8,
                    linestyle="--" if key == "majority" else "-", label=label if i == 0 else None)
    ax.set_xscale("log")
    budgets = sorted({r["labelled"] for rows in rows_by_seed.values() for r in rows})
    ax.set_xticks(budgets)
    ax.set_xticklabels([f"{b:,}" for b in budgets])
    ax.minorticks_off()
    ax.set_xlabel("labelled solutions")
    ax.set_ylabel("best-of-N accuracy at the largest N (%)")
    ax.set_title("Label-budget sweep (one line per seed)", fontsize=10)
    ax.grid(alpha=0.3)
    legend_below(fig, *ax.get_legend_handles_labels())
    return save_figure(fig, path)


def _note(cfg) -> Markup:
    data = "the equal-data pair (PRM and ORM on the same uniform labelled solutions, the ORM on their grades)"
    if cfg.paper_arms:
        data += (f"; the paper's arms: prm_paper on as many solutions chosen by the equal-data PRM (most convincing "
                 f"wrong answers, the 80/20 mix), orm_paper on {cfg.orm_ratio}x as many uniform samples, graded")
    return Markup("<p class='note'>PRM = process reward model on the simulated labellers' step labels, ORM = outcome "
                  "reward model, both from the same base model by the same training protocol (restarts and early "
                  "stopping on one validation split per seed); {}; label-free = the "
                  "base model's own likelihood of a solution (mean or min token log-probability). Definitions: "
                  "docs/lab.md, docs/evaluation.md.</p>").format(data)


def timings_table(timings: dict) -> str:
    rows = [[name, str(t.get("jobs", 1)), str(t.get("ran", "")), f"{t.get('job_seconds', 0):.1f}",
             f"{t['wall_seconds']:.1f}"] for name, t in timings.items()]
    return table(["stage", "jobs", "run now (rest cached)", "compute s (sum over jobs, when computed)",
                   "wall s (this invocation)"], rows)


FINDINGS_NOTE = ("<p class='note'>Findings, not targets: an interval that covers 0 is no difference found. pass@N is "
                 "what a perfect outcome judge reaches; the step-judge limit (a sample valid at every step among the "
                 "N) is the most a process judge can; valid-solution accuracy scores the picked solution by its "
                 "steps (a right answer through a wrong step is not valid).</p>")


PICKS_NOTE = ("<p class='note'>Each scorer's best-of-N pick sorted by the oracle: valid at every step; a right "
              "answer through a wrong step; a wrong answer whose every error is delayed (in plans: every constraint "
              "kept, the plan only later than it could be, or led into a dead end); a wrong answer with an error "
              "visible on its line. At N = 1 every scorer picks at random: the pool's own mix (of its answered samples, "
              "since one without an answer is never picked).</p>")


def pooled_numbers(cfg, results: dict, seeds: list[int]) -> dict:
    """Every number pooled over ``seeds`` (``results``: seed -> pool -> evaluation): the paper's ordering (``pooled``),
    the step AUROCs' spreads, each comparison's findings (``by_arm``) and what best-of-N picks (``picks``), the
    PRM by the run's ``aggregation``; a pool whose evaluations lack a curve they need is left out."""
    def of(p):
        return {s: results[s][p] for s in seeds}

    return {"pooled": {p: pooled_gaps(of(p), cfg.bootstrap, aggregation=cfg.aggregation)
                       for p in POOLS if has_per_problem(of(p), cfg.aggregation)},
            "spreads": auroc_spreads([results[s]["eval"]["headline"] for s in seeds]),
            "by_arm": {arm: {p: pooled_findings(of(p), cfg.bootstrap, arm=arm, aggregation=cfg.aggregation)
                             for p in POOLS if has_gold(of(p), arm, cfg.aggregation)} for arm in ARM_NAMES},
            "picks": {p: rows for p in POOLS if (rows := pooled_picks(of(p), cfg.bootstrap))}}


def pooled_sections(cfg, numbers: dict, checks: dict) -> list:
    """The report's pooled sections: each comparison (the paper's arms first: they are the headline where a run has
    them), what best-of-N picks, the paper's ordering; an older run's per-seed targets where it has no findings."""
    parts = []
    for arm in ("paper", "equal"):
        if numbers["by_arm"][arm]:
            parts += [Markup("<h2>PRM against ORM, {}: pooled over seeds, with the ceilings beside each gap</h2>"
                             "<p>The PRM scores a solution by the {} of its step probabilities.</p>"
                             ).format(ARM_NAMES[arm], cfg.aggregation), Markup(FINDINGS_NOTE),
                      table(*findings_rows(numbers["by_arm"][arm]))]
    if numbers["picks"]:
        parts += [Markup("<h2>What best-of-N picks, by the oracle: pooled over seeds</h2>"), Markup(PICKS_NOTE),
                  table(*picks_rows(numbers["picks"]))]
    if numbers["pooled"]:
        parts += [Markup("<h2>The paper's ordering, pooled over seeds</h2>"),
                  table(*pooled_rows(numbers["pooled"], numbers["spreads"]))]
    if not numbers["by_arm"]["equal"]:  # an older run without the second gold: its per-seed targets, as reported
        parts += [Markup("<h2>The lab's targets, per seed (held-out pool)</h2>"), targets_table(checks)]
    return parts


def write_lab_report(run_dir, cfg, seeds: list[int], timings: dict, command: str) -> dict:
    """Write ``report.html`` and figures under ``run_dir``; return the summary (headlines, findings, sweep)."""
    run_dir = Path(run_dir)
    fig_dir = run_dir / "figures"
    results = {s: {p: _load(run_dir, s, p) for p in POOLS} for s in seeds}
    checks = {s: check_targets(results[s]["eval"]["headline"]) for s in seeds}
    figures = [_plot(results[s][p], fig_dir / f"{'bon' if p == 'eval' else 'ood'}-seed{s}.png",
                     f"{'Held-out pool' if p == 'eval' else 'OOD family'}, seed {s}") for s in seeds for p in POOLS]
    sweeps = {s: sweep_rows(results[s]["eval"], cfg.labelled) for s in seeds}
    numbers = pooled_numbers(cfg, results, seeds)
    parts = [_note(cfg), *pooled_sections(cfg, numbers, checks),
             Markup("<h2>Held-out pool: headline numbers per seed</h2>"), seed_table({s: results[s]["eval"] for s in seeds}),
             Markup("<h2>Out-of-distribution family: headline numbers per seed</h2>"),
             seed_table({s: results[s]["ood"] for s in seeds}),
             Markup("<h2>Best-of-N curves</h2>"), *(figure(Path(f)) for f in figures)]
    if cfg.label_budgets:
        parts += sweep_section(sweeps, seeds, fig_dir)
    parts += [Markup("<h2>Step-level AUROC of the PRM per kind of error (held-out pool)</h2>"), reason_table(results),
              Markup("<h2>Wall time per stage</h2>"), timings_table(timings), *study_sections(run_dir)]
    parts += [Markup("<details><summary>seed {}, {}: every number</summary>{}</details>").format(
        s, p, bon_section(dict(results[s][p], source=[f"seed {s}, {p} pool"]))) for s in seeds for p in POOLS]
    domain = cfg.lab_domain.name
    where = f"preset {cfg.name}" if domain == "ledger" else f"the {domain} domain, preset {cfg.name}"
    text = page(f"prmkit lab run: {cfg.name}" if domain == "ledger" else f"prmkit lab run: {domain} {cfg.name}", parts,
                heading=f"prmkit lab run: {where}, seeds {', '.join(map(str, seeds))}", command=command,
                config=dataclasses.asdict(cfg))
    with atomic_output(run_dir / "report.html") as f:
        f.write(text)
    by_arm, picks = numbers["by_arm"], numbers["picks"]
    return {"command": command, "domain": domain, "preset": cfg.name, "seeds": seeds, "aggregation": cfg.aggregation,
            "results": {str(s): {"eval": results[s]["eval"]["headline"], "ood": results[s]["ood"]["headline"],
                                 "sweep": sweeps[s]} for s in seeds},
            **({"findings": by_arm["equal"]} if by_arm["equal"] else {"targets": {str(s): checks[s] for s in seeds}}),
            **({"paper_findings": by_arm["paper"]} if by_arm["paper"] else {}), **({"picks": picks} if picks else {}),
            "pooled": numbers["pooled"], "auroc_spread": numbers["spreads"]["PRM"], "auroc_spreads": numbers["spreads"]}


def sweep_section(sweeps: dict, seeds: list[int], fig_dir: Path) -> list:
    """The label-budget sweep: best-of-N at the largest N per budget and seed, and its figure."""
    sweep_fig = _plot_sweep(sweeps, fig_dir / "sweep.png")
    rows = [[str(s), str(r["labelled"]), *(f"{100 * r[k]:.1f}" for k in ("prm_min", "prm_product", "orm", "majority"))]
            for s in seeds for r in sweeps[s]]
    return [Markup("<h2>Label-budget sweep (best-of-N at the largest N)</h2>"),
            table(["seed", "labelled", "PRM min", "PRM product", "ORM", "majority"], rows), figure(Path(sweep_fig))]


def study_sections(run_dir) -> list[str]:
    """A "Studies" heading and every ``RUN_DIR/study-*/section.html`` verbatim, sorted by name ([] if none)."""
    found = sorted(Path(run_dir).glob("study-*/section.html"))
    if not found:
        return []
    names = Markup(", ").join(Markup("<code>prmkit lab study {}</code>").format(p.parent.name[len("study-"):])
                              for p in found)
    return [Markup("<h2>Studies</h2>"),
            Markup("<p class='note'>Run in this folder: {}; each has its own <code>study-&lt;name&gt;/report.html</code> "
                   "and <code>summary.json</code>.</p>").format(names),
            *(Markup(p.read_text()) for p in found)]


def config_from_dict(d: dict, like=None):
    """A :class:`~prmkit.lab.config.LabConfig` (or ``like``'s class, e.g. a study's) back from
    ``dataclasses.asdict`` through JSON (``config.json``), by the one config parser.

    >>> from prmkit.lab.config import preset
    >>> cfg = preset("full").replace({"label_budgets": "10,20"})
    >>> config_from_dict(json.loads(json.dumps(dataclasses.asdict(cfg)))) == cfg
    True
    """
    from prmkit.config import apply
    from prmkit.lab.config import LabConfig

    return apply(LabConfig() if like is None else like, d)


def refresh_lab_report(run_dir) -> bool:
    """Re-render ``RUN_DIR/report.html`` of a finished lab run (so it shows new study sections).

    Reads the run's ``summary.json`` (command, seeds, timings) and ``config.json``; returns False, doing
    nothing, where the folder holds no finished lab run (a study run on its own).
    """
    run_dir = Path(run_dir)
    summary_file, config_file = run_dir / "summary.json", run_dir / "config.json"
    if not summary_file.is_file() or not config_file.is_file():
        return False
    summary = json.loads(summary_file.read_text())
    if "seeds" not in summary or "timings" not in summary:
        return False
    cfg = config_from_dict(json.loads(config_file.read_text()))
    write_lab_report(run_dir, cfg, summary["seeds"], summary["timings"], summary.get("command", ""))
    return True


def reason_table(results: dict) -> str:
    seeds = sorted(results)
    reasons = sorted({r for s in seeds for r in results[s]["eval"]["steps"]["prm"].get("by_reason", {})})
    rows = []
    for r in reasons:
        row = [r]
        for s in seeds:
            d = results[s]["eval"]["steps"]
            prm, lik = d["prm"]["by_reason"].get(r), d["likelihood"]["by_reason"].get(r)
            row.append("-" if prm is None else f"{prm['auroc']:.3f} / {lik['auroc']:.3f} (n={prm['wrong_steps']})")
        rows.append(row)
    return (Markup("<p class='note'>wrong steps of one kind against all correct steps: PRM / base-model likelihood</p>")
            + table(["error (oracle reason)"] + [f"seed {s}" for s in seeds], rows))


__all__ = ["AUROC_TARGET", "TARGETS", "check_targets", "config_from_dict", "refresh_lab_report", "study_sections",
           "write_lab_report"]
