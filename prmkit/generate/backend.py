"""The generator interface: every backend samples whole solutions and continues partial ones.

``Backend.generate(problems, n) -> [[Sample] * n per problem]`` and
``Backend.complete(problem, prefix_steps, n, start=0) -> [Sample] * n`` (the text after the prefix, for
Monte-Carlo rollouts and search: samples ``start .. start + n - 1`` of that prefix, so a cache that holds the
first ``k`` asks for the next ones only); :meth:`Backend.complete_many` takes many such requests at once
(batched across prefixes where the backend can). A :class:`Sample` is text; :func:`prmkit.steps.split_steps` makes it steps
and :mod:`prmkit.generate.run` makes it a record. Backends by name (``--backend``):

- ``hf`` (:mod:`prmkit.generate.hf`): transformers on CPU or GPU, batched with a KV cache;
- ``vllm`` (:mod:`prmkit.generate.vllm`): vLLM on GPUs, tensor and data parallel (extra ``vllm``);
- ``openai`` (:mod:`prmkit.generate.remote`): any OpenAI-compatible server, ``prmkit serve`` included;
- any other name a package registers under the ``prmkit.backends`` entry-point group, as
  ``name = "module:factory"`` (the factory takes the config and returns a :class:`Backend`). prmkit's lab
  registers ``lab`` and ``lab-lm`` so (its rule-based generator, and its base model sampled through
  ``hf``): this package names no lab module, and a third party's backend is a ``--backend`` like these.

>>> sample_seed(0, "p1", [], 3) == sample_seed(0, "p1", [], 3) != sample_seed(0, "p1", [], 4)
True
"""

from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass

from prmkit.schema import Problem


@dataclass
class Sample:
    """One sampled continuation: its text, its length in tokens (None where a server does not say per
    sample), and why it ended (``stop``: the model or a stop rule ended it; ``length``: ``max_new_tokens``
    ran out)."""

    text: str
    tokens: int | None
    finish_reason: str


class GenerationError(RuntimeError):
    """A generation request failed for good; the message names the request (and the retries spent)."""


class Backend:
    """A generator. Subclasses implement :meth:`complete` (and :meth:`generate` where batching across
    problems pays); ``name`` goes into every record's ``generator.name``."""

    name = "backend"
    cfg = None
    """The backend's :class:`~prmkit.generate.config.GenerateConfig`, as it prompts: a backend may set its
    own layout (``lab-lm`` prompts in the lab's), and samples are split into steps by this one."""

    def generate(self, problems: list[Problem], n: int) -> list[list[Sample]]:
        """``n`` samples of each problem (from its start)."""
        return [self.complete(p, [], n) for p in problems]

    def complete(self, problem: Problem, prefix_steps: list[str], n: int, start: int = 0) -> list[Sample]:
        """Continuations ``start .. start + n - 1`` of ``problem`` after ``prefix_steps``: each sample's text is
        what follows. Sample ``j`` of a prefix does not depend on ``n`` or ``start``, where the backend can seed
        samples one by one (``hf``, ``lab``); a server seeds a request (``openai``)."""
        raise NotImplementedError

    def complete_many(self, requests: list[tuple[Problem, list[str], int, int]]) -> list[list[Sample]]:
        """:meth:`complete` of every ``(problem, prefix_steps, n, start)``, in order."""
        return [self.complete(p, prefix, n, start) for p, prefix, n, start in requests]

    def identity(self) -> list:
        """What its samples depend on, for caches: the name, every sampling setting but ``n``, the fingerprint."""
        sampling = self.cfg.sampling if self.cfg is not None else {}
        return [self.name, {k: v for k, v in sampling.items() if k != "n"}, self.fingerprint()]

    def fingerprint(self) -> dict:
        """What decides its samples beyond its name and settings, recorded with them: a local model's weights
        (a folder retrained in place keeps its name), a rule-based generator's rules; nothing for a server."""
        return {}

    def close(self) -> None:
        """Release what the backend holds (a model, a server connection)."""


def problem_key(problem: Problem) -> str:
    """What identifies a problem in sample seeds and record ids: its id, else a hash of its text."""
    if problem.id is not None:
        return problem.id
    return hashlib.blake2b(problem.problem.encode(), digest_size=6).hexdigest()


def sample_seed(seed: int, key: str, prefix_steps: list[str], j: int) -> int:
    """The seed of sample ``j`` of (problem ``key``, prefix): a sample never depends on its batch."""
    text = "\x1f".join([str(seed), key, *prefix_steps, str(j)])
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest()) >> 1


BUILTIN_BACKENDS = {"hf": "prmkit.generate.hf:HFBackend.from_config", "vllm": "prmkit.generate.vllm:VLLMBackend",
                    "openai": "prmkit.generate.remote:OpenAIBackend"}
"""prmkit's own backends: name -> ``module:factory`` (imported only when asked for)."""
ENTRY_POINTS = "prmkit.backends"
"""The entry-point group through which an installed package adds backends."""


def backend_factories() -> dict[str, str]:
    """Every backend by name -> ``module:factory``: the installed packages' entry points, then prmkit's own
    (which no entry point replaces)."""
    from importlib.metadata import entry_points

    return {**{ep.name: ep.value for ep in entry_points(group=ENTRY_POINTS)}, **BUILTIN_BACKENDS}


def load_factory(spec: str):
    """The object a ``module:attr.attr`` spec names.

    >>> load_factory("prmkit.generate.backend:Backend.close").__name__
    'close'
    """
    module, _, attrs = spec.partition(":")
    obj = importlib.import_module(module)
    for attr in attrs.split("."):
        obj = getattr(obj, attr)
    return obj


def make_backend(cfg) -> Backend:
    """The backend a :class:`~prmkit.generate.config.GenerateConfig` names, loaded.

    >>> make_backend(type("Cfg", (), {"backend": "nope"}))
    Traceback (most recent call last):
    ...
    ValueError: unknown backend 'nope' (known: ...; a package adds one under the 'prmkit.backends' entry points)
    """
    factories = backend_factories()
    if cfg.backend not in factories:
        raise ValueError(f"unknown backend {cfg.backend!r} (known: {', '.join(sorted(factories))}; a package adds one "
                         f"under the {ENTRY_POINTS!r} entry points)")
    return load_factory(factories[cfg.backend])(cfg)
