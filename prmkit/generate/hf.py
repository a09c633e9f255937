"""The ``hf`` backend: transformers ``generate`` on CPU or GPU, batched, with a KV cache.

Sampling is the Gumbel-max trick: each row adds its own Gumbel noise, drawn from a generator seeded by
(seed, problem, prefix, sample index) (:func:`prmkit.generate.backend.sample_seed`), to its logits and
takes the argmax: a sample from the tempered (top-p filtered) distribution, and a row's draws do not
depend on what else is in its batch, so batched generation gives the same samples as one-at-a-time
generation under the same seed (``bench/bench_generate.py`` measures both). The model's own generation
defaults (repetition penalties, suppressed tokens...) are switched off: what is sampled is the
model's distribution, nothing else.

A sample ends at an end-of-sequence token (the model's and the tokenizer's), at ``max_new_tokens``, at
a stop string, or after the paper's closing step (a ``# Answer`` line with its answer, then a step
end): models pretrained on that format, like the lab's base, never learned an EOS. Stops are checked
on the decoded text of each new token (:class:`RowStops`), so they do not depend on how a tokenizer
splits ``# Answer``.
"""

from __future__ import annotations

from dataclasses import dataclass

from prmkit.generate.backend import Backend, Sample, problem_key, sample_seed
from prmkit.generate.prompt import format_of, load_shots, render_problem
from prmkit.steps import ANSWER

_ANSWER_KEY = ANSWER.replace(" ", "")


@dataclass(frozen=True)
class Sampling:
    """How one batch of rows is sampled."""

    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0


NOISE_NUMBERS = 8192
"""Uniform numbers a row draws at once on the CPU: ``NOISE_NUMBERS // vocabulary`` tokens' worth (one token's
where the vocabulary is larger). The CPU generator (mt19937) gives the same numbers in one draw of ``k x V`` as
in ``k`` draws of ``V`` (a test checks it), in one call instead of ``k``: on a small vocabulary, such as the lab
policy's, the calls were most of the noise's cost. The draw stays below torch's grain size (32,768), under
which ``uniform_`` runs on one thread whatever the thread count."""


