"""Settings of the lab's studies (``prmkit lab study active|synthetic|budget|autolabel|pressure``), one inert dataclass each.

Each study owns its config: a :class:`~prmkit.lab.config.LabConfig` extended by the study's own section
(:class:`BudgetStudy` adds ``budget``, :class:`ActiveStudy` ``active``, :class:`SyntheticStudy`
``synthetic``), so ``--set active.budgets=1,2,4`` works like any other override and a study's cache keys
see it, while the lab run's config knows nothing of the studies. :func:`study_preset` builds one from a
lab preset. Each default runs in at most 30 minutes on 2 CPU cores; :meth:`quick` is the size the test
suite runs (the ``quick`` preset).

>>> cfg = study_preset("budget", "quick")
>>> cfg.budget.budgets, cfg.eval_problems, hasattr(preset("quick"), "budget")
((250, 4000), 40, False)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from prmkit.config import apply, read_recipe
from prmkit.lab.config import RECIPES, LabConfig, preset
from prmkit.lab.study.core import AGGREGATION
from prmkit.rl.grpo import RLConfig
from prmkit.select import WRONG_GRADES, check_wrong_grades


@dataclass(frozen=True)
class BudgetConfig:
    """The label-budget curve: PRM and ORM trained on several numbers of labelled solutions.

    Per seed, ``max(budgets)`` solutions of the train split (``samples_per_problem`` per problem, then
    shuffled) are rated by the simulated labellers; the PRM learns from the first ``B`` phase-2 records
    and the ORM from the final-answer grades of the same ``B`` solutions, for every budget ``B`` (nested
    prefixes of one pool). Every reward model takes ``rm_steps`` optimiser steps, whatever its budget, so
    only the labels differ along the curve (``rm_epochs`` raises the larger budgets' caps instead, for a
    protocol that stops early). The default keeps the lab's 300 steps: at 150 one seed's PRM
    curve was not even monotone (best-of-32: 73.6 / 49.1 / 63.7% at 500 / 1,000 / 2,000 labels), and at
    80 steps the active-learning study saw some PRMs never learn to use the surprise features.
    """

    budgets: tuple[int, ...] = field(default=(250, 1000, 4000), metadata={
        "help": "numbers of labelled solutions (each a prefix of one shuffled labelled pool)"})
    n: int = field(default=16, metadata={"help": "best-of-N at this N (above eval_samples: best of all samples)"})
    samples_per_problem: int = field(default=4, metadata={
        "help": "samples per training problem in the labelled pool (max(budgets) / this problems)"})
    eval_problems: int = field(default=200, metadata={"help": "held-out problems per seed for best-of-N"})
    eval_samples: int = field(default=16, metadata={"help": "samples per held-out problem"})
    rm_steps: int = field(default=0, metadata={
        "help": "optimiser steps of every reward model (0: rm.max_steps, the lab's 300); the same for both kinds and "
                "all budgets unless rm_epochs raises a budget's"})
    rm_epochs: float = field(default=0.0, metadata={
        "help": "passes over its labels (all L, a held-out share included) that a budget's reward models may take: "
                "their step cap is max(steps, ceil(rm_epochs x L / rm.batch_size)), so that under a protocol that "
                "stops early (rm.early_stop_patience) the largest budget is not cut short by a cap set for the "
                "smallest; without early stopping they train the raised number (0: the step budget alone, for all)"})

    def __post_init__(self):
        object.__setattr__(self, "budgets", tuple(sorted({int(b) for b in self.budgets})))
        if len(self.budgets) < 2 or min(self.budgets) < 1:
            raise ValueError(f"budget.budgets needs at least two distinct positive sizes, got {self.budgets}")
        if min(self.samples_per_problem, self.eval_problems, self.eval_samples) < 1:
            raise ValueError("budget problem and sample counts must be at least 1")
        if self.n < 1:
            raise ValueError(f"budget.n must be at least 1, got {self.n}")
        if self.rm_steps < 0:
            raise ValueError(f"budget.rm_steps must be 0 (rm.max_steps) or positive, got {self.rm_steps}")
        if not 0 <= self.rm_epochs < math.inf:  # NaN and infinity too: they would fail late, at the stages
            raise ValueError(f"budget.rm_epochs must be a finite number at least 0, got {self.rm_epochs}")



@dataclass(frozen=True)
class ActiveConfig:
    """Active learning on convincing wrong answers against uniform selection, at equal labels.

    Per run seed, ``train_problems`` problems of the train split get ``candidates`` samples each, all
    rated once by the simulated labellers (so a sample chosen by two arms carries the same label: only
    the choice differs). The selector is the PRM trained on the uniform set of ``budgets[0]`` per problem;
    it scores every candidate, and each active set of ``k`` per problem is ``wrong_share`` the most
    convincing wrong answers plus the most convincing of the rest, from the candidates it was not
    trained on. Generations: cumulative labels per problem follow ``budgets[:generations]``; generation 1
    is the uniform set, each later one adds a convincing-wrong-answer batch chosen by the PRM retrained
    on everything labelled so far.
    """

    budgets: tuple[int, ...] = field(default=(1, 2, 4), metadata={
        "help": "labelled solutions per training problem (the x axis of the slope fit); the first is the selector's"})
    candidates: int = field(default=16, metadata={"help": "candidate samples per training problem the selector scores"})
    train_problems: int = field(default=500, metadata={"help": "training problems per seed (train split of the run seed)"})
    eval_problems: int = field(default=200, metadata={"help": "held-out problems per seed for best-of-N"})
    eval_samples: int = field(default=16, metadata={"help": "samples per held-out problem"})
    n: int = field(default=16, metadata={"help": "best-of-N at this N (above eval_samples: best of all samples)"})
    wrong_share: float = field(default=0.8, metadata={
        "help": "share of each active set that is the most convincing wrong answers (the paper's 0.8)"})
    wrong_grades: tuple[str, ...] = field(default=WRONG_GRADES, metadata={
        "help": "grades the selection counts as a wrong answer (prmkit.select.WRONG_GRADES); a sample cut off "
                "before its answer is incorrect, and the lab's oracle never leaves a sample unparseable"})
    answered_only: bool = field(default=True, metadata={
        "help": "a wrong answer must be an answer (the paper's wrong-answer solutions): a sample cut off before "
                "its answer is graded incorrect but is not selected as one (its steps may all be right)"})
    valid_problems: int = field(default=50, metadata={
        "help": "training-split problems beyond the candidates' whose uniform samples, labelled, are the seed's "
                "validation split: shared by every PRM of the seed, never trained on, read where the reward-model "
                "recipe validates (--rm-protocol lab: restarts, early stopping); 0: each PRM holds out a tenth of "
                "its own labels"})
    valid_samples: int = field(default=4, metadata={"help": "samples per validation problem"})
    count_selector: bool = field(default=True, metadata={
        "help": "headline: count the selector's labels in the active arm's budget (the strict view); both "
                "views are always reported"})
    generations: int = field(default=0, metadata={
        "help": "generations of label, retrain, re-score, select (cumulative labels per problem: "
                "budgets[:generations]; 0: one per budget)"})
    rm_steps: int = field(default=0, metadata={
        "help": "optimiser steps of every reward model of the study (0: rm.max_steps, 300); the same for every arm. "
                "Fewer is unstable: at 80 steps some PRMs never learn to use the surprise features (step AUROC "
                "0.57-0.96 on one set), and the lab's PRMs at 300 steps did so between steps 75 and 225"})
    rm_epochs: float = field(default=8.0, metadata={
        "help": "at least this many passes over its training set for every PRM: a set of L labels trains "
                "max(steps, ceil(rm_epochs x L / rm.batch_size)) steps, so a larger set is not cut short by a "
                "budget sized for the smallest (0: the fixed step budget alone)"})

    def __post_init__(self):
        object.__setattr__(self, "budgets", tuple(sorted({int(b) for b in self.budgets})))
        if len(self.budgets) < 2 or self.budgets[0] < 1:
            raise ValueError(f"active.budgets needs at least two positive sizes, got {self.budgets}")
        if self.budgets[-1] + self.budgets[0] > self.candidates:
            raise ValueError(f"active.candidates ({self.candidates}) must hold the selector's "
                             f"{self.budgets[0]} and the largest set of {self.budgets[-1]} per problem")
        if min(self.train_problems, self.eval_problems, self.eval_samples, self.valid_samples) < 1:
            raise ValueError("active problem and sample counts must be at least 1")
        if self.valid_problems < 0:
            raise ValueError(f"active.valid_problems must be 0 (no shared split) or positive, got {self.valid_problems}")
        if self.n < 1:
            raise ValueError(f"active.n must be at least 1, got {self.n}")
        if not 0.0 <= self.wrong_share <= 1.0:
            raise ValueError(f"active.wrong_share must lie in [0, 1], got {self.wrong_share}")
        object.__setattr__(self, "wrong_grades", check_wrong_grades(self.wrong_grades))
        if not 0 <= self.generations <= len(self.budgets):
            raise ValueError(f"active.generations must lie in 0..len(budgets) ({len(self.budgets)}), "
                             f"got {self.generations}")
        if self.rm_steps < 0:
            raise ValueError(f"active.rm_steps must be at least 0, got {self.rm_steps}")
        if self.rm_epochs < 0:
            raise ValueError(f"active.rm_epochs must be at least 0, got {self.rm_epochs}")


    @property
    def n_generations(self) -> int:
        """Generations the study runs: ``generations``, or one per budget when it is 0."""
        return self.generations or len(self.budgets)


@dataclass(frozen=True)
class SyntheticConfig:
    """Synthetic supervision: a large PRM labels fresh samples for small reward models.

    The large PRM is the lab's PRM trained once per run on ``large_problems x large_samples`` solutions
    rated by the simulated labellers (problems of the train split drawn with ``large_seed``, never a run
    seed). For each run seed, ``problems`` fresh training problems (the train split of that seed) get
    ``max(per_problem)`` samples each; the first ``k`` samples of every problem are labelled three ways
    by the large PRM or the answer check, and small reward models of ``rm_steps`` steps learn from them.
    """

    per_problem: tuple[int, ...] = field(default=(1, 2, 4), metadata={
        "help": "samples per training problem labelled by the large PRM (the label budget is problems x this)"})
    threshold: float = field(default=0.2, metadata={
        "help": "a step counts as wrong when the large PRM's P(negative) exceeds this (the paper's 0.2)"})
    n: int = field(default=16, metadata={"help": "best-of-N at this N (above eval_samples: best of all samples)"})
    problems: int = field(default=250, metadata={
        "help": "fresh training problems per seed whose samples are labelled (train split of the run seed)"})
    eval_problems: int = field(default=200, metadata={"help": "held-out problems per seed for best-of-N"})
    eval_samples: int = field(default=16, metadata={"help": "samples per held-out problem"})
    rm_steps: int = field(default=100, metadata={
        "help": "optimiser steps of every small reward model (0: rm.max_steps); the same for all methods and budgets"})
    rm_epochs: float = field(default=0.0, metadata={
        "help": "at least this many passes over its training set for every reward model, the large PRM's too: a set "
                "of L labels trains max(steps, ceil(rm_epochs x L / rm.batch_size)) steps at most, so budgets up to "
                "8,000 labels are not cut short by a cap sized for the smallest (0: the fixed step budgets alone)"})
    large_problems: int = field(default=2000, metadata={"help": "problems whose samples the large PRM learns from"})
    large_samples: int = field(default=4, metadata={
        "help": "samples per large-PRM problem, each rated by the simulated labellers (phase 2)"})
    large_steps: int = field(default=600, metadata={"help": "optimiser steps of the large PRM (0: rm.max_steps)"})
    large_seed: int = field(default=1000, metadata={
        "help": "seed of the large PRM's problems, labels and initialisation (must not be a run seed)"})
    teacher: str = field(default="prm", metadata={
        "help": "who labels the fresh samples: prm (the large PRM, the paper's protocol) or oracle (the lab's exact "
                "oracle as a perfect large PRM: an upper bound on what the labels can give)"})

    def __post_init__(self):
        object.__setattr__(self, "per_problem", tuple(sorted({int(b) for b in self.per_problem})))
        if not self.per_problem or self.per_problem[0] < 1:
            raise ValueError(f"synthetic.per_problem needs positive sample counts, got {self.per_problem}")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"synthetic.threshold must lie in (0, 1), got {self.threshold}")
        if min(self.problems, self.eval_problems, self.eval_samples, self.large_problems, self.large_samples) < 1:
            raise ValueError("synthetic problem and sample counts must be at least 1")
        if self.n < 1:
            raise ValueError(f"synthetic.n must be at least 1, got {self.n}")
        if self.teacher not in ("prm", "oracle"):
            raise ValueError(f"synthetic.teacher must be prm or oracle, got {self.teacher!r}")
        if min(self.rm_steps, self.large_steps) < 0:
            raise ValueError("synthetic.rm_steps and synthetic.large_steps must be 0 (rm.max_steps) or positive")
        if not 0 <= self.rm_epochs < math.inf:
            raise ValueError(f"synthetic.rm_epochs must be a finite number at least 0, got {self.rm_epochs}")



@dataclass(frozen=True)
class AutolabelConfig:
    """Automatic step labels against the oracle, and PRMs trained on them against simulated human labels.

    Per seed, ``train_problems x samples_per_problem`` solutions of the train split are labelled five ways:
    the simulated labellers (phase 2, the human baseline) and ``prmkit label auto`` with ``mc``,
    ``omegaprm``, ``judge`` and ``consensus`` (``k`` rollouts per probed prefix from the lab's rule-based
    generator, the policy that wrote the solutions). The judge is a PRM trained on ``judge_labels``
    simulated human labels of other problems (drawn with ``judge_seed + seed``), served by ``prmkit serve
    --critic``: a stand-in for an LLM judge, asked with ProcessBench's prompt through the openai client.
    Every label set is measured against the oracle; a PRM learns from each (``rm_steps`` optimiser steps,
    the same for all) and is evaluated by step AUROC and best-of-``n`` on the held-out pool.
    """

    k: int = field(default=8, metadata={"help": "rollouts per probed prefix (mc, omegaprm, consensus)"})
    train_problems: int = field(default=500, metadata={"help": "training problems per seed whose samples are labelled"})
    samples_per_problem: int = field(default=4, metadata={"help": "samples per training problem"})
    eval_problems: int = field(default=200, metadata={"help": "held-out problems per seed for best-of-N and step AUROC"})
    eval_samples: int = field(default=16, metadata={"help": "samples per held-out problem"})
    n: int = field(default=16, metadata={"help": "best-of-N at this N"})
    judge_labels: int = field(default=500, metadata={
        "help": "simulated human labels (solutions of other problems) the judge PRM learns from"})
    judge_threshold: float = field(default=0.5, metadata={
        "help": "the judge names the first step whose P(correct) is below this"})
    judge_seed: int = field(default=3000, metadata={
        "help": "the judge's problems are drawn with judge_seed + seed (never a run seed's problems)"})
    rm_steps: int = field(default=0, metadata={
        "help": "optimiser steps of every PRM (0: rm.max_steps, 300), the judge's included"})
    restarts: int = field(default=3, metadata={
        "help": "runs of every PRM from distinct seeds, the best kept by step AUROC on a held-out tenth of its own "
                "labels (the lab run's guard: one run of a development seed's omegaprm PRM ended at the class-prior "
                "loss, step AUROC 0.57); 1: one run on all labels"})

    def __post_init__(self):
        if self.restarts < 1:
            raise ValueError(f"autolabel.restarts must be at least 1, got {self.restarts}")
        if min(self.k, self.train_problems, self.samples_per_problem, self.eval_problems, self.eval_samples,
               self.n, self.judge_labels) < 1:
            raise ValueError("autolabel counts (k, problems, samples, n, judge_labels) must be at least 1")
        if not 0.0 < self.judge_threshold < 1.0:
            raise ValueError(f"autolabel.judge_threshold must lie in (0, 1), got {self.judge_threshold}")
        if self.rm_steps < 0:
            raise ValueError(f"autolabel.rm_steps must be 0 (rm.max_steps) or positive, got {self.rm_steps}")



RM_SIZES = {"small": {"hidden_size": 64, "intermediate_size": 128, "layers": 1, "heads": 2}}
"""Reward-model sizes beside the base's own (128 wide, 2 layers): each a base of that size pretrained on the
same unlabelled pool, a reward model trained from it as from the lab's base."""


