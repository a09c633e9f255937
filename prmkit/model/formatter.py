"""The one formatter: (problem, steps) -> token ids, the position that ends each step, and targets.

Training, scoring and search all call :func:`encode` (or :func:`encode_many`, the same for many), so
the text a model is trained on and the text it is scored on cannot drift apart. The layout of one solution is::

    [prefix: BOS? problem + problem_suffix, or the chat template's user turn]
    step 1 text | separator | marker
    step 2 text | separator | marker
    ...

Every piece is tokenised on its own and the ids are concatenated, so each step's tokens decode back
to exactly its text and the step boundary is never merged into a neighbouring token. The position
that ends step ``i`` (``step_ends[i]``) is its marker token; with ``marker=None`` it is the last token
of the step's separator (or of its text when the separator is empty). A PRM reads its prediction for
step ``i`` there; because attention is causal, that prediction only sees the problem and steps
``0..i``, which is why one forward pass over the whole solution gives the same scores as one pass
per prefix.

Truncation drops whole steps from the end: a step is kept only when its end position fits in
``max_length``. The number of ends always equals the number of kept steps, and what was lost is
counted (:class:`Encoded.n_lost`, :class:`TruncationReport`), never silent.

>>> from prmkit.model.tiny import toy_tokenizer
>>> tok = toy_tokenizer()
>>> cfg = FormatConfig(marker="<step>", max_length=64)
>>> prepare_tokenizer(tok, cfg)
['<step>']
>>> enc = encode(tok, "2+2?", ["2+2 = 4", "# Answer 4"], cfg)
>>> len(enc.step_ends), enc.n_lost, tok.decode(enc.input_ids[enc.step_ends[0]])
(2, 0, '<step>')
>>> [tok.decode(enc.input_ids[a:b]) for a, b in enc.spans]
['2+2 = 4', '# Answer 4']
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields


@dataclass(frozen=True)
class FormatConfig:
    """How a solution becomes tokens. Saved with every model, so scoring uses what training used."""

    separator: str = field(default="\n", metadata={"help": "text appended after every step (before the marker)"})
    marker: str | None = field(default="<step>", metadata={
        "help": "token that ends every step; added to the tokenizer (embedding initialised from the separator's "
                "tokens) when new; empty/None: the step's last token ends it"})
    problem_suffix: str = field(default="\n", metadata={"help": "text between the problem and the first step"})
    chat_template: bool = field(default=False, metadata={
        "help": "put the problem in a user turn through the tokenizer's chat template; steps follow as the "
                "assistant's reply"})
    max_length: int = field(default=512, metadata={
        "help": "most tokens per solution; steps that do not fit are dropped and counted"})

    def __post_init__(self):
        if self.max_length < 2:
            raise ValueError(f"max_length must be at least 2, got {self.max_length}")
        if self.marker == "":
            object.__setattr__(self, "marker", None)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> FormatConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class Encoded:
    """One formatted solution.

    ``input_ids``: the tokens (cut after the last kept step). ``step_ends``: one position per kept
    step. ``spans``: ``(start, end)`` of each kept step's own text tokens. ``n_steps``: steps in the
    solution; ``n_lost = n_steps - len(step_ends)`` were dropped by truncation. ``targets``: one entry
    per kept step when built for training (see :mod:`prmkit.model.labels`).
    """

    input_ids: list[int]
    step_ends: list[int]
    spans: list[tuple[int, int]]
    n_steps: int
    targets: list | None = None
    full_length: int = 0
    """Tokens the whole solution would take untruncated (what ``max_length`` must be to keep every step)."""

    @property
    def n_lost(self) -> int:
        return self.n_steps - len(self.step_ends)

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass
class TruncationReport:
    """Counts of what truncation dropped over many solutions.

    >>> r = TruncationReport(); r.add(Encoded([1, 2], [1], [(0, 1)], 3)); r.share_lost
    0.6666666666666666
    """

    solutions: int = 0
    steps: int = 0
    steps_lost: int = 0
    solutions_truncated: int = 0
    longest_needed: int = 0
    """Tokens the longest truncated solution needed whole (0: none was truncated)."""

    def add(self, enc: Encoded) -> None:
        self.solutions += 1
        self.steps += enc.n_steps
        self.steps_lost += enc.n_lost
        self.solutions_truncated += enc.n_lost > 0
        if enc.n_lost:
            self.longest_needed = max(self.longest_needed, enc.full_length)

    @property
    def share_lost(self) -> float:
        return self.steps_lost / self.steps if self.steps else 0.0

    def summary(self) -> str:
        return (f"truncation: {self.steps_lost} of {self.steps} steps lost ({self.share_lost:.1%}) "
                f"in {self.solutions_truncated} of {self.solutions} solutions")

    def to_dict(self) -> dict:
        return {**asdict(self), "share_lost": self.share_lost}


def prepare_tokenizer(tokenizer, cfg: FormatConfig, extra_tokens: tuple[str, ...] = ()) -> list[str]:
    """Add the marker (and ``extra_tokens``, e.g. label tokens) to the tokenizer when missing.

    Returns the tokens that were added; the caller resizes the model's embeddings
    (:func:`prmkit.model.heads.init_new_tokens`). A pad token is set (to EOS) when there is none.
    """
    wanted = ([cfg.marker] if cfg.marker else []) + list(extra_tokens)
    added = [t for t in wanted if not is_single_token(tokenizer, t)]
    if added:
        tokenizer.add_tokens(added, special_tokens=True)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return added


def is_single_token(tokenizer, text: str) -> bool:
    """Whether ``text`` is one token of ``tokenizer`` on its own."""
    return len(tokenizer.encode(text, add_special_tokens=False)) == 1


def token_id(tokenizer, text: str) -> int:
    """The id of a single-token ``text``; raises ValueError naming the text otherwise."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) != 1:
        raise ValueError(f"{text!r} is {len(ids)} tokens for this tokenizer, not one; add it as a special token")
    return ids[0]


