"""The prompt a generator continues: a template around the problem, worked examples before it, and the
steps of a partial solution after it, laid out by the project's one formatter.

A token backend (``hf``) builds the prompt's ids with :func:`prmkit.model.formatter.encode` on
(:func:`render_problem`, prefix steps) and :func:`format_of`, so a model trained by prmkit is prompted in
exactly the layout it was trained and is scored in. A text backend (``openai``) sends
:func:`prompt_text`, the same layout as one string.

>>> from prmkit.generate.config import GenerateConfig
>>> cfg = GenerateConfig(prompt="Problem: {problem}")
>>> shots = [("1+1?", ["1+1 = 2", "# Answer\\n\\n2"])]
>>> render_problem("2+3?", cfg, shots)
'Problem: 1+1?\\n1+1 = 2\\n# Answer\\n\\n2\\n\\nProblem: 2+3?'
>>> prompt_text("2+3?", ["2+3 = 5"], cfg)
'Problem: 2+3?\\n2+3 = 5\\n'
"""

from __future__ import annotations

from prmkit.model.formatter import FormatConfig

NO_TRUNCATION = 1 << 20
"""A prompt is never cut: a model's own context limit is the backend's to report."""


def format_of(cfg) -> FormatConfig:
    """The :class:`FormatConfig` of a :class:`~prmkit.generate.config.GenerateConfig`'s prompt settings."""
    return FormatConfig(separator=cfg.separator, marker=cfg.marker or None, problem_suffix=cfg.problem_suffix,
                        chat_template=cfg.chat_template, max_length=NO_TRUNCATION)


def fill(template: str, problem: str) -> str:
    """``template`` with ``{problem}`` replaced (not ``str.format``: problems are full of LaTeX braces).

    >>> fill("Solve: {problem}", "$\\\\frac{1}{2}$")
    'Solve: $\\\\frac{1}{2}$'
    """
    return template.replace("{problem}", problem)


def steps_text(steps: list[str], cfg) -> str:
    """Steps as the formatter lays them out: each followed by the separator and the marker."""
    return "".join(s + cfg.separator + (cfg.marker or "") for s in steps)


def render_problem(problem: str, cfg, shots: list[tuple[str, list[str]]] = ()) -> str:
    """The prompt's problem part: each worked example (prompt, suffix, steps) and a blank line, then the problem."""
    examples = "".join(fill(cfg.prompt, p) + cfg.problem_suffix + steps_text(s, cfg) + "\n" for p, s in shots)
    return examples + fill(cfg.prompt, problem)


def prompt_text(problem: str, prefix_steps: list[str], cfg, shots=()) -> str:
    """The whole prompt as text (no chat template): problem part, suffix, then the prefix's steps."""
    return render_problem(problem, cfg, shots) + cfg.problem_suffix + steps_text(prefix_steps, cfg)


def load_shots(cfg) -> list[tuple[str, list[str]]]:
    """The first ``few_shot_n`` solutions of the ``few_shot`` file as (problem, steps)."""
    if not cfg.few_shot_n:
        return []
    from itertools import islice

    from prmkit.io import read_solutions

    shots = [(s.problem.problem, s.texts) for s in islice(read_solutions(cfg.few_shot), cfg.few_shot_n)]
    if len(shots) < cfg.few_shot_n:
        raise ValueError(f"{cfg.few_shot}: {len(shots)} solutions, but few_shot_n is {cfg.few_shot_n}")
    return shots
