r"""An LLM judge as a step labeller: ProcessBench's critique prompt out, the earliest wrong paragraph back.

The prompt is ProcessBench's (Zheng et al. 2024, `QwenLM/ProcessBench
<https://github.com/QwenLM/ProcessBench>`_, ``code/templates/critique_template.txt``, filled as its
``code/run_eval.py`` fills it): the steps become tagged paragraphs indexed from 0 and the judge answers
the index of the earliest error, or -1, in ``\boxed{}``. A judge's index becomes step ratings phase-2
style (:func:`judge_ratings`): +1 before it, -1 at it, nothing after, since a first error ends what the
judge says about a solution.

Parsing policy (:func:`parse_critique`): the *last* ``\boxed{...}`` of the reply is the answer, as
ProcessBench's extractor reads it, so indices boxed earlier in a review do not count; we read braces
balanced (``\boxed{{-1}}``, ``\boxed{\text{-1}}``, ``\boxed{paragraph_3}``, ``\boxed{3.}`` all parse,
where ProcessBench's ``[^}]*`` would lose some). Without a box, only a last line that *begins* with
"answer" / "final answer" / "the final answer is" and holds nothing but an integer is read: a review
names paragraph numbers everywhere, so any looser reading would turn prose into labels. Anything else,
an index out of range, or a box left open by a cut-off reply is a :class:`Verdict` with ``index=None``
and the reason, never a label.

A :class:`Judge` sends the prompts to any OpenAI-compatible chat endpoint (vLLM, a hosted API, or
``prmkit serve --critic``) through :class:`prmkit.generate.remote.OpenAIBackend`, greedily::

    with Judge("Qwen/QwQ-32B", "http://127.0.0.1:8000/v1", max_new_tokens=32768) as judge:
        results = judge.judge(solutions)   # [JudgeResult(verdict, reply, completion_tokens, prompt_chars)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Self

CRITIQUE_TEMPLATE = (
    "The following is a math problem and a solution (split into paragraphs, enclosed with tags and indexed "
    "from 0):\n\n[Math Problem]\n\n{problem}\n\n[Solution]\n\n{tagged_response}\n\nYour task is to review and "
    "critique the solution paragraph by paragraph. Once you identify an error in a paragraph, return the index "
    "of the paragraph where the earliest error occurs. Otherwise, return the index of -1 (which typically "
    'denotes "not found").\n\nPlease put your final answer (i.e., the index) in \\boxed{{}}.')
"""ProcessBench's ``critique_template.txt`` verbatim: a ``str.format`` template (``{{}}`` renders ``{}``)."""

_HEAD, _REST = CRITIQUE_TEMPLATE.split("{problem}")
_MID, _TAIL = _REST.split("{tagged_response}")
_TAIL = _TAIL.replace("{{}}", "{}")


def critique_prompt(problem: str, steps: list[str]) -> str:
    r"""The critique prompt of a solution, as ProcessBench builds it.

    >>> p = critique_prompt("1+1?", ["1+1 = 2", "# Answer\n\n2"])
    >>> p[p.index("[Solution]"):p.index("Your task")]
    '[Solution]\n\n<paragraph_0>\n1+1 = 2\n</paragraph_0>\n\n<paragraph_1>\n# Answer\n\n2\n</paragraph_1>\n\n'
    >>> p.endswith("in \\boxed{}.")
    True
    """
    if not steps:
        raise ValueError("a critique prompt needs at least one paragraph")
    tagged = "".join(f"<paragraph_{i}>\n{s}\n</paragraph_{i}>\n\n" for i, s in enumerate(steps)).strip()
    return CRITIQUE_TEMPLATE.format(problem=problem, tagged_response=tagged)