@dataclass(frozen=True)
class PressureConfig:
    """Optimisation pressure against exact truth: best-of-N up to large N, and RL against each reward.

    The lab's base model is the policy. Per seed, a PRM and an ORM learn from each label budget of
    ``train_problems x samples_per_problem`` of its solutions (simulated step labels; the same solutions'
    final-answer grades) and score ``bon_problems x bon_samples`` held-out samples: best-of-N for every N
    up to ``bon_samples`` (the exact estimator) against sqrt(KL_bon). Then GRPO (``rl``) trains the policy
    against each reward of ``rewards`` (``prmkit.lab.study.pressure.REWARDS``), with the reward models of
    the largest budget, on ``rl_problems`` prompts, measured on ``rl_eval_problems x rl_eval_samples``.
    """

    budgets: tuple[int, ...] = field(default=(500, 2000), metadata={
        "help": "numbers of labelled solutions the reward models learn from (prefixes of one shuffled pool)"})
    train_problems: int = field(default=500, metadata={"help": "training problems whose samples are labelled"})
    samples_per_problem: int = field(default=4, metadata={"help": "samples per training problem"})
    bon_problems: int = field(default=8, metadata={"help": "held-out problems of the best-of-N pool (each sampled "
                                                               "bon_samples times and scored by every reward model)"})
    bon_samples: int = field(default=4096, metadata={"help": "samples per best-of-N problem (the largest N)"})
    rm_sizes: tuple[str, ...] = field(default=("small",), metadata={
        "help": "extra reward-model sizes (of RM_SIZES) trained at the largest budget for best-of-N"})
    rewards: tuple[str, ...] = field(default=("orm", "prm-min", "prm-product", "prm-sum", "prm-last",
                                              "prm-min+answer"), metadata={"help": "rewards RL optimises"})
    rl: RLConfig = field(default_factory=RLConfig, metadata={"help": "each GRPO run (temperature 1: the KL estimate "
                                                                      "reads the policy's own distribution)"})
    rl_problems: int = field(default=480, metadata={"help": "training problems RL prompts with (none labelled)"})
    rl_eval_problems: int = field(default=48, metadata={"help": "held-out problems RL is measured on"})
    rl_eval_samples: int = field(default=4, metadata={"help": "samples per held-out problem at each evaluation"})
    rm_steps: int = field(default=0, metadata={"help": "optimiser steps of every reward model (0: 300)"})
    check: bool = field(default=True, metadata={
        "help": "run RL only against a reward whose model ranks the policy's held-out samples better than chance "
                "(false: against every reward, as the quick size does to test the RL path with models too small "
                "to pass)"})
    restarts: int = field(default=3, metadata={
        "help": "runs of every reward model from distinct seeds, the best kept on a held-out tenth of its own labels "
                "(on a development seed one ORM run ended at the class-prior loss, a constant score); 1: one run"})

    def __post_init__(self):
        object.__setattr__(self, "budgets", tuple(sorted({int(b) for b in self.budgets})))
        if self.restarts < 1:
            raise ValueError(f"pressure.restarts must be at least 1, got {self.restarts}")
        object.__setattr__(self, "rewards", tuple(self.rewards))
        object.__setattr__(self, "rm_sizes", tuple(self.rm_sizes))
        if any(size not in RM_SIZES for size in self.rm_sizes):
            raise ValueError(f"pressure.rm_sizes {self.rm_sizes} must be some of {', '.join(RM_SIZES)}")
        if not self.budgets or min(self.budgets) < 1 or max(self.budgets) > self.train_problems * self.samples_per_problem:
            raise ValueError(f"pressure.budgets {self.budgets} must lie in 1..train_problems x samples_per_problem")
        if min(self.bon_problems, self.bon_samples, self.rl_problems, self.rl_eval_problems, self.rl_eval_samples) < 1:
            raise ValueError("pressure problem and sample counts must be at least 1")
        if self.rm_steps < 0:
            raise ValueError(f"pressure.rm_steps must be 0 (rm.max_steps) or positive, got {self.rm_steps}")



