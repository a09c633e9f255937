"""The ``hf`` backend: transformers ``generate`` on CPU or GPU, batched, with a KV cache.

Sampling is the Gumbel-max trick: each row adds its own Gumbel noise, drawn from a generator seeded by
(seed, problem, prefix, sample index) (:func:`prmkit.generate.backend.sample_seed`), to its logits and
takes the argmax. That is exact sampling from the tempered (top-p filtered) distribution, and a row's
draws do not depend on what else is in its batch, so batched generation gives the same samples as
one-at-a-time generation under the same seed (``bench/bench_generate.py`` measures both).

A sample ends at the tokenizer's EOS, at ``max_new_tokens``, or after the paper's closing step (a
``# Answer`` line with its answer, then a step end): models pretrained on that format, like the lab's
base, never learned an EOS.
"""

from __future__ import annotations

from dataclasses import dataclass

from prmkit.generate.backend import Backend, Sample, problem_key, sample_seed
from prmkit.generate.prompt import format_of, load_shots, render_problem
from prmkit.generate.steps import ANSWER


@dataclass(frozen=True)
class Sampling:
    """How one batch of rows is sampled."""

    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0


class RowNoise:
    """A logits processor: ``logits / T`` (top-p filtered) plus per-row Gumbel noise from per-row generators."""

    def __init__(self, seeds: list[int], sampling: Sampling):
        import torch

        self.generators = [torch.Generator().manual_seed(s) for s in seeds]
        self.sampling = sampling

    def __call__(self, input_ids, scores):
        import torch

        scores = scores.float() / max(self.sampling.temperature, 1e-6)
        if self.sampling.top_p < 1:
            scores = top_p_filter(scores, self.sampling.top_p)
        u = torch.stack([torch.rand(scores.shape[-1], generator=g) for g in self.generators])
        gumbel = -torch.log(-torch.log(u.clamp(1e-12, 1 - 1e-7)))
        return scores + gumbel.to(scores.device)


def top_p_filter(scores, top_p: float):
    """``scores`` with every token outside the smallest set of mass ``top_p`` set to -inf (per row)."""
    import torch

    order = scores.argsort(dim=-1, descending=True)
    probs = scores.gather(-1, order).softmax(dim=-1)
    drop_sorted = probs.cumsum(-1) - probs >= top_p  # the first token is always kept
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return scores.masked_fill(drop, float("-inf"))


class AnswerStop:
    """A stopping criterion: a row is done once it wrote ``# Answer``, some answer, then a step end."""

    def __init__(self, tokenizer, prompt_len: int, rows: int, end_ids: set[int]):
        self.answer = tokenizer.encode(ANSWER, add_special_tokens=False)
        self.end_ids, self.prompt_len = end_ids, prompt_len
        self.state = [0] * rows  # 0: no answer yet, 1: answer line seen, 2: answer has content, 3: done

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        for r in range(input_ids.shape[0]):
            tok = int(input_ids[r, -1])
            s = self.state[r]
            if s == 0 and input_ids.shape[1] - self.prompt_len >= len(self.answer):
                tail = input_ids[r, -len(self.answer):].tolist()
                s = 1 if tail == self.answer else 0
            elif s in (1, 2):
                s = (3 if s == 2 else 1) if tok in self.end_ids else 2
            self.state[r] = s
        return torch.tensor([s == 3 for s in self.state], device=input_ids.device)


class Sampler:
    """A causal LM and its tokenizer that sample token ids: ``sample(prompts, seeds, sampling)``."""

    def __init__(self, model, tokenizer, device: str = "cpu", end_tokens: tuple[str, ...] = ("\n",)):
        self.model, self.tokenizer, self.device = model, tokenizer, device
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        ids = [tokenizer.encode(t, add_special_tokens=False) for t in end_tokens]
        self.end_ids = {i[0] for i in ids if len(i) == 1}
        self.skip = {i for i in (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.bos_token_id)
                     if i is not None}

    @classmethod
    def load(cls, folder: str, device: str = "auto", end_tokens: tuple[str, ...] = ("\n",)) -> Sampler:
        """A model folder loaded with ``from_pretrained`` (bf16 on CUDA)."""
        import torch
        import transformers

        from prmkit.train.loop import uses_cuda

        dev = "cuda" if uses_cuda(device) else "cpu"
        dtype = torch.bfloat16 if dev == "cuda" else torch.float32
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).to(dev).eval()
        return cls(model, tok, dev, end_tokens)

    def sample(self, prompts: list[list[int]], seeds: list[int], sampling: Sampling) -> list[tuple[list[int], str]]:
        """Per prompt, the generated ids (cut after a stop) and the finish reason; one generate call."""
        import torch
        import transformers

        width = max(len(p) for p in prompts)
        ids = torch.tensor([[self.pad] * (width - len(p)) + p for p in prompts], device=self.device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device)
        stop = AnswerStop(self.tokenizer, width, len(prompts), self.end_ids)
        processors = [] if sampling.temperature == 0 else [RowNoise(seeds, sampling)]
        config = transformers.GenerationConfig(do_sample=False, max_new_tokens=sampling.max_new_tokens,
                                               pad_token_id=self.pad, eos_token_id=self.tokenizer.eos_token_id)
        with torch.no_grad():
            out = self.model.generate(input_ids=ids, attention_mask=mask, generation_config=config,
                                      logits_processor=transformers.LogitsProcessorList(processors),
                                      stopping_criteria=transformers.StoppingCriteriaList([stop]))
        return [self._cut(row[width:].tolist(), stop.state[r] == 3, sampling)
                for r, row in enumerate(out)]

    def _cut(self, new: list[int], answered: bool, sampling: Sampling) -> tuple[list[int], str]:
        eos = self.tokenizer.eos_token_id
        if eos is not None and eos in new:
            return new[: new.index(eos)], "stop"
        if answered:
            return _through_answer(new, self), "stop"
        kept = [t for t in new if t != self.pad]
        return kept, "stop" if len(kept) < sampling.max_new_tokens else "length"

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode([i for i in ids if i not in self.skip], skip_special_tokens=False)


