"""The lab's domains behind one interface: a :class:`Domain` per problem world, and one registry.

A domain is everything the lab's path needs to know about a world of problems: the config of a problem
family and its held-out family, the rule-based generator (and, where it has one, its continuation
from a step prefix), the exact oracle (a rating and a reason for every step; the answer's grade), the
words of its text (the base model's vocabulary), and which of its errors are *delayed* (a labeller
sees them only by planning ahead). Every part of the lab that would otherwise name a domain asks this
module instead, so a new domain is one new module and one :func:`register` call.

- ``ledger`` (:mod:`prmkit.lab.domain`): running totals; every step is a calculation.
- ``plans`` (:mod:`prmkit.lab.plans`): day plans; every step is a decision, some errors show only later.

>>> sorted(DOMAINS), domain_for_family(LEDGER.family_config()).name, domain_named("plans").delayed
(['ledger', 'plans'], 'ledger', ('wasteful', 'dead end'))
>>> from prmkit.lab.plans.domain import PlansConfig
>>> p = domain_for_family(PlansConfig()).make_problems(PlansConfig(), 1, 0, "eval")[0]
>>> domain_of_problem(p).name, domain_of_problem(p).oracle.grade_answer(p, p.answer)
('plans', 'correct')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from prmkit.lab import domain as ledger_domain
from prmkit.lab import generator as ledger_generator
from prmkit.lab import oracle as ledger_oracle
from prmkit.lab.plans import domain as plans_domain
from prmkit.lab.plans import generator as plans_generator
from prmkit.lab.plans import oracle as plans_oracle
from prmkit.schema import Completion, Problem, Solution, Step


@dataclass(frozen=True)
class Domain:
    """One world of lab problems. Inert: a record of the modules and callables that make it."""

    name: str
    """The registry's name (``--domain``); the default family's name, which every problem's subject
    and id start with."""
    family_config: type
    """The dataclass of a problem family and its difficulty (``LabConfig.domain``, ``LabConfig.ood``)."""
    ood: Any
    """The held-out family: an instance of :attr:`family_config`."""
    generator_config: type
    """The dataclass of the rule-based generator (``LabConfig.generator``)."""
    make_problems: Callable[..., list[Problem]]
    """``(family, n, seed, split) -> problems``: deterministic; each split seeds its own problems."""
    generate: Callable[..., list[Solution]]
    """``(problems, generator, samples, seed) -> graded solutions``, problem by problem."""
    oracle: ModuleType
    """``oracle_labels(solution)``, ``label_texts``, ``grade_answer(problem, answer)``, ``REASONS`` (reason
    -> (rating, meaning))."""
    words: tuple[str, ...]
    """Every word and symbol of its problems and solutions, beside the letters and numbers every domain
    has: the base model's vocabulary (:func:`prmkit.lab.base.lab_tokenizer`)."""
    delayed: tuple[str, ...] = ()
    """Oracle reasons of errors that are invisible on their line (labellers miss them more often)."""
    continue_samples: Callable[..., list[list[str]]] | None = None
    """``(problem, prefix_steps, generator, n, seed, start) -> step texts``: the generator continued from a
    prefix (Monte-Carlo rollouts), where the domain has one."""
    lm_policy: bool = False
    """Whether the lab's base model can be the sampling policy (``LabConfig.policy = "lm"``): its decoded
    text reads back in the domain's own spelling."""
    triggers: tuple[str, ...] = ()
    """Kinds of problem line whose wording invites a systematic misreading, in the statistics page's order."""
    misreadings: Callable[..., Any] | None = None
    """``(solution, oracle labels) -> (trigger kind, misread?)`` for every trigger the solution reached: the
    statistics page's ``misread`` rates."""

    def owns(self, family_name: str) -> bool:
        """Whether a family of this name (a problem's ``subject``) belongs to this domain: its name, or its
        name and a suffix (``plans-ood``)."""
        return family_name == self.name or family_name.startswith(self.name + "-")

    def error_kind(self, reason: str) -> str | None:
        """``"immediate"`` (visible on the line), ``"delayed"`` (only later) or None (not an error)."""
        if self.oracle.REASONS.get(reason, (0,))[0] != -1:
            return None
        return "delayed" if reason in self.delayed else "immediate"


