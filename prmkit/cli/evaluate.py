"""``prmkit eval``: best-of-N / voting / pass@N curves (``bon``) and step-level metrics (``steps``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import add_switch, renamed
from prmkit.convert import solution_formats, step_score_formats

BON_EPILOG = """\
examples:
  prmkit eval bon scored.jsonl --score prm_min,orm --ns 1,2,4,8 --out-dir runs/eval
  prmkit eval bon scored.jsonl --score p_correct:product,p_correct:min --pad-to 1860 --ns 10,100,1860
  prmkit eval bon ../shared/data/candidates/qwen25math_math_cot_100.jsonl --score pred_score --out-dir runs/qwen
  prmkit eval bon scored-test-samples.jsonl.gz --from prm800k-samples --score prm_score,orm_score --pad-to 1860

Scores: a NAME is a solution-level score (Solution.scores[NAME]); KEY:AGG aggregates the step scores
Step.scores[KEY] with AGG in product, min, last, mean. Best-of-N and pass@N are exact expectations
over random N-subsets; votes are Monte Carlo with the standard error shown as ±. Brackets: 95%
bootstrap CI over problems. Formats: prmkit Solution records; qwen-candidates and gsm8k-examples
(a line per problem); prm800k-samples, the paper's released scored samples (a line per sample:
problem, answer or given_answer, is_correct, prm_score and/or orm_score). Definitions:
docs/evaluation.md.
"""

STEPS_EPILOG = """\
examples:
  prmkit eval steps scored/gsm8k.json scored/math.json --score p_correct --dev-fraction 0.2 --out-dir runs/pb
  prmkit eval steps test.jsonl --dev dev.jsonl --score p_correct --out-dir runs/steps

Each file is one subset. ProcessBench ships no scores: add a PRM's per-step scores to each record
(a list under the --score key), or score prmkit files so that Step.scores[KEY] holds them. The
threshold is chosen on the dev split (--dev files, else a seeded --dev-fraction of each subset) and
reported; F1 is computed on the rest.
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="evaluate reward models: best-of-N curves, step-level metrics",
                                   formatter_class=HelpFormatter, epilog=BON_EPILOG + "\n" + STEPS_EPILOG)
    sub = parser.add_subparsers(dest="eval_command", metavar="COMMAND", required=True)
    _register_bon(sub)
    _register_steps(sub)


def _register_bon(sub) -> None:
    p = sub.add_parser("bon", help="best-of-N, majority and weighted vote, pass@N, with confidence intervals",
                       formatter_class=HelpFormatter, epilog=BON_EPILOG)
    p.add_argument("scored", metavar="IN", help="scored candidate pool (JSONL, .gz ok)")
    p.add_argument("--score", default=None, help="comma-separated score columns (NAME or KEY:AGG); "
                   "default: every solution-level score in the file")
    p.add_argument("--ns", dest="n", default=None, metavar="N,N,...",
                   help="comma-separated N values; default: powers of 2 up to --pad-to")
    renamed(p, "--n", "--ns")
    p.add_argument("--from", dest="format", default="auto", choices=["auto", *solution_formats()], metavar="FORMAT",
                   help="format of IN: any solution format of `prmkit data formats`; auto detects prmkit, "
                        "qwen-candidates, gsm8k-examples and prm800k-samples from the first record")
    renamed(p, "--format", "--from")
    p.add_argument("--pad-to", type=int, default=None,
                   help="padded pool size M_pad (the released protocol uses 1860); default: the largest pool")
    p.add_argument("--answer-key", default="grader", choices=["grader", "exact"],
                   help="group answers for voting by grader equivalence or by exact (stripped) string")
    add_switch(p, "--vote", "majority and weighted voting (Monte Carlo); --no-vote skips them", default=True)
    p.add_argument("--vote-weight", default="auto", choices=["auto", "raw", "sigmoid"],
                   help="score transform for weighted voting; auto = raw for scores in [0,1], else sigmoid")
    p.add_argument("--target-se", type=float, default=0.002,
                   help="Monte-Carlo standard error to reach for voting (as a fraction, 0.002 = 0.2 points)")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples over problems for the 95%% CI")
    p.add_argument("--seed", type=int, default=0, help="seed for Monte Carlo and bootstrap")
    p.add_argument("--out-dir", dest="out", default=None, metavar="DIR",
                   help="folder for NAME.json (every number) and NAME.png (curves)")
    renamed(p, "--out", "--out-dir")
    p.add_argument("--name", default="bon", help="file name stem of the outputs in --out-dir")
    p.set_defaults(func=run_bon)


def _register_steps(sub) -> None:
    p = sub.add_parser("steps", help="ProcessBench F1 (dev-chosen threshold), step AUROC, accuracy, calibration",
                       formatter_class=HelpFormatter, epilog=STEPS_EPILOG)
    p.add_argument("files", metavar="IN", nargs="+", help="step-scored files, one subset each")
    p.add_argument("--score", default="p_correct", help="key of the per-step score (higher = step more likely correct)")
    p.add_argument("--from", dest="format", default="auto", choices=["auto", *step_score_formats()],
                   help="format of IN")
    renamed(p, "--format", "--from")
    p.add_argument("--dev", nargs="+", default=None, metavar="DEV",
                   help="separate dev files for choosing the threshold (else --dev-fraction of each IN)")
    p.add_argument("--dev-fraction", type=float, default=0.2, help="share of each subset held out as dev")
    p.add_argument("--seed", type=int, default=0, help="seed of the dev split")
    add_switch(p, "--skip-unscored", "leave out solutions whose steps have no score (steps lost to truncation at "
                                     "scoring), counted and printed, instead of refusing the file")
    p.add_argument("--bins", type=int, default=10, help="bins of the reliability diagram and ECE")
    p.add_argument("--out-dir", dest="out", default=None, metavar="DIR",
                   help="folder for NAME.json, NAME_reliability.png, NAME_f1.png")
    renamed(p, "--out", "--out-dir")
    p.add_argument("--name", default="steps", help="file name stem of the outputs in --out-dir")
    p.set_defaults(func=run_steps)


