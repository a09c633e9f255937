"""Training data that would silently ruin a model is refused before training, with the fix named.

- **Truncation**: more than ``max_steps_lost`` of the training steps cut off by ``max_length`` (the
  error names the length that fits, and the model's own limit); ``--allow-truncation`` trains anyway.
- **One class**: a PRM whose hard targets are all one class learns the base rate only (PRM800K phase 1's
  chosen path is all positive: its -1 ratings are on the alternatives); ``--allow-one-class`` trains anyway.
- **Length past the model**: an explicit ``--max-length`` above the model's position limit.
- **Ungraded ORM data**: solutions with no grade and no outcome label but a reference answer
  (``problem.answer``, as PRM800K converts) are graded with ``--grade``, or refused with the command
  that grades them (an ORM would otherwise find no target in them).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from prmkit.model.formatter import FormatConfig, encode_many

if TYPE_CHECKING:
    from prmkit.train.config import TrainConfig


def model_limit(backbone) -> int | None:
    """The most positions ``backbone`` takes (its config's ``max_position_embeddings``), if it says."""
    limit = getattr(backbone.config, "max_position_embeddings", None)
    return int(limit) if isinstance(limit, int) and limit > 1 else None


def check_training_data(cfg: TrainConfig, report, solutions: list, tokenizer, fmt: FormatConfig,
                        limit: int | None, preset: bool = False) -> None:
    """Refuse data that would silently ruin the model, naming the fix: more than ``max_steps_lost`` of the
    steps truncated away, or a PRM whose targets hold one class only."""
    lost = report.truncation.share_lost
    if lost > cfg.max_steps_lost and not cfg.allow_truncation:
        longest = longest_solution(solutions, tokenizer, fmt)
        if preset:
            limit = None  # a preset base is built with room for the --max-length asked
            room = "a preset base is built with room for the length asked"
        else:
            room = f"the model takes {limit} positions" if limit else "the model states no position limit"
        raise ValueError(
            f"truncation would drop {report.truncation.steps_lost} of {report.truncation.steps} training steps "
            f"({lost:.1%}, above --max-steps-lost {cfg.max_steps_lost:g}) at --max-length {fmt.max_length}; the "
            f"longest solution is {longest} tokens and {room}. Train with --max-length {longest}"
            f"{' on a model with a longer context' if limit and longest > limit else ''}, or pass --allow-truncation")
    hard = [k for k in report.targets if k != "soft"]  # soft values in (0, 1) carry both classes
    if cfg.kind == "prm" and len(hard) < 2 and "soft" not in report.targets and not cfg.allow_one_class:
        only = next(iter(report.targets), "none")
        hint = ("" if cfg.alternatives else " Rated alternatives of a step (PRM800K phase 1) are left out: drop "
                "--no-alternatives.")
        raise ValueError(f"every one of the {report.supervised} supervised PRM targets is {only!r}: a PRM trained "
                         f"on one class learns its base rate only (step AUROC undefined).{hint} Check the ratings "
                         "with `prmkit data stats`, or pass --allow-one-class")


def longest_solution(solutions: list, tokenizer, fmt: FormatConfig) -> int:
    """Tokens of the longest of ``solutions`` formatted without truncation."""
    whole = replace(fmt, max_length=1 << 30)
    return max((len(e) for e in encode_many(tokenizer, [(s.problem.problem, s.texts) for s in solutions], whole)),
               default=0)




def check_max_length(cfg, limit: int | None, preset: bool) -> None:
    """An explicit ``max_length`` a (non-preset) model cannot take is an error, not a crash in training."""
    if cfg.max_length and limit and cfg.max_length > limit and not preset:
        raise ValueError(f"--max-length {cfg.max_length} is more than the {limit} positions {cfg.base_model} takes "
                         "(its max_position_embeddings): use at most that, or 0 for the model's own limit")


def ensure_graded(cfg: TrainConfig, solutions: list, source: str) -> int:
    """ORM data: grade (``cfg.grade``) or refuse solutions that have neither a grade nor an outcome label but
    carry ``problem.answer``; returns how many were graded here."""
    from prmkit.model.labels import outcome_target

    if cfg.kind != "orm" or cfg.outcome_source == "outcome":  # outcome labels only: a grade is no target
        return 0
    todo = [s for s in solutions if outcome_target(s, "auto", "negative") is None and s.problem.answer]
    if not todo:
        return 0
    if not cfg.grade:
        first = source.split(",")[0].strip()
        raise ValueError(f"{source}: {len(todo)} of {len(solutions)} solutions have no grade (and no outcome label) "
                         "but carry problem.answer, so an ORM has no target in them: grade them first with "
                         f"`prmkit grade {first} GRADED.jsonl` (each file; prmkit records are graded and "
                         "written back), or pass --grade to grade them here")
    from prmkit.grade import GradeError, grade_many, solution_answer

    results = grade_many([(solution_answer(s), s.problem.answer) for s in todo], errors="keep")
    for sol, result in zip(todo, results):
        if isinstance(result, GradeError):
            raise ValueError(f"{source}: solution {sol.id or sol.problem.problem[:60]!r}: {result}")
        sol.grade = result.verdict
    return len(todo)
