"""The lab's generator: many sampled solutions per ledger problem, with realistic, configurable failures.

A sample walks the transactions in order and writes one line per step in the paper's format, ending
with ``# Answer\\n\\n<n>``. What goes wrong, each with its rate in :class:`GeneratorConfig`:

- **Systematic misreadings tied to visible triggers** (``misconception_*``, ``misreading_rate``):
  ``less k`` read as ``+ k``, ``twice`` as ``+ 2``, ``again`` skipped (and, in the OOD family,
  ``thrice`` as ``+ 3``, ``half`` as ``- 2``, ``undo`` skipped). Whether a problem's trigger carries a
  held misconception, and how strongly, is decided once per problem from its text, so many samples of
  one problem share the same plausible wrong step and majority voting is often wrong on it.
- **Random slips**: a result off by 1-3, a stale left operand (the result before the previous one),
  a flipped operator (``+`` written as ``-`` or back).
- **Errors that cancel**: a ``set to`` transaction wipes out any earlier error, and a sample whose
  running value has gone wrong may silently resume from the true value (``silent_fix_rate``): a wrong
  step, but the right answer.
- **Neutral steps**: ``check : <current value>`` lines, true and no progress.
- **No answer**: a sample cut off at a random step, never reaching ``# Answer``.

``again`` and ``undo`` follow the sample's own reading of the previous transaction, so a misread
``less`` drags a following ``again`` with it, as a model that believes its misreading would.

>>> from prmkit.lab.domain import LedgerConfig, make_problems
>>> sols = generate(make_problems(LedgerConfig(), 2, seed=0), GeneratorConfig(), samples=3, seed=0)
>>> len(sols), sols[0].texts[-1].startswith("# Answer") or sols[0].answer is None
(6, True)
>>> generate(make_problems(LedgerConfig(), 2, seed=0), GeneratorConfig(), 3, seed=0) == sols
True
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from prmkit.lab.domain import TRIGGERS, Ledger, apply, config_hash
from prmkit.lab.oracle import grade_answer, ledger_of, parse_transaction
from prmkit.schema import Generator, Problem, Solution, Step


@dataclass(frozen=True)
class GeneratorConfig:
    """How the simulated generator samples and fails. Inert: checked on creation, no I/O.

    Defaults are calibrated on the default preset (300 problems x 64 samples) to pass@1 ~45% with
    majority@64 far below pass@64; ``docs/lab.md`` gives the measured values.
    """

    name: str = "lab-ledger-v1"
    """The generator's name in every record's ``generator.name``."""
    misconception_rate: float = 0.38
    """Chance that a trigger transaction of a problem carries a held misconception (decided once per
    problem, from its text: the same for every sample and every seed)."""
    misconception_strength: tuple[float, float] = (0.45, 0.8)
    """Per-sample chance of misreading a trigger that carries a held misconception, drawn uniformly
    from this range once per trigger and problem."""
    misreading_rate: float = 0.05
    """Per-sample chance of misreading a trigger that carries no held misconception."""
    arithmetic_slip_rate: float = 0.015
    """Per transaction step: the result is off by 1-3."""
    stale_operand_rate: float = 0.015
    """Per transaction step (from the second on): the left operand is the result before the previous one."""
    flipped_operator_rate: float = 0.015
    """Per additive step: ``+`` restated as ``-`` or ``-`` as ``+``."""
    silent_fix_rate: float = 0.02
    """Per transaction step while the sample's running value is wrong: it resumes from the true value
    instead (a wrong operand that cancels the earlier error)."""
    check_rate: float = 0.08
    """Per transaction: a neutral ``check : <value>`` line before it."""
    no_answer_rate: float = 0.05
    """Per sample: cut off after a uniformly chosen number of transactions, without ``# Answer``."""

    def __post_init__(self):
        for name in ("misconception_rate", "misreading_rate", "arithmetic_slip_rate", "stale_operand_rate",
                     "flipped_operator_rate", "silent_fix_rate", "check_rate", "no_answer_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
        lo, hi = self.misconception_strength
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"misconception_strength must be 0 <= low <= high <= 1, got {self.misconception_strength}")


