"""``prmkit generate``: problems in, ``n`` graded, step-split solutions per problem out, resumably.

Every sample becomes a :class:`~prmkit.schema.Solution`: ``id`` ``<problem id>/<seed>-<j>``, its steps
(:func:`prmkit.steps.split_steps`), ``answer`` (:func:`prmkit.grade.extract_answer`), ``grade``
against the problem's answer (:func:`prmkit.grade.grade`; none without a gold answer), ``generator``
(backend and model name; every sampling setting) and ``meta.generation`` (finish reason, tokens).

Output goes to a partial file beside ``OUT`` (``.OUT.part``, appended a few problems at a time, flushed),
which becomes ``OUT`` (gzip for ``.gz``) when every problem is done. A killed run loses at most the
problems in flight; a rerun reads what the partial file and ``OUT`` hold, skips every sample already
there (by id) and never writes one twice. ``--shard I/K`` keeps problems whose index modulo K is I.

>>> import os, tempfile
>>> from prmkit.generate.config import GenerateConfig
>>> from prmkit.lab.domain import LedgerConfig, make_problems
>>> from prmkit.io import read_solutions, write_records
>>> d = tempfile.mkdtemp(); src = os.path.join(d, "problems.jsonl"); out = os.path.join(d, "out.jsonl")
>>> _ = write_records(src, make_problems(LedgerConfig(), 3, seed=0))
>>> generate_file(src, out, GenerateConfig(backend="lab", model="quick", n=2, progress=False))["written"]
6
>>> s = next(read_solutions(out)); s.id, s.grade in ("correct", "incorrect"), s.generator.name
('ledger-eval-0-0/0-0', True, 'lab-ledger-v1')
>>> generate_file(src, out, GenerateConfig(backend="lab", model="quick", n=2, progress=False))["written"]
0
"""

from __future__ import annotations

import json
import os
import time
from itertools import islice
from pathlib import Path

from prmkit.generate.backend import Backend, Sample, make_backend, problem_key
from prmkit.generate.config import GenerateConfig, shard_of
from prmkit.io import append_partial, dumps, finished_lines, merge_partial, open_text, output_keys
from prmkit.schema import Generator, Problem, Solution, Step
from prmkit.steps import split_steps


def read_problem_file(path: str | os.PathLike, fmt: str = "prmkit") -> list[Problem]:
    """The problems of any file prmkit reads (``fmt``: a ``prmkit data convert --from`` format): problem
    records, or the distinct problems of solution records, in file order."""
    from prmkit.convert import read
    from prmkit.convert.base import problems_of

    seen, out = set(), []
    for p in problems_of(read(path, fmt)):
        if p.problem not in seen:
            seen.add(p.problem)
            out.append(p)
    if not out:
        raise ValueError(f"no records in {path}")
    return out


def sample_id(problem: Problem, seed: int, j: int) -> str:
    """``<problem id>/<seed>-<j>``; a problem without an id is named by its text's hash (as its seeds are), so
    editing the input file does not rename its samples."""
    return f"{problem_key(problem)}/{seed}-{j}"


def continued_steps(text: str, cfg: GenerateConfig, prefix_steps: list[str] = ()) -> tuple[list[str], str | None]:
    """A prefix's steps and those of a sampled continuation (split as ``cfg`` says), and their final answer:
    how a sample becomes a record here and a graded rollout in :mod:`prmkit.label.auto.rollouts`."""
    from prmkit.grade import extract_answer

    steps = [*prefix_steps, *split_steps(text, cfg.steps, cfg.step_separator, cfg.marker)]
    return steps, extract_answer("\n".join(steps)) if steps else None


def to_solution(problem: Problem, sid: str, sample: Sample, cfg: GenerateConfig, generator: Generator,
                prefix_steps: list[str] = ()) -> Solution:
    """One sample as a graded record (the prefix's steps first, for a continuation)."""
    from prmkit.grade import grade

    steps, answer = continued_steps(sample.text, cfg, prefix_steps)
    verdict, meta = None, {"generation": {"finish_reason": sample.finish_reason, "tokens": sample.tokens}}
    if problem.answer:
        result = grade(answer, problem.answer)  # no answer: incorrect (reason no-answer)
        verdict = result.verdict
        if verdict == "unparseable":  # the grader could not decide: keep why, not only the verdict
            meta["grading"] = {"reason": result.reason, "detail": result.detail}
    return Solution(problem, [Step.of(t) for t in steps], id=sid, answer=answer, grade=verdict, generator=generator,
                    meta=meta)