def read_critique_prompt(text: str) -> tuple[str, list[str]] | None:
    """The (problem, paragraphs) of a prompt built by :func:`critique_prompt`; None for any other text.
    Its inverse wherever problem and paragraphs hold no ``<paragraph_`` tags of their own.

    >>> read_critique_prompt(critique_prompt("2+3?", ["2+3 = 5", "", "# Answer\\n\\n5\\n"]))
    ('2+3?', ['2+3 = 5', '', '# Answer\\n\\n5\\n'])
    >>> read_critique_prompt("What is 2+3?") is None
    True
    """
    if len(text) < len(_HEAD) + len(_TAIL) or not (text.startswith(_HEAD) and text.endswith(_TAIL)):
        return None
    body = text[len(_HEAD): len(text) - len(_TAIL)]
    cut = body.find(_MID + "<paragraph_0>\n")
    if cut < 0:
        return None
    problem, tagged = body[:cut], body[cut + len(_MID):]
    steps: list[str] = []
    pos = 0
    while pos < len(tagged):  # "<paragraph_k>\n", the text, "\n</paragraph_k>", a blank line between two
        opening = ("\n\n" if steps else "") + f"<paragraph_{len(steps)}>\n"
        closing = f"\n</paragraph_{len(steps)}>"
        if not tagged.startswith(opening, pos):
            return None
        end = tagged.find(closing, pos + len(opening))
        if end < 0:
            return None
        steps.append(tagged[pos + len(opening):end])
        pos = end + len(closing)
    return problem, steps


@dataclass(frozen=True)
class Verdict:
    """A judge's answer: ``index`` -1 (no error found), ``i >= 0`` (the first wrong paragraph), or None
    (unparseable, ``error`` says why)."""

    index: int | None
    error: str | None = None


_BOX = re.compile(r"\\boxed\s*\{")
_WRAPPER = re.compile(r"\\(?:text|textbf|mathbf|mathrm|mbox)\s*\{(.*)\}", re.DOTALL)
_NAME = re.compile(r"^(?:paragraph|para|step)[\s_]*", re.IGNORECASE)
_FINAL = re.compile(r"[\s*#>_]*(?:the\s+)?(?:final\s+)?answer\s*(?:is)?\s*:?[\s*_]*(-?\d+)[\s*_.]*", re.IGNORECASE)


def _last_box(text: str) -> tuple[str | None, bool]:
    """The content of the last closed ``\\boxed{...}`` (braces balanced), and whether a box is left open
    (everything after an open box is inside it, so the reply was cut off there)."""
    last = None
    for m in _BOX.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth:
            return last, True
        last = text[m.end():i - 1]
    return last, False


def _index_text(raw: str) -> str:
    """A box's content without its decoration: ``{-1}``, ``$3$``, ``\\text{-1}``, ``paragraph_3``, ``3.``."""
    s = raw.replace("\\_", "_").replace("\u2212", "-")
    while True:
        before = s
        s = s.strip().strip("$").strip()
        if s.startswith("{") and s.endswith("}"):
            s = s[1:-1]
        if m := _WRAPPER.fullmatch(s):
            s = m.group(1)
        if s == before:
            return _NAME.sub("", s).rstrip(".").strip()


def parse_critique(text: str | None, n_steps: int) -> Verdict:
    r"""The judge's index in ``text`` (see the module docstring for the policy), checked against ``n_steps``.

    >>> parse_critique("Paragraph 1 looks fine (\\boxed{0} is wrong). ... \\boxed{-1}", 3)
    Verdict(index=-1, error=None)
    >>> parse_critique("The earliest error: \\boxed{\\text{paragraph\\_2}}", 3)
    Verdict(index=2, error=None)
    >>> parse_critique("**Final answer:** 1", 3)
    Verdict(index=1, error=None)
    >>> parse_critique("\\boxed{7}", 5).error
    '\\boxed{7} but the solution has 5 paragraphs'
    >>> parse_critique("Paragraph 2 is wrong, so", 5).error
    'no \\boxed{} in the reply'
    """
    if not text or not text.strip():
        return Verdict(None, "empty reply")
    raw, left_open = _last_box(text)
    if left_open:
        return Verdict(None, "the last \\boxed{ is never closed (the reply is cut off)")
    if raw is not None:
        shown, value = f"\\boxed{{{raw}}}", _index_text(raw)
    elif m := _FINAL.fullmatch(text.strip().splitlines()[-1]):
        shown, value = repr(text.strip().splitlines()[-1].strip()), m.group(1)
    else:
        return Verdict(None, "no \\boxed{} in the reply")
    if not re.fullmatch(r"-?\d+", value):
        return Verdict(None, f"{shown} is {'empty' if not value else 'not an integer'}")
    index = int(value)
    if index >= n_steps:
        return Verdict(None, f"{shown} but the solution has {n_steps} paragraphs")
    if index < -1:
        return Verdict(None, f"{shown} is below -1")
    return Verdict(index)