def _prefix_texts(tokenizer, problems: list[str], cfg: FormatConfig) -> list[str]:
    if cfg.chat_template:
        return [tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                              add_generation_prompt=True) for p in problems]
    return [p + cfg.problem_suffix for p in problems]


def _tokenize(tokenizer, texts: list[str], special: bool) -> list[list[int]]:
    """Each text on its own, in one batched call (the same ids as one ``encode`` per text); a text repeated is
    tokenised once.

    A fast tokenizer's Rust backend is asked for the ids alone: transformers' own batch call also builds
    offsets and a Python dict per text, which costs as much as the tokenisation itself. Not where the backend
    pads or truncates (a ``tokenizer.json`` may switch either on, and transformers leaves it on after loading):
    the batch's texts would come back padded to its longest, so a text's ids would depend on its neighbours.
    transformers' own call switches the backend's padding and truncation off for good (it restores nothing), so
    only the first call on such a tokenizer takes the slow path.
    """
    if not texts:
        return []
    distinct = list(dict.fromkeys(texts))  # a pool repeats its problem in every sample, a search its prefixes' steps
    if len(distinct) < len(texts):
        ids = dict(zip(distinct, _tokenize(tokenizer, distinct, special)))
        return [ids[t] for t in texts]  # shared lists: callers copy before they extend
    backend = tokenizer.backend_tokenizer if getattr(tokenizer, "is_fast", False) else None
    plain = backend is not None and backend.padding is None and backend.truncation is None
    if plain and hasattr(backend, "encode_batch_fast"):
        return [e.ids for e in backend.encode_batch_fast(texts, add_special_tokens=special)]
    return tokenizer(texts, add_special_tokens=special)["input_ids"]


def encode(tokenizer, problem: str, steps: list[str], cfg: FormatConfig, targets: list | None = None) -> Encoded:
    """Format one solution; ``targets`` (one per step) are cut with the steps when truncation drops some.

    >>> from prmkit.model.tiny import toy_tokenizer
    >>> tok = toy_tokenizer(); cfg = FormatConfig(max_length=12)
    >>> _ = prepare_tokenizer(tok, cfg)
    >>> enc = encode(tok, "q", ["a b c d", "e f g h", "i j k l"], cfg, targets=[1, 2, 3])
    >>> enc.n_steps, len(enc.step_ends), enc.targets, len(enc) <= 12
    (3, 1, [1], True)
    """
    return encode_many(tokenizer, [(problem, steps)], cfg, None if targets is None else [targets])[0]


def encode_many(tokenizer, solutions: list[tuple[str, list[str]]], cfg: FormatConfig,
                targets: list[list] | None = None) -> list[Encoded]:
    """:func:`encode` of many ``(problem, steps)`` at once: all texts go through the tokenizer in two
    batched calls (prefixes, steps) instead of one call per step, which is most of the time on a fast
    tokenizer. The same ids as one at a time: every piece is still tokenised on its own.
    """
    if targets is not None:
        for (_, steps), t in zip(solutions, targets, strict=True):
            if len(t) != len(steps):
                raise ValueError(f"{len(steps)} steps but {len(t)} targets")
    prefixes = _tokenize(tokenizer, _prefix_texts(tokenizer, [p for p, _ in solutions], cfg),
                         special=not cfg.chat_template)
    bodies = iter(_tokenize(tokenizer, [t for _, steps in solutions for t in steps], special=False))
    tail = (tokenizer.encode(cfg.separator, add_special_tokens=False) if cfg.separator else []) + \
        ([token_id(tokenizer, cfg.marker)] if cfg.marker else [])
    out = []
    for i, ((_, steps), prefix) in enumerate(zip(solutions, prefixes)):
        step_ids = [next(bodies) for _ in steps]
        out.append(_assemble(prefix, step_ids, tail, cfg.max_length, None if targets is None else targets[i]))
    return out


def _assemble(prefix: list[int], bodies: list[list[int]], tail: list[int], max_length: int,
              targets: list | None) -> Encoded:
    """Prefix, then each step's ids and ``tail`` (separator + marker), keeping whole steps that fit."""
    ids = list(prefix)
    ends, spans = [], []
    for body in bodies:
        start = len(ids)
        if start + len(body) + len(tail) > max_length or not body + tail:
            break
        ids += body + tail
        ends.append(len(ids) - 1)
        spans.append((start, start + len(body)))
    if not ends:
        ids = ids[:max_length]
    kept = None if targets is None else list(targets[: len(ends)])
    full = len(prefix) + sum(len(body) + len(tail) for body in bodies)
    return Encoded(ids, ends, spans, len(bodies), kept, full)


def encode_solution(tokenizer, solution, cfg: FormatConfig, targets: list | None = None) -> Encoded:
    """:func:`encode` on a :class:`~prmkit.schema.Solution` (the text of every step it took)."""
    return encode(tokenizer, solution.problem.problem, solution.texts, cfg, targets)