def _id(record: dict) -> str:
    return record["id"]


def part_path(out: str | os.PathLike, shard: str = "0/1") -> Path:
    """The partial file of ``out`` for one shard: shards may share an ``out`` (their partial files do not)."""
    out = Path(out)
    i, k = shard_of(shard)
    return out.with_name(f".{out.name}.part" + (f"{i}of{k}" if k > 1 else ""))


def generate_file(inp: str | os.PathLike, out: str | os.PathLike, cfg: GenerateConfig | None = None,
                  backend: Backend | None = None, input_format: str = "prmkit", log=print) -> dict:
    """Generate ``cfg.n`` solutions for every problem of ``inp`` (of this shard) into ``out``; a summary."""
    cfg = cfg or GenerateConfig()
    out, part = Path(out), part_path(out, cfg.shard)
    i, k = shard_of(cfg.shard)
    mine = [(idx, p) for idx, p in enumerate(read_problem_file(inp, input_format)) if idx % k == i]
    if not cfg.resume:  # a fresh run: what an earlier one wrote is replaced, not merged into
        part.unlink(missing_ok=True)
        out.unlink(missing_ok=True)
    done = output_keys(out, _id) | finished_lines(part, _id)
    todo = [(idx, p) for idx, p in mine if any(sample_id(p, cfg.seed, j) not in done for j in range(cfg.n))]
    summary = {"problems": len(mine), "problems_generated": len(todo), "skipped_already_done": len(done),
               "written": 0}
    if not todo and done and backend is None and cfg.backend in SERVED_AS_NAMED:  # checked without loading it
        check_same_generator(generator_by_name(cfg), [part, out])
    elif todo or done:  # a complete output is checked too: its samples must be this model's and settings'
        own = backend is None
        backend = backend or make_backend(cfg)
        try:
            generator = generator_of(backend, cfg)
            check_same_generator(generator, [part, out])
            if todo:
                summary.update(_generate(todo, part, out, backend, generator, cfg, done, log))
        finally:
            if own:
                backend.close()
    if part.exists():
        merge_partial(out, part, _id, [inp])
    return summary


def generator_of(backend: Backend, cfg: GenerateConfig) -> Generator:
    """The record's ``generator``: the backend's name and everything its records depend on (the sampling
    settings it used, how samples become steps, its weights or rules)."""
    return _generator(backend.name, backend.cfg or cfg, cfg, backend.fingerprint())


SERVED_AS_NAMED = ("hf", "vllm", "openai")
"""Backends named by ``--model`` and prompting with the settings as given, whose records' ``generator`` is
known from the settings alone (:func:`generator_by_name`): a complete output is checked without loading
the model."""


def generator_by_name(cfg: GenerateConfig) -> Generator:
    """:func:`generator_of` for a :data:`SERVED_AS_NAMED` backend, without loading it."""
    from prmkit.model.identity import weights_digest

    fingerprint = {} if cfg.backend == "openai" else {"weights": weights_digest(cfg.model)}
    return _generator(cfg.model, cfg, cfg, fingerprint)


def _generator(name: str, used: GenerateConfig, cfg: GenerateConfig, fingerprint: dict) -> Generator:
    split = {"steps": cfg.steps, **({"step_separator": cfg.step_separator} if cfg.step_separator else {})}
    return Generator(name, {"backend": cfg.backend, **used.sampling, **split, **fingerprint})


