"""``prmkit serve``'s HTTP API (FastAPI): an OpenAI-compatible generator and a step-scoring endpoint.

- ``GET /health``, ``GET /v1/models``;
- ``POST /v1/completions`` and ``POST /v1/chat/completions``: the OpenAI request and response shapes
  (``prompt``, ``n``, ``max_tokens``, ``temperature``, ``top_p``, ``seed``, ``stop``; chat: ``messages``,
  and vLLM's ``continue_final_message`` to continue an assistant turn), sampled by
  :class:`prmkit.generate.hf.Sampler`: with a ``seed``, choice ``i`` of a prompt is the same sample
  whatever else is in flight;
- ``POST /v1/score``: ``{"solutions": [{"problem": "...", "steps": ["...", ...]}, ...]}`` (or one
  ``problem`` and ``steps``) in; per solution the step scores and solution scores that ``prmkit score``
  writes (``p_correct`` per step, ``prm_min`` ...; ``orm`` for an ORM) out, from
  :class:`prmkit.score.Scorer`: the model's saved formatter, as in training.

Requests that arrive together are batched (:class:`prmkit.serve.batcher.Batcher`) into one model call.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field

from fastapi import FastAPI, HTTPException
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from prmkit.generate.backend import sample_seed
from prmkit.generate.hf import Sampler, Sampling, cut_at_stop
from prmkit.serve.batcher import Batcher


@dataclass(frozen=True)
class ServeConfig:
    """Settings of ``prmkit serve``."""

    generator: str = field(default="", metadata={"help": "a causal LM folder to serve on /v1/completions and "
                                                         "/v1/chat/completions"})
    scorer: str = field(default="", metadata={"help": "a prmkit PRM or ORM folder to serve on /v1/score"})
    name: str = field(default="", metadata={"help": "the served model's name (default: the folder's name)"})
    host: str = field(default="127.0.0.1", metadata={"help": "address to listen on (loopback: this machine "
                                                              "only; 0.0.0.0 exposes it)"})
    port: int = field(default=8000, metadata={"help": "port to listen on (0: any free port)"})
    max_batch: int = field(default=32, metadata={"help": "most sequences or solutions per model call"})
    max_wait_ms: float = field(default=5.0, metadata={"help": "how long a batch waits for more requests"})
    max_tokens: int = field(default=2048, metadata={"help": "largest max_tokens a request may ask for"})
    marker: str = field(default="", metadata={"help": "the step marker of the generator's format (ends the "
                                                      "'# Answer' step), e.g. <step>; empty: a newline"})
    device: str = field(default="auto", metadata={"help": "auto (CUDA when visible), cpu or cuda",
                                                  "choices": ("auto", "cpu", "cuda")})

    def __post_init__(self):
        if self.max_batch < 1 or self.max_tokens < 1 or not 0 <= self.port < 65536:
            raise ValueError("max_batch and max_tokens must be at least 1, port in 0..65535")


class CompletionRequest(BaseModel):
    model: str | None = None
    prompt: str | list[str]
    n: int = Field(1, ge=1, le=256)
    max_tokens: int = Field(16, ge=1)
    temperature: float = Field(1.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = None
    stop: str | list[str] | None = None


class Message(BaseModel):
    role: str
    content: str


class ChatRequest(BaseModel):
    model: str | None = None
    messages: list[Message] = Field(min_length=1)
    n: int = Field(1, ge=1, le=256)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(1.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    continue_final_message: bool = False


class ScoredSolution(BaseModel):
    problem: str
    steps: list[str] = Field(min_length=1)


class ScoreRequest(BaseModel):
    problem: str | None = None
    steps: list[str] | None = None
    solutions: list[ScoredSolution] | None = None


@dataclass(frozen=True)
class Row:
    """One sequence to sample: prompt ids, its own seed, how, and the strings that stop it."""

    ids: tuple[int, ...]
    seed: int
    sampling: Sampling
    stops: tuple[str, ...] = ()


class Service:
    """The loaded models and their batchers."""

    def __init__(self, cfg: ServeConfig, sampler: Sampler | None = None, scorer=None):
        from pathlib import Path

        if not (cfg.generator or sampler) and not (cfg.scorer or scorer):
            raise ValueError("serve needs a --generator folder, a --scorer folder, or both")
        self.cfg = cfg
        self.sampler = sampler or (Sampler.load(cfg.generator, cfg.device, cfg.marker or "\n")
                                   if cfg.generator else None)
        if scorer is None and cfg.scorer:
            from prmkit.score import Scorer
            from prmkit.train.loop import uses_cuda

            scorer = Scorer(cfg.scorer, device="cuda" if uses_cuda(cfg.device) else "cpu")
        self.scorer = scorer
        self.name = cfg.name or Path(cfg.generator or cfg.scorer).name
        wait = cfg.max_wait_ms / 1000
        self.gen_batcher = Batcher(self._sample_rows, cfg.max_batch, wait) if self.sampler else None
        self.score_batcher = Batcher(self._score, cfg.max_batch, wait) if self.scorer else None

    def _sample_rows(self, rows: list[Row]) -> list[tuple[list[int], str]]:
        out: list = [None] * len(rows)
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault((r.sampling, r.stops), []).append(i)
        for (sampling, stops), idx in groups.items():
            idx.sort(key=lambda i: len(rows[i].ids))
            results = self.sampler.sample([list(rows[i].ids) for i in idx], [rows[i].seed for i in idx], sampling,
                                          list(stops))
            for i, res in zip(idx, results):
                out[i] = res
        return out

    def _score(self, items: list[tuple[str, list[str]]]) -> list[dict]:
        from prmkit.schema import Solution

        probs = self.scorer.probabilities([p for p, _ in items], [s for _, s in items], self.cfg.max_batch)
        out = []
        for (problem, steps), p in zip(items, probs):
            sol = Solution.from_steps(problem, steps)
            self.scorer.annotate(sol, p)
            out.append({"steps": [s.scores for s in sol.steps], "scores": sol.scores})
        return out

    def close(self) -> None:
        for b in (self.gen_batcher, self.score_batcher):
            if b is not None:
                b.close()


def _stops(stop) -> list[str]:
    return [stop] if isinstance(stop, str) else list(stop or [])


def build_app(service: Service) -> FastAPI:
    """The FastAPI app serving ``service``."""
    app = FastAPI(title="prmkit serve", version="1")
    app.state.service = service
    _openai_errors(app)

    @app.get("/health")
    def health():
        return {"status": "ok", "generator": service.sampler is not None, "scorer": service.scorer is not None}

    @app.get("/v1/models")
    def models():
        return {"object": "list", "data": [{"id": service.name, "object": "model", "owned_by": "prmkit"}]}

    @app.post("/v1/completions")
    async def completions(req: CompletionRequest):
        prompts = [req.prompt] if isinstance(req.prompt, str) else req.prompt
        sampling = _sampling(service, req.max_tokens, req.temperature, req.top_p)
        encoded = [(p, service.sampler.tokenizer.encode(p)) for p in prompts]
        choices, tokens = await _sample(service, encoded, req.n, req.seed, sampling, _stops(req.stop))
        return _response("text_completion", service.name, [{"index": i, "text": t, "finish_reason": f,
                                                            "logprobs": None} for i, (t, f) in enumerate(choices)],
                         sum(len(ids) for _, ids in encoded), tokens)

    @app.post("/v1/chat/completions")
    async def chat(req: ChatRequest):
        sampling = _sampling(service, req.max_completion_tokens or req.max_tokens or 256, req.temperature, req.top_p)
        prompt = chat_prompt(service.sampler.tokenizer, req.messages, req.continue_final_message)
        ids = service.sampler.tokenizer.encode(prompt)
        choices, tokens = await _sample(service, [(prompt, ids)], req.n, req.seed, sampling, _stops(req.stop))
        return _response("chat.completion", service.name,
                         [{"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": f}
                          for i, (t, f) in enumerate(choices)], len(ids), tokens)

    @app.post("/v1/score")
    async def score(req: ScoreRequest):
        if service.score_batcher is None:
            raise HTTPException(404, "this server has no scorer (start it with --scorer)")
        items = _score_items(req)
        futures = [service.score_batcher.submit(item) for item in items]
        results = [await asyncio.wrap_future(f) for f in futures]
        # plain floats in plain dicts: JSONResponse skips FastAPI's generic encoder, most of a small request's cost
        return JSONResponse({"model": service.name, "kind": service.scorer.card.kind, "solutions": results})

    return app


def _openai_errors(app: FastAPI) -> None:
    """Errors in the OpenAI shape, ``{"error": {"message", "type", "code"}}``, which its clients show."""
    from fastapi.exceptions import RequestValidationError

    def body(status: int, message: str, kind: str) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)

    @app.exception_handler(HTTPException)
    async def http_error(request, exc: HTTPException):
        return body(exc.status_code, str(exc.detail), "invalid_request_error")

    @app.exception_handler(Exception)
    async def failed(request, exc: Exception):  # a model error: the client sees what failed, the server goes on
        return body(500, f"{type(exc).__name__}: {exc}", "server_error")

    @app.exception_handler(RequestValidationError)
    async def invalid(request, exc: RequestValidationError):
        where = "; ".join(f"{'.'.join(str(x) for x in e['loc'][1:])}: {e['msg']}" for e in exc.errors())
        return body(422, f"invalid request: {where}", "invalid_request_error")


def _sampling(service: Service, max_tokens: int, temperature: float, top_p: float) -> Sampling:
    if service.gen_batcher is None:
        raise HTTPException(404, "this server has no generator (start it with --generator)")
    if max_tokens > service.cfg.max_tokens:
        raise HTTPException(400, f"max_tokens {max_tokens} is above this server's limit {service.cfg.max_tokens}")
    return Sampling(max_tokens, temperature, top_p)


async def _sample(service: Service, prompts: list[tuple[str, list[int]]], n: int, seed: int | None,
                  sampling: Sampling, stops: list[str]) -> tuple[list[tuple[str, str]], int]:
    """Choices (text, finish reason) of every prompt x ``n``, in order, and the tokens generated."""
    import random

    base = seed if seed is not None else random.getrandbits(62)
    futures = [service.gen_batcher.submit(Row(tuple(ids), sample_seed(base, text, [], j), sampling, tuple(stops)))
               for text, ids in prompts for j in range(n)]
    choices, tokens = [], 0
    for future in futures:
        ids, reason = await asyncio.wrap_future(future)
        choices.append((cut_at_stop(service.sampler.decode(ids), stops)[0], reason))
        tokens += len(ids)
    return choices, tokens


def chat_prompt(tokenizer, messages: list[Message], continue_final: bool) -> str:
    """The prompt text of a chat: the tokenizer's chat template where it has one; else the contents on
    separate lines. ``continue_final``: the last (assistant) message is continued, not closed."""
    turns = [{"role": m.role, "content": m.content} for m in messages]
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=not continue_final,
                                             continue_final_message=continue_final)
    return "\n".join(m.content for m in messages) + ("" if continue_final else "\n")


def _score_items(req: ScoreRequest) -> list[tuple[str, list[str]]]:
    if req.solutions is not None:
        return [(s.problem, s.steps) for s in req.solutions]
    if req.problem is None or not req.steps:
        raise HTTPException(422, "send 'solutions' (a list of {problem, steps}) or one 'problem' with 'steps'")
    return [(req.problem, req.steps)]


def _response(kind: str, model: str, choices: list[dict], prompt_tokens: int, completion_tokens: int) -> dict:
    return {"id": f"{'chatcmpl' if kind.startswith('chat') else 'cmpl'}-{uuid.uuid4().hex[:24]}", "object": kind,
            "created": int(time.time()), "model": model, "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}