def misreading_profile(problem_text: str, cfg: GeneratorConfig) -> np.ndarray:
    """Per-transaction chance that a sample misreads it (0 for transactions without a trigger).

    A function of the problem text alone (and the config): a problem's misconceptions are its own.

    >>> text = "Start at 12.\\nA + 2\\nB less 6\\nWhat is the final value?"
    >>> prof = misreading_profile(text, GeneratorConfig())
    >>> float(prof[0]), bool(0 < prof[1] < 1), bool((misreading_profile(text, GeneratorConfig()) == prof).all())
    (0.0, True, True)
    """
    led = ledger_of(problem_text)
    rng = np.random.default_rng(int.from_bytes(hashlib.blake2b(problem_text.encode(), digest_size=8).digest()))
    held = rng.random(len(led.txns)) < cfg.misconception_rate
    strength = rng.uniform(*cfg.misconception_strength, size=len(led.txns))
    trigger = np.array([t.kind in TRIGGERS for t in led.txns])
    return np.where(trigger, np.where(held, strength, cfg.misreading_rate), 0.0)


# Columns of the per-(sample, transaction) uniform draws.
_MISREAD, _FLIP, _STALE, _SLIP, _FIX, _CHECK, _DELTA = range(7)
_DELTAS = (-3, -2, -1, 1, 2, 3)


def _restate(led: Ledger, i: int, misread: bool, last: tuple | None) -> tuple | None:
    """The effect a sample writes for transaction ``i``; None when it skips it.

    ``again``/``undo`` follow the sample's own last effect ``last``.
    """
    kind = led.txns[i].kind
    if kind in ("again", "undo"):
        if misread or last is None or last[0] not in ("+", "-"):
            return None
        return last if kind == "again" else ({"+": "-", "-": "+"}[last[0]], last[1])
    if misread:
        return {"less": ("+", led.txns[i].k), "twice": ("+", 2), "thrice": ("+", 3), "half": ("-", 2)}[kind]
    return led.effect(i)


def _step_line(name: str, effect: tuple, left: float, result: float) -> str:
    symbol, k = effect
    if symbol == "set":
        return f"{name} set {k} : {result}"
    return f"{name} {symbol} {k} : {left} {symbol} {k} = {result}"


@dataclass(frozen=True)
class Resume:
    """Where a sample continues from: the next transaction, the sample's running value, the one before
    it and its last effect (what ``again``/``undo`` follow); ``wrote``: some transaction is already written."""

    start: int = 0
    cur: float | None = None
    before: float | None = None
    last: tuple | None = None
    wrote: bool = False


def sample_texts(led: Ledger, u: np.ndarray, profile: np.ndarray, cfg: GeneratorConfig, stop: int,
                 resume: Resume = Resume()) -> list[str]:
    """One sample's step lines from its uniform draws ``u`` (transactions x 7); cut after ``stop`` transactions.
    ``resume``: continue a partial sample instead of starting at the first transaction."""
    true = [led.start, *led.values()]
    lines: list[str] = []
    cur = led.start if resume.cur is None else resume.cur
    before = cur if resume.before is None else resume.before
    last = resume.last
    for i in range(resume.start, min(stop, len(led.txns))):
        r = u[i]
        if r[_CHECK] < cfg.check_rate:
            lines.append(f"check : {cur}")
        effect = _restate(led, i, bool(r[_MISREAD] < profile[i]), last)
        if effect is None:
            continue
        if effect[0] in ("+", "-") and r[_FLIP] < cfg.flipped_operator_rate:
            effect = ({"+": "-", "-": "+"}[effect[0]], effect[1])
        left = cur
        if cur != true[i] and r[_FIX] < cfg.silent_fix_rate:
            left = true[i]
        elif (lines or resume.wrote) and before != cur and r[_STALE] < cfg.stale_operand_rate:
            left = before
        result = apply(left, *effect)
        if r[_SLIP] < cfg.arithmetic_slip_rate:
            result = result + _DELTAS[int(r[_DELTA] * len(_DELTAS))]
        lines.append(_step_line(led.txns[i].name, effect, left, result))
        before, cur, last = cur, result, effect
    if stop > len(led.txns):
        lines.append(f"# Answer\n\n{cur}")
    return lines


