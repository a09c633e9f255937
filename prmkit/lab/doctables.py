"""The numbers in the lab's docs, generated from the runs' summary files, never typed by hand.

A doc marks each generated table with a pair of comments naming a table and a results file
(``docs/results/*.json``, the ``summary.json`` of the run that produced them)::

    <!-- generated: lab-eval docs/results/lab-default.json -->
    ... (replaced) ...
    <!-- end generated -->

:func:`render_doc` fills every such block; ``scripts/docs_tables.py`` rewrites the docs, and with
``--check`` (what the test suite runs) fails when a doc does not match its committed summaries.

>>> s = {"seeds": [0], "results": {"0": {"eval": {"N": 4, "prm_min@4": 0.5, "prm_step_auroc": 0.9}}}}
>>> print(metric_table(s, "eval", [("PRM min@{N}", "prm_min@{N}"), ("PRM step AUROC", "prm_step_auroc")]))
| held-out pool | seed 0 |
|---|---|
| PRM min@4 | 50.0 |
| PRM step AUROC | 0.900 |
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from prmkit.lab.numbers import percent, points
from prmkit.lab.targets import POOL_NAMES, findings_rows, picks_rows, pooled_rows

FIRST_ERROR_ROWS = [
    *((f"{name} step AUROC up to the first error{kind}", f"{key}_first_error_auroc{suffix}")
      for name, key in (("PRM", "prm"), ("paper PRM", "prm_paper"))
      for kind, suffix in (("", ""), (", immediate errors", "[immediate]"), (", delayed errors", "[delayed]"))),
    *((f"{name} first error located, F1", f"{key}_first_error_f1") for name, key in (("PRM", "prm"), ("paper PRM", "prm_paper"))),
    *((f"{name} first {kind} errors found at their step", f"{key}_first_error_found[{kind}]")
      for name, key in (("PRM", "prm"), ("paper PRM", "prm_paper")) for kind in ("immediate", "delayed"))]
"""The PRMs' step AUROC over each solution's steps up to its first wrong one, and per kind of error where the
domain has delayed errors; where they put each solution's first error (ProcessBench's F1; first errors found at
their step, per kind). Runs since 2026-12-06; a row a summary lacks is left out."""
PAPER_ROWS = [("step-judge limit@{N}", "step_limit@{N}"), ("paper PRM min@{N}", "prm_paper_min@{N}"),
              ("paper PRM product@{N}", "prm_paper_product@{N}"),
              ("paper ORM@{N}", "orm_paper@{N}"), ("paper PRM min@16", "prm_paper_min@16"), ("paper ORM@16", "orm_paper@16"),
              ("valid solution, PRM min@{N}", "valid_prm_min@{N}"), ("valid solution, ORM@{N}", "valid_orm@{N}"),
              ("valid solution, paper PRM min@{N}", "valid_prm_paper_min@{N}"),
              ("valid solution, paper PRM product@{N}", "valid_prm_paper_product@{N}"),
              ("valid solution, paper ORM@{N}", "valid_orm_paper@{N}"), ("paper PRM step AUROC", "prm_paper_step_auroc")]
"""Rows a run with the ceilings and the paper's arms has (a row a summary lacks is left out)."""
EVAL_ROWS = [("PRM min@{N}", "prm_min@{N}"), ("PRM product@{N}", "prm_product@{N}"), ("PRM mean@{N}", "prm_mean@{N}"),
             ("PRM last@{N}", "prm_last@{N}"), ("ORM@{N}", "orm@{N}"), ("majority@{N}", "majority@{N}"),
             ("weighted vote by PRM min@{N}", "weighted_prm_min@{N}"), ("weighted vote by ORM@{N}", "weighted_orm@{N}"),
             ("label-free, likelihood_mean@16", "likelihood_mean@16"),
             ("label-free, likelihood_mean@{N}", "likelihood_mean@{N}"),
             ("label-free, likelihood_min@{N}", "likelihood_min@{N}"), ("PRM min@16", "prm_min@16"),
             ("ORM@16", "orm@16"), ("majority@16", "majority@16"), ("pass@{N}", "pass@{N}"),
             ("first sample", "first_sample"), ("PRM step AUROC (vs the oracle)", "prm_step_auroc"),
             ("base-model likelihood step AUROC", "likelihood_step_auroc"), *FIRST_ERROR_ROWS, *PAPER_ROWS]
OOD_ROWS = [("PRM min@{N}", "prm_min@{N}"), ("ORM@{N}", "orm@{N}"), ("majority@{N}", "majority@{N}"),
            ("weighted vote by PRM min@{N}", "weighted_prm_min@{N}"), ("weighted vote by ORM@{N}", "weighted_orm@{N}"),
            ("label-free (better likelihood)@{N}", "label_free@{N}"), ("PRM min@16", "prm_min@16"),
            ("pass@{N}", "pass@{N}"), ("PRM step AUROC", "prm_step_auroc"), *FIRST_ERROR_ROWS, *PAPER_ROWS]


def _cell(key: str, value: float) -> str:
    return f"{value:.3f}" if "auroc" in key else f"{100 * value:.1f}"


