"""Generation: sample solutions from a model, split them into steps, grade them, write prmkit records.

The stage every other one starts from: candidate pools for labelling, selection, training and best-of-N,
and continuations of partial solutions for Monte-Carlo labels and search.

- :class:`GenerateConfig` (:mod:`.config`): every setting of ``prmkit generate``;
- :class:`Backend` (:mod:`.backend`): ``generate(problems, n)`` and ``complete(problem, prefix_steps, n)``,
  implemented by ``hf``, ``vllm``, ``openai`` and any backend a package registers (the lab's ``lab`` and
  ``lab-lm``; :func:`make_backend`, :func:`backend_factories`);
- :func:`split_steps` (:mod:`.steps`) and :func:`split_long` (:mod:`.longcot`): text to steps;
- :func:`generate_file` (:mod:`.run`): a problem file to a resumable, sharded file of graded records.
"""

from __future__ import annotations

from prmkit.generate.backend import Backend, GenerationError, Sample, backend_factories, make_backend
from prmkit.generate.config import STEP_MODES, GenerateConfig
from prmkit.generate.run import generate_file, read_problem_file
from prmkit.longcot import LONG_MODES, split_long
from prmkit.steps import split_steps

__all__ = ["LONG_MODES", "STEP_MODES", "Backend", "GenerateConfig", "GenerationError", "Sample",
           "backend_factories", "generate_file", "make_backend", "read_problem_file", "split_long", "split_steps"]