class RowNoise:
    """A logits processor: ``logits / T`` (top-p filtered) plus per-row Gumbel noise from per-row generators
    (on the logits' device, so a GPU run draws its noise there).

    Once a row's sample has ended (``done[r]`` set: :class:`RowStops`' verdict after the previous token) it draws
    no new noise: what it samples after its end is cut off, and its generator serves no other row, so the rows
    still sampling get the same noise as before. On the CPU the rows still sampling draw several tokens' noise at
    once (:data:`NOISE_NUMBERS`) and a token's noise is one slice of the batch's block: they all stand at the same
    token of it, since every row starts at the first token and a row that has ended never resumes."""

    def __init__(self, seeds: list[int], sampling: Sampling, done: list | None = None):
        self.seeds, self.sampling, self.generators = seeds, sampling, None
        self.done = done if done is not None else [None] * len(seeds)
        self.block, self.used = None, 0

    def __call__(self, input_ids, scores):
        import torch

        if self.generators is None:
            self.generators = [torch.Generator(device=scores.device).manual_seed(s) for s in self.seeds]
        scores = scores.float() / max(self.sampling.temperature, 1e-6)
        if self.sampling.top_p < 1:
            scores = top_p_filter(scores, self.sampling.top_p)
        u = self._uniform(scores.shape[-1], scores.device)
        return scores + -torch.log(-torch.log(u.clamp(1e-12, 1 - 1e-7)))

    def _uniform(self, width: int, device):
        """This token's uniform numbers, a row each: from its generator while it samples, 0.5 once it has ended."""
        import torch

        # a GPU generator's numbers depend on how they are drawn: one draw per token there
        tokens = max(1, NOISE_NUMBERS // width) if device.type == "cpu" else 1
        if self.block is None or self.used == self.block.shape[1]:
            self.block = torch.stack([torch.full((tokens, width), 0.5, device=device) if ended is not None
                                      else torch.rand(tokens * width, generator=g, device=device).view(tokens, width)
                                      for g, ended in zip(self.generators, self.done)])
            self.used = 0
        self.used += 1
        return self.block[:, self.used - 1]


def top_p_filter(scores, top_p: float):
    """``scores`` with every token outside the smallest set of mass ``top_p`` set to -inf (per row)."""
    import torch

    order = scores.argsort(dim=-1, descending=True)
    probs = scores.gather(-1, order).softmax(dim=-1)
    drop_sorted = probs.cumsum(-1) - probs >= top_p  # the first token is always kept
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return scores.masked_fill(drop, float("-inf"))


class TextStop:
    """Where one row's text ends, fed one decoded token at a time: after a stop string, or after the
    closing ``# Answer`` step (its line, some answer, then ``end`` text: a newline or the format's marker).

    >>> t = TextStop(stops=[], end="\\n")
    >>> [t.feed(p) for p in ["x = 1", "\\n", "#", " Answer", "\\n\\n", "4", "\\n"]]
    [False, False, False, False, False, False, True]
    >>> t = TextStop(stops=["Problem:"], end="\\n")
    >>> [t.feed(p) for p in ["a", " Prob", "lem:"]]
    [False, False, True]
    """

    def __init__(self, stops: list[str], end: str):
        self.stops, self.end = [s for s in stops if s], end
        self.text, self.answer_at, self.content = "", -1, False

    def feed(self, piece: str) -> bool:
        self.text += piece
        if any(s in self.text[-len(s) - len(piece):] for s in self.stops):
            return True
        if self.answer_at < 0:
            if _ANSWER_KEY in self.text[-len(ANSWER) - len(piece) - 8:].replace(" ", ""):
                self.answer_at = len(self.text)
            return False
        if self.end in piece and self.content:
            return True
        self.content = self.content or bool(piece.replace(self.end, "").strip())
        return False


class RowStops:
    """A stopping criterion over a batch: one :class:`TextStop` per row, fed each new token's text (decoded
    once per token id); ``ends[r]`` is how many new tokens row ``r`` kept."""

    def __init__(self, sampler: Sampler, rows: int, stops: list[str]):
        self.sampler = sampler
        self.rows = [TextStop(stops, sampler.end) for _ in range(rows)]
        self.ends: list[int | None] = [None] * rows
        self.steps = 0

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        self.steps += 1
        last = input_ids[:, -1].tolist()
        for r, tok in enumerate(last):
            if self.ends[r] is None and (tok in self.sampler.eos or self.rows[r].feed(self.sampler.piece(tok))):
                self.ends[r] = self.steps - (tok in self.sampler.eos)
        return torch.tensor([e is not None for e in self.ends], device=input_ids.device)


class Sampler:
    """A causal LM and its tokenizer that sample token ids: ``sample(prompts, seeds, sampling)``.
    ``end``: the text that ends a step (a newline, or a format's marker)."""

    def __init__(self, model, tokenizer, device: str = "cpu", end: str = "\n"):
        import transformers

        self.model, self.tokenizer, self.device, self.end = model, tokenizer, device, end
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        own = getattr(model.generation_config, "eos_token_id", None)
        own = own if isinstance(own, list) else [own]
        self.eos = {i for i in [*own, tokenizer.eos_token_id] if i is not None}
        # the model's generation defaults would add processors (repetition penalty, ...) even to greedy search
        model.generation_config = transformers.GenerationConfig(pad_token_id=self.pad, eos_token_id=sorted(self.eos),
                                                                do_sample=False)
        self.skip = {i for i in (tokenizer.pad_token_id, tokenizer.bos_token_id, *self.eos) if i is not None}
        self._pieces: dict[int, str] = {}

    @classmethod
    def load(cls, folder: str, device: str = "auto", end: str = "\n") -> Sampler:
        """A model folder loaded with ``from_pretrained`` (bf16 on CUDA)."""
        import torch
        import transformers

        from prmkit.device import uses_cuda
        from prmkit.model.hub import pretrained_options

        where = pretrained_options(folder)  # a missing folder is said at once, not after the Hub's retries
        dev = "cuda" if uses_cuda(device) else "cpu"
        dtype = torch.bfloat16 if dev == "cuda" else torch.float32
        tok = transformers.AutoTokenizer.from_pretrained(folder, **where)
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, **where).to(dev).eval()
        return cls(model, tok, dev, end)

    @property
    def context(self) -> int | None:
        """The model's position limit (max_position_embeddings), None when its config has none."""
        return getattr(self.model.config, "max_position_embeddings", None)

    def check_room(self, max_new_tokens: int, prompt_tokens: int = 0) -> None:
        """Refuse to generate past the model's positions, where a model with learned positions fails deep in
        transformers (an IndexError) and others go on out of what they were trained for."""
        context = self.context
        if not context:
            return
        if not prompt_tokens and max_new_tokens >= context:  # up front: at least one prompt token must fit too
            raise ValueError(f"--max-new-tokens {max_new_tokens} does not fit the model's context of {context} tokens "
                             f"(max_position_embeddings), which holds the prompt too: give less than {context}")
        if prompt_tokens and prompt_tokens + max_new_tokens > context:
            raise ValueError(f"a prompt of {prompt_tokens} tokens and --max-new-tokens {max_new_tokens} need "
                             f"{prompt_tokens + max_new_tokens} positions, more than the model's context of {context} "
                             f"(max_position_embeddings): give --max-new-tokens {context - prompt_tokens} or less, "
                             "or a shorter prompt")

    def piece(self, token_id: int) -> str:
        """The text of one token (cached)."""
        if token_id not in self._pieces:
            self._pieces[token_id] = self.tokenizer.decode([token_id], skip_special_tokens=False)
        return self._pieces[token_id]

    def sample(self, prompts: list[list[int]], seeds: list[int], sampling: Sampling,
               stops: list[str] = ()) -> list[tuple[list[int], str]]:
        """Per prompt, the generated ids (through the stop, EOS excluded) and the finish reason; one generate call."""
        import torch
        import transformers

        width = max(len(p) for p in prompts)
        ids = torch.tensor([[self.pad] * (width - len(p)) + p for p in prompts], device=self.device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device)
        stop = RowStops(self, len(prompts), list(stops))
        processors = [] if sampling.temperature == 0 else [RowNoise(seeds, sampling, done=stop.ends)]
        config = transformers.GenerationConfig(do_sample=False, max_new_tokens=sampling.max_new_tokens,
                                               pad_token_id=self.pad, eos_token_id=sorted(self.eos))
        with torch.no_grad():
            out = self.model.generate(input_ids=ids, attention_mask=mask, generation_config=config,
                                      logits_processor=transformers.LogitsProcessorList(processors),
                                      stopping_criteria=transformers.StoppingCriteriaList([stop]))
        rows = []
        for r, row in enumerate(out):
            new, end = row[width:].tolist(), stop.ends[r]
            rows.append((new[:end], "stop") if end is not None else (new, "length"))
        return rows

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode([i for i in ids if i not in self.skip], skip_special_tokens=False)