def judge_ratings(index: int, n_steps: int) -> list[int | None]:
    """Step ratings of a judge's index: -1 rates every step +1; ``i`` rates the steps before it +1, step
    ``i`` -1, and leaves the rest unlabelled (None).

    >>> judge_ratings(-1, 3), judge_ratings(1, 4)
    ([1, 1, 1], [1, -1, None, None])
    """
    if not -1 <= index < n_steps:
        raise ValueError(f"index {index} is not -1 or a step of {n_steps}")
    if index == -1:
        return [1] * n_steps
    return [1] * index + [-1] + [None] * (n_steps - index - 1)


@dataclass(frozen=True)
class JudgeResult:
    """One solution's judgement: the verdict, the judge's whole reply, its length in tokens (None where the
    server does not say) and the prompt's length in characters."""

    verdict: Verdict
    reply: str
    completion_tokens: int | None
    prompt_chars: int


class Judge:
    """A judge model behind an OpenAI-compatible chat endpoint. Defaults are ProcessBench's: greedy,
    seed 42, 8192 new tokens (it gives QwQ 32768). ``judge(solutions) -> [JudgeResult]`` in order,
    ``concurrency`` requests in flight; a request that fails for good raises
    :class:`~prmkit.generate.backend.GenerationError`."""

    def __init__(self, model: str, base_url: str = "http://127.0.0.1:8000/v1", *, max_new_tokens: int = 8192,
                 concurrency: int = 8, seed: int = 42, retries: int = 3, timeout: float = 600.0,
                 api_key_env: str = "OPENAI_API_KEY", temperature: float = 0.0):
        from prmkit.generate.config import GenerateConfig
        from prmkit.generate.remote import OpenAIBackend

        # prompt "{problem}" and a chat template: the user turn is exactly the critique prompt
        self.cfg = GenerateConfig(backend="openai", model=model, base_url=base_url, chat_template=True,
                                  prompt="{problem}", temperature=temperature, max_new_tokens=max_new_tokens,
                                  concurrency=concurrency, seed=seed, retries=retries, timeout=timeout,
                                  api_key_env=api_key_env, n=1, progress=False)
        self.backend = OpenAIBackend(self.cfg)

    def judge(self, solutions) -> list[JudgeResult]:
        """The verdict of every :class:`~prmkit.schema.Solution` on its taken steps."""
        from prmkit.schema import Problem

        asks = [(critique_prompt(s.problem.problem, s.texts), len(s.texts)) for s in solutions]
        futures = [self.backend.pool.submit(self.backend.complete, Problem(problem=prompt, id=s.id), [], 1)
                   for (prompt, _), s in zip(asks, solutions)]
        try:
            samples = [f.result()[0] for f in futures]
        except BaseException:
            for f in futures:  # one failed for good: the rest are not worth waiting for
                f.cancel()
            raise
        return [JudgeResult(_verdict(s, n), s.text, s.tokens, len(prompt)) for s, (prompt, n) in zip(samples, asks)]

    @classmethod
    def from_config(cls, cfg) -> Judge:
        """The judge an :class:`~prmkit.label.auto.config.AutoLabelConfig` names."""
        return cls(cfg.judge_model, cfg.judge_base_url, max_new_tokens=cfg.judge_max_tokens,
                   concurrency=cfg.judge_concurrency, seed=cfg.judge_seed, timeout=cfg.judge_timeout,
                   temperature=cfg.judge_temperature)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _verdict(sample, n_steps: int) -> Verdict:
    """The verdict of a sample, saying so when an unparseable reply ran out of tokens."""
    v = parse_critique(sample.text, n_steps)
    if v.index is None and sample.finish_reason == "length":
        return Verdict(None, f"{v.error}; the reply hit max_new_tokens")
    return v