def _through_answer(new: list[int], sampler: Sampler) -> list[int]:
    """The ids up to the step end that closed the answer (the rest of the row is padding)."""
    stop = AnswerStop(sampler.tokenizer, 0, 1, sampler.end_ids)
    import torch

    for k in range(1, len(new) + 1):
        if bool(stop(torch.tensor([new[:k]]), None)[0]):
            return new[:k]
    return new


def cut_at_stop(text: str, stops: list[str]) -> tuple[str, bool]:
    """``text`` up to its first stop string (excluded), and whether one was found.

    >>> cut_at_stop("x = 1\\nProblem: next", ["Problem:"])
    ('x = 1\\n', True)
    """
    hits = [text.find(s) for s in stops if s and s in text]
    return (text[: min(hits)], True) if hits else (text, False)


class HFBackend(Backend):
    """Samples from a local model folder with transformers; see the module docstring."""

    def __init__(self, cfg, sampler: Sampler, name: str = "", detokenize=None):
        self.cfg, self.sampler = cfg, sampler
        self.name = name or cfg.model
        self.fmt = format_of(cfg)
        self.shots = load_shots(cfg)
        self.detokenize = detokenize or (lambda text: text)
        self.sampling = Sampling(cfg.max_new_tokens, cfg.temperature, cfg.top_p)

    @classmethod
    def from_config(cls, cfg) -> HFBackend:
        if not cfg.model:
            raise ValueError("the hf backend needs --model, a local model folder")
        ends = (cfg.marker,) if cfg.marker else (cfg.separator or "\n",)
        return cls(cfg, Sampler.load(cfg.model, cfg.device, ends))

    def prompt_ids(self, problem, prefix_steps: list[str]) -> list[int]:
        """The prompt's ids, laid out by the one formatter (:func:`prmkit.model.formatter.encode`)."""
        from prmkit.model.formatter import encode

        text = render_problem(problem.problem, self.cfg, self.shots)
        return encode(self.sampler.tokenizer, text, prefix_steps, self.fmt).input_ids

    def generate(self, problems, n):
        return self._rows([(p, [], n) for p in problems])

    def complete(self, problem, prefix_steps, n):
        return self._rows([(problem, list(prefix_steps), n)])[0]

    def _rows(self, requests: list[tuple]) -> list[list[Sample]]:
        """Every (problem, prefix, n) request as rows, batched by prompt length, put back in order."""
        rows = [(q, j, self.prompt_ids(p, prefix), sample_seed(self.cfg.seed, problem_key(p), prefix, j))
                for q, (p, prefix, n) in enumerate(requests) for j in range(n)]
        rows.sort(key=lambda r: len(r[2]))
        out: list[list[Sample | None]] = [[None] * n for _, _, n in requests]
        size = self.cfg.batch_size
        for b in range(0, len(rows), size):
            batch = rows[b:b + size]
            for (q, j, _, _), (ids, reason) in zip(batch, self.sampler.sample([r[2] for r in batch],
                                                                               [r[3] for r in batch],
                                                                               self.sampling)):
                out[q][j] = self._sample(ids, reason)
        return out  # type: ignore[return-value]

    def _sample(self, ids: list[int], reason: str) -> Sample:
        text, stopped = cut_at_stop(self.detokenize(self.sampler.decode(ids)), self.cfg.stop)
        return Sample(text, len(ids), "stop" if stopped else reason)
