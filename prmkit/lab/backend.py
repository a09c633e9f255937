"""The lab's generators behind the generator interface: ``lab`` (the rule-based sampler) and ``lab-lm``
(the lab's base model, a policy with weights, sampled through :mod:`prmkit.generate.hf`).

``--model`` names the lab preset whose generator (``lab``) or base model (``lab-lm``, pretrained and
cached on first use) is sampled; the default is ``default``. ``lab-lm`` is prompted in the lab's own
layout (:func:`prmkit.lab.config.lab_format`): the layout its base was pretrained on.

>>> from prmkit.generate.config import GenerateConfig
>>> from prmkit.lab.domain import LedgerConfig, make_problems
>>> b = lab_backend(GenerateConfig(backend="lab", model="quick"))
>>> problem = make_problems(LedgerConfig(), 1, seed=0)[0]
>>> s = b.generate([problem], 2)[0][0]
>>> s.text.splitlines()[0], s.finish_reason
('A + 1 : 67 + 1 = 68', 'stop')
>>> rest = b.complete(problem, ["A + 1 : 67 + 1 = 68"], 3)
>>> len(rest), rest[0].text.startswith("B")
(3, True)
"""

from __future__ import annotations

import dataclasses
import re

from prmkit.generate.backend import Backend, Sample
from prmkit.steps import join_steps


def lab_preset(cfg):
    """The :class:`~prmkit.lab.config.LabConfig` that ``cfg.model`` names: a ledger preset (``default``
    when empty), or ``DOMAIN/PRESET`` for another domain's (``plans/quick``)."""
    from prmkit.lab.config import preset

    domain, _, name = (cfg.model or "default").rpartition("/")
    return preset(name, domain or "ledger")


RULES_IGNORE = ("temperature", "top_p", "max_new_tokens", "prompt", "few_shot", "few_shot_n", "chat_template", "stop",
                "marker")
"""Settings the rule-based generator has no use for: it samples by its rules, from no prompt."""
LM_FIXED = ("prompt", "few_shot", "few_shot_n", "chat_template", "problem_suffix", "separator", "marker")
"""Settings ``lab-lm`` fixes: its base is prompted in the layout it was pretrained on."""


def refuse_settings(cfg, names: tuple[str, ...], backend: str, why: str) -> None:
    """A ValueError naming every setting of ``names`` changed from its default (none is silently ignored)."""
    from prmkit.generate.config import GenerateConfig

    default = GenerateConfig()
    changed = [n for n in names if getattr(cfg, n) != getattr(default, n)]
    if changed:
        flags = ", ".join("--" + n.replace("_", "-") for n in changed)
        raise ValueError(f"the {backend} backend {why}: it takes no {flags}")


class LabBackend(Backend):
    """The rule-based lab generator: exact to the lab's design, instant, no weights. Its samples of a problem
    (``generate``) are drawn as one block, so sample ``j`` depends on ``n`` too (as the lab's pools always
    have); its continuations (``complete``) are seeded one by one, so continuation ``j`` does not."""

    def __init__(self, cfg, generator=None):
        refuse_settings(cfg, RULES_IGNORE, "lab", "samples by its rules (lab-lm samples a model)")
        self.cfg, self.generator = cfg, generator or lab_preset(cfg).generator  # a study passes its own
        self.domain = domain_for_generator(self.generator)
        self.name = self.generator.name

    def identity(self):
        from prmkit.lab.domain import config_hash

        return [*super().identity(), config_hash(self.generator)]  # its rules, not its name, decide its samples

    def fingerprint(self):
        from prmkit.lab.domain import config_hash

        return {"rules": config_hash(self.generator)}

    def generate(self, problems, n):
        sols = self.domain.generate(problems, self.generator, n, self.cfg.seed)
        return [[_sample(s.texts) for s in sols[i * n:(i + 1) * n]] for i in range(len(problems))]

    def complete(self, problem, prefix_steps, n, start=0):
        if self.domain.continue_samples is None:
            raise ValueError(f"the lab backend cannot continue a {self.domain.name} solution from a prefix: the "
                             f"{self.domain.name} generator has no continuation (Monte-Carlo rollouts need one)")
        texts = self.domain.continue_samples(problem, prefix_steps, self.generator, n, self.cfg.seed, start)
        return [_sample(t) for t in texts]


def domain_for_generator(generator):
    """The lab domain whose rule-based generator ``generator`` configures."""
    from prmkit.lab.domains import DOMAINS

    found = [d for d in DOMAINS.values() if isinstance(generator, d.generator_config)]
    if not found:
        raise TypeError(f"{type(generator).__name__} is no lab domain's generator config")
    return found[0]


def _sample(texts: list[str]) -> Sample:
    from prmkit.lab.stats import count_tokens

    return Sample(join_steps(texts), count_tokens(texts), "stop")


def lab_text(text: str) -> str:
    """The lab tokenizer's decoded text in the lab's own spelling: its decoder puts a space between all
    tokens, the rule-based generator none around line breaks.

    >>> lab_text("A + 1 : 67 + 1 = 68 \\n <step> # Answer \\n \\n 68")
    'A + 1 : 67 + 1 = 68\\n<step># Answer\\n\\n68'
    """
    return re.sub(r" ?\n ?", "\n", text).replace("\n<step> ", "\n<step>")


def lab_lm_backend(cfg, progress: bool = False, log=print, lab=None, folder=None):
    """The policy model of the lab preset ``cfg.model`` (or of the LabConfig ``lab``): its base, or under
    ``policy=sft`` the fine-tuned base, made if not cached; or the lab model in ``folder``. An
    :class:`~prmkit.generate.hf.HFBackend`."""
    from pathlib import Path

    from prmkit.generate.hf import HFBackend, Sampler
    from prmkit.lab.config import lab_format
    from prmkit.lab.policy import policy_folder

    refuse_settings(cfg, LM_FIXED, "lab-lm", "prompts its base in the lab's layout")
    lab = lab or lab_preset(cfg)
    folder = Path(folder) if folder else policy_folder(lab, progress=progress, log=log, device=cfg.device)
    fmt = lab_format(lab.base.max_length)
    cfg = dataclasses.replace(cfg, separator=fmt.separator, marker=fmt.marker, problem_suffix=fmt.problem_suffix,
                              prompt="{problem}", chat_template=False)
    sampler = Sampler.load(str(folder), cfg.device, end=fmt.marker)
    return HFBackend(cfg, sampler, name=f"lab-lm/{folder.name}", detokenize=lab_text, folder=str(folder))


def lab_backend(cfg) -> Backend:
    """``lab`` or ``lab-lm`` by ``cfg.backend``."""
    return LabBackend(cfg) if cfg.backend == "lab" else lab_lm_backend(cfg)
