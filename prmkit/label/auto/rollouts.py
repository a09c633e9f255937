"""Rollouts: continuations of step prefixes, graded, counted and cached.

:class:`Rollouts` asks a generator backend (:meth:`prmkit.generate.backend.Backend.complete_many`) for
``k`` continuations of every prefix it is given, grades each one's final answer (the prefix's steps and
the continuation's, split as ``prmkit generate`` splits a sample) and keeps the outcomes in a
:class:`RolloutCache`. Continuation ``j`` of a prefix is the backend's sample ``j`` of it, so a rerun, or
one with a larger ``k``, samples only the continuations the cache does not hold yet.

The cache is a JSONL file, one line per batch of outcomes of one prefix (``key``, ``start``, ``outcomes``
as ``[right, tokens]``), appended and flushed as they come: a killed run loses at most the batch it was
sampling. A prefix's key hashes the generator's name and sampling settings (but ``n``), the problem and
its answer, and the prefix's steps: another model or other settings never reuse an outcome.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prmkit.schema import Problem

Outcome = tuple[bool, int | None]
"""One rollout: did it reach the right answer, and its length in tokens (None where unknown)."""


def generator_id(backend) -> str:
    """The generator's identity in cache keys (:meth:`~prmkit.generate.backend.Backend.identity`)."""
    return json.dumps(backend.identity(), sort_keys=True, default=str)


def prefix_key(generator: str, problem: Problem, prefix_steps: list[str]) -> str:
    """The cache key of one prefix of one problem under one generator."""
    text = "\x1f".join([generator, problem.problem, problem.answer or "", *prefix_steps])
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


class RolloutCache:
    """Outcomes by prefix key, read from and appended to ``path`` (None: in memory only)."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path else None
        self.outcomes: dict[str, list[Outcome]] = {}
        if self.path is not None and self.path.exists():
            self._load()
        self._file = None

    def _load(self) -> None:
        good = 0
        with open(self.path, "rb") as f:
            for raw in f:
                if not raw.endswith(b"\n"):  # a torn last line, left by a killed writer
                    break
                good += len(raw)
                line = json.loads(raw)
                have = self.outcomes.setdefault(line["key"], [])
                start = line["start"]
                if start <= len(have):  # a batch that overlaps what is held adds its tail only
                    have.extend((bool(r), t) for r, t in line["outcomes"][len(have) - start:])
        os.truncate(self.path, good)

    def get(self, key: str) -> list[Outcome]:
        return self.outcomes.get(key, [])

    def add(self, key: str, start: int, outcomes: list[Outcome]) -> None:
        have = self.outcomes.setdefault(key, [])
        if start != len(have):
            raise ValueError(f"rollouts {start}.. of prefix {key} added, but the cache holds {len(have)}")
        have.extend(outcomes)
        if self.path is not None:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (open for the run; close() ends it)
            self._file.write(json.dumps({"key": key, "start": start, "outcomes": [[int(r), t] for r, t in outcomes]})
                             + "\n")

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def answer_grader(problem: Problem, answer: str | None) -> str:
    """prmkit's grader (:func:`prmkit.grade.grade`) of a rollout's answer against the problem's."""
    from prmkit.grade import grade

    if not problem.answer:
        return "unparseable"  # nothing to grade against: no verdict
    return grade(answer, problem.answer).verdict  # a rollout with no answer is incorrect


def grader_name(grade: Callable) -> str:
    """A grading function's dotted name (what identifies it in cache keys and records)."""
    return f"{getattr(grade, '__module__', '?')}.{getattr(grade, '__qualname__', type(grade).__name__)}"


@dataclass
class Counts:
    """What rollouts cost: continuations sampled now, taken from the cache, and the tokens sampled now
    (``sampled + cached`` is every continuation asked for: ``k`` per request)."""

    sampled: int = 0
    cached: int = 0
    tokens: int = 0

    @property
    def hit_rate(self) -> float:
        total = self.sampled + self.cached
        return self.cached / total if total else 0.0


class Rollouts:
    """``k`` graded continuations of prefixes, from ``backend``, through ``cache``.

    ``grade(problem, answer) -> verdict`` grades a rollout (default: prmkit's grader); a rollout is right
    when the verdict is ``correct``. ``on_sampled(n)`` is told of every batch sampled (a progress bar).
    """

    def __init__(self, backend, cache: RolloutCache | None = None, grade: Callable | None = None,
                 on_sampled: Callable[[int], None] | None = None):
        self.backend, self.cache = backend, cache or RolloutCache()
        self.grade = grade or answer_grader
        # a cached outcome is a verdict: another grader (or a fixed one) must not reuse it
        self.generator = generator_id(backend) + "|" + grader_name(self.grade)
        self.counts = Counts()
        self.on_sampled = on_sampled or (lambda n: None)

    def describe(self) -> dict:
        """What the records say of the rollouts: the generator's identity and the grader."""
        return {"generator": json.loads(generator_id(self.backend)), "grader": grader_name(self.grade)}

    def outcomes(self, requests: list[tuple[Problem, list[str]]], k: int) -> list[list[Outcome]]:
        """The first ``k`` outcomes of every ``(problem, prefix_steps)``, sampling only what the cache lacks
        (one :meth:`complete_many` call for all of them, so a batched backend batches across prefixes)."""
        keys = [prefix_key(self.generator, p, prefix) for p, prefix in requests]
        todo, seen = [], set()
        for key, (p, prefix) in zip(keys, requests):
            if key in seen:  # a prefix asked twice in one call is sampled once: the second is served from the cache
                self.counts.cached += k
                continue
            have = len(self.cache.get(key))
            self.counts.cached += min(have, k)
            if have < k:
                seen.add(key)
                todo.append((key, p, prefix, have))
        if todo:
            samples = self.backend.complete_many([(p, list(prefix), k - have, have) for _, p, prefix, have in todo])
            for (key, p, prefix, have), batch in zip(todo, samples):
                if len(batch) != k - have:
                    raise RuntimeError(f"the backend returned {len(batch)} continuations, not {k - have}")
                got = [(self._right(p, prefix, s.text), s.tokens) for s in batch]
                self.cache.add(key, have, got)
                self.counts.sampled += len(got)
                self.counts.tokens += sum(t or 0 for _, t in got)
            self.cache.flush()
            self.on_sampled(sum(k - have for *_, have in todo))
        return [self.cache.get(key)[:k] for key in keys]

    def _right(self, problem: Problem, prefix: list[str], text: str) -> bool:
        from prmkit.generate.run import continued_steps

        return self.grade(problem, continued_steps(text, self.backend.cfg, prefix)[1]) == "correct"

    def right_counts(self, requests: list[tuple[Problem, list[str]]], k: int) -> list[tuple[int, int]]:
        """(right rollouts, their tokens) of every request: the counts :func:`~prmkit.label.auto.mc.mc_labels` reads."""
        return [(sum(r for r, _ in o), sum(t or 0 for _, t in o)) for o in self.outcomes(requests, k)]