SEARCH_TREES = ("beam", "dvts", "particles")
"""The search study's tree strategies (run step by step); best-of-N and weighted best-of-N come from its pool."""


@dataclass(frozen=True)
class SearchStudyConfig:
    """Test-time search with the lab PRM against best-of-N, with the oracle as the ceiling (issue 35, item 4).

    Per seed, the policy (``policy=sft`` by default: the base fine-tuned by :mod:`prmkit.lab.policy`) writes
    ``train_problems x samples_per_problem`` solutions; the simulated labellers rate them and a PRM learns from
    them (the lab's recipe, ``restarts`` runs, the best kept on a held-out tenth of its labels). On ``problems``
    held-out problems: a pool of ``max(budgets)`` whole samples each (best-of-N and weighted best-of-N), a problem's
    difficulty (its pass@1 in ``difficulty_samples`` samples of its own), and every tree strategy of
    ``strategies`` at every budget, with the PRM and with the oracle (exact step truth) as the prefix scorer.
    """

    train_problems: int = field(default=500, metadata={"help": "training problems whose samples the PRM learns from"})
    samples_per_problem: int = field(default=4, metadata={"help": "samples per training problem (all labelled)"})
    problems: int = field(default=64, metadata={"help": "held-out problems searched per seed"})
    budgets: tuple[int, ...] = field(default=(4, 16, 64), metadata={
        "help": "N: samples, beams or particles (each a multiple of m)"})
    m: int = field(default=4, metadata={"help": "beam search and DVTS: continuations per kept prefix"})
    strategies: tuple[str, ...] = field(default=SEARCH_TREES, metadata={
        "help": f"tree strategies searched step by step (of {', '.join(SEARCH_TREES)})"})
    scorers: tuple[str, ...] = field(default=("prm", "oracle"), metadata={
        "help": "prefix scorers: prm (the lab PRM) and oracle (exact step truth: 1 valid, 0 wrong)"})
    difficulty: tuple[float, ...] = field(default=(0.2, 0.6), metadata={
        "help": "the two pass@1 edges of the difficulty bins (hard below the first, easy from the second)"})
    difficulty_samples: int = field(default=16, metadata={
        "help": "samples per problem, of their own, whose pass@1 is its difficulty"})
    max_depth: int = field(default=24, metadata={"help": "most steps a searched solution may take"})
    rm_steps: int = field(default=0, metadata={"help": "optimiser steps of the PRM (0: 300)"})
    restarts: int = field(default=3, metadata={"help": "PRM runs from distinct seeds, the best kept on held-out labels"})

    def __post_init__(self):
        for name in ("budgets", "strategies", "scorers", "difficulty"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "budgets", tuple(sorted({int(b) for b in self.budgets})))
        if not self.budgets or any(b < self.m or b % self.m for b in self.budgets):
            raise ValueError(f"search.budgets {self.budgets} must be multiples of search.m ({self.m})")
        if any(s not in SEARCH_TREES for s in self.strategies):
            raise ValueError(f"search.strategies {self.strategies} must be some of {', '.join(SEARCH_TREES)}")
        if not self.scorers or any(s not in ("prm", "oracle") for s in self.scorers):
            raise ValueError(f"search.scorers {self.scorers} must be some of prm, oracle")
        if (len(self.difficulty) != 2 or list(self.difficulty) != sorted(self.difficulty)
                or any(not 0 < e < 1 for e in self.difficulty)):
            raise ValueError(f"search.difficulty {self.difficulty} must be two increasing pass@1 edges inside (0, 1)")
        if min(self.train_problems, self.samples_per_problem, self.problems, self.max_depth, self.restarts,
               self.difficulty_samples) < 1:
            raise ValueError("search problem, sample, depth and restart counts must be at least 1")
        if self.rm_steps < 0:
            raise ValueError(f"search.rm_steps must be 0 (300) or positive, got {self.rm_steps}")


