"""Training examples and batches: records -> formatted examples with targets -> length-grouped batches.

Batches are planned per optimiser step, independent of how many processes share them: a step's
``group`` of ``batch_size * grad_accum * world`` examples is cut into micro-batches and process ``r``
takes micro-batches ``r, r + world, ...``. The loss is a sum over supervised targets divided by the
count over the whole group, which every process knows without communicating. So one process with
``grad_accum=2`` and two processes with ``grad_accum=1`` compute the same gradient.

>>> groups = plan_epoch([5, 1, 4, 2, 3, 6, 7, 8], group_size=4, seed=0, epoch=0, by_length=True)
>>> [len(g) for g in groups], sorted(i for g in groups for i in g)
([4, 4], [0, 1, 2, 3, 4, 5, 6, 7])
>>> micro_batches([0, 1, 2, 3], [5, 1, 4, 2], n_micro=2)
[[1, 3], [2, 0]]
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from prmkit.model.formatter import FormatConfig, TruncationReport, encode_many
from prmkit.model.labels import outcome_target, soft_target, step_targets

IGNORE = -100
"""The token target of a position that is not trained (transformers' convention)."""


@dataclass
class Example:
    """One formatted solution: tokens, the positions read, and one target distribution per position
    (None where a position is not supervised). ``index`` is the source solution's index in its file.

    ``features``: per-token auxiliary inputs ``[tokens, F]`` when the model reads some
    (:mod:`prmkit.model.features`). ``token_targets``: for next-token training (``kind="lm"``), the id each
    position predicts, :data:`IGNORE` where it predicts nothing (the problem, the last token)."""

    input_ids: list[int]
    positions: list[int]
    targets: list[list[float] | None]
    index: int = -1
    features: object = None
    token_targets: list[int] | None = None

    @property
    def n_supervised(self) -> int:
        if self.token_targets is not None:
            return sum(t != IGNORE for t in self.token_targets)
        return sum(t is not None for t in self.targets)


@dataclass
class DataReport:
    """What building the examples kept and dropped, and why."""

    solutions: int = 0
    examples: int = 0
    no_targets: int = 0
    supervised: int = 0
    targets: Counter = field(default_factory=Counter)
    truncation: TruncationReport = field(default_factory=TruncationReport)

    alternatives: int = 0
    ungradable: int = 0
    """ORM solutions whose grade says the grader could not decide, left out (``ungradable="skip"``)."""

    def summary(self) -> str:
        classes = ", ".join(f"{k} {v}" for k, v in sorted(self.targets.items()))
        alts = f" (of them {self.alternatives} rated alternatives of a step)" if self.alternatives else ""
        ungradable = f"; {self.ungradable} ungradable (grader undecided) left out" if self.ungradable else ""
        return (f"{self.examples} examples{alts} from {self.solutions} solutions ({self.no_targets} without a "
                f"target after truncation/supervision{ungradable}); {self.supervised} supervised targets"
                f"{f' ({classes})' if classes else ''}; {self.truncation.summary()}")

    def to_dict(self) -> dict:
        return {"solutions": self.solutions, "examples": self.examples, "no_targets": self.no_targets,
                "supervised": self.supervised, "targets": dict(self.targets), "alternatives": self.alternatives,
                "ungradable": self.ungradable,
                "truncation": self.truncation.to_dict()}


def solution_targets(sol, kind: str, n_outputs: int, neutral: str, supervise: str, label_source: str,
                     outcome_source: str, value_threshold: float | None = None, ungradable: str = "skip") -> list | None:
    """PRM: one target (or None) per step. ORM: None on every step but the last, which carries the
    outcome; None when the solution has no outcome."""
    if kind == "prm":
        return step_targets(sol.ratings, sol.values, n_outputs=n_outputs, neutral=neutral, supervise=supervise,
                            source=label_source, threshold=value_threshold)
    outcome = outcome_target(sol, outcome_source, ungradable)
    if outcome is None or not sol.texts:
        return None
    if n_outputs == 3:
        raise ValueError("an ORM has no neutral class: use 1 or 2 outputs")
    return [None] * (len(sol.texts) - 1) + [soft_target(outcome, n_outputs)]


def alternative_prefixes(sol, supervise: str = "all") -> list[tuple[list[str], int | None, float | None]]:
    """Every rated (or valued) completion of a step that the solution did not continue with, as (the chosen
    steps before it + it, its rating, its value): PRM800K phase 1 rates several candidate next steps, and
    those off the chosen path (most of its -1 ratings) are labelled steps too. ``supervise="first_error"``
    stops after the chosen path's first wrong step (what comes after an error is not supervised).

    >>> from prmkit.schema import Completion, Solution, Step
    >>> s = Solution.from_steps("q", ["a", "b", "c"], ratings=[1, -1, 1])
    >>> s.steps[1].completions.append(Completion("b'", rating=1))
    >>> s.steps[2].completions.append(Completion("c'", rating=-1))
    >>> alternative_prefixes(s), len(alternative_prefixes(s, "first_error"))
    ([(['a', "b'"], 1, None), (['a', 'b', "c'"], -1, None)], 1)
    """
    out, before = [], []
    for step in sol.steps:
        for j, c in enumerate(step.completions):
            if j != step.chosen and c is not step.taken and (c.rating is not None or c.value is not None):
                out.append(([*before, c.text], c.rating, c.value))
        if step.text is None or (supervise == "first_error" and step.rating == -1):
            break
        before.append(step.text)
    return out


def build_examples(solutions, tokenizer, fmt: FormatConfig, *, kind: str = "prm", n_outputs: int = 2,
                   neutral: str = "positive", supervise: str = "first_error", label_source: str = "rating",
                   outcome_source: str = "auto", alternatives: bool = False,
                   value_threshold: float | None = None, ungradable: str = "skip") -> tuple[list[Example], DataReport]:
    """Format every solution with its targets. Solutions left with no supervised target are counted, not used.

    An ORM's solutions graded ``unparseable`` follow ``ungradable`` (:data:`prmkit.model.labels.UNGRADABLE_POLICIES`);
    skipped ones are counted in ``report.ungradable``.

    For an ORM whose last step is truncated away, the target is lost (counted in ``no_targets``).
    ``alternatives`` (PRM): each of :func:`alternative_prefixes` is one more example, supervised at its last
    step only (``index`` is its solution's).
    """
    solutions = list(solutions)
    report = DataReport()
    targets = [solution_targets(sol, kind, n_outputs, neutral, supervise, label_source, outcome_source, value_threshold,
                                ungradable) for sol in solutions]
    if kind == "orm" and ungradable == "skip":
        report.ungradable = sum(t is None and outcome_target(s, outcome_source, "negative") is not None
                                for s, t in zip(solutions, targets))
    rows = [(i, sol.problem.problem, sol.texts, t or [None] * len(sol.texts))
            for i, (sol, t) in enumerate(zip(solutions, targets))]
    n_main = len(rows)
    if alternatives and kind == "prm":
        for i, sol in enumerate(solutions):
            for steps, rating, value in alternative_prefixes(sol, supervise):
                last = step_targets([rating], [value], n_outputs=n_outputs, neutral=neutral, supervise="all",
                                    source=label_source, threshold=value_threshold)[0]
                if last is not None:
                    rows.append((i, sol.problem.problem, steps, [None] * (len(steps) - 1) + [last]))
    encoded = encode_many(tokenizer, [(p, steps) for _, p, steps, _ in rows], fmt, [t for *_, t in rows])
    out = []
    for k, ((i, *_), enc) in enumerate(zip(rows, encoded)):
        ex = Example(enc.input_ids, enc.step_ends, enc.targets, i)
        if k < n_main:  # truncation is reported over the solutions (an alternative repeats its prefix's steps)
            report.solutions += 1
            report.truncation.add(enc)
        else:
            report.alternatives += ex.n_supervised > 0
        if ex.n_supervised == 0:
            report.no_targets += 1
            continue
        report.examples += 1
        report.supervised += ex.n_supervised
        report.targets.update(_target_name(t) for t in ex.targets if t is not None)
        out.append(ex)
    return out, report


def build_lm_examples(solutions, tokenizer, fmt: FormatConfig) -> tuple[list[Example], DataReport]:
    """Next-token examples: every solution token is predicted from the ones before it; the problem's
    tokens are context only. Same formatter as the reward models, so an LM pretrained this way reads
    exactly the layout (separators, markers) its reward models will be trained and scored on.

    >>> from prmkit.model.formatter import FormatConfig
    >>> from prmkit.model.tiny import train_tokenizer
    >>> from prmkit.schema import Solution
    >>> sol = Solution.from_steps("q", ["a b"])
    >>> tok = train_tokenizer(["q a b"] * 4, 64)
    >>> [ex], rep = build_lm_examples([sol], tok, FormatConfig(marker=None))
    >>> first = ex.token_targets.index(next(t for t in ex.token_targets if t != IGNORE))
    >>> ex.token_targets[-1], ex.token_targets[first] == ex.input_ids[first + 1], rep.examples
    (-100, True, 1)
    """
    solutions = list(solutions)
    report = DataReport()
    out = []
    encoded = encode_many(tokenizer, [(sol.problem.problem, sol.texts) for sol in solutions], fmt)
    for i, enc in enumerate(encoded):
        report.solutions += 1
        report.truncation.add(enc)
        ids = enc.input_ids
        first = enc.spans[0][0] if enc.spans else len(ids)
        targets = [ids[t + 1] if t + 1 >= first else IGNORE for t in range(len(ids) - 1)] + [IGNORE]
        ex = Example(ids, [], [], i, token_targets=targets)
        if ex.n_supervised == 0:
            report.no_targets += 1
            continue
        report.examples += 1
        report.supervised += ex.n_supervised
        out.append(ex)
    return out, report


def _target_name(t: list[float]) -> str:
    if len(t) == 3 and t[2] == 1.0:
        return "neutral"
    return "positive" if t[0] == 1.0 else "negative" if t[0] == 0.0 else "soft"


def split_by_problem(solutions: list, fraction: float, seed: int) -> tuple[list, list]:
    """(train, held out): a seeded ``fraction`` of the problems (by id, else text) and all their solutions.

    >>> from prmkit.schema import Solution
    >>> sols = [Solution.from_steps(f"p{i % 10}", ["x"]) for i in range(40)]
    >>> tr, ev = split_by_problem(sols, 0.2, seed=0)
    >>> len(tr), len(ev), {s.problem.problem for s in tr} & {s.problem.problem for s in ev}
    (32, 8, set())
    """
    if fraction <= 0:
        return list(solutions), []
    keys = sorted({s.problem.id or s.problem.problem for s in solutions})
    random.Random(seed).shuffle(keys)
    held = set(keys[: max(1, round(fraction * len(keys)))])
    train = [s for s in solutions if (s.problem.id or s.problem.problem) not in held]
    return train, [s for s in solutions if (s.problem.id or s.problem.problem) in held]


def plan_epoch(lengths: list[int], group_size: int, seed: int, epoch: int, by_length: bool,
               window: int = 50) -> list[list[int]]:
    """The optimiser-step groups of one epoch (the last incomplete group is dropped).

    Shuffled with ``(seed, epoch)``; with ``by_length``, windows of ``window`` groups are sorted by
    length before cutting, so a group holds examples of similar length, and the groups are shuffled again.
    """
    order = list(range(len(lengths)))
    rng = random.Random(seed * 100_003 + epoch)
    rng.shuffle(order)
    if by_length:
        span = group_size * window
        order = [i for s in range(0, len(order), span) for i in sorted(order[s:s + span], key=lambda j: lengths[j])]
    groups = [order[s:s + group_size] for s in range(0, len(order) - group_size + 1, group_size)]
    if by_length:
        rng.shuffle(groups)
    return groups


def micro_batches(group: list[int], lengths: list[int], n_micro: int) -> list[list[int]]:
    """Cut a group, sorted by length, into ``n_micro`` equal micro-batches."""
    ordered = sorted(group, key=lambda i: (lengths[i], i))
    size = len(ordered) // n_micro
    return [ordered[m * size:(m + 1) * size] for m in range(n_micro)]


MODEL_INPUTS = ("input_ids", "attention_mask", "positions", "position_ids", "cu_seq_lens", "features")
"""The keys of a collated batch that :class:`prmkit.model.heads.RewardModel` takes (the rest are targets)."""


def collate(examples: list[Example], pad_id: int, n_outputs: int, packed: bool = False):
    """Tensors of a micro-batch: positions (-1 padded), targets, mask, and the tokens either padded
    (input_ids and attention_mask ``[B, T]``) or ``packed`` (input_ids, position_ids ``[1, N]`` and
    cu_seq_lens: :mod:`prmkit.model.packing`); ``features`` ``[B, T, F]`` (``[1, N, F]`` packed) and
    ``token_targets`` (:data:`IGNORE` padded) laid out like the tokens, where the examples have them."""
    import torch

    out = {**_step_tensors(examples, n_outputs), **_token_tensors(examples, packed)}
    if packed:
        from prmkit.model.packing import pack

        return {**pack([e.input_ids for e in examples]), **out}
    t = max(len(e.input_ids) for e in examples)
    ids = [list(e.input_ids) + [pad_id] * (t - len(e.input_ids)) for e in examples]
    attn = [[1] * len(e.input_ids) + [0] * (t - len(e.input_ids)) for e in examples]
    return {"input_ids": torch.tensor(ids, dtype=torch.long), "attention_mask": torch.tensor(attn, dtype=torch.long),
            **out}


def _step_tensors(examples: list[Example], n_outputs: int) -> dict:
    import torch

    b = len(examples)
    s = max(len(e.positions) for e in examples)
    # plain lists first, one tensor each: per-element tensor writes cost more than the model's small ops
    empty = [0.0] * n_outputs
    pos = [list(e.positions) + [-1] * (s - len(e.positions)) for e in examples]
    tgt = [[list(t) if t is not None else empty for t in e.targets] + [empty] * (s - len(e.targets)) for e in examples]
    mask = [[t is not None for t in e.targets] + [False] * (s - len(e.targets)) for e in examples]
    return {"positions": torch.tensor(pos, dtype=torch.long).view(b, s),
            "targets": torch.tensor(tgt, dtype=torch.float32).view(b, s, n_outputs),
            "mask": torch.tensor(mask, dtype=torch.bool).view(b, s)}


def _token_tensors(examples: list[Example], packed: bool) -> dict:
    """Per-token features and next-token targets, padded (``[B, T, ...]``) or end to end (``[1, N, ...]``)."""
    import numpy as np
    import torch

    out = {}
    t = max(len(e.input_ids) for e in examples)
    if examples[0].features is not None:
        rows = [np.asarray(e.features, dtype=np.float32) for e in examples]
        if packed:
            out["features"] = torch.from_numpy(np.concatenate(rows))[None]
        else:
            full = np.zeros((len(rows), t, rows[0].shape[-1]), np.float32)
            for r, row in enumerate(rows):
                full[r, : len(row)] = row
            out["features"] = torch.from_numpy(full)
    if examples[0].token_targets is not None:
        if packed:
            out["token_targets"] = torch.tensor([[x for e in examples for x in e.token_targets]], dtype=torch.long)
        else:
            out["token_targets"] = torch.tensor([list(e.token_targets) + [IGNORE] * (t - len(e.token_targets))
                                                 for e in examples], dtype=torch.long)
    return out


def to_device(batch: dict, device) -> dict:
    """Every tensor of a collated batch (model inputs and targets) moved to ``device`` at once."""
    return {k: v.to(device) for k, v in batch.items()}


def model_inputs(batch: dict, device=None) -> dict:
    """The model's keyword arguments from a collated batch, moved to ``device``."""
    return {k: batch[k].to(device) if device is not None else batch[k] for k in MODEL_INPUTS if k in batch}