def metric_table(summary: dict, pool: str, rows: list[tuple[str, str]]) -> str:
    """A markdown table of headline metrics, one column per seed (percent; AUROC as a fraction)."""
    seeds = [str(s) for s in summary["seeds"]]
    n = summary["results"][seeds[0]][pool]["N"]
    lines = [f"| {POOL_NAMES[pool]} | " + " | ".join(f"seed {s}" for s in seeds) + " |",
             "|---|" + "---|" * len(seeds)]
    for label, key in rows:
        key = key.format(N=n)
        if key not in summary["results"][seeds[0]][pool]:
            continue
        cells = [_cell(key, summary["results"][s][pool][key]) for s in seeds]
        lines.append(f"| {label.format(N=n)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets_table(summary: dict) -> str:
    """The lab report's targets per seed: gap (points) or value, and whether each is met."""
    seeds = [str(s) for s in summary["seeds"]]
    names = list(summary["targets"][seeds[0]])
    lines = ["| target | needs | " + " | ".join(f"seed {s}" for s in seeds) + " |", "|---|---|" + "---|" * len(seeds)]
    for name in names:
        first = summary["targets"][seeds[0]][name]
        needs = f">= {first['least']:.2f}" if "value" in first else f">= {100 * first['least']:.0f}"
        cells = []
        for s in seeds:
            t = summary["targets"][s][name]
            value = f"{t['value']:.3f}" if "value" in t else f"{100 * t['gap']:+.1f}"
            cells.append(f"{value} ({'met' if t['met'] else 'missed'})")
        lines.append(f"| {name} | {needs} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def wall_table(summary: dict) -> str:
    """Wall and compute seconds per stage of the run that wrote ``summary``."""
    lines = ["| stage | wall s | compute s (sum over jobs) | jobs run |", "|---|---|---|---|"]
    for stage, t in summary["timings"].items():
        compute = f"{t['job_seconds']:.1f}" if "job_seconds" in t else "-"
        lines.append(f"| {stage} | {t['wall_seconds']:.1f} | {compute} | {t.get('ran', '-')} |")
    lines.append(f"| **total** | **{summary['total_wall_seconds']:.1f}** | | |")
    return "\n".join(lines)


def wall_compare_table(record: dict) -> str:
    """Runs of the same settings side by side (``scripts/compare_summaries.py --record``): wall and compute
    seconds per stage of each, and whether every number the later runs found is the first's."""
    runs = record["runs"]
    stages = list(dict.fromkeys(stage for run in runs for stage in run["timings"]))

    def cells(run: dict, stage: str) -> list[str]:
        t = run["timings"].get(stage)
        if t is None:
            return ["-", "-"]
        return [f"{t['wall_seconds']:.1f}", f"{t['job_seconds']:.1f}" if "job_seconds" in t else "-"]

    def total(run: dict) -> list[str]:
        return [f"**{run['total_wall_seconds']:.1f}**", f"{sum(t.get('job_seconds', 0.0) for t in run['timings'].values()):.1f}"]

    rows = [[stage, *(c for run in runs for c in cells(run, stage))] for stage in stages]
    rows.append(["**total**", *(c for run in runs for c in total(run))])
    verdict = ("every number identical" if record["identical_numbers"]
               else f"{len(record['differences'])} numbers differ")
    head = [h for i, run in enumerate(runs) for h in (f"run {i + 1}, commit {run['commit'][:7]}: wall s", "compute s")]
    return markdown(["stage", *head], rows) + (f"\n\nEach later summary against the first, every field but wall "
                                              f"times and provenance ({record['fields_compared']:,} values): {verdict}.")


def sweep_table(summary: dict) -> str:
    """The label-budget sweep: best-of-N at the largest N per seed and budget (percent)."""
    seeds = [str(x) for x in summary["seeds"]]
    n = summary["results"][seeds[0]]["eval"]["N"]
    rows = [[f"seed {x}", f"{r['labelled']:,}", *(f"{100 * r[k]:.1f}" for k in ("prm_min", "prm_product", "orm", "majority"))]
            for x in seeds for r in summary["results"][x]["sweep"]]
    return markdown(["seed", "labelled", f"PRM min@{n}", f"PRM product@{n}", f"ORM@{n}", f"majority@{n}"], rows)


STATS_COLUMNS = (("pass@1", "pass@1"), ("maj_acc@64", "majority@64"), ("pass@64", "pass@64"),
                 ("right_answer_wrong_step", "right answer, wrong step"), ("no_answer", "no answer"),
                 ("steps_per_solution", "steps per solution"), ("tokens_per_solution", "tokens per solution"))


def stats_block(summary: dict, split: str) -> str:
    """``prmkit lab stats`` of the first seed's ``split`` pool, as the terminal prints it."""
    from prmkit.lab import format_stats

    first = str(summary["seeds"][0])
    return f"```\n{format_stats(summary[split][first])}\n```"


def stats_table(summary: dict) -> str:
    """The headline generator rates per pool and seed (percent; counts per solution as they are)."""
    rows = []
    for split in ("eval", "ood"):
        for seed in map(str, summary["seeds"]):
            d = summary[split][seed]
            rows.append([POOL_NAMES[split], seed, *(f"{d[k]:.2f}" if k.endswith("solution") else f"{100 * d[k]:.1f}"
                                                   for k, _ in STATS_COLUMNS)])
    return markdown(["pool", "seed", *(name for _, name in STATS_COLUMNS)], rows)


POLICY_ROWS = (("pass@1", "pass@1"), ("maj_acc@64", "majority@64"), ("pass@64", "pass@64"),
               ("maj_wrong_pass_right", "majority wrong, a sample right"),
               ("right_answer_wrong_step", "right answer, wrong step"), ("wrong_step_solutions", "a wrong step"),
               ("wrong_steps", "wrong steps (of all steps)"), ("neutral_steps", "neutral steps"),
               ("no_answer", "no answer"), ("misread.less", "misread: less"), ("misread.twice", "misread: twice"),
               ("misread.again", "misread: again"), ("misread.undo", "misread: undo"),
               ("steps_per_solution", "steps per solution"), ("tokens_per_solution", "tokens per solution"))


def policy_table(summary: dict) -> str:
    """The lm policy's rates beside the rule-based generator's, per pool: mean over the seeds [min, max]."""
    def cell(per_seed: dict, key: str) -> str:
        values = [_dotted(per_seed[str(s)], key) for s in summary["seeds"]]
        if any(v is None for v in values):
            return "-"
        scale, fmt = (1, "{:.2f}") if key.endswith("solution") else (100, "{:.1f}")
        lo, hi, mean = (fmt.format(scale * v) for v in (min(values), max(values), sum(values) / len(values)))
        return f"{mean} [{lo}, {hi}]"

    header = ["rate"] + [f"{POOL_NAMES[split]}, {who}" for split in ("eval", "ood") for who in ("rules", "lm")]
    rows = [[name] + [cell(src[split], key) for split in ("eval", "ood") for src in (summary["rules"], summary)]
            for key, name in POLICY_ROWS]
    return markdown(header, rows)


def _dotted(d: dict, key: str):
    for part in key.split("."):
        d = d.get(part) if isinstance(d, dict) else None
    return d


def markdown(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table of text cells."""
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                      *("| " + " | ".join(r) + " |" for r in rows)])


def _budget(name: str):
    def render(summary: dict) -> str:
        from prmkit.lab.study.budget import budget_tables, efficiency_text, findings

        if name == "findings":
            return findings(summary)
        if name == "efficiency":
            return f"Data-efficiency factor by the paper's method: {efficiency_text(summary)}."
        return markdown(*budget_tables(summary)[name])

    return render


def _study_rows(study: str, name: str):
    """A study page's ``<name>_rows`` table (or its ``findings`` text, or its own ``<name>_markdown``), shared
    with its HTML page."""
    def render(summary: dict) -> str:
        import importlib

        pages = importlib.import_module(f"prmkit.lab.study.{study}_pages")
        if name == "findings":
            return pages.findings(summary)
        if hasattr(pages, f"{name}_markdown"):
            return getattr(pages, f"{name}_markdown")(summary)
        return markdown(*getattr(pages, f"{name}_rows")(summary))

    return render


def _grade_rows(name: str):
    """The grading benchmark's tables (:mod:`prmkit.grade.report`), shared with its terminal output."""
    def render(summary: dict) -> str:
        from prmkit.grade import report

        return markdown(*getattr(report, f"{name}_rows")(summary))

    return render


def bon_read_table(summary: dict) -> str:
    """``bench/bench_bon_read.py``: ``prmkit eval bon`` on large pools against a bare read of the same file."""
    rows = [[r["format"], f"{r['lines']:,}", f"{r['bytes'] / 2**20:,.0f}", f"{r['bare_json_s']:.2f}",
             f"{r['bare_orjson_s']:.2f}", f"{r['command_s']:.2f}", f"**{r['ratio']:.2f}x**",
             f"{r['command_no_vote_s']:.2f}", f"**{r['ratio_no_vote']:.2f}x**"] for r in summary["rows"]]
    return markdown(["layout", "lines", "MiB", "bare read, json s", "bare read, orjson s", "command s",
                     "command / bare json", "with --no-vote s", "--no-vote / bare json"], rows)


def incremental_bench_table(summary: dict) -> str:
    """``bench/bench_incremental_scoring.py``: a beam's prefixes scored a step at a time against whole, per PRM size."""
    rows = [[f"{r['hidden']} wide, {r['layers']} layers", str(r["depth"]), str(r["beams"]), f"{r['whole_s']:.3f}",
             f"{r['incremental_s']:.3f}", f"**{r['speedup']:.2f}x**", "met" if r["met"] else "missed",
             f"{r['largest_difference']:.1g}"] for r in summary["rows"]]
    return markdown(["PRM", "depth", "beams", "whole prefixes s", "incremental s", "speedup",
                     f"target {summary['rows'][0]['target']:g}x", "largest score difference"], rows)


def search_overhead_table(summary: dict) -> str:
    """``bench/bench_search_overhead.py``: each strategy's wall time split into the models' forward passes, the rest
    of the generator's and the PRM's calls, and prmkit's own search loop."""
    def share(x: float) -> str:
        return f"{100 * x:.1f}%"

    rows = [[r["strategy"], f"{r['generated_tokens']:,}", f"{r['wall_s']:.2f}", f"{r['forward_s']:.2f}",
             f"{r['calls_s']:.2f}", f"{r['loop_s']:.2f}", f"**{share(r['overhead'])}**", share(r["loop_share"])]
            for r in summary["rows"]]
    target = share(summary["rows"][0]["target"])
    return markdown(["strategy", "generated tokens", "wall s", "forward passes s", "rest of the calls s",
                     "search loop s", f"all but forward passes (target {target})", "search loop alone"], rows)


def search_split_table(summaries: dict) -> str:
    """``bench/bench_search_overhead.py`` runs (``{path: summary}``, rows from each in turn): what is not a forward
    pass, split by whose calls it sits in (the generator's, the PRM's) and prmkit's own loop, each a share of the
    wall time."""
    def part(r: dict, owner: str) -> str:
        if owner not in r:  # a run whose strategy never called that model
            return "-"
        rest = r[owner]["outside_forward_s"]
        return f"{rest:.2f} ({100 * rest / r['wall_s']:.1f}%)"

    rows = [[r["strategy"], str(r["batch_size"]), str(r["problems"]), f"{r['generated_tokens']:,}", f"{r['wall_s']:.2f}",
             part(r, "generator"), part(r, "prm"), f"{100 * r['loop_share']:.1f}%", f"**{100 * r['overhead']:.1f}%**"]
            for summary in summaries.values() for r in summary["rows"]]
    return markdown(["strategy", "generator batch", "problems", "generated tokens", "wall s",
                     "generator's calls outside its passes, s (share)", "PRM's calls outside its passes, s (share)",
                     "search loop", "all but forward passes"], rows)


def _real_pool(name: str):
    """``scripts/eval_real_pools.py``: one real pool's curves (accuracy in %, 95% CI over problems, the
    Monte-Carlo standard error of a vote), then its first sample."""

    def cell(m: dict) -> str:
        lo, hi = m["ci95"]
        mc = f" ±{100 * m['mc_se']:.2f}" if "mc_se" in m else ""
        return f"{100 * m['estimate']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]{mc}"

    def render(summary: dict) -> str:
        pool = summary["pools"][name]
        cols, m = pool["settings"]["columns"], pool["metrics"]
        names = ([(f"best-of-N (`{c}`)", f"bon_acc@{{n}}[{c}]") for c in cols] + [("majority", "maj_acc@{n}")]
                 + [(f"weighted (`{c}`)", f"weighted_acc@{{n}}[{c}]") for c in cols] + [("pass@N", "pass@{n}")])
        rows = [[str(n), *(cell(m[key.format(n=n)]) for _, key in names)] for n in pool["ns"]]
        return markdown(["N", *(label for label, _ in names)], rows) + f"\n\nFirst sample: {cell(m['first_acc'])}."

    return render


CALIBRATION_LABELS = {
    "pass@1": "pass@1", "pass@4": "pass@4", "pass@16": "pass@16", "pass@64": "pass@64", "maj_acc@64": "majority@64",
    "right_answer_wrong_step": "right answers through a wrong step", "step_limit@4": "step-judge limit@4",
    "step_limit@16": "step-judge limit@16", "step_limit@64": "step-judge limit@64",
    "first_error_delayed": "samples whose first error is delayed"}
"""Each statistic a calibration records (``scripts/calibrate_family.py``), in the tables' order; the last only
for a domain with delayed errors (the plans domain)."""
RANGE_STATISTICS = ("pass@1", "pass@64", "maj_acc@64", "right_answer_wrong_step", "step_limit@64",
                    "first_error_delayed")
"""The statistics a grid's range table shows."""


def _rule_range(rule: dict, key: str) -> str:
    return f"{100 * rule[key][0]:.0f}-{100 * rule[key][1]:.0f}" if key in rule else "reported"


def calibration_table(summary: dict) -> str:
    """The rule's statistics of the chosen family (``scripts/calibrate_family.py``), per development seed and
    pooled, beside the rule's ranges."""
    chosen = summary["candidates"][summary["chosen"]]["stats"]
    keys = [k for k in CALIBRATION_LABELS if k in chosen]
    seeds = list(chosen["per_seed"])
    rows = [[CALIBRATION_LABELS[k], *(f"{100 * chosen['per_seed'][s][k]:.1f}" for s in seeds),
             f"{100 * chosen[k]:.1f}", _rule_range(summary["rule"], k)] for k in keys]
    return markdown(["statistic (%)", *(f"seed {s}" for s in seeds), "pooled", "the rule"], rows)


def calibration_range_table(summary: dict) -> str:
    """How far a calibration grid reached (``scripts/calibrate_family.py``): each of the rule's statistics'
    lowest and highest pooled value over every measured candidate, and which candidate had it."""
    cands = summary["candidates"]
    rows = []
    for k in (k for k in RANGE_STATISTICS if k in cands[0]["stats"]):
        low = min(cands, key=lambda c: c["stats"][k])
        high = max(cands, key=lambda c: c["stats"][k])
        rows.append([CALIBRATION_LABELS[k], f"{100 * low['stats'][k]:.1f} (#{low['index']})",
                     f"{100 * high['stats'][k]:.1f} (#{high['index']})", _rule_range(summary["rule"], k)])
    met = [c["index"] for c in cands if c["meets"]]
    return markdown([f"statistic (%), {len(cands)} candidates", "lowest (candidate)", "highest (candidate)",
                     "the rule"], rows) + (f"\n\nCandidates that meet the rule: {', '.join(f'#{i}' for i in met)}."
                                          if met else "\n\nNo candidate meets the rule.")


def synthetic_setting_table(summary: dict) -> str:
    """Every candidate the synthetic study's setting rule measured (``scripts/synthetic_setting.py``), in its order,
    the chosen one marked."""
    rows = []
    for i, c in enumerate(summary["candidates"]):
        o, st = c["overrides"], c["stats"]
        set_weight = dict(o["domain.weights"]).get("set")
        rows.append([str(i), f"{o['generator.silent_fix_rate']:g}", "none" if set_weight is None else f"{set_weight:g}",
                     points(st["disagreement"]), points(st["right_wrong_step"]), points(st["wrong_no_wrong_step"]),
                     points(st["pass@1"]), points(st["pass@16"]),
                     "**chosen**" if i == summary["chosen"] else "meets" if c["meets"] else "no"])
    return markdown(["#", "silent-fix rate", "`set` weight", "disagreement %", "right answer, wrong step %",
                     "answered wrong, no wrong step %", "pass@1 %", "pass@16 %", "rule"], rows)


def calibration_rules_table(summary: dict) -> str:
    """A plans grid's families read through their rules of thumb alone (``scripts/calibrate_family.py --rules``):
    each rule's share of problems finished late, and the shares of answers a verifier could give without reading
    the plan (the capacity bound; where read, the commonest earliest finish and a guess from the task count)."""
    cands = summary["candidates"]
    knobs = list(cands[0]["overrides"])
    rules = list(cands[0]["rules"])
    rows = [[f"#{c['index']}", *(_knob(c["overrides"][k]) for k in knobs),
             *(f"{100 * c['rules'][r]:.1f}" for r in rules)] for c in cands]
    shares = {"capacity_bound": "capacity bound", "answer_mode": "commonest answer", "count_guess": "guess by count"}
    names = [shares.get(r, r.replace("late[", "late, ").replace("]", "")) for r in rules]
    return markdown(["family", *(k.split(".")[-1] for k in knobs), *(f"{n} (%)" for n in names)], rows)


def _knob(value) -> str:
    return "-".join(str(v) for v in value) if isinstance(value, list) else str(value)


def stalls_table(record: dict) -> str:
    """Single runs per arm that stalled (``scripts/stall_count.py``), one row per counted recipe."""
    rows = []
    for label, entry in record.items():
        for kind, c in entry["summary"].items():
            secs = [r["seconds"] for r in entry["runs"] if r["kind"] == kind]
            source = (entry.get("source") or {}).get("commit", "")[:7]
            rows.append([label, kind.upper(), f"{c['stalled']} of {c['runs']}", f"{c['median_step_auroc']:.3f}",
                         f"{c['worst_step_auroc']:.3f}", f"{sum(secs) / len(secs):.0f}",
                         " ".join(entry["overrides"]) or "none", source])
    return markdown(["recipe", "arm", "stalled", "median held-out step AUROC", "worst", "seconds a run",
                     "--set over that commit's recipe", "commit"], rows)


def models_table(summary: dict) -> str:
    """Every reward model of a run, per seed: the chosen restart's validation metrics and where it stopped
    (``models`` in the summary: :func:`prmkit.lab.run.model_records`)."""
    rows = []
    for seed, models in summary["models"].items():
        for name, m in sorted(models.items()):
            stop = "early" if m.get("stopped_early") else "at the cap"
            rows.append([seed, name.removeprefix("rm-"), f"{m['step_auroc']:.3f}", f"{m['eval_loss']:.3f}",
                         f"{m['eval_prior_loss']:.3f}", f"{m['best_step']} / {m['last_step']} ({stop})",
                         f"{m['chosen'] + 1} of {m['restarts']}", str(len(m.get("rejected", []))),
                         f"{m['train_seconds']:.0f}"])
    return markdown(["seed", "model", "validation step AUROC", "validation loss", "class-prior loss",
                     "best / last step", "chosen restart", "rejected", "train s"], rows)


def kernels_table(record: dict) -> str:
    """Two runs that differ only in float kernels (``scripts/compare_kernels.py``): each run's command,
    workers and torch threads, then the largest difference of any number at N against the tolerance."""
    rows = [[run["command"], str(run["workers"] or 2), str(run["threads"] or 1), (run["commit"] or "")[:7]]
            for run in record["runs"]]  # a summary before the fields existed ran 2 workers of one thread
    verdict = "within" if record["within"] else "NOT within"
    return (markdown(["run", "workers", "torch threads per worker", "commit"], rows)
            + f"\n\nSeeds compared: {', '.join(map(str, record['seeds']))}; {len(record['rows'])} numbers at "
              f"N = {record['n']}; largest difference {record['largest']:.1f} points, {verdict} the "
              f"{record['tolerance']:.0f}-point target.")


def kernel_moves_table(record: dict, top: int = 8) -> str:
    """The numbers that moved most between the two runs of a kernels record (``scripts/compare_kernels.py``)."""
    def setting(run: dict) -> str:
        workers, threads = run["workers"] or 2, run["threads"] or 1
        return f"{workers} worker{'s' * (workers != 1)} x {threads} thread{'s' * (threads != 1)}"

    first, second = (setting(run) for run in record["runs"])
    rows = [[str(seed), pool, name, f"{a:.1f}", f"{b:.1f}", f"{diff:.1f}"]
            for seed, pool, name, a, b, diff in sorted(record["rows"], key=lambda r: -r[5])[:top]]
    return markdown(["seed", "pool", "number at N", first, second, "difference (points)"], rows)


def kernel_ensembles_table(record: dict) -> str:
    """The float-kernel rule's reading (``scripts/kernel_restarts.py``, ``rule``): per ensemble size (1: the restart
    the protocol chose), each model's best-of-N difference between the two runs, and whether all are within the
    tolerance; then the size the rule chooses."""
    rule = record["rule"]
    models = list(record["models"])
    rows = [[size if size != "1" else "1 (the protocol's choice)", *(f"{d[m]:.1f}" for m in models), "yes" if max(d.values()) <= rule["tolerance"] else "no"]
            for size, d in rule["differences"].items()]
    chosen = rule["chosen_size"]
    verdict = (f"the smallest size with every model within {rule['tolerance']:.0f} points: {chosen}" if chosen
               else f"no size puts every model within {rule['tolerance']:.0f} points")
    return markdown(["restarts averaged", *(f"{m}: difference (points)" for m in models), "all within"], rows) + \
        f"\n\nThe rule's reading: {verdict}."


def kernel_restarts_table(record: dict) -> str:
    """Each reward model's restarts in two runs of one seed (``scripts/kernel_restarts.py``): every restart's
    best-of-N, the one the protocol chose, the restarts' ensemble, and the two runs' differences."""
    a, b = (Path(r).name for r in record["runs"])
    rows = []
    for model, runs in record["models"].items():
        cells = []
        for name in (a, b):
            r = runs[name]
            cells.append(" / ".join(points(x) for x in r["restarts"]))
            cells += [points(r["restarts"][r["chosen"]]), points(r["ensemble"])]
        chosen = abs(runs[a]["restarts"][runs[a]["chosen"]] - runs[b]["restarts"][runs[b]["chosen"]])
        rows.append([model, *cells, points(chosen), points(abs(runs[a]["ensemble"] - runs[b]["ensemble"]))])
    n = record["n"]
    return markdown(["model", *(f"{name}: {what}" for name in (a, b) for what in
                                (f"restarts' best-of-{n}", "chosen", "ensemble")),
                     "difference, chosen (points)", "difference, ensemble (points)"], rows)


def kernel_noise_table(record: dict) -> str:
    """The float-kernel target's noise floor (``scripts/kernel_noise.py``): per reward model, how far apart two
    restarts land at best-of-N, how much of that the held-out problems alone explain, the restarts' own spread,
    and the problems two models of equal quality would need to land within the tolerance in 95% of pairs."""
    rows = [[model, str(m["restarts"]), points(m["parts"]["pair_rms"] / 100), points(m["parts"]["pair_noise_rms"] / 100),
             points(m["parts"]["quality_sd"] / 100), f"{m['problems_needed']:,}"] for model, m in record["models"].items()]
    return markdown(["model", "restarts kept (both runs)", f"two restarts' best-of-{record['n']} difference, rms (points)",
                     f"of which the {record['problems']} problems alone (points)", "the restarts' own spread, sd (points)",
                     "problems for equal models within the tolerance"], rows)


def kernel_noise_ensembles_table(record: dict) -> str:
    """Random pairs of disjoint restart ensembles of each size (``scripts/kernel_noise.py``): the rms of their
    best-of-N difference and the share of pairs within the tolerance, per model."""
    models = list(record["models"])
    sizes = sorted({int(k) for m in record["models"].values() for k in m["ensembles"]})
    def cell(model: str, k: int) -> str:
        e = record["models"][model]["ensembles"].get(str(k))
        return f"{points(e['rms'] / 100)} ({100 * e['within']:.0f}%)" if e else "-"
    return markdown(["restarts averaged", *models], [[str(k), *(cell(m, k) for m in models)] for k in sizes])


def plan_check_table(record: dict) -> str:
    """``scripts/plan_check.py``: a study's ``--plan`` estimates of the later seeds' jobs against their measured
    seconds, per kind of job, then the share of jobs within the tolerance and the totals."""
    rows = [[kind, str(k["jobs"]), f"{k['median_ratio']:.2f}"] for kind, k in record["by_kind"].items()]
    share = record["share_within"]
    verdict = "every one" if record["within"] else f"{100 * share:.0f}%" if share is not None else "none"
    return (markdown(["job", "jobs estimated", "measured / estimate, median"], rows)
            + f"\n\nJobs within {record['tolerance']:g}x of their estimate: {verdict}; in total "
              f"{record['total_measured']:.0f} s measured against {record['total_estimate']:.0f} s estimated"
              + (f"; {record['unestimated']} job(s) had no estimate." if record["unestimated"] else "."))


def recipe_rule_table(record: dict) -> str:
    """A recipe rule's outcome (``scripts/plans_recipe_rule.py``): each candidate per development seed, its mean,
    and which the rule took."""
    seeds = [str(s) for s in record["seeds"]]
    rows = [[c, *(points(record["per_seed"][c][s]) for s in seeds), points(record["means"][c]),
             "chosen" if c == record["chosen"] else ""] for c in record["per_seed"]]
    return markdown(["PRM score", *(f"seed {s}" for s in seeds), "mean", "the rule"], rows)


SFT_MEASURES = {"pass@1": "pass@1", "step_limit@1": "valid@1 (every step valid, answer right)",
                "right_answer_wrong_step": "right answers through a wrong step"}
"""The ``sft`` policy's measures (``scripts/policy_sft.py``), as the docs name them."""
SFT_SOURCES = {"base": "(the base, before any)", "rules": "the generator's passing samples (warm start)",
               "self": "its own passing samples"}


def sft_rounds_table(record: dict) -> str:
    """Expert iteration round by round (``scripts/policy_sft.py``): samples kept, then each measure on the
    fine-tuning's own measure problems (round 0: the base), in percent."""
    rows = [[str(r), SFT_SOURCES[rec.get("source", "self" if r else "base")], "" if r == 0 else f"{rec['kept']:,}",
             *(percent(rec[k]) for k in SFT_MEASURES)] for r, rec in enumerate(record["rounds"])]
    return markdown(["round", "fine-tuned on", "samples kept", *SFT_MEASURES.values()], rows)


def sft_ladder_table(record: dict) -> str:
    """The warm start's rule (``scripts/policy_warm_ladder.py``): each size tried, its measures, and the choice."""
    rows = [[f"{st['warm_start']:,}", *(percent(st[k]) for k in SFT_MEASURES), f"{st['seconds']:.0f} s"]
            for st in record["steps"]]
    return (markdown(["warm start (samples)", *SFT_MEASURES.values(), "wall time"], rows)
            + f"\n\nTarget pass@1 {percent(record['target'])}%; chosen: {record['chosen']:,} samples"
            + ("." if any(st["warm_start"] == record["chosen"] for st in record["steps"])
               else " (the rule's fallback: no size tried reached the target)."))


def sft_held_out_table(record: dict) -> str:
    """The base against the ``sft`` policy on held-out eval pools, per seed and measure (percent)."""
    seeds = [str(s) for s in record["seeds"]]
    rows = [[name, who, *(percent(record["held_out"][s][key][k]) for s in seeds)]
            for k, name in SFT_MEASURES.items() for key, who in (("lm", "base"), ("sft", "policy"))]
    return markdown(["measure", "model", *(f"seed {s}" for s in seeds)], rows)


TABLES = {
    "lab-eval": lambda s: metric_table(s, "eval", EVAL_ROWS),
    "lab-ood": lambda s: metric_table(s, "ood", OOD_ROWS),
    "lab-targets": targets_table,
    "lab-wall": wall_table,
    "lab-wall-compare": wall_compare_table,
    "lab-sweep": sweep_table,
    "lab-stats-eval": lambda s: stats_block(s, "eval"),
    "lab-stats": stats_table,
    "lab-policy": policy_table,
    "lab-pooled": lambda s: markdown(*pooled_rows(s["pooled"], s.get("auroc_spreads", {"PRM": s["auroc_spread"]}))),
    "lab-findings": lambda s: markdown(*findings_rows(s["findings"])),
    "lab-paper-findings": lambda s: markdown(*findings_rows(s["paper_findings"])),
    "lab-picks": lambda s: markdown(*picks_rows(s["picks"])),
    "lab-models": models_table,
    "lab-kernels": kernels_table,
    "lab-kernels-moves": kernel_moves_table,
    "stalls": stalls_table,
    "calibration-chosen": calibration_table,
    "calibration-range": calibration_range_table,
    "calibration-rules": calibration_rules_table,
    "synthetic-setting": synthetic_setting_table,
    **{f"budget-{name}": _budget(name) for name in ("accuracy", "fit", "equivalent", "matched", "auroc", "efficiency",
                                                           "findings")},
    **{f"synthetic-{name}": _study_rows("synthetic", name) for name in ("results", "large", "threshold")},
    **{f"active-{name}": _study_rows("active", name) for name in ("factor", "point", "difference", "selection", "findings")},
    **{f"autolabel-{name}": _study_rows("autolabel", name)
       for name in ("quality", "reasons", "hard", "cost", "prm", "difference", "findings", "examples")},
    **{f"grade-{name}": _grade_rows(name) for name in ("agreement", "speed", "stages", "targets", "snapshot")},
    "bon-read": bon_read_table,
    "bench-incremental": incremental_bench_table,
    "bench-search-overhead": search_overhead_table,
    **{f"real-pool-{name}": _real_pool(name) for name in ("qwen25math", "gsm8k")},
    "recipe-rule": recipe_rule_table,
    "kernel-restarts": kernel_restarts_table,
    "kernel-ensembles": kernel_ensembles_table,
    "kernel-noise": kernel_noise_table,
    "plan-check": plan_check_table,
    "kernel-noise-ensembles": kernel_noise_ensembles_table,
    "sft-rounds": sft_rounds_table,
    "sft-ladder": sft_ladder_table,
    "sft-held-out": sft_held_out_table,
    **{f"pressure-{name}": _study_rows("pressure", name) for name in ("run", "bon", "rl", "detector", "wall", "findings", "examples")},
    **{f"search-{name}": _study_rows("search", name)
       for name in ("findings", "ceiling", "with_prm", "with_oracle", "compute_prm", "compute_oracle", "difficulty_prm",
                    "difficulty_prm_valid", "recipe", "agreement")},
}
"""Every generated table, by the name a doc's marker uses."""


def run_label(summary: dict) -> str:
    """A run by its domain (a ledger summary older than the field has none), its seeds, and the PRM's score where
    it is not the lab's ``min``.

    >>> run_label({"domain": "plans", "seeds": [13, 14, 15], "aggregation": "product"}), run_label({"seeds": [10]})
    ('plans, seeds 13-15, PRM by product', 'ledger, seed 10')
    """
    label = summary.get("domain", "ledger")
    seeds = summary.get("seeds", [])
    if len(seeds) == 1:
        label += f", seed {seeds[0]}"
    elif seeds:
        contiguous = seeds == list(range(seeds[0], seeds[-1] + 1))
        label += f", seeds {seeds[0]}-{seeds[-1]}" if contiguous else f", seeds {','.join(map(str, seeds))}"
    if summary.get("aggregation", "min") != "min":
        label += f", PRM by {summary['aggregation']}"
    return label


def across_domains(rows_of):
    """A table of one question over several lab runs (``{path: summary}``), each row led by its run
    (:func:`run_label`)."""
    def table(summaries: dict) -> str:
        header, rows = [], []
        for summary in summaries.values():
            header, run_rows = rows_of(summary)
            rows += [[run_label(summary), *row] for row in run_rows]
        return markdown(["run", *header], rows)

    return table


STEP_AUROC_COLUMNS = [("PRM, every step", "prm_step_auroc"), ("PRM, to the first error", "prm_first_error_auroc"),
                      ("PRM, first immediate errors", "prm_first_error_auroc[immediate]"),
                      ("PRM, first delayed errors", "prm_first_error_auroc[delayed]"),
                      ("paper PRM, every step", "prm_paper_step_auroc"),
                      ("paper PRM, to the first error", "prm_paper_first_error_auroc"),
                      ("paper PRM, first immediate errors", "prm_paper_first_error_auroc[immediate]"),
                      ("paper PRM, first delayed errors", "prm_paper_first_error_auroc[delayed]"),
                      ("PRM, first error located (F1)", "prm_first_error_f1"),
                      ("PRM, first immediate errors found", "prm_first_error_found[immediate]"),
                      ("PRM, first delayed errors found", "prm_first_error_found[delayed]"),
                      ("base likelihood, every step", "likelihood_step_auroc")]
"""The step AUROCs a lab run's headline holds (a run from before 2026-12-06 lacks the first-error ones: "-")."""


def step_auroc_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Each seed's step AUROCs on the held-out pool, one row per seed."""
    rows = [[str(seed), *(f"{summary['results'][str(seed)]['eval'][k]:.3f}" if k in summary["results"][str(seed)]["eval"]
                          else "-" for _, k in STEP_AUROC_COLUMNS)] for seed in summary["seeds"]]
    return ["seed", *(label for label, _ in STEP_AUROC_COLUMNS)], rows


def calibration_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """The chosen family's pooled statistics beside the rule's ranges, one row per statistic."""
    chosen = summary["candidates"][summary["chosen"]]
    rows = [[CALIBRATION_LABELS[k], f"{100 * chosen['stats'][k]:.1f}", _rule_range(summary["rule"], k)]
            for k in CALIBRATION_LABELS if k in chosen["stats"]]
    return ["statistic (%), development seeds pooled", "chosen family", "the rule"], rows


ACROSS_DOMAINS = {
    "domains-paper-findings": across_domains(lambda s: findings_rows(s["paper_findings"])),
    "domains-findings": across_domains(lambda s: findings_rows(s["findings"])),
    "domains-picks": across_domains(lambda s: picks_rows(s["picks"])),
    "domains-step-auroc": across_domains(step_auroc_rows),
    "domains-calibration": across_domains(calibration_rows),
    "bench-search-split": search_split_table,
}
"""Tables of several summaries: their block names the files joined by commas (docs/domains.md)."""

BLOCK = re.compile(r"(<!-- generated: (\S+) (\S+) -->\n)(.*?)(<!-- end generated -->)", re.DOTALL)


def render_doc(text: str, root: Path) -> str:
    """``text`` with every generated block filled from its results file (paths relative to ``root``), or, for a
    table of :data:`ACROSS_DOMAINS`, its results files joined by commas."""
    def fill(m: re.Match) -> str:
        name, results = m.group(2), m.group(3)
        if name in ACROSS_DOMAINS:
            table = ACROSS_DOMAINS[name]({p: json.loads((root / p).read_text()) for p in results.split(",")})
        elif name in TABLES:
            table = TABLES[name](json.loads((root / results).read_text()))
        else:
            raise ValueError(f"unknown generated table {name!r} (known: {', '.join([*TABLES, *ACROSS_DOMAINS])})")
        return f"{m.group(1)}{table}\n{m.group(5)}"

    return BLOCK.sub(fill, text)


__all__ = ["TABLES", "markdown", "metric_table", "render_doc", "sweep_table", "targets_table", "wall_table"]