# The synthetic-supervision study's arms: how small reward models are supervised, and what they are.
METHODS = ("process", "outcome", "answer")
NAMES = {"process": "process (large PRM)", "outcome": "outcome (large PRM)", "answer": "answer checking"}
KIND = {"process": "prm", "outcome": "orm", "answer": "orm"}
DIFFERENCES = (("process", "outcome"), ("outcome", "answer"), ("process", "answer"))


@dataclass(frozen=True)
class BudgetStudy(LabConfig):
    """``prmkit lab study budget``: the lab's config and the label-budget curve's."""

    budget: BudgetConfig = field(default_factory=BudgetConfig)


@dataclass(frozen=True)
class ActiveStudy(LabConfig):
    """``prmkit lab study active``: the lab's config and the active-learning study's."""

    active: ActiveConfig = field(default_factory=ActiveConfig)


@dataclass(frozen=True)
class SyntheticStudy(LabConfig):
    """``prmkit lab study synthetic``: the lab's config and the synthetic-supervision study's."""

    synthetic: SyntheticConfig = field(default_factory=SyntheticConfig)


@dataclass(frozen=True)
class PressureStudy(LabConfig):
    """``prmkit lab study pressure``: the lab's config (with the base model as the policy) and the pressure study's."""

    pressure: PressureConfig = field(default_factory=PressureConfig)


