"""The lab's pools: problems of one split, sampled by the generator, as prmkit records.

>>> from prmkit.lab.config import preset
>>> pool = generate_pool(preset("quick"), seed=0, split="ood")
>>> len(pool), pool[0].problem.subject, pool[0].grade in ("correct", "incorrect")
(320, 'ledger-ood', True)
"""

from __future__ import annotations

from prmkit.lab.config import LabConfig
from prmkit.schema import Solution


def generate_pool(config: LabConfig, seed: int, split: str = "eval", problems: int | None = None,
                  samples: int | None = None, device: str = "auto", skip: int = 0) -> list[Solution]:
    """Sample the ``split`` pool of ``config`` (``problems`` x ``samples``, by default the config's sizes;
    ``device``: where the ``lm`` policy's base runs), less its first ``skip`` problems.

    Splits never share problems (each split seeds its own); the same config, seed and split give equal
    records, and fewer ``problems`` give a prefix of the pool. ``skip`` gives problems no pool of that many
    or fewer holds (a study's validation problems beside its training ones), sampled on their own.
    """
    n_problems, n_samples = config.sizes(split)
    domain = config.lab_domain
    probs = domain.make_problems(config.family(split), problems or n_problems, seed, split)[skip:]
    if config.policy != "rules" and split not in PRETRAIN_SPLITS:
        return sample_lm(config, probs, samples or n_samples, seed, device=device)
    return domain.generate(probs, config.generator, samples or n_samples, seed)


PRETRAIN_SPLITS = ("pretrain", "ood_pretrain")
"""Splits the base model reads: always the rule-based generator's (the base *is* the ``lm`` policy, and the
``sft`` policy's start)."""

LM_SAMPLING = {"temperature": 1.0, "max_new_tokens": 256, "batch_size": 64}
"""How the ``lm`` policy samples: the base's own distribution, room for the held-out family's longest
solutions, rows per ``generate`` call on a CPU."""


def sample_lm(config: LabConfig, problems: list, samples: int, seed: int, progress: bool = False,
              device: str = "auto", folder=None) -> list[Solution]:
    """``samples`` solutions of each problem from the model in ``folder`` (by default ``config``'s policy: the
    base model, or the fine-tuned one under ``policy=sft``) through ``prmkit generate --backend lab-lm``,
    graded by the lab's oracle as the rule-based pools are."""
    from prmkit.generate.config import GenerateConfig
    from prmkit.generate.run import sample_id, to_solution
    from prmkit.lab.backend import lab_lm_backend
    from prmkit.schema import Generator

    cfg = GenerateConfig(backend="lab-lm", seed=seed, n=samples, progress=progress, device=device, **LM_SAMPLING)
    backend = lab_lm_backend(cfg, log=lambda _: None, lab=config, folder=folder)
    gen = Generator(backend.name, {"backend": "lab-lm", **backend.cfg.sampling})
    out = []
    for problem, per in zip(problems, backend.generate(problems, samples)):  # one call: rows batch across problems
        for j, sample in enumerate(per):
            sol = to_solution(problem, sample_id(problem, seed, j), sample, backend.cfg, gen)
            sol.grade = config.lab_domain.oracle.grade_answer(problem, sol.answer)
            out.append(sol)
    return out
