"""The lab's pools: problems of one split, sampled by the generator, as prmkit records.

>>> from prmkit.lab.config import preset
>>> pool = generate_pool(preset("quick"), seed=0, split="ood")
>>> len(pool), pool[0].problem.subject, pool[0].grade in ("correct", "incorrect", "unparseable")
(320, 'ledger-ood', True)
"""

from __future__ import annotations

from prmkit.lab.config import LabConfig
from prmkit.lab.domain import make_problems
from prmkit.lab.generator import generate
from prmkit.schema import Solution


def generate_pool(config: LabConfig, seed: int, split: str = "eval", problems: int | None = None,
                  samples: int | None = None) -> list[Solution]:
    """Sample the ``split`` pool of ``config`` (``problems`` x ``samples``, by default the config's sizes).

    Splits never share problems (each split seeds its own); the same config, seed and split give equal
    records, and fewer ``problems`` give a prefix of the pool.
    """
    n_problems, n_samples = config.sizes(split)
    probs = make_problems(config.family(split), problems or n_problems, seed, split)
    return generate(probs, config.generator, samples or n_samples, seed)