def parse_ns(text: str | None) -> list[int] | None:
    """``"1,2,4"`` -> ``[1, 2, 4]``.

    >>> parse_ns("1, 2,4"), parse_ns(None)
    ([1, 2, 4], None)
    """
    if text is None:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--n must be comma-separated integers, got {text!r}") from None


def run_bon(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from prmkit.evaluate.curves import default_ns, evaluate_pool, format_table
    from prmkit.evaluate.pool import load_pool
    from prmkit.evaluate.report import comparison_curves, read_provenance
    from prmkit.io import write_json

    columns = [c.strip() for c in args.score.split(",") if c.strip()] if args.score else None
    pool = load_pool(args.scored, args.format, columns, args.answer_key)
    columns = columns if columns is not None else list(pool.scores)
    ns = parse_ns(args.n) or default_ns(args.pad_to or int(pool.sizes.max()))
    n_votes = 0 if not args.vote else (1 + len(columns)) * len(ns)
    with tqdm(total=n_votes, desc="voting (Monte Carlo)", disable=None if n_votes else True, leave=False) as bar:
        result = evaluate_pool(pool, columns, ns, args.pad_to, args.vote, args.vote_weight, args.target_se,
                               args.bootstrap, args.seed, progress=bar,
                               per_problem=comparison_curves(columns, args.vote))
    result = {"kind": "bon", "source": [str(args.scored)], **result,
              "provenance": read_provenance(args.scored, pool.format, columns)}
    result["settings"]["answer_key"] = args.answer_key
    print(format_table(result))
    if args.out:
        from prmkit.evaluate.plots import plot_bon  # matplotlib, only when there is a figure to draw

        out = Path(args.out)
        result["figures"] = [f"{args.name}.png"]
        plot_bon(result, out / f"{args.name}.png", title=f"{Path(args.scored).name}")
        write_json(out / f"{args.name}.json", result, inputs=[args.scored])
        print(f"wrote {out / (args.name + '.json')} and {out / (args.name + '.png')}")
    return 0


def run_steps(args: argparse.Namespace) -> int:
    from prmkit.evaluate.plots import plot_f1_threshold, plot_reliability
    from prmkit.evaluate.stepdata import load_step_set
    from prmkit.evaluate.steps import split_dev, step_metrics
    from prmkit.io import write_json

    unscored: dict[str, list] = {}

    def load(path):
        found = unscored.setdefault(str(path), []) if args.skip_unscored else None
        return load_step_set(path, args.score, args.format, found)

    sets, skipped = zip(*(load(f) for f in args.files))
    if args.dev:
        dev, test = [load(f)[0] for f in args.dev], list(sets)
    else:
        dev, test = map(list, zip(*(split_dev(s, args.dev_fraction, args.seed) for s in sets)))
    result = {"kind": "steps", "source": [str(f) for f in args.files], "score_key": args.score,
              "skipped_unlabelled": dict(zip((s.name for s in sets), skipped)),
              "skipped_unscored": {path: len(found) for path, found in unscored.items()},
              "dev_split": "files: " + ", ".join(args.dev) if args.dev else
              f"random {args.dev_fraction:.0%} of each subset (seed {args.seed})",
              **step_metrics(test, dev, args.bins)}
    for path, found in unscored.items():
        if found:
            causes = sorted({why for _, why in found})
            print(f"warning: {path}: left out {len(found)} solutions whose steps have no {args.score!r} score "
                  f"(--skip-unscored; first at line {found[0][0]}; {', '.join(causes[:3])})", file=sys.stderr)
    print(format_steps(result))
    if args.out:
        out = Path(args.out)
        figures = [plot_f1_threshold(result["dev_f1_curve"], result["threshold"], out / f"{args.name}_f1.png")]
        if result["calibration"]:
            figures.append(plot_reliability(result["calibration"], out / f"{args.name}_reliability.png"))
        result["figures"] = [os.path.basename(f) for f in figures]
        write_json(out / f"{args.name}.json", result, inputs=args.files)
        print(f"wrote {', '.join(str(out / f) for f in [args.name + '.json', *result['figures']])}")
    return 0


def format_steps(result: dict) -> str:
    """The terminal summary of ``eval steps``."""
    lines = [(f"threshold {result['threshold']:.4g} (chosen on the dev split: {result['dev_split']}; "
              f"dev mean F1 {100 * result['dev_mean_f1']:.1f})"),
             f"{'subset':<16}{'n':>6}{'acc_err':>9}{'acc_ok':>9}{'F1':>7}"]
    for name, s in result["subsets"].items():
        lines.append(f"{name:<16}{s['n']:>6}{100 * s['acc_erroneous']:>9.1f}{100 * s['acc_correct']:>9.1f}"
                     f"{100 * s['f1']:>7.1f}")
    lines.append(f"mean F1 over subsets {100 * result['mean_f1']:.1f}; step AUROC {result['step_auroc']:.3f}; "
                 f"step accuracy at threshold {100 * result['step_accuracy']:.1f}%"
                 + (f"; ECE {result['calibration']['ece']:.3f}" if result["calibration"] else ""))
    return "\n".join(lines)
