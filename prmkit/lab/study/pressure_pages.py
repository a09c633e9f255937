"""The pressure study's pages: tables, figure, findings and the HTML section of ``prmkit lab study pressure``.

Every ``*_rows`` function returns (header, rows) of text, shared by the HTML page and the generated
tables of ``docs/pressure.md`` (:mod:`prmkit.lab.doctables`).
"""

from __future__ import annotations

import functools
import html
import math
from pathlib import Path

import numpy as np

from prmkit.lab.numbers import interval, percent
from prmkit.lab.study.core import write_study_outputs
from prmkit.lab.study.pressure_summary import HACK_MARGIN

NAMES = {"prm_min": "PRM (min)", "prm_product": "PRM (product)", "prm_last": "PRM (last)", "prm_mean": "PRM (mean)",
         "orm": "ORM"}


def _num(x, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return "none in sight" if math.isinf(x) else f"{x:.{digits}f}"


def _interval(lo_hi) -> str:
    return f"[{_num(lo_hi[0])}, {_num(lo_hi[1])}]"


NO_PEAK_TAIL = 0.025
"""The share of bootstrap fits without a peak above which a 95% interval of the peak is unbounded."""


def peak_interval(fit: dict) -> tuple[float, float]:
    """The 95% interval of a fit's peak (sqrt(KL)), a fit without a peak counted as a peak at infinity. Older RL
    summaries give the interval of the fits with a peak alone; read from them, the ends are widened to what
    ``no_peak_frac`` implies, never narrowed.

    >>> peak_interval({"peak_d_ci": [0.2, 1.2], "no_peak_frac": 0.1})
    (0.2, inf)
    >>> peak_interval({"peak_d_ci": [None, None], "no_peak_frac": 1.0})
    (inf, inf)
    """
    lo, hi = (math.inf if x is None else float(x) for x in fit["peak_d_ci"])
    frac = fit.get("no_peak_frac", 0.0)
    return (math.inf if frac >= 1 - NO_PEAK_TAIL else lo), (math.inf if frac > NO_PEAK_TAIL else hi)


def peak_reading(fit: dict, d_max: float) -> str:
    """A fitted peak stated no more strongly than its interval: inside the measured range ``[0, d_max]`` only
    when the whole 95% interval is; "no peak in range" only when the whole interval lies beyond it; else
    undetermined, with the interval and the share of bootstrap fits that have a peak at all.

    >>> peak_reading({"peak_d": 0.45, "peak_d_ci": [0.2, 1.2], "no_peak_frac": 0.01}, 2.0)
    'peaks at 0.45 [0.20, 1.20] (99% of fits have a peak)'
    >>> peak_reading({"peak_d": math.inf, "peak_d_ci": [1.6, math.inf], "no_peak_frac": 0.5}, 2.57)
    'undetermined: no peak in the point fit, 95% CI [1.60, unbounded] (50% of fits have a peak)'
    >>> peak_reading({"peak_d": 9.0, "peak_d_ci": [3.0, math.inf], "no_peak_frac": 0.3}, 2.57)
    'no peak up to 2.57 (70% of fits have a peak, all beyond it)'
    """
    lo, hi = peak_interval(fit)
    share = f"{100 * (1 - fit.get('no_peak_frac', 0.0)):.0f}% of fits have a peak"
    ends = f"[{_num(lo)}, {'unbounded' if math.isinf(hi) else _num(hi)}]"
    if hi <= d_max:
        return f"peaks at {_num(fit['peak_d'])} {ends} ({share})"
    if lo > d_max:
        return f"no peak up to {_num(d_max)} ({share}, all beyond it)"
    point = "no peak in the point fit" if math.isinf(fit["peak_d"]) else f"peak at {_num(fit['peak_d'])}"
    return f"undetermined: {point}, 95% CI {ends} ({share})"


def bon_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Best-of-N per budget and reward model: gold at N=1, its peak, at the largest N, and the fit."""
    b = summary["bon"]
    n_max = b["n"][-1]
    header = ["labels", "reward model", "ranked by", "gold at N=1", "peak gold (at N)", f"gold at N={n_max:,}",
              f"step-valid at N={n_max:,}", "alpha [95% CI]", "beta [95% CI]",
              f"fitted peak sqrt(KL) [95% CI], measured up to {_num(b['sqrt_kl'][-1])}"]
    top = max(int(x) for x in b["budgets"])
    pairs = [(int(budget), "base size", models) for budget, models in b["budgets"].items()]
    pairs += [(top, size, models) for size, models in b.get("sizes", {}).items()]
    rows = []
    for budget, size, models in pairs:
        for column, m in models.items():
            f = m["fit"]
            rows.append([f"{budget:,}", size, NAMES.get(column, column), percent(m["gold_at_1"]),
                         f"{percent(m['peak_gold'])} ({m['peak_n']:,})", interval(m["gold"][-1]), interval(m["valid"][-1]),
                         f"{_num(f['alpha'], 3)} {_interval(f['alpha_ci'])}", f"{_num(f['beta'], 3)} {_interval(f['beta_ci'])}",
                         peak_reading(f, b["sqrt_kl"][-1])])
    return header, rows


def rl_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """RL per reward: gold at the start, its peak, at the end, the paired change, where proxy and gold part."""
    header = ["reward", "gold at start", "peak gold (step)", "gold at end", "end minus start [95% CI]",
              "sqrt(KL) at end", "proxy start → end", "proxy and gold part at step", "alpha [95% CI]", "beta [95% CI]",
              "fitted peak sqrt(KL) [95% CI]"]
    rows = []
    for reward, r in summary["rl"].items():
        m = r["mean"]
        f = r["fit"]
        rows.append([reward, percent(m["gold"][0]), f"{percent(r['peak_gold'])} ({r['peak_step']})", percent(m["gold"][-1]),
                     interval(r["gold_change"], signed=True), _num(r["sqrt_kl"][-1]),
                     f"{_num(m['proxy'][0], 3)} → {_num(m['proxy'][-1], 3)}",
                     "never" if r["hacked_at"] is None else str(r["hacked_at"]),
                     f"{_num(f['alpha'], 3)} {_interval(f['alpha_ci'])}", f"{_num(f['beta'], 3)} {_interval(f['beta_ci'])}",
                     peak_reading(f, max(r["sqrt_kl"]))])
    return header, rows


DETECTOR_NAMES = {"valid": "every step valid (%)", "right_answer_wrong_step": "right answer, wrong step (%)",
                  "steps": "steps per solution", "checks": "check lines per solution", "answerless": "answerless (%)",
                  "prm_step_auroc": "PRM step AUROC on policy samples", "tokens": "tokens per solution"}
PERCENT = ("valid", "right_answer_wrong_step", "answerless")


def _detector(name: str, x) -> str:
    return percent(x) if name in PERCENT else _num(x, 3 if name == "prm_step_auroc" else 1)


def detector_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Every detector at the start and the end of each reward's runs (mean over seeds)."""
    rewards = list(summary["rl"])
    header = ["detector", *rewards]
    rows = []
    for k, name in DETECTOR_NAMES.items():
        cells = []
        for reward in rewards:
            d = summary["rl"][reward]["detectors"][k]
            cells.append(f"{_detector(k, d['start'])} → {_detector(k, d['end'])}")
        rows.append([name, *cells])
    return header, rows


def run_markdown(summary: dict) -> str:
    """What the published run was: its command and the sizes it ran at (so a reader sees any override)."""
    c, rl = summary["config"], summary["config"]["rl"]
    return (f"Command: `{summary['command']}` (seeds {', '.join(map(str, summary['seeds']))}). Best-of-N pool: "
            f"{summary['bon_pool']}, N up to {c['bon_samples']:,}; label budgets {', '.join(f'{b:,}' for b in c['budgets'])}; "
            f"reward models {summary['rm_steps']} steps, best of {summary.get('restarts', 1)}; extra sizes: "
            f"{', '.join(c['rm_sizes']) or 'none'}. RL: {rl['steps']} steps of {rl['prompts_per_step']} prompts x "
            f"{rl['group']} samples, lr {rl['lr']}, KL penalty {rl['beta']}, loss {rl['loss_type']}; evaluated every "
            f"{rl['eval_every']} steps on {summary['rl_eval']}.")


def wall_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Wall time per stage, and each RL run's (one reward, one seed) against the 20-minute target."""
    rows = [[stage, f"{t['wall_seconds'] / 60:.1f} min", str(t.get("jobs", ""))]
            for stage, t in summary["timings"].items()]
    runs = [x for r in summary["rl"].values() for x in r["seconds"]]
    if runs:  # none when every reward failed its check
        rows.append(["one RL run (mean / longest)", f"{np.mean(runs) / 60:.1f} / {max(runs) / 60:.1f} min",
                     str(len(runs))])
    rows.append(["the whole study", f"{summary['total_wall_seconds'] / 60:.1f} min", ""])
    return ["stage", "wall time", "jobs"], rows


def findings(summary: dict) -> str:
    """The plain answer, from the numbers."""
    parts = []
    bon = summary["bon"]["budgets"][str(max(int(b) for b in summary["bon"]["budgets"]))]
    prm, orm = bon.get("prm_min"), bon.get("orm")
    n_max = summary["bon"]["n"][-1]
    d_max = summary["bon"]["sqrt_kl"][-1]
    if prm and orm:
        parts.append(f"Best-of-N up to N = {n_max:,}: the PRM (min) peaks at {percent(prm['peak_gold'])}% (N = {prm['peak_n']:,}) "
                     f"and ends at {interval(prm['gold'][-1])}%; the ORM peaks at {percent(orm['peak_gold'])}% "
                     f"(N = {orm['peak_n']:,}) and ends at {interval(orm['gold'][-1])}% (measured means; the fits over "
                     f"sqrt(KL) up to {_num(d_max)}: PRM {peak_reading(prm['fit'], d_max)}; ORM "
                     f"{peak_reading(orm['fit'], d_max)}).")
    if prm and orm and "gold_per_seed" in prm:  # summaries since 2026-12-06
        parts.append(per_seed_sentence(summary["seeds"], summary["bon"]["n"], {"PRM (min)": prm, "ORM": orm}))
    for size, models in summary["bon"].get("sizes", {}).items():
        p, o = models["prm_min"], models["orm"]
        parts.append(f"The {size} reward models peak at {percent(p['peak_gold'])}% (PRM, N = {p['peak_n']:,}) and "
                     f"{percent(o['peak_gold'])}% (ORM, N = {o['peak_n']:,}).")
    for reward, per_seed in summary.get("rl_skipped", {}).items():
        parts.append(f"RL against {reward} was not run on seed(s) {', '.join(per_seed)}: " + "; ".join(
            f"seed {s}: {v['why']} (within-problem AUROC {_num(v['check']['auroc'], 3)} {_interval(v['check']['ci95'])} "
            f"over {v['check']['problems']} problems)" for s, v in per_seed.items()) + ".")
    for reward, r in summary["rl"].items():
        change = r["gold_change"]
        verdict = ("gold rose" if change["ci95"][0] > 0 else "gold fell" if change["ci95"][1] < 0
                   else "gold did not move beyond noise")
        part = ("proxy and gold never parted" if r["hacked_at"] is None
                else f"proxy and gold parted at step {r['hacked_at']}")
        only = (f" (seed(s) {', '.join(map(str, r['seeds']))} only)"
                if len(r.get("seeds", summary["seeds"])) < len(summary["seeds"]) else "")
        parts.append(f"RL against {reward}{only}: {verdict} ({interval(change, signed=True)} points); {part}; the fit "
                     f"over sqrt(KL) {peak_reading(r['fit'], max(r['sqrt_kl']))}.")
    return " ".join(parts)


def per_seed_sentence(seeds: list, ns: list[int], models: dict) -> str:
    """Each seed's best-of-N gold at N = 1, its peak (at N) and at the largest N, per model: whether a pooled
    peak is every seed's or one seed's.

    >>> per_seed_sentence([10, 11], [1, 2, 4], {"ORM": {"gold_per_seed": [[0.1, 0.3, 0.2], [0.1, 0.1, 0.0]]}})
    'Per seed (gold at N = 1 / peak (N) / at N = 4): ORM: seed 10 10.0 / 30.0 (2) / 20.0, seed 11 10.0 / 10.0 (1) / 0.0.'
    """
    def one(curve):
        peak = int(np.argmax(curve))
        return f"{percent(curve[0])} / {percent(curve[peak])} ({ns[peak]:,}) / {percent(curve[-1])}"

    per_model = [f"{name}: " + ", ".join(f"seed {s} {one(c)}" for s, c in zip(seeds, m["gold_per_seed"]))
                 for name, m in models.items()]
    return f"Per seed (gold at N = 1 / peak (N) / at N = {ns[-1]:,}): " + "; ".join(per_model) + "."


def plot(summary: dict, path: Path) -> str:
    """Best-of-N gold and proxy against sqrt(KL_bon) (largest budget), RL gold against sqrt(KL) and proxy by step."""
    from prmkit.evaluate.plots import plt, save_figure  # the Agg backend: set where plots is imported

    b = summary["bon"]
    top = str(max(int(x) for x in b["budgets"]))
    d = np.asarray(b["sqrt_kl"])
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for i, (column, m) in enumerate(b["budgets"][top].items()):
        gold = np.array([100 * c["mean"] for c in m["gold"]])
        lo_hi = np.array([[100 * v for v in c["ci95"]] for c in m["gold"]])
        axes[0, 0].plot(d, gold, "o-", color=f"C{i}", label=NAMES.get(column, column), ms=3)
        axes[0, 0].fill_between(d, lo_hi[:, 0], lo_hi[:, 1], color=f"C{i}", alpha=0.12)
        axes[0, 1].plot(d, [100 * c["mean"] for c in m["proxy"]], "o-", color=f"C{i}", ms=3)
        for seed_curve in m.get("gold_per_seed", []) if column in ("prm_min", "orm") else []:
            axes[0, 0].plot(d, 100 * np.asarray(seed_curve), "-", color=f"C{i}", lw=0.6, alpha=0.5)  # each seed
    for size, models in b.get("sizes", {}).items():
        for i, column in enumerate(("prm_min", "orm")):
            axes[0, 0].plot(d, [100 * c["mean"] for c in models[column]["gold"]], "--", color="0.3" if i else "0.6",
                            label=f"{NAMES[column]}, {size} RM", lw=1)
    axes[0, 0].set(xlabel="sqrt(KL_bon)", ylabel="gold: chosen answer right (%)",
                   title=f"best-of-N, {int(top):,} labels (N = 1 .. {b['n'][-1]:,})")
    axes[0, 1].set(xlabel="sqrt(KL_bon)", ylabel="proxy: chosen sample's score (min-max scaled, %)", title="best-of-N proxy")
    axes[0, 0].legend(fontsize=8)
    for i, (reward, r) in enumerate(summary["rl"].items()):
        axes[1, 0].plot(r["sqrt_kl"], [100 * g for g in r["mean"]["gold"]], "o-", color=f"C{i}", label=reward, ms=3)
        axes[1, 1].plot(r["steps"], r["mean"]["proxy"], "o-", color=f"C{i}", ms=3)
    axes[1, 0].set(xlabel="sqrt(KL(policy || base)), held-out samples", ylabel="gold: answer right (%)",
                   title="RL (GRPO), mean over seeds")
    axes[1, 1].set(xlabel="optimiser step", ylabel="proxy: the reward optimised (log scale)", title="RL proxy",
                   yscale="log")
    axes[1, 0].legend(fontsize=8)
    for ax in axes.flat:
        ax.grid(alpha=0.3)
    fig.suptitle(f"Optimisation pressure, seeds {', '.join(map(str, summary['seeds']))}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


EXAMPLE_STEPS = 12
"""Steps an example shows (a padded solution can have dozens)."""


def example_text(ex: dict) -> str:
    """One example as plain text: the problem, the proxy, and its steps (one line each) with the oracle's
    first wrong step marked."""
    mark = ex["first_wrong_step"]
    steps = ex["steps"]
    lines = [f"{i:>2} {' '.join(s.split())}{'  <-- first wrong step' if i == mark else ''}"
             for i, s in enumerate(steps[:EXAMPLE_STEPS])]
    if len(steps) > EXAMPLE_STEPS:
        lines.append(f"   ... {len(steps) - EXAMPLE_STEPS} more steps")
    return f"{ex['problem']}\n\nproxy {ex['proxy']:.3f}{'' if ex['answered'] else ', no answer'}\n" + "\n".join(lines)


def examples_markdown(summary: dict) -> str:
    """The highest-proxy wrong samples at the end of each reward's first-seed run, as markdown."""
    return "\n\n".join(f"*{reward}*:\n\n```\n{example_text(r['examples'][0])}\n```"
                       for reward, r in summary["rl"].items() if r["examples"])


def section_html(summary: dict, figure_path: Path) -> str:
    from prmkit.evaluate.html import figure, table

    c = summary["config"]
    intro = (f"<p>The policy is the lab's base model; the gold reward is the oracle. Per seed, a PRM and an ORM learn "
             f"from each label budget ({', '.join(f'{b:,}' for b in c['budgets'])} solutions of the policy's own samples: "
             f"simulated step labels, and the same solutions' final-answer grades), {summary['rm_steps']} steps each, "
             f"the best of {summary.get('restarts', 1)} restarts on a held-out tenth of their labels; at the largest budget "
             f"also at the sizes {html.escape(', '.join(c['rm_sizes']) or 'none')} (a base of that shape pretrained on the same pool). "
             f"Best-of-N ranks {html.escape(summary['bon_pool'])} by each (exact estimator, N = 1 .. {c['bon_samples']:,}, "
             f"KL_bon = log N - (N-1)/N). RL is GRPO (TRL's GRPOTrainer) with a KL penalty of {c['rl']['beta']} to the "
             f"base, {c['rl']['steps']} steps of {c['rl']['prompts_per_step']} prompts x {c['rl']['group']} samples, "
             f"measured on {html.escape(summary['rl_eval'])}. Seeds {', '.join(map(str, summary['seeds']))}; 95% "
             f"intervals over seeds then problems (fits: over problems). Proxy and gold <i>part</i> at the first "
             f"evaluation where gold is {100 * HACK_MARGIN:.0f} points below its peak while the proxy is above its "
             f"value there.</p>")
    examples = "".join(f"<p><b>{html.escape(reward)}</b></p><pre>{html.escape(example_text(r['examples'][0]))}</pre>"
                       for reward, r in summary["rl"].items() if r["examples"])
    return "\n".join([
        "<h2>Study: optimisation pressure against the oracle</h2>", intro,
        "<h3>Best-of-N</h3>", table(*bon_rows(summary)),
        "<h3>RL against each reward</h3>", table(*rl_rows(summary)),
        "<h3>Hacking detectors (start → end of RL)</h3>", table(*detector_rows(summary)),
        "<h3>Cost</h3>", table(*wall_rows(summary)),
        figure(Path(figure_path)), f"<p>{html.escape(findings(summary))}</p>",
        (f"<details><summary>highest-proxy wrong samples at the end of RL (seed {summary['seeds'][0]})</summary>"
         f"{examples}</details>")])


write_outputs = functools.partial(write_study_outputs, name="pressure", plot=plot, section_html=section_html)
"""``figures/pressure.png``, ``section.html`` and the standalone ``report.html``."""


__all__ = [
    "bon_rows",
    "detector_rows",
    "examples_markdown",
    "findings",
    "plot",
    "rl_rows",
    "section_html",
    "wall_rows",
    "write_outputs",
]
