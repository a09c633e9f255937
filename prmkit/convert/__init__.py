"""Format converters: every foreign format to prmkit records and back, wherever the target can hold it.

:data:`FORMATS` maps a format's name to its :class:`Format` (a one-line doc, a reader and/or a
writer); :func:`convert_file` streams one file into another through prmkit records. ``docs/formats.md``
shows one annotated example per format and what each direction keeps and loses.

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> src = os.path.join(d, "pb.jsonl")
>>> with open(src, "w") as f:
...     _ = f.write('{"id": "a", "generator": "m", "problem": "1+1?", "steps": ["2"], '
...                 '"final_answer_correct": true, "label": -1}\\n')
>>> report = convert_file(src, os.path.join(d, "out.jsonl"), "processbench", "prmkit")
>>> report.records_in, report.rows_out
(1, 1)
>>> sorted(FORMATS)[:3]
['competition', 'gsm8k', 'gsm8k-examples']
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prmkit.convert import (
    aps,
    candidates,
    critic,
    prm800k,
    prmbench,
    problems,
    processbench,
    shepherd,
    text,
    trl,
)
from prmkit.convert.base import (
    DEFAULTS,
    NEUTRAL_POLICIES,
    SPLIT_MODES,
    SUPERVISE,
    Format,
    Options,
    rows,
)
from prmkit.io import RecordError, RejectWriter, rejects_path, same_file, write_records
from prmkit.schema import Problem, Solution

__all__ = [
    "FORMATS",
    "NEUTRAL_POLICIES",
    "SPLIT_MODES",
    "SUPERVISE",
    "ConvertReport",
    "Format",
    "Options",
    "convert_file",
    "read",
    "read_solutions_only",
    "solution_formats",
    "step_score_formats",
]


def parse_record(value: Any, path: str = "") -> Solution | Problem:
    """A prmkit record: a :class:`Problem` when ``problem`` is a string, else a :class:`Solution`."""
    if isinstance(value, dict) and isinstance(value.get("problem"), str):
        return Problem.from_dict(value, path or "record")
    return Solution.from_dict(value, path)


def _read_prmkit(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution | Problem]:
    return rows(path, parse_record, rejects)


def _write_prmkit(records: Iterable[Any], path, options: Options = DEFAULTS, dropped=None) -> int:
    return write_records(path, records)


_FORMATS = [
    Format("prmkit", "prmkit records, one JSON object per line (.gz ok): solutions or problems",
           _read_prmkit, _write_prmkit, holds="any", step_scores=True),
    Format("prm800k", "PRM800K raw records (phase 1 and 2; JSONL, JSON array or pretty-printed objects); lossless",
           prm800k.read, prm800k.write),
    Format("stepwise-critic", "PRM800K denormalised to one row per candidate step; step trees rebuilt",
           critic.read, critic.write),
    Format("trl", "TRL stepwise supervision: prompt, completions, labels (bool); needs --neutral to write",
           trl.read, trl.write),
    Format("math-shepherd", "Math-Shepherd: steps tagged by a marker in 'input', +/- in 'label'",
           shepherd.read, shepherd.write),
    Format("math-aps", "Monte-Carlo-valued prefixes (MATH-APS / OmegaPRM flat): solution_prefix, mc_value",
           aps.read_flat, aps.write_flat),
    Format("math-aps-tree", "Monte-Carlo-valued step tree (MATH-APS / OmegaPRM): text, mc_value, children",
           aps.read_tree, aps.write_tree),
    Format("processbench", "ProcessBench: steps + 0-based index of the first wrong step (-1: none)",
           processbench.read, processbench.write, step_scores=True),
    Format("prmbench", "PRMBench: modified process with 1-based error_steps (read only)", prmbench.read, None),
    Format("qwen-candidates", "Qwen2.5-Math sampled solutions per problem (code, pred, score, pred_score); "
           "a solution per sample (read only)", candidates.read_qwen, None, split=candidates.QWEN_SPLIT),
    Format("gsm8k-examples", "grade-school-math example model solutions, 4 per problem with is_correct "
           "(read only)", candidates.read_gsm8k_examples, None, split=candidates.GSM8K_SPLIT),
    Format("prm800k-samples", "PRM800K's released scored samples, one per line: problem, answer, is_correct, "
           "prm_score, orm_score (read only)", candidates.read_prm800k_samples, None),
    Format("text", "one solution text per row: problem, solution, optional answer (the reference) and id "
           "(read only)", text.read, None, split=text.DEFAULT_SPLIT),
    Format("math", "MATH / MATH-500 problems: problem, solution, answer, subject, level, unique_id",
           problems.read_math, problems.write_math, holds="problems"),
    Format("gsm8k", "GSM8K problems: question, answer ending in '#### <number>'",
           problems.read_gsm8k, problems.write_gsm8k, holds="problems"),
    Format("competition", "Competition problems (AIME, AMC): id, problem/question, answer (string or number)",
           problems.read_competition, problems.write_competition, holds="problems"),
]
FORMATS: dict[str, Format] = {f.name: f for f in _FORMATS}
"""Every format by name: what ``--from`` and ``--to`` accept."""


def solution_formats() -> list[str]:
    """The formats read as sampled solutions: what ``prmkit eval bon --from`` takes (a pool of them).

    >>> "prm800k-samples" in solution_formats(), "math" in solution_formats()
    (True, False)
    """
    return [f.name for f in _FORMATS if f.read is not None and f.holds != "problems"]


def step_score_formats() -> list[str]:
    """The formats whose rows can carry a PRM's per-step scores: what ``prmkit eval steps --from`` takes.

    >>> step_score_formats()
    ['prmkit', 'processbench']
    """
    return [f.name for f in _FORMATS if f.step_scores]


@dataclass
class ConvertReport:
    """What a conversion did: records read, rows written, rows rejected, records dropped (by reason)."""

    records_in: int = 0
    rows_out: int = 0
    rejected: int = 0
    dropped: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        """One line for people.

        >>> ConvertReport(3, 2, 1, Counter({"no grade (final_answer_correct)": 1})).summary()
        'read 3 records, wrote 2 rows, rejected 1, dropped 1 (no grade (final_answer_correct): 1)'
        """
        text = f"read {self.records_in} records, wrote {self.rows_out} rows, rejected {self.rejected}"
        if self.dropped:
            reasons = ", ".join(f"{k}: {v}" for k, v in sorted(self.dropped.items()))
            text += f", dropped {sum(self.dropped.values())} ({reasons})"
        return text


def get_format(name: str, direction: str) -> Format:
    """The format called ``name``, checked to support ``direction`` ("read" or "write")."""
    if name not in FORMATS:
        raise ValueError(f"unknown format {name!r} (known: {', '.join(FORMATS)})")
    fmt = FORMATS[name]
    if getattr(fmt, direction) is None:
        raise ValueError(f"format {name!r} cannot be {'read' if direction == 'read' else 'written'}")
    return fmt


def check_split(fmt: Format, options: Options) -> None:
    """Refuse ``options.split`` for a format whose rows hold steps already (it would be ignored)."""
    if options.split is not None and fmt.split is None:
        cutting = ", ".join(f.name for f in _FORMATS if f.split is not None)
        raise ValueError(f"--split cuts solutions stored as one text ({cutting}); {fmt.name!r} rows hold "
                         "their steps already (to re-cut steps, use --split-long)")


def read(path, fmt: str = "prmkit", options: Options = DEFAULTS, rejects=None) -> Iterator[Solution | Problem]:
    """Stream the records of a file in format ``fmt``."""
    reader = get_format(fmt, "read")
    check_split(reader, options)
    return reader.read(path, options, rejects)


def read_solutions_only(path, fmt: str = "prmkit", options: Options = DEFAULTS, command: str = "this command") -> list:
    """Every record of a file in format ``fmt``, which must all be solutions (steps to label or push):
    problems without steps are an error naming the file and the command."""
    records = list(read(path, fmt, options))
    solutions = [r for r in records if isinstance(r, Solution)]
    if len(solutions) != len(records):
        raise ValueError(f"{path}: {len(records) - len(solutions)} records are problems without steps; "
                         f"{command} takes solutions")
    return solutions


def convert_file(src: str | os.PathLike, dst: str | os.PathLike, inp: str, out: str,
                 options: Options = DEFAULTS, rejects: RejectWriter | None = None,
                 transform: Callable[[Any], Any] | None = None) -> ConvertReport:
    """Convert ``src`` (format ``inp``) into ``dst`` (format ``out``), streaming, atomically.

    Bad input raises :class:`~prmkit.io.RecordError` (file, line, field) unless ``rejects`` collects
    it (and then the message says so: ``--skip-invalid`` on the command line); nothing is left at
    ``dst`` when the conversion fails; ``dst`` may not be ``src``.
    ``transform``, when given, maps every record read to the record written (for example
    :func:`prmkit.longcot.resplit`).
    """
    reader, writer = get_format(inp, "read"), get_format(out, "write")
    check_split(reader, options)
    if same_file(src, dst):
        raise ValueError(f"output {dst} is the same file as input {src}; refusing to overwrite the input")
    report = ConvertReport()

    def counted(records: Iterable[Any]) -> Iterator[Any]:
        for record in records:
            report.records_in += 1
            yield record

    records: Iterable[Any] = counted(reader.read(src, options, rejects))
    if transform is not None:
        records = map(transform, records)
    if writer.holds == "solutions":
        records = _solutions(records, src, out)
    try:
        report.rows_out = writer.write(records, dst, options, dropped=report.dropped)
    except RecordError as e:
        if rejects is not None or not e.field:  # only a bad field of a row read whole can be set aside
            raise
        raise RecordError(e.path, e.line, e.field, f"{e.message}; {skip_hint(dst)}") from None
    report.rejected = rejects.count if rejects is not None else 0
    return report


def skip_hint(dst: str | os.PathLike) -> str:
    """What a stopped conversion's message says to do about the bad row.

    >>> skip_hint("out/pb.jsonl").startswith("to convert the other rows, rerun with --skip-invalid (bad rows "
    ...                                      "go to out/pb.rejects.jsonl")
    True
    """
    return (f"to convert the other rows, rerun with --skip-invalid (bad rows go to {rejects_path(dst)}, "
            "their count is printed)")


def _solutions(records: Iterable[Any], src, out: str) -> Iterator[Solution]:
    """The records, checked to be solutions for a target that holds only those. A record the reader could
    not read raises its own error, with its line and field: only the check's error is given ``src``."""
    for record in records:
        if not isinstance(record, Solution):
            raise RecordError(src, None, None, f"format {out!r} holds step-labelled solutions, "
                              f"got a {type(record).__name__.lower()} record")
        yield record
