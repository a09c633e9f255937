"""``prmkit serve``'s HTTP API (FastAPI): an OpenAI-compatible generator, a step-scoring endpoint and a critic.

- ``GET /health``, ``GET /v1/models``;
- ``POST /v1/completions`` and ``POST /v1/chat/completions``: the OpenAI request and response shapes
  (``prompt``, ``n``, ``max_tokens``, ``temperature``, ``top_p``, ``seed``, ``stop``; chat: ``messages``,
  and vLLM's ``continue_final_message`` to continue an assistant turn), sampled by
  :class:`prmkit.generate.hf.Sampler`: with a ``seed``, choice ``i`` of a prompt is the same sample
  whatever else is in flight;
- ``POST /v1/score``: ``{"solutions": [{"problem": "...", "steps": ["...", ...]}, ...]}`` (or one
  ``problem`` and ``steps``) in; per solution the step scores and solution scores that ``prmkit score``
  writes (``p_correct`` per step, ``prm_min`` ...; ``orm`` for an ORM) and the solution's ``tokens`` out, from
  :class:`prmkit.score.Scorer`: the model's saved formatter, as in training; ``GET /health`` names the scorer's
  kind and weights' digest;
- with ``--critic`` (a PRM folder), ``POST /v1/chat/completions`` is a judge instead of the generator, a
  stand-in for an LLM judge: the last user message must be a ProcessBench critique prompt
  (:func:`prmkit.label.auto.judge.critique_prompt`; any other message is a 400), the PRM scores its
  paragraphs as steps, as ``/v1/score`` would, and the reply (:func:`critic_reply`) names each paragraph's
  ``p_correct`` and ends in ``\\boxed{i}``, ``i`` the first paragraph below ``--critic-threshold``, else -1.
  It is deterministic (``n`` identical choices; temperature, top_p and seed are ignored); ``usage`` counts
  tokens with the critic's own tokenizer, and a ``max_tokens`` shorter than the reply cuts it
  (``finish_reason`` ``length``) as a real judge's would be. ``/v1/completions`` stays the generator's.

A body is read as JSON whatever its ``Content-Type`` (``curl -d`` sends a form's), and a body that is not
a JSON object is a 400 saying why. As in vLLM, ``model`` must name the served model (the one
``/v1/models`` lists) or be left out, else a 404 (``NotFoundError``, ``param`` ``model``). ``"stream": true``
answers in server-sent events (:mod:`prmkit.serve.sse`). Errors have OpenAI's shape,
``{"error": {"message", "type", "param", "code"}}``, which its clients show.

Requests that arrive together are batched (:class:`prmkit.serve.batcher.Batcher`) into one model call.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field, ValidationError

from prmkit.generate.backend import sample_seed
from prmkit.generate.hf import Sampler, Sampling, cut_at_stop
from prmkit.serve import sse
from prmkit.serve.batcher import Batcher


@dataclass(frozen=True)
class ServeConfig:
    """Settings of ``prmkit serve``."""

    generator: str = field(default="", metadata={"help": "a causal LM folder to serve on /v1/completions and "
                                                         "/v1/chat/completions"})
    scorer: str = field(default="", metadata={"help": "a prmkit PRM or ORM folder to serve on /v1/score"})
    critic: str = field(default="", metadata={
        "help": "a prmkit PRM folder that answers critique prompts (ProcessBench's) on /v1/chat/completions: "
                "the first paragraph it scores below --critic-threshold, in \\boxed{}"})
    critic_threshold: float = field(default=0.5, metadata={
        "help": "--critic: a paragraph whose p_correct is below this is an error"})
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
        if not 0 <= self.critic_threshold <= 1:
            raise ValueError(f"critic_threshold must be in [0, 1], got {self.critic_threshold}")


class StreamOptions(BaseModel):
    include_usage: bool = False


class CompletionRequest(BaseModel):
    model: str | None = None
    prompt: str | list[str]
    n: int = Field(1, ge=1, le=256)
    max_tokens: int = Field(16, ge=1)
    temperature: float = Field(1.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None


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
    stream: bool = False
    stream_options: StreamOptions | None = None


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

    def __init__(self, cfg: ServeConfig, sampler: Sampler | None = None, scorer=None, critic=None):
        from pathlib import Path

        if not (cfg.generator or sampler) and not (cfg.scorer or scorer) and not (cfg.critic or critic):
            raise ValueError("serve needs a --generator folder, a --scorer folder, a --critic folder, or several")
        self.cfg = cfg
        self.sampler = sampler or (Sampler.load(cfg.generator, cfg.device, cfg.marker or "\n")
                                   if cfg.generator else None)
        if scorer is None and cfg.scorer:
            scorer = self._load_scorer(cfg.scorer)
        self.scorer = scorer
        self._scorer_identity = {}
        if scorer is not None:  # hashed once, as loaded: a folder retrained in place later is not what is served
            from prmkit.model.identity import weights_digest

            self._scorer_identity = {"scorer_kind": scorer.card.kind,
                                     "scorer_weights": weights_digest(cfg.scorer) if cfg.scorer else None}
        if critic is None and cfg.critic:  # the same folder as --scorer: one model, one batcher
            critic = self.scorer if cfg.critic == cfg.scorer else self._load_scorer(cfg.critic)
        if critic is not None and critic.card.kind != "prm":
            raise ValueError(f"--critic needs a PRM (it scores paragraphs), got a {critic.card.kind}")
        self.critic = critic
        self.name = cfg.name or Path(cfg.generator or cfg.scorer or cfg.critic).name
        wait = cfg.max_wait_ms / 1000
        self.gen_batcher = Batcher(self._sample_rows, cfg.max_batch, wait) if self.sampler else None
        self.score_batcher = Batcher(self._score, cfg.max_batch, wait) if self.scorer else None
        self.critic_batcher = None
        if critic is not None:
            shared = critic is self.scorer
            self.critic_batcher = self.score_batcher if shared else Batcher(self._critic_score, cfg.max_batch, wait)

    def scorer_identity(self) -> dict:
        """What the served scorer is, for a client that keys its results by it (``prmkit search --prm-url``): its
        kind and the digest of the weights loaded at start (None for a scorer handed in without a folder)."""
        return self._scorer_identity

    @property
    def models(self) -> list[str]:
        """The model names requests may send (what ``/v1/models`` lists)."""
        return [self.name]

    def _load_scorer(self, folder: str):
        from prmkit.device import uses_cuda
        from prmkit.score import Scorer

        return Scorer(folder, device="cuda" if uses_cuda(self.cfg.device) else "cpu")

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
        return self._score_with(self.scorer, items)

    def _critic_score(self, items: list[tuple[str, list[str]]]) -> list[dict]:
        return self._score_with(self.critic, items)

    def _score_with(self, scorer, items: list[tuple[str, list[str]]]) -> list[dict]:
        """Per (problem, steps), what ``/v1/score`` answers: step scores (none past truncation) and solution scores."""
        from prmkit.schema import Solution

        encs = scorer.encodings([p for p, _ in items], [s for _, s in items])
        out = []
        for (problem, steps), enc, p in zip(items, encs, scorer.probabilities_of(encs, self.cfg.max_batch)):
            sol = Solution.from_steps(problem, steps)
            scorer.annotate(sol, p)
            # ``tokens``: what the solution cost the model (a search counts the PRM tokens it paid for)
            out.append({"steps": [s.scores for s in sol.steps], "scores": sol.scores, "tokens": len(enc.input_ids)})
        return out

    def close(self) -> None:
        for b in {self.gen_batcher, self.score_batcher, self.critic_batcher} - {None}:  # the critic's may be shared
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
        return {"status": "ok", "generator": service.sampler is not None, "scorer": service.scorer is not None,
                "critic": service.critic is not None, **service.scorer_identity()}

    @app.get("/v1/models")
    def models():
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "prmkit"}
                                           for name in service.models]}

    @app.post("/v1/completions")
    async def completions(req: Annotated[CompletionRequest, Depends(json_body(CompletionRequest))]):
        _require_generator(service, req.model)
        prompts = [req.prompt] if isinstance(req.prompt, str) else req.prompt
        sampling = _sampling(service, req.max_tokens, req.temperature, req.top_p)
        encoded = [(p, service.sampler.tokenizer.encode(p)) for p in prompts]
        choices, tokens = await _sample(service, encoded, req.n, req.seed, sampling, _stops(req.stop))
        return _reply(req, _response("text_completion", service.name,
                                     [{"index": i, "text": t, "finish_reason": f, "logprobs": None}
                                      for i, (t, f) in enumerate(choices)], sum(len(ids) for _, ids in encoded), tokens))

    @app.post("/v1/chat/completions")
    async def chat(req: Annotated[ChatRequest, Depends(json_body(ChatRequest))]):
        if service.critic is not None:
            check_model(service, req.model)
            return _reply(req, await _critique(service, req))
        _require_generator(service, req.model)
        sampling = _sampling(service, req.max_completion_tokens or req.max_tokens or 256, req.temperature, req.top_p)
        prompt = chat_prompt(service.sampler.tokenizer, req.messages, req.continue_final_message)
        ids = service.sampler.tokenizer.encode(prompt)
        choices, tokens = await _sample(service, [(prompt, ids)], req.n, req.seed, sampling, _stops(req.stop))
        return _reply(req, _response("chat.completion", service.name,
                                     [{"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": f}
                                      for i, (t, f) in enumerate(choices)], len(ids), tokens))

    @app.post("/v1/score")
    async def score(req: Annotated[ScoreRequest, Depends(json_body(ScoreRequest))]):
        if service.score_batcher is None:
            raise HTTPException(404, "this server has no scorer (start it with --scorer)")
        items = _score_items(req)
        futures = [service.score_batcher.submit(item) for item in items]
        results = [await asyncio.wrap_future(f) for f in futures]
        # plain floats in plain dicts: JSONResponse skips FastAPI's generic encoder, most of a small request's cost
        return JSONResponse({"model": service.name, "kind": service.scorer.card.kind, "solutions": results})

    return app


class APIError(HTTPException):
    """An HTTP error with OpenAI's ``type`` and ``param`` (the field at fault), which its clients read."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error", param: str | None = None):
        super().__init__(status, message)
        self.kind, self.param = kind, param


