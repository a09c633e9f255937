"""``prmkit grade``: grade a file of (given, gold) answer pairs, optionally auditing another grader."""

from __future__ import annotations

import argparse
import collections
import sys

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import output_argument
from prmkit.grade import (
    GRADERS,
    MODES,
    GradeError,
    SymbolicPool,
    grade_many,
    reference_grade,
    solution_answer,
)
from prmkit.grade.symbolic import DEFAULT_TIMEOUT
from prmkit.io import (
    RecordError,
    RejectWriter,
    atomic_output,
    dumps,
    iter_json,
    rejects_path,
    require_records,
)
from prmkit.schema import SchemaError, Solution

EPILOG = """\
input: JSON Lines (or a JSON array), one object per pair, e.g.
  {"given": "so the answer is \\\\boxed{\\\\frac{1}{2}}", "gold": "0.5", "id": "q17"}
"given" may be a whole solution (its # Answer, \\boxed{}, #### or Minerva's "The final answer is ..." is extracted) or a bare answer;
null means no answer (graded incorrect, reason no-answer). Other keys are copied to the output.

output (OUT): each input object plus "grade" (correct / incorrect / unparseable: the grader could
not decide, never a wrong answer), "grade_reason" (why: equal-normalized, equal-symbolic,
different-number, different-unit, no-answer, timeout, ...), "grade_detail" (for unparseable: the
parse error or the deadline) and, with --audit, "audit_grade" from the other grader.

Solution records (--from prmkit, or detected from the first record): the answer of each (or the one
its steps mark with # Answer or a box; none is no answer) is graded against its problem.answer, and the record is
written back with its "grade" set and meta.grading (reason, mode): how converted PRM800K records,
which carry problem.answer but no grade, become ORM training data.

examples:
  prmkit grade pairs.jsonl graded.jsonl
  prmkit grade prm800k.jsonl prm800k-graded.jsonl     # prmkit records, graded and written back
  prmkit grade pairs.jsonl --mode lenient --timeout 10 --workers 4
  prmkit grade samples.jsonl --given-field response --gold-field answer graded.jsonl
  prmkit grade pairs.jsonl --audit math-verify        # list where prmkit and Math-Verify disagree
  prmkit grade pairs.jsonl graded.jsonl --skip-invalid   # bad lines go to graded.rejects.jsonl
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("grade", formatter_class=HelpFormatter, epilog=EPILOG,
                              help="grade answers against gold answers",
                              description="Grade (given, gold) answer pairs: correct, incorrect or unparseable. "
                                          "Policy and measurements: docs/grading.md.")
    p.add_argument("pairs", metavar="IN", help="file of answer pairs (JSONL, .gz read transparently)")
    output_argument(p, help="write every pair with its grade here (atomically); default: only the counts")
    p.add_argument("--mode", choices=MODES, default="strict",
                   help="strict: variables, order and types matter; lenient: also sets ~ tuples, "
                        "relations ~ intervals, case and comma-list order ignored")
    p.add_argument("--from", dest="input_format", choices=("auto", "pairs", "prmkit"), default="auto",
                   help="input: answer pairs, or prmkit solution records (graded against problem.answer); auto "
                        "detects it from the first record")
    p.add_argument("--given-field", default="given", help="key of the given answer (or solution) in each object")
    p.add_argument("--gold-field", default="gold", help="key of the gold answer in each object")
    p.add_argument("--audit", metavar="GRADER", choices=[g for g in GRADERS if g != "prmkit"],
                   help="also grade with this grader and list the pairs where it disagrees with prmkit")
    p.add_argument("--max-listed", type=int, default=50, help="how many audit disagreements to print")
    p.add_argument("--allow-empty", action="store_true",
                   help="grade an IN with no pairs (an empty OUT), instead of refusing it")
    p.add_argument("--skip-invalid", action="store_true",
                   help="write malformed pairs and pairs the grader fails on to OUT.rejects.jsonl "
                        "(or IN.rejects.jsonl) and go on, instead of stopping at the first")
    p.add_argument("--workers", type=int, default=2, help="worker processes for the symbolic step")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help="seconds one pair may spend in the symbolic step; past it the pair is "
                        "unparseable with reason 'timeout'")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.workers < 1 or args.timeout <= 0:
        raise ValueError("--workers must be at least 1 and --timeout positive")
    if not args.allow_empty:
        require_records(args.pairs, "--allow-empty writes an empty OUT")
    rejects = RejectWriter(rejects_path(args.output or args.pairs)) if args.skip_invalid else None
    kind = _input_kind(args.pairs) if args.input_format == "auto" else args.input_format
    reader = _read_pairs(args.pairs, args.given_field, args.gold_field, rejects) if kind == "pairs" else \
        _read_solutions(args.pairs, rejects)
    rows = list(reader)
    pool = SymbolicPool(args.workers, args.timeout)
    try:
        results = grade_many([(given, gold) for _, given, gold, _ in rows], args.mode, timeout=args.timeout,
                             pool=pool, errors="keep")
        kept = _set_aside_failures(args, rows, results, rejects)
        audit = _audit(args, kept, pool) if args.audit else None
    finally:
        pool.close()
    if args.output:
        with atomic_output(args.output, inputs=[args.pairs]) as f:
            for i, (_, _, _, value, result) in enumerate(kept):
                f.write(dumps(_graded(value, result, args.mode, None if audit is None else audit[i])) + "\n")
    _summarise(args, kept, audit, rejects, pool)
    return 0


def _input_kind(path: str) -> str:
    """``prmkit`` when the first record is a solution record (a problem and steps), else ``pairs``."""
    first = next(iter_json(path), None)
    value = first.value if first is not None else None
    return "prmkit" if isinstance(value, dict) and "steps" in value and "problem" in value else "pairs"


def _graded(value, result, mode: str, audit: str | None):
    """The output record: a pair with its grade columns, or the solution record with its grade set."""
    if isinstance(value, Solution):
        value.grade = result.verdict
        value.meta["grading"] = {"reason": result.reason, "mode": mode,
                                 **({"detail": result.detail} if result.verdict == "unparseable" else {})}
        if value.answer is None:  # a marker in the steps names the answer; without one there is none
            value.answer = result.given if result.reason != "no-answer" else None
        if audit is not None:
            value.meta["grading"]["audit"] = audit
        return value
    extra = {"grade": result.verdict, "grade_reason": result.reason}
    if result.verdict == "unparseable" and result.detail:  # why the grader could not decide
        extra["grade_detail"] = result.detail
    if audit is not None:
        extra["audit_grade"] = audit
    return dict(value, **extra)


def _read_pairs(path: str, given_field: str, gold_field: str, rejects: RejectWriter | None):
    """Yield (raw, given, gold, object) for every valid pair; a bad one raises RecordError or goes to ``rejects``."""
    for raw in iter_json(path, rejects):
        try:
            value = _check_pair(raw.value, given_field, gold_field)
        except SchemaError as e:
            _refuse(RecordError(path, raw.line, e.field, e.message), raw, rejects)
            continue
        yield raw, value[given_field], value[gold_field], value


def _read_solutions(path: str, rejects: RejectWriter | None):
    """Yield (raw, given, gold, Solution) for every solution record: its answer, else the one its steps mark
    (``# Answer``, a box), else none (``no-answer``), as ``prmkit generate`` grades a sample."""
    for raw in iter_json(path, rejects):
        try:
            sol = Solution.from_dict(raw.value)
            if not (sol.problem.answer or "").strip():
                raise SchemaError("problem.answer", "missing: a solution is graded against its problem's "
                                                    "reference answer")
        except SchemaError as e:
            _refuse(RecordError(path, raw.line, e.field, e.message), raw, rejects)
            continue
        yield raw, solution_answer(sol), sol.problem.answer, sol


def _refuse(error: RecordError, raw, rejects: RejectWriter | None) -> None:
    if rejects is None:
        raise error from None
    rejects.add(error, raw)


def _check_pair(value, given_field: str, gold_field: str) -> dict:
    if not isinstance(value, dict):
        raise SchemaError("", f"expected an object with '{given_field}' and '{gold_field}', got {type(value).__name__}")
    for field, nullable in ((given_field, True), (gold_field, False)):
        if field not in value:
            raise SchemaError(field, "missing required field")
        if not (isinstance(value[field], str) or (nullable and value[field] is None)):
            raise SchemaError(field, f"expected a string{' or null' if nullable else ''}, "
                                     f"got {type(value[field]).__name__}")
    if not value[gold_field].strip():
        raise SchemaError(gold_field, "empty gold answer")
    return value


def _set_aside_failures(args, rows, results, rejects):
    """Pairs the grader failed on stop the run (naming file and line) or go to the rejects."""
    kept = []
    for (raw, given, gold, value), result in zip(rows, results):
        if isinstance(result, GradeError):
            _refuse(RecordError(args.pairs, raw.line, args.given_field, f"grader failed: {result}"), raw, rejects)
        else:
            kept.append((raw, given, gold, value, result))
    return kept


def _audit(args, kept, pool) -> list[str]:
    out = []
    for raw, given, gold, _, _ in kept:
        try:
            out.append(reference_grade(given, gold, args.audit, timeout=args.timeout, pool=pool))
        except GradeError as e:
            raise RecordError(args.pairs, raw.line, None, f"{args.audit} failed: {e}") from None
    return out


def _summarise(args, kept, audit, rejects, pool) -> None:
    counts = collections.Counter(r.verdict for *_, r in kept)
    reasons = collections.Counter(r.reason for *_, r in kept)
    print(f"graded {len(kept)} pairs ({args.mode}): " + ", ".join(f"{counts[g]} {g}" for g in
                                                                  ("correct", "incorrect", "unparseable")))
    print("reasons: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
    if pool.timeouts:
        print(f"{pool.timeouts} pairs timed out after {args.timeout:g}s (graded unparseable, reason 'timeout')")
    if rejects is not None:
        rejects.close()
        if rejects.count:
            print(f"{rejects.count} invalid pairs written to {rejects.path}", file=sys.stderr)
    if audit is not None:
        _print_audit(args, kept, audit)


def _print_audit(args, kept, audit) -> None:
    table = collections.Counter((r.verdict, a) for (*_, r), a in zip(kept, audit))
    print(f"\naudit: prmkit vs {args.audit} (rows prmkit, columns {args.audit})")
    print(f"{'':>12} " + " ".join(f"{c:>12}" for c in ("correct", "incorrect", "unparseable")))
    for row in ("correct", "incorrect", "unparseable"):
        print(f"{row:>12} " + " ".join(f"{table[(row, c)]:>12}" for c in ("correct", "incorrect", "unparseable")))
    differ = [(raw, r, a) for (raw, *_, r), a in zip(kept, audit) if r.verdict != a]
    agree = len(kept) - len(differ)
    print(f"agreement {agree}/{len(kept)}" + (f" = {agree / len(kept):.3f}" if kept else ""))
    for raw, r, a in differ[: args.max_listed]:
        print(f"  line {raw.line}: prmkit {r.verdict} ({r.reason}), {args.audit} {a}: "
              f"given {r.given!r:.60} gold {r.gold!r:.60}")
    if len(differ) > args.max_listed:
        print(f"  ... {len(differ) - args.max_listed} more (raise --max-listed)")