def _samples_of(problem: Problem, cfg: GeneratorConfig, samples: int, seed: int) -> list[list[str]]:
    led = ledger_of(problem.problem)
    n_txn = len(led.txns)
    key = int.from_bytes(hashlib.blake2b(problem.problem.encode(), digest_size=8).digest())
    rng = np.random.default_rng([seed, key])
    u = rng.random((samples, n_txn, 7))
    cut = rng.random(samples) < cfg.no_answer_rate
    stop = np.where(cut, rng.integers(1, n_txn + 1, size=samples), n_txn + 1)
    profile = misreading_profile(problem.problem, cfg)
    return [sample_texts(led, u[j], profile, cfg, int(stop[j])) for j in range(samples)]


def resume_point(led: Ledger, prefix_steps: list[str]) -> Resume | None:
    """Where a sample that wrote ``prefix_steps`` continues (None: it already answered). Lines are read as
    the oracle reads them (:func:`prmkit.lab.oracle.parse_transaction`); others (a check, a step of
    another model the oracle cannot read) are skipped: the sample goes on from its last readable transaction.

    >>> from prmkit.lab.domain import parse_problem
    >>> led = parse_problem("Start at 5.\\nA + 3\\nB + 4\\nWhat is the final value?")
    >>> resume_point(led, ["A + 3 : 5 + 3 = 8"])
    Resume(start=1, cur=8, before=5, last=('+', 3), wrote=True)
    """
    state = Resume()
    for text in prefix_steps:
        if text.strip().startswith("# Answer"):
            return None
        parsed = parse_transaction(text)
        if parsed is None or led.index(parsed[0]) is None:
            continue
        name, effect, result = parsed
        cur = led.start if state.cur is None else state.cur
        state = Resume(led.index(name) + 1, result, cur, effect, True)
    return state


def continue_samples(problem: Problem, prefix_steps: list[str], cfg: GeneratorConfig, samples: int,
                     seed: int, start: int = 0) -> list[list[str]]:
    """Continuations ``start .. start + samples - 1`` (step lines after the prefix) of a partial solution of
    ``problem``: what Monte-Carlo rollouts from that prefix give. Each continuation draws from its own
    generator (seed, problem, prefix, index), so continuation ``j`` is the same whatever ``samples`` and
    ``start``: a rollout cache holding the first ``k`` asks for the next ones only."""
    led = ledger_of(problem.problem)
    state = resume_point(led, prefix_steps)
    if state is None:
        return [[] for _ in range(samples)]
    key = int.from_bytes(hashlib.blake2b("\x1f".join([problem.problem, *prefix_steps]).encode(), digest_size=8).digest())
    n_txn = len(led.txns)
    profile = misreading_profile(problem.problem, cfg)
    out = []
    for j in range(start, start + samples):
        rng = np.random.default_rng([seed, key, j])
        u = rng.random((n_txn, 7))
        cut = rng.random() < cfg.no_answer_rate
        stop = int(rng.integers(state.start, n_txn + 1)) if cut else n_txn + 1
        out.append(sample_texts(led, u, profile, cfg, stop, state))
    return out


def generate(problems: list[Problem], cfg: GeneratorConfig, samples: int, seed: int) -> list[Solution]:
    """``samples`` graded solutions of every problem, problem by problem: the same arguments give equal records.

    The samples of a problem depend on the seed and the problem's text, not on which other problems
    are in the list. Records carry ``id`` (``<problem id>/<seed>-<j>``), ``answer`` (None when cut
    off), ``grade`` and ``generator`` (name; sampling: seed and the config's hash); no labels.
    """
    gen = Generator(cfg.name, {"seed": seed, "config": config_hash(cfg)})
    out = []
    for p, problem in enumerate(problems):
        pid = problem.id if problem.id is not None else f"p{p}"
        for j, texts in enumerate(_samples_of(problem, cfg, samples, seed)):
            answer = texts[-1].split("\n\n", 1)[1] if texts and texts[-1].startswith("# Answer") else None
            out.append(Solution(problem, [Step.of(t) for t in texts], id=f"{pid}/{seed}-{j}", answer=answer,
                                grade=grade_answer(problem, answer), generator=gen))
    return out