def json_body(model: type[BaseModel]):
    """A dependency that reads the body as JSON whatever its ``Content-Type`` and validates it as ``model``.

    ``curl -d`` (the ``--help`` example) sends ``application/x-www-form-urlencoded``, whose body FastAPI's
    own parsing does not read as JSON (a 422), though it is JSON; the endpoints take nothing else.
    """

    async def read(request: Request) -> BaseModel:
        raw = await request.body()
        if not raw.strip():
            raise APIError(400, "the request body is empty: send a JSON object")
        try:
            data = json.loads(raw)
        except ValueError as e:  # JSONDecodeError, or bytes in no Unicode encoding
            raise APIError(400, f"the request body is not JSON ({type(e).__name__}: {e})") from None
        if not isinstance(data, dict):
            kind = {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(data), "number")
            raise APIError(400, f"the request body must be a JSON object, got a JSON {kind}")
        try:
            return model.model_validate(data)
        except ValidationError as e:  # reported as FastAPI's own body errors are, by the one handler
            raise RequestValidationError([{**err, "loc": ("body", *err["loc"])} for err in e.errors()]) from None

    return read


def check_model(service: Service, model: str | None) -> None:
    """vLLM's rule: a request names a served model, or none (then it gets the one served)."""
    if model and model not in service.models:
        raise APIError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")


