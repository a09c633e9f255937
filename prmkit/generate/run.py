"""``prmkit generate``: problems in, ``n`` graded, step-split solutions per problem out, resumably.

Every sample becomes a :class:`~prmkit.schema.Solution`: ``id`` ``<problem id>/<seed>-<j>``, its steps
(:func:`prmkit.generate.steps.split_steps`), ``answer`` (:func:`prmkit.grade.extract_answer`), ``grade``
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

from prmkit.generate.backend import Backend, Sample, make_backend
from prmkit.generate.config import GenerateConfig, shard_of
from prmkit.generate.steps import split_steps
from prmkit.io import atomic_output, dumps, finished_lines, open_text
from prmkit.schema import Generator, Problem, Solution, Step


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
        raise ValueError(f"{path}: no problems")
    return out


def sample_id(problem: Problem, index: int, seed: int, j: int) -> str:
    pid = problem.id if problem.id is not None else f"p{index}"
    return f"{pid}/{seed}-{j}"


def to_solution(problem: Problem, sid: str, sample: Sample, cfg: GenerateConfig, generator: Generator,
                prefix_steps: list[str] = ()) -> Solution:
    """One sample as a graded record (the prefix's steps first, for a continuation)."""
    from prmkit.grade import extract_answer, grade

    steps = [*prefix_steps, *split_steps(sample.text, cfg.steps, cfg.step_separator, cfg.marker)]
    text = "\n".join(steps)
    answer = extract_answer(text) if steps else None
    verdict = None
    if problem.answer:
        verdict = grade(answer, problem.answer).verdict if answer else "unparseable"
    return Solution(problem, [Step.of(t) for t in steps], id=sid, answer=answer, grade=verdict, generator=generator,
                    meta={"generation": {"finish_reason": sample.finish_reason, "tokens": sample.tokens}})


def part_path(out: str | os.PathLike) -> Path:
    out = Path(out)
    return out.with_name(f".{out.name}.part")


def _ids_in(path: Path) -> set[str]:
    with open_text(path) as f:
        return {json.loads(line)["id"] for line in f if line.strip()}


def generate_file(inp: str | os.PathLike, out: str | os.PathLike, cfg: GenerateConfig | None = None,
                  backend: Backend | None = None, input_format: str = "prmkit", log=print) -> dict:
    """Generate ``cfg.n`` solutions for every problem of ``inp`` (of this shard) into ``out``; a summary."""
    cfg = cfg or GenerateConfig()
    out, part = Path(out), part_path(out)
    problems = read_problem_file(inp, input_format)
    i, k = shard_of(cfg.shard)
    mine = [(idx, p) for idx, p in enumerate(problems) if idx % k == i]
    if not cfg.resume:
        part.unlink(missing_ok=True)
    previous = _ids_in(out) if cfg.resume and out.exists() else set()
    done = previous | finished_lines(part, lambda r: r["id"])
    todo = [(idx, p) for idx, p in mine if any(sample_id(p, idx, cfg.seed, j) not in done for j in range(cfg.n))]
    if not todo and not part.exists():
        return {"problems": len(mine), "problems_generated": 0, "written": 0, "skipped_already_done": len(done)}
    backend = backend or make_backend(cfg)
    generator = Generator(backend.name, {"backend": cfg.backend, **cfg.sampling})
    part.parent.mkdir(parents=True, exist_ok=True)
    stats = _Progress(cfg, sum(cfg.n for _ in todo))
    try:
        with open(part, "a", encoding="utf-8") as f:
            chunks = iter(todo)
            while chunk := list(islice(chunks, cfg.flush_every)):
                samples = backend.generate([p for _, p in chunk], cfg.n)
                stats.add(_write_chunk(f, chunk, samples, done, backend.cfg or cfg, generator))
    except BaseException:
        log(f"prmkit generate: stopped; finished samples are kept in {part} and a rerun resumes from them")
        raise
    finally:
        stats.close()
    if stats.written or not out.exists() or part.stat().st_size:
        _finish(out, part, previous, inp)
    part.unlink(missing_ok=True)
    return {"problems": len(mine), "problems_generated": len(todo), "written": stats.written,
            "skipped_already_done": len(done), "tokens": stats.tokens, "seconds": stats.seconds,
            "samples_per_s": stats.rate(stats.written), "tokens_per_s": stats.rate(stats.tokens)}


def _write_chunk(f, chunk, samples, done: set[str], cfg: GenerateConfig, generator: Generator) -> list[Sample]:
    """Append the samples of ``chunk`` not yet done; return those written."""
    if len(samples) != len(chunk) or any(len(s) != cfg.n for s in samples):
        raise RuntimeError(f"the backend returned {[len(s) for s in samples]} samples for {len(chunk)} "
                           f"problems, not {cfg.n} each")
    written = []
    for (idx, problem), per_problem in zip(chunk, samples):
        for j, sample in enumerate(per_problem):
            sid = sample_id(problem, idx, cfg.seed, j)
            if sid in done:
                continue
            f.write(dumps(to_solution(problem, sid, sample, cfg, generator)) + "\n")
            done.add(sid)
            written.append(sample)
    f.flush()
    return written


def _finish(out: Path, part: Path, previous: set[str], inp) -> None:
    """``out`` = its earlier records (a resumed run's), then the partial file's, in generation order."""
    with atomic_output(out, [inp]) as w:
        if previous:
            with open_text(out) as old:
                for line in old:
                    w.write(line)
        with open(part, encoding="utf-8") as f:
            for line in f:
                w.write(line)


class _Progress:
    """A progress bar over samples with samples/s and tokens/s, and the totals for the summary."""

    def __init__(self, cfg: GenerateConfig, total: int):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc="generate", unit="sample", disable=not cfg.progress)
        self.start, self.written, self.tokens = time.perf_counter(), 0, 0

    def add(self, samples: list[Sample]) -> None:
        self.written += len(samples)
        self.tokens += sum(s.tokens for s in samples)
        self.bar.update(len(samples))
        self.bar.set_postfix(tok_s=f"{self.rate(self.tokens):.0f}", refresh=False)

    @property
    def seconds(self) -> float:
        return round(time.perf_counter() - self.start, 3)

    def rate(self, count: int) -> float:
        return round(count / max(self.seconds, 1e-9), 2)

    def close(self) -> None:
        self.bar.close()


__all__ = ["generate_file", "part_path", "read_problem_file", "sample_id", "to_solution"]
