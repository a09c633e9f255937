"""TRL's stepwise-supervision rows (``prompt``, ``completions``, ``labels``), both ways.

The format TRL's PRM trainer read (and ``trl-lib/prm800k`` uses). One row, annotated::

    {
      "prompt": "Three pencils and a jumbo eraser cost ...",   # <-> Problem.problem
      "completions": ["Let's call the price ...",               # the steps, one string each
                      "The first equation is 3p + e = 124 ..."],
      "labels": [true, false],             # one boolean per step: correct or not
      "neutral_policy": "positive",        # prmkit's addition: how 0-rated steps became booleans
      "supervision": "first_error"         # prmkit's addition: which steps are labelled
    }

Writing needs an explicit neutral policy (``--neutral positive|negative|drop``; "drop" leaves out a
solution with a neutral step in its supervised span, counted as dropped), and it is written into
every row, as is the supervision rule: "first_error" labels the steps up to and including the first
wrong one (what the method trains on; the rest are cut), "all" labels every step (a solution with an
unrated step is then dropped). The alternatives of multi-completion steps, soft values, ids and
all provenance are lost. Reading gives each step rating +1 (true) or -1 (false); the two prmkit
columns, when present, go to ``meta["trl"]`` and are written back unchanged when no step is neutral.

>>> from prmkit.schema import Solution
>>> s = Solution.from_steps("1+1?", ["1+1 = 3.", "# Answer\\n\\n3"], ratings=[-1, 1])
>>> row = to_row(s, Options(neutral="positive"))
>>> row["completions"], row["labels"]
(['1+1 = 3.'], [False])
>>> from_row(row).ratings
[-1]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prmkit.convert.base import (
    DEFAULTS,
    Dropped,
    Options,
    linear,
    req,
    rows,
    supervised,
    text_of,
    write_rows,
)
from prmkit.schema import Problem, SchemaError, Solution, Step, check_type

KEYS = ("prompt", "completions", "labels", "neutral_policy", "supervision")


def from_row(d: Any) -> Solution:
    """One TRL row as a :class:`Solution` with ratings +1/-1."""
    prompt = req(d, "prompt", (str,))
    texts = req(d, "completions", (list,))
    labels = req(d, "labels", (list,))
    if len(texts) != len(labels):
        raise SchemaError("labels", f"{len(labels)} labels for {len(texts)} completions (one per step)")
    steps = []
    for i, (text, label) in enumerate(zip(texts, labels)):
        check_type(label, (bool,), f"labels[{i}]")
        steps.append(Step.of(text_of(text, f"completions[{i}]"), rating=1 if label else -1))
    meta = {k: d[k] for k in KEYS[3:] if k in d}
    meta.update({k: v for k, v in d.items() if k not in KEYS})
    return Solution(Problem(prompt), steps, meta={"trl": meta} if meta else {})


def read(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream the solutions of a TRL stepwise-supervision file (JSONL or a JSON array)."""
    return rows(path, from_row, rejects)


def to_row(s: Solution, options: Options) -> dict:
    """One solution as a TRL row; raises :class:`~prmkit.convert.base.Dropped` when it cannot be one."""
    path = linear(s)
    recorded = s.meta.get("trl", {})
    if not any(c.rating == 0 for c in path) and "neutral_policy" in recorded:
        options = Options(neutral=recorded["neutral_policy"], supervise=options.supervise)
    if options.neutral is None:
        raise ValueError("TRL rows need an explicit neutral policy: --neutral positive, negative or drop")
    labels = supervised([c.rating for c in path], options)
    if not labels:
        raise Dropped("no steps")
    row = {"prompt": s.problem.problem, "completions": [c.text for c in path[: len(labels)]], "labels": labels,
           "neutral_policy": options.neutral, "supervision": options.supervise}
    row.update({k: v for k, v in recorded.items() if k not in KEYS})
    return row


def write(records: Iterable[Solution], path, options: Options = DEFAULTS, dropped=None) -> int:
    """Write solutions as TRL rows (JSON Lines, atomically); return the number of rows."""
    return write_rows(records, path, to_row, options, dropped)