def _require_generator(service: Service, model: str | None) -> None:
    # the missing generator first: on a scorer-only server that is the news, whatever the model is called
    if service.gen_batcher is None:
        raise HTTPException(404, "this server has no generator (start it with --generator)")
    check_model(service, model)


def _reply(req: CompletionRequest | ChatRequest, response: dict):
    """``response``, or with ``stream`` the same response as server-sent events."""
    if not req.stream:
        return response
    usage = req.stream_options is not None and req.stream_options.include_usage
    return StreamingResponse(sse.events(sse.chunks(response, usage)), media_type="text/event-stream")


def _openai_errors(app: FastAPI) -> None:
    """Errors in the OpenAI shape, ``{"error": {"message", "type", "param", "code"}}``, which its clients show."""

    def body(status: int, message: str, kind: str, param: str | None = None) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": status}},
                            status_code=status)

    @app.exception_handler(HTTPException)
    async def http_error(request, exc: HTTPException):
        return body(exc.status_code, str(exc.detail), getattr(exc, "kind", "invalid_request_error"),
                    getattr(exc, "param", None))

    @app.exception_handler(Exception)
    async def failed(request, exc: Exception):  # a model error: the client sees what failed, the server goes on
        return body(500, f"{type(exc).__name__}: {exc}", "server_error")

    @app.exception_handler(RequestValidationError)
    async def invalid(request, exc: RequestValidationError):
        where = "; ".join(f"{'.'.join(str(x) for x in e['loc'][1:])}: {e['msg']}" for e in exc.errors())
        return body(422, f"invalid request: {where}", "invalid_request_error")