@dataclass(frozen=True)
class SearchStudy(LabConfig):
    """``prmkit lab study search``: the lab's config (with the fine-tuned policy) and the search study's."""

    search: SearchStudyConfig = field(default_factory=SearchStudyConfig)


@dataclass(frozen=True)
class AutolabelStudy(LabConfig):
    """``prmkit lab study autolabel``: the lab's config and the automatic-labels study's."""

    autolabel: AutolabelConfig = field(default_factory=AutolabelConfig)


STUDY_RECIPES = RECIPES / "studies"
"""The studies' sizes per lab preset: ``<preset>.yaml``, one section per study (``quick.yaml``)."""

STUDY_RM_STEPS = 300
"""The studies' reward-model budget when theirs is 0: a fixed step count (the lab run's own models stop
early on held-out labels instead, which the studies' designs have no labels to spare for)."""

STUDIES = {"budget": (BudgetStudy, BudgetConfig), "active": (ActiveStudy, ActiveConfig),
           "synthetic": (SyntheticStudy, SyntheticConfig), "autolabel": (AutolabelStudy, AutolabelConfig),
           "pressure": (PressureStudy, PressureConfig), "search": (SearchStudy, SearchStudyConfig)}


LEDGER_ONLY = {
    "autolabel": "its Monte-Carlo rollouts continue the ledger's generator from a prefix, and its reasons for a "
                 "label's disagreement read ledger steps",
    "pressure": "the policy it optimises is the lab's base model, whose text only the ledger reads back",
    "search": "its policy is the lab's language model, whose text only the ledger reads back",
}
"""Studies that run on the ledger alone, and why; the others (budget, active, synthetic) run on any domain."""


