"""The ``openai`` backend: any OpenAI-compatible server (vLLM, TGI, llama.cpp, a hosted API, ``prmkit serve``)
through the official ``openai`` client.

Requests run ``concurrency`` at a time. The client retries connection errors, timeouts, 429 and 5xx
``retries`` times with exponential backoff; a request that still fails raises
:class:`~prmkit.generate.backend.GenerationError` naming the endpoint, the problem and the retries
spent, and :func:`prmkit.generate.run.generate_file` keeps every finished sample for the rerun. A reply
that is not a well-formed completion (missing choices, wrong count, no text) is an error too, never an
empty sample.

Without a chat template the prompt is :func:`prmkit.generate.prompt.prompt_text` on
``/v1/completions``; with one, a user turn on ``/v1/chat/completions`` (a prefix is sent as an assistant
turn continued with vLLM's ``continue_final_message``, which ``prmkit serve`` understands too).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from prmkit.generate.backend import Backend, GenerationError, Sample, problem_key, sample_seed
from prmkit.generate.prompt import load_shots, prompt_text, render_problem, steps_text

RETRIED = (408, 409, 429)
"""Status codes the client retries, besides every 5xx."""


class OpenAIBackend(Backend):
    """Samples from an OpenAI-compatible server; see the module docstring."""

    def __init__(self, cfg, client=None):
        import openai

        if not cfg.model:
            raise ValueError("the openai backend needs --model, the served model's name")
        self.cfg, self.name, self.shots = cfg, cfg.model, load_shots(cfg)
        self.client = client or openai.OpenAI(base_url=cfg.base_url, api_key=os.environ.get(cfg.api_key_env) or "none",
                                              max_retries=cfg.retries, timeout=cfg.timeout)
        self.pool = ThreadPoolExecutor(max_workers=cfg.concurrency, thread_name_prefix="prmkit-openai")

    def generate(self, problems, n):
        return list(self.pool.map(lambda p: self.complete(p, [], n), problems))

    def complete_many(self, requests):
        return list(self.pool.map(lambda r: self.complete(*r), requests))

    def complete(self, problem, prefix_steps, n, start=0):
        endpoint = "chat/completions" if self.cfg.chat_template else "completions"
        import openai

        where = f"{self.cfg.base_url}/{endpoint}, problem {problem_key(problem)}"
        try:
            reply = self._request(problem, list(prefix_steps), n, start)
        except (openai.APIError, ValueError) as e:  # ValueError: a body that is not JSON
            raise GenerationError(f"{where}: {_describe(e, self.cfg.retries)}") from e
        try:
            return _samples(reply, n, self.cfg.chat_template)
        except GenerationError as e:
            raise GenerationError(f"{where}: {e}") from e
        except (AttributeError, TypeError) as e:  # a reply of the wrong shape
            raise GenerationError(f"{where}: malformed response ({type(e).__name__}: {e})") from e

    def _request(self, problem, prefix_steps: list[str], n: int, start: int = 0):
        cfg = self.cfg
        common = {"model": cfg.model, "n": n, "temperature": cfg.temperature, "top_p": cfg.top_p,
                  "seed": sample_seed(cfg.seed, problem_key(problem), prefix_steps, start), "stop": cfg.stop or None}
        if not cfg.chat_template:
            return self.client.completions.create(prompt=prompt_text(problem.problem, prefix_steps, cfg, self.shots),
                                                  max_tokens=cfg.max_new_tokens, **common)
        messages = [{"role": "user", "content": render_problem(problem.problem, cfg, self.shots)}]
        extra = {}
        if prefix_steps:
            messages.append({"role": "assistant", "content": steps_text(prefix_steps, cfg)})
            extra = {"continue_final_message": True, "add_generation_prompt": False}
        return self.client.chat.completions.create(messages=messages, max_tokens=cfg.max_new_tokens,
                                                   extra_body=extra or None, **common)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()


def _samples(reply, n: int, chat: bool) -> list[Sample]:
    """The choices of a reply as samples, checked: ``n`` of them, each with text."""
    choices = getattr(reply, "choices", None)
    if not isinstance(choices, list) or len(choices) != n:
        got = len(choices) if isinstance(choices, list) else type(choices).__name__
        raise GenerationError(f"malformed response: expected {n} choices, got {got}")
    usage = getattr(reply, "usage", None)
    # a reply counts its tokens in all; per choice they are known only when there is one choice
    per_choice = usage.completion_tokens if usage is not None and n == 1 else None
    out = []
    for c in sorted(choices, key=lambda c: c.index):
        text = c.message.content if chat and c.message is not None else getattr(c, "text", None)
        if not isinstance(text, str):
            raise GenerationError(f"malformed response: choice {c.index} has no text")
        out.append(Sample(text, per_choice, c.finish_reason or "stop"))
    return out


def _describe(e: Exception, retries: int) -> str:
    """What went wrong, for people, with the retries spent where the client retried."""
    import openai

    if isinstance(e, openai.APIStatusError):
        spent = f" after {retries} retries" if e.status_code >= 500 or e.status_code in RETRIED else ""
        return f"HTTP {e.status_code}{spent}: {e.message}"
    if isinstance(e, openai.APITimeoutError):
        return f"timed out{f' after {retries} retries' if retries else ''}"
    if isinstance(e, openai.APIConnectionError):
        return f"connection failed{f' after {retries} retries' if retries else ''} ({e.__cause__ or e})"
    return f"malformed response ({type(e).__name__}: {e})"