def _sampling(service: Service, max_tokens: int, temperature: float, top_p: float) -> Sampling:
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


async def _critique(service: Service, req: ChatRequest) -> dict:
    """The critic's chat reply to a critique prompt (see the module docstring)."""
    from prmkit.label.auto.judge import read_critique_prompt

    users = [m.content for m in req.messages if m.role == "user"]
    read = read_critique_prompt(users[-1]) if users else None
    if read is None:
        raise HTTPException(400, "this server's chat endpoint is a critic (--critic): the last user message must "
                                 "be a ProcessBench critique prompt (prmkit.label.auto.judge.critique_prompt)")
    result = await asyncio.wrap_future(service.critic_batcher.submit(read))
    text = critic_reply([s.get("p_correct") for s in result["steps"]], service.cfg.critic_threshold)
    tokenizer = service.critic.tokenizer
    ids = tokenizer.encode(text, add_special_tokens=False)
    limit, reason = req.max_completion_tokens or req.max_tokens, "stop"
    if limit is not None and len(ids) > limit:
        ids, reason = ids[:limit], "length"
        text = tokenizer.decode(ids)
    choice = {"message": {"role": "assistant", "content": text}, "finish_reason": reason}
    return _response("chat.completion", service.name, [{"index": i, **choice} for i in range(req.n)],
                     len(tokenizer.encode(users[-1])), len(ids) * req.n)


def critic_reply(p_correct: list[float | None], threshold: float) -> str:
    r"""A critique naming each paragraph's ``p_correct`` and ending in ``\boxed{i}``: ``i`` the first below
    ``threshold``, -1 if none is. None marks a paragraph the critic did not score (past its context); if
    no error comes before one, the reply has no box, since it cannot say there is none.

    >>> print(critic_reply([0.9, 0.2, 0.7], 0.5))
    Paragraph 0: p_correct = 0.900, correct.
    Paragraph 1: p_correct = 0.200, below 0.5: the earliest error.
    Paragraph 2: p_correct = 0.700.
    <BLANKLINE>
    The earliest error is in paragraph 1.
    <BLANKLINE>
    \boxed{1}
    >>> critic_reply([0.9, 0.8], 0.5).endswith("No paragraph scores below 0.5.\n\n\\boxed{-1}")
    True
    >>> critic_reply([0.9, None], 0.5).splitlines()[-1]
    'Paragraph 1 was not scored: no verdict.'
    """
    lines, first = [], None
    for i, p in enumerate(p_correct):
        if p is None:
            lines.append(f"Paragraph {i}: not scored (past the critic's context).")
        elif first is None and p < threshold:
            first = i
            lines.append(f"Paragraph {i}: p_correct = {p:.3f}, below {threshold:g}: the earliest error.")
        else:
            lines.append(f"Paragraph {i}: p_correct = {p:.3f}{', correct' if first is None else ''}.")
    unscored = [i for i, p in enumerate(p_correct) if p is None]
    if unscored and (first is None or unscored[0] < first):
        return "\n".join(lines) + f"\n\nParagraph {unscored[0]} was not scored: no verdict."
    if first is None:
        return "\n".join(lines) + f"\n\nNo paragraph scores below {threshold:g}.\n\n\\boxed{{-1}}"
    return "\n".join(lines) + f"\n\nThe earliest error is in paragraph {first}.\n\n\\boxed{{{first}}}"


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