RM_PROTOCOLS = ("study", "lab")
"""How a study's reward models train: ``study``, the recipe the studies were designed and published with (one run
on all its labels, 300 steps at 2e-3 / 1e-2); ``lab``, the lab run's reliable protocol (:func:`prmkit.lab.config.lab_rm`:
early stopping on held-out labels, three restarts, the best kept). The budget study validates on the seed's split,
shared by a budget's PRM and ORM (:func:`prmkit.lab.run.job_rm`); the others on a tenth of each model's own labels,
with their own restarts setting where they have one (:func:`prmkit.lab.study.core.with_restarts`)."""


def study_preset(study: str, name: str = "default", domain: str = "ledger", rm_protocol: str = "study") -> LabConfig:
    """The config of ``study`` on lab preset ``name`` of ``domain``: the preset's fields, and the study's section as
    ``prmkit/lab/recipes/studies/<name>.yaml`` sets it over its defaults (the quick sizes), else its defaults; its
    reward models by ``rm_protocol`` (:data:`RM_PROTOCOLS`)."""
    if rm_protocol not in RM_PROTOCOLS:
        raise ValueError(f"unknown reward-model protocol {rm_protocol!r} (expected one of {', '.join(RM_PROTOCOLS)})")
    if study not in STUDIES:
        raise ValueError(f"unknown study {study!r} (expected one of {', '.join(STUDIES)})")
    if domain != "ledger" and study in LEDGER_ONLY:
        raise ValueError(f"the {study} study runs on the ledger only: {LEDGER_ONLY[study]}")
    cls, section = STUDIES[study]
    lab = preset(name, domain)
    sizes = STUDY_RECIPES / f"{name}.yaml"  # the study's own section at this preset's size, where one is written
    own = apply(section(), read_recipe(sizes).get(study, {})) if sizes.is_file() else section()
    # a study's models train once on all their labels, as its design counts them (a held-out split of a
    # 40-label budget would change the budget): restarts and early stopping are the lab run's guards, not
    # yet the studies'; and its ORM has the PRM's data (the equal-label comparison)
    # the studies keep the learning rates they were designed and published with (the lab run's protocol,
    # 5e-4 / 3e-3 with early stopping, is not yet theirs: docs/lab.md, "Why single runs stall")
    rm = lab.rm if rm_protocol == "lab" else dataclasses.replace(
        lab.rm, restarts=1, eval_fraction=0.0, eval_every=0, early_stop_patience=0, early_stop_min_steps=0,
        max_steps=STUDY_RM_STEPS, lr=2e-3, new_lr=1e-2)
    fields = {f.name: getattr(lab, f.name) for f in dataclasses.fields(LabConfig)}
    # a study ranks a PRM's solutions by the min of its step probabilities whatever the domain's run reads (the
    # plans presets' product): its jobs and summaries were designed and published that way
    fields["aggregation"] = AGGREGATION
    if study == "pressure":  # the policy it optimises is the base model, so its pools are the base's samples
        fields["policy"] = "lm"
    if study == "search":  # a search needs a policy that answers: the fine-tuned one (issue 34's)
        fields["policy"] = "sft"
    return cls(**{**fields, "rm": rm, "orm_ratio": 1}, **{study: own})


__all__ = [
    "LEDGER_ONLY",
    "RM_PROTOCOLS",
    "SEARCH_TREES",
    "STUDIES",
    "STUDY_RM_STEPS",
    "ActiveConfig",
    "ActiveStudy",
    "AutolabelConfig",
    "AutolabelStudy",
    "BudgetConfig",
    "BudgetStudy",
    "PressureConfig",
    "PressureStudy",
    "SearchStudy",
    "SearchStudyConfig",
    "SyntheticConfig",
    "SyntheticStudy",
    "study_preset",
]