def _generate(todo: list, part: Path, out: Path, backend: Backend, generator: Generator, cfg: GenerateConfig,
              done: set[str], log) -> dict:
    """Sample ``todo`` into ``part``, a few problems per flush; the summary's counts."""
    used = backend.cfg or cfg
    part.parent.mkdir(parents=True, exist_ok=True)
    stats = _Progress(cfg, cfg.n * len(todo))
    try:
        with append_partial(part) as f:  # left empty (an early stop): deleted
            chunks = iter(todo)
            while chunk := list(islice(chunks, problems_per_write(cfg))):
                samples = backend.generate([p for _, p in chunk], cfg.n)
                stats.add(_write_chunk(f, chunk, samples, done, used, generator))
    except BaseException:
        if part.exists():  # else nothing was finished, and nothing is kept
            log(f"prmkit generate: stopped; finished samples are kept in {part} and a rerun resumes from them")
        raise
    finally:
        stats.close()
    return {"written": stats.written, "tokens": stats.tokens, "seconds": stats.seconds,
            "samples_per_s": stats.rate(stats.written), "tokens_per_s": stats.rate(stats.tokens)}


def problems_per_write(cfg: GenerateConfig) -> int:
    """Problems sampled per backend call, each call's samples written and flushed when it returns: at most
    ``flush_every``, and for a local model (hf, lab-lm) at most one batch's worth (one problem when ``n`` is
    larger than the batch), so that a killed run loses that call, not the ``flush_every`` problems of a
    long one (a sample does not depend on its batch).

    >>> problems_per_write(GenerateConfig(n=4, batch_size=16)), problems_per_write(GenerateConfig(n=64))
    (4, 1)
    """
    if cfg.backend not in ("hf", "lab-lm"):
        return cfg.flush_every
    return max(1, min(cfg.flush_every, cfg.batch_size // cfg.n))


def check_same_generator(generator: Generator, paths: list[Path]) -> None:
    """Refuse to add samples to a file whose samples came from another model or other settings (but ``n``:
    more samples per problem extend a file)."""
    for path in paths:
        if not path.exists() or not path.stat().st_size:
            continue
        with open_text(path) as f:
            first = json.loads(f.readline()).get("generator") or {}
        theirs, ours = first.get("sampling", {}), generator.sampling
        keys = sorted(k for k in {*theirs, *ours} if k != "n" and theirs.get(k) != ours.get(k))
        if keys or first.get("name") != generator.name:
            theirs = (first.get("name"), theirs)
            what = ", ".join(f"{k}: {theirs[1].get(k)!r} there, {ours.get(k)!r} now" for k in keys)
            raise ValueError(f"{path} holds samples of {theirs[0]!r} ({what or 'same settings'}); this run samples "
                             f"{generator.name!r}: rerun with the same settings, write another output, or pass "
                             "--no-resume to replace it")
        return


def _write_chunk(f, chunk, samples, done: set[str], cfg: GenerateConfig, generator: Generator) -> list[Sample]:
    """Append the samples of ``chunk`` not yet done; return those written."""
    if len(samples) != len(chunk) or any(len(s) != cfg.n for s in samples):
        raise RuntimeError(f"the backend returned {[len(s) for s in samples]} samples for {len(chunk)} "
                           f"problems, not {cfg.n} each")
    written = []
    for (idx, problem), per_problem in zip(chunk, samples):
        for j, sample in enumerate(per_problem):
            sid = sample_id(problem, cfg.seed, j)
            if sid in done:
                continue
            f.write(dumps(to_solution(problem, sid, sample, cfg, generator)) + "\n")
            done.add(sid)
            written.append(sample)
    f.flush()
    return written


class _Progress:
    """A progress bar over samples with samples/s and tokens/s, and the totals for the summary."""

    def __init__(self, cfg: GenerateConfig, total: int):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc="generate", unit="sample", disable=not cfg.progress)
        self.start, self.written, self.tokens = time.perf_counter(), 0, 0

    def add(self, samples: list[Sample]) -> None:
        self.written += len(samples)
        self.tokens += sum(s.tokens or 0 for s in samples)  # tokens a backend did not count are not in the rate
        self.bar.update(len(samples))
        self.bar.set_postfix(tok_s=f"{self.rate(self.tokens):.0f}", refresh=False)

    @property
    def seconds(self) -> float:
        return round(time.perf_counter() - self.start, 3)

    def rate(self, count: int) -> float:
        return round(count / max(self.seconds, 1e-9), 2)

    def close(self) -> None:
        self.bar.close()


__all__ = ["continued_steps", "generate_file", "part_path", "read_problem_file", "sample_id", "to_solution"]