LEDGER = Domain(
    name="ledger", family_config=ledger_domain.LedgerConfig, ood=ledger_domain.OOD,
    generator_config=ledger_generator.GeneratorConfig, make_problems=ledger_domain.make_problems,
    generate=ledger_generator.generate, oracle=ledger_oracle, continue_samples=ledger_generator.continue_samples,
    lm_policy=True, triggers=ledger_domain.TRIGGERS, misreadings=ledger_oracle.misreadings,
    # the order is the lab tokenizer's since its first base: a new word goes last, or every cached base changes
    words=("\n", ".", "?", ":", "=", "+", "-", "*", "/", "#",
           "Start", "at", "What", "is", "the", "final", "value", "set", "to", "check", "Answer",
           *[k for k in ledger_domain.KINDS if k.isalpha() and k != "set"]))

PLANS = Domain(
    name="plans", family_config=plans_domain.PlansConfig, ood=plans_domain.OOD,
    generator_config=plans_generator.PlansGeneratorConfig, make_problems=plans_domain.make_problems,
    generate=plans_generator.generate, oracle=plans_oracle, delayed=plans_oracle.DELAYED,
    words=("\n", ".", "?", ":", ",", "#", "Plan", "the", "tasks", "task", "each", "takes", "one", "day", "days",
           "at", "most", "a", "after", "and", "needs", "van", "due", "by", "any", "There", "is", "that", "it",
           "What", "earliest", "which", "every", "can", "be", "done", "Day", "rest", "Left", "Answer"))

DOMAINS: dict[str, Domain] = {}
"""Every registered domain by name."""


def register(domain: Domain) -> Domain:
    """Add ``domain`` to :data:`DOMAINS` (a name taken by another domain is an error)."""
    if DOMAINS.get(domain.name, domain) is not domain:
        raise ValueError(f"a lab domain named {domain.name!r} is already registered")
    DOMAINS[domain.name] = domain
    return domain


register(LEDGER)
register(PLANS)


def domain_named(name: str) -> Domain:
    """The registered domain ``name``; an error listing the known ones otherwise."""
    if name not in DOMAINS:
        raise ValueError(f"unknown lab domain {name!r} (known: {', '.join(DOMAINS)})")
    return DOMAINS[name]


def domain_for_family(family) -> Domain:
    """The domain whose family config ``family`` is an instance of."""
    for d in DOMAINS.values():
        if isinstance(family, d.family_config):
            return d
    raise TypeError(f"{type(family).__name__} is no lab domain's family config (known: {', '.join(DOMAINS)})")


def domain_of_problem(problem: Problem) -> Domain:
    """The domain of a lab problem, told by its family (``subject``); the ledger's before subjects were
    written, so records of older runs keep their meaning."""
    subject = problem.subject or ""
    return next((d for d in DOMAINS.values() if d.owns(subject)), LEDGER)


def domain_of(solution: Solution) -> Domain:
    """The domain of a lab solution (:func:`domain_of_problem` of its problem)."""
    return domain_of_problem(solution.problem)


def domain_of_pool(solutions: list[Solution], asked: str | None = None) -> Domain:
    """The one domain of a pool's problems (``asked``, by name, for an empty pool; the ledger without
    either). An error when the pool mixes domains or ``asked`` names another: another domain's oracle
    would rate every step wrong.

    >>> domain_of_pool([]).name, domain_of_pool([], "plans").name
    ('ledger', 'plans')
    """
    found = sorted({domain_of(s).name for s in solutions})
    if len(found) > 1:
        raise ValueError(f"the pool holds problems of the {' and '.join(found)} domains; one pool is one domain's")
    if asked is not None and found and found != [asked]:
        raise ValueError(f"the pool holds problems of the {found[0]} domain, not of {asked}")
    return domain_named(found[0] if found else asked or "ledger")


def oracle_labels(solution: Solution) -> list:
    """The exact oracle's label of every step ``solution`` took, by its own domain's oracle."""
    return domain_of(solution).oracle.oracle_labels(solution)


def oracle_label(solution: Solution) -> Solution:
    """A copy of ``solution`` with every step rated by its domain's oracle (``label_source="oracle"``), the
    reason in each ``Step.meta["reason"]``, and its ``answer`` (every lab domain ends with ``# Answer``:
    :func:`prmkit.lab.oracle.extract_answer`) and ``grade`` (re)computed."""
    oracle = domain_of(solution).oracle
    texts = solution.texts
    steps = [Step([Completion(t, rating=lab.rating)], meta={"reason": lab.reason})
             for t, lab in zip(texts, oracle.oracle_labels(solution))]
    answer = ledger_oracle.extract_answer(texts)
    return dataclasses.replace(solution, steps=steps, answer=answer, grade=oracle.grade_answer(solution.problem, answer),
                               label_source="oracle")


__all__ = ["DOMAINS", "LEDGER", "PLANS", "Domain", "domain_for_family", "domain_named", "domain_of", "domain_of_pool",
           "domain_of_problem",
           "oracle_label", "oracle_labels", "register"]