def cut_at_stop(text: str, stops: list[str]) -> tuple[str, bool]:
    """``text`` up to its first stop string (excluded), and whether one was found.

    >>> cut_at_stop("x = 1\\nProblem: next", ["Problem:"])
    ('x = 1\\n', True)
    """
    hits = [text.find(s) for s in stops if s and s in text]
    return (text[: min(hits)], True) if hits else (text, False)


class HFBackend(Backend):
    """Samples from a local model folder with transformers; see the module docstring."""

    def __init__(self, cfg, sampler: Sampler, name: str = "", detokenize=None, folder: str = ""):
        self.cfg, self.sampler = cfg, sampler
        self.name = name or cfg.model
        self.folder = folder or cfg.model
        self.fmt = format_of(cfg)
        self.shots = load_shots(cfg)
        self.detokenize = detokenize or (lambda text: text)
        self.sampling = Sampling(cfg.max_new_tokens, cfg.temperature, cfg.top_p)
        sampler.check_room(cfg.max_new_tokens)  # before any work: the prompt's room comes per batch

    def fingerprint(self) -> dict:
        from prmkit.model.identity import weights_digest

        if not hasattr(self, "_fingerprint"):  # caches ask often; the weights do not change under a loaded model
            self._fingerprint = {"weights": weights_digest(self.folder)}
        return self._fingerprint

    @classmethod
    def from_config(cls, cfg) -> HFBackend:
        if not cfg.model:
            raise ValueError("the hf backend needs --model, a local model folder")
        return cls(cfg, Sampler.load(cfg.model, cfg.device, cfg.marker or cfg.separator or "\n"))

    def prompt_ids(self, problem, prefix_steps: list[str]) -> list[int]:
        """The prompt's ids, laid out by the one formatter (:func:`prmkit.model.formatter.encode_many`)."""
        return self.prompt_ids_many([(problem, prefix_steps)])[0]

    def prompt_ids_many(self, requests: list[tuple]) -> list[list[int]]:
        """:meth:`prompt_ids` of each ``(problem, prefix_steps, ...)`` request, the whole batch through the
        tokenizer at once (:func:`prmkit.model.formatter.encode_many`: the same ids as one request at a time).
        One call per request was the largest cost of a step-at-a-time search outside the models' passes."""
        from prmkit.model.formatter import encode_many

        texts = [(render_problem(problem.problem, self.cfg, self.shots), list(prefix))
                 for problem, prefix, *_ in requests]
        return [e.input_ids for e in encode_many(self.sampler.tokenizer, texts, self.fmt)]

    def generate(self, problems, n):
        return self._rows([(p, [], n, 0) for p in problems])

    def complete(self, problem, prefix_steps, n, start=0):
        return self._rows([(problem, list(prefix_steps), n, start)])[0]

    def complete_many(self, requests):
        return self._rows([(p, list(prefix), n, start) for p, prefix, n, start in requests])

    def _rows(self, requests: list[tuple]) -> list[list[Sample]]:
        """Every (problem, prefix, n, start) request as rows, batched by prompt length, put back in order."""
        prompts = self.prompt_ids_many(requests)  # once per request, not per sample
        rows = [(q, j - start, prompts[q], sample_seed(self.cfg.seed, problem_key(p), prefix, j))
                for q, (p, prefix, n, start) in enumerate(requests) for j in range(start, start + n)]
        rows.sort(key=lambda r: len(r[2]))
        out: list[list[Sample | None]] = [[None] * n for _, _, n, _ in requests]
        size = self.cfg.batch_size
        for b in range(0, len(rows), size):
            batch = rows[b:b + size]
            self.sampler.check_room(self.sampling.max_new_tokens, max(len(r[2]) for r in batch))
            for (q, j, _, _), (ids, reason) in zip(batch, self.sampler.sample([r[2] for r in batch],
                                                                               [r[3] for r in batch],
                                                                               self.sampling, self.cfg.stop)):
                out[q][j] = self._sample(ids, reason)
        return out  # type: ignore[return-value]

    def _sample(self, ids: list[int], reason: str) -> Sample:
        text, _ = cut_at_stop(self.detokenize(self.sampler.decode(ids)), self.cfg.stop)
        return Sample(text, len(ids), reason)
