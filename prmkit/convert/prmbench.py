"""PRMBench rows (PRM800K test solutions with inserted errors, 1-based ``error_steps``), in only.

PRMBench (ssmisya/PRMBench) rows, annotated::

    {"idx": "prm_test_p1_0",                       # -> Solution.id
     "modified_question": "Three pencils ...",     # -> Problem.problem
     "modified_process": ["Let's call ...", "..."],  # the steps (with the inserted errors)
     "error_steps": [5, 6],                        # 1-based positions of wrong steps -> rating -1
     "ground_truth": "29",                         # (some rows) -> Problem.answer
     "original_question": "...", "original_process": ["..."], "modified_steps": [5, 6],
     "reason": "Steps 5 and 6 contain ...", "classification": "confidence",
     "question": "..."}                            # all the rest -> meta["prmbench"], untouched

Every step not in ``error_steps`` is rated +1. ``label_source`` is left unset: the errors were
inserted by a language model and are labelled by construction. No writer: PRMBench is a benchmark
built from PRM800K, write ProcessBench or prmkit instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prmkit.convert.base import DEFAULTS, Options, opt, req, rows, text_of
from prmkit.schema import Problem, SchemaError, Solution, Step, check_type

PRMBENCH_KEYS = ("modified_question", "modified_process", "error_steps", "idx")


def from_prmbench(d: Any) -> Solution:
    """One PRMBench row as a :class:`Solution`: the modified process, its ``error_steps`` rated -1.

    >>> s = from_prmbench({"idx": "a", "modified_question": "q", "modified_process": ["x", "y"],
    ...                    "error_steps": [2]})
    >>> s.ratings, s.first_error()
    ([1, -1], 1)
    """
    texts = req(d, "modified_process", (list,))
    errors = req(d, "error_steps", (list,))
    for i, e in enumerate(errors):
        check_type(e, (int,), f"error_steps[{i}]")
        if not 1 <= e <= len(texts):
            raise SchemaError(f"error_steps[{i}]", f"error step {e} (1-based) is outside modified_process, "
                              f"which has {len(texts)} steps")
    steps = [Step.of(text_of(t, f"modified_process[{i}]"), rating=-1 if i + 1 in errors else 1)
             for i, t in enumerate(texts)]
    meta = {k: v for k, v in d.items() if k not in PRMBENCH_KEYS + ("ground_truth",)}
    return Solution(Problem(req(d, "modified_question", (str,)), answer=opt(d, "ground_truth", (str,))), steps,
                    id=opt(d, "idx", (str,)), meta={"prmbench": meta} if meta else {})


def read(path, options: Options = DEFAULTS, rejects=None) -> Iterator[Solution]:
    """Stream the solutions of a PRMBench file."""
    return rows(path, from_prmbench, rejects)
