"""``prmkit label auto``: solutions in, automatically labelled solutions out, resumably.

:func:`label_solutions` labels a list in memory (what the lab's studies call); :func:`label_file` reads a
solution file and writes through a partial file beside ``OUT`` (``.OUT.part``, appended a few solutions
at a time and flushed), renamed into ``OUT`` when every solution is done. A killed run loses at most the
solutions in flight: a rerun skips every solution already in ``OUT`` or the partial file (by id) and its
rollouts come from the cache (:class:`~prmkit.label.auto.rollouts.RolloutCache`), so nothing finished is
sampled twice.

>>> import os, tempfile
>>> from prmkit.generate.config import GenerateConfig
>>> from prmkit.io import read_solutions, write_records
>>> from prmkit.lab import generate, make_problems, preset
>>> cfg = preset("quick")
>>> d = tempfile.mkdtemp(); src = os.path.join(d, "in.jsonl"); out = os.path.join(d, "out.jsonl")
>>> _ = write_records(src, generate(make_problems(cfg.domain, 3, seed=0), cfg.generator, 2, seed=0))
>>> gen = GenerateConfig(backend="lab", model="quick")
>>> label_file(src, out, AutoLabelConfig(k=4, progress=False), gen)["labelled"]
6
>>> s = next(read_solutions(out)); s.label_source, s.meta["autolabel"]["labeller"], len(s.steps) == len(s.ratings)
('rollout', 'mc', True)
>>> label_file(src, out, AutoLabelConfig(k=4, progress=False), gen)["labelled"]
0
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from itertools import islice
from pathlib import Path

from prmkit.io import (
    NoRecords,
    append_partial,
    dumps,
    finished_lines,
    merge_partial,
    output_keys,
    read_solutions,
    same_file,
)
from prmkit.label.auto.config import JUDGE_METHODS, AutoLabelConfig
from prmkit.label.auto.methods import label_chunk
from prmkit.label.auto.rollouts import RolloutCache, Rollouts
from prmkit.schema import Solution


def solution_key(record) -> str:
    """What identifies a solution across reruns: its id, else a hash of its problem and steps."""
    if isinstance(record, dict):
        if record.get("id") is not None:
            return record["id"]
        record = Solution.from_dict(record)  # the steps it took, as the schema reads them
    if record.id is not None:
        return record.id
    return hashlib.blake2b("\x1f".join([record.problem.problem, *record.texts]).encode(), digest_size=8).hexdigest()


def cache_path(out: str | os.PathLike, cfg: AutoLabelConfig) -> Path:
    """The rollout cache: ``cfg.cache``, else ``OUT`` + ``.rollouts.jsonl`` beside it."""
    out = Path(out)
    return Path(cfg.cache) if cfg.cache else out.with_name(out.name + ".rollouts.jsonl")


class Labeller:
    """The rollout engine and the judge a method needs, opened once, closed by :meth:`close`."""

    def __init__(self, cfg: AutoLabelConfig, gen_cfg=None, backend=None, judge=None, grade=None,
                 cache: RolloutCache | None = None, on_sampled=None):
        from prmkit.generate.backend import make_backend

        self.cfg, self.owned = cfg, []
        self.rollouts = None
        if cfg.rollouts:
            if backend is None:
                backend = make_backend(gen_cfg)
                self.owned.append(backend)
            self.rollouts = Rollouts(backend, cache, grade, on_sampled)
        if judge is None and cfg.method in JUDGE_METHODS:
            from prmkit.label.auto.judge import Judge

            judge = Judge.from_config(cfg)
            self.owned.append(judge)
        self.judge = judge

    @property
    def settings(self) -> dict:
        from prmkit.label.auto.methods import settings_of

        return settings_of(self.cfg, self.rollouts)

    def label(self, solutions: list[Solution]) -> list[Solution]:
        return label_chunk(solutions, self.cfg, self.rollouts, self.judge)

    def close(self) -> None:
        for thing in self.owned:
            thing.close()
        if self.rollouts is not None:
            self.rollouts.cache.close()


def label_solutions(solutions: list[Solution], cfg: AutoLabelConfig, gen_cfg=None, backend=None, judge=None,
                    grade=None, cache: str | os.PathLike | None = None) -> tuple[list[Solution], dict]:
    """Labels of ``solutions`` in memory, and a summary of the cost (rollouts sampled and cached)."""
    labeller = Labeller(cfg, gen_cfg, backend, judge, grade, RolloutCache(cache))
    out: list[Solution] = []
    start = time.perf_counter()
    try:
        chunks = iter(solutions)
        while chunk := list(islice(chunks, cfg.flush_every)):
            out.extend(labeller.label(chunk))
    finally:
        labeller.close()
    return out, summary_of(out, labeller, time.perf_counter() - start)


def summary_of(records: list[Solution], labeller: Labeller, seconds: float) -> dict:
    """Counts and cost of a labelling run: what was labelled, the rollouts sampled now and cached, the
    judge replies that could not be read."""
    info = [r.meta["autolabel"] for r in records]
    out = {"labelled": len(records), "seconds": round(seconds, 3),
           "rollouts": sum(i["cost"].get("rollouts", 0) for i in info),
           "judge_calls": sum(i["cost"].get("judge_calls", 0) for i in info),
           "judge_unparseable": sum("unparseable" in i.get("judge", {}) for i in info)}
    if labeller.rollouts is not None:
        c = labeller.rollouts.counts
        out.update(rollouts_sampled=c.sampled, rollouts_cached=c.cached, cache_hit_rate=round(c.hit_rate, 4),
                   rollout_tokens_sampled=c.tokens, rollouts_per_s=round(c.sampled / max(seconds, 1e-9), 1))
    if labeller.cfg.method == "consensus":
        out["consensus_kept"] = sum(bool(i.get("consensus")) for i in info)
    return out


def label_file(inp: str | os.PathLike, out: str | os.PathLike, cfg: AutoLabelConfig | None = None, gen_cfg=None,
               backend=None, judge=None, grade=None, input_format: str = "prmkit", log=print) -> dict:
    """Label every solution of ``inp`` into ``out`` (see the module docstring); a summary."""
    cfg = cfg or AutoLabelConfig()
    out = Path(out)
    part = out.with_name(f".{out.name}.part")
    if same_file(out, cache_path(out, cfg)) or same_file(inp, cache_path(out, cfg)):
        raise ValueError(f"--cache {cache_path(out, cfg)} is the input or the output: give the cache its own file")
    solutions = _read(inp, input_format)  # before --no-resume deletes anything: a bad input changes nothing
    if not cfg.resume:
        for p in (part, out, cache_path(out, cfg)):
            p.unlink(missing_ok=True)
    held = output_keys(out, keyed) | finished_lines(part, keyed)
    bar = None
    labeller = Labeller(cfg, gen_cfg, backend, judge, grade, RolloutCache(cache_path(out, cfg)),
                        on_sampled=lambda n: bar.set_postfix(rollouts=labeller.rollouts.counts.sampled, refresh=False))
    try:
        check_settings(out, cfg, labeller.settings, {settings for _, settings in held})
    except ValueError:
        labeller.close()
        raise
    done = {key for key, _ in held}
    todo = [s for s in solutions if solution_key(s) not in done]
    bar = _bar(cfg, len(todo))
    written: list[Solution] = []
    start = time.perf_counter()
    try:
        with append_partial(part) as f:  # left empty (an early stop): deleted
            chunks = iter(todo)
            while chunk := list(islice(chunks, cfg.flush_every)):
                records = labeller.label(chunk)
                f.write("".join(dumps(r) + "\n" for r in records))
                f.flush()
                written += records
                bar.update(len(chunk))
    except BaseException:
        if part.exists():  # else nothing was finished, and nothing is kept
            log(f"prmkit label auto: stopped; finished solutions are kept in {part} and a rerun resumes from them "
                f"(rollouts from {cache_path(out, cfg)})")
        raise
    finally:
        bar.close()
        labeller.close()
    if part.exists():
        merge_partial(out, part, solution_key, [inp])
    return {**summary_of(written, labeller, time.perf_counter() - start), "skipped_already_done": len(done),
            "solutions": len(solutions)}


def keyed(record: dict) -> tuple[str, str]:
    """(solution key, the labelling settings it records) of a written record."""
    return solution_key(record), json.dumps(record.get("meta", {}).get("autolabel", {}).get("settings"), sort_keys=True)


def check_settings(out: Path, cfg: AutoLabelConfig, settings: dict, held: set[str]) -> None:
    """Refuse to resume into an ``OUT`` (or partial file) labelled with other ``settings`` (another ``--rollouts``,
    method, generator or grader): its solutions would count as done and silently keep their old labels."""
    want = json.dumps(settings, sort_keys=True)
    if other := sorted(held - {want}):
        raise ValueError(f"{out} (or its partial file) holds labels made with {other[0]}, not {want}: a rerun "
                         f"would keep them. Write another OUT (--cache {cache_path(out, cfg)} reuses its rollouts), "
                         "or --no-resume to start over (that deletes OUT's rollout cache too)")


def _read(path, fmt: str) -> list[Solution]:
    """The solutions to label; none is an error (an empty OUT would look like a finished run)."""
    if fmt == "prmkit":
        solutions = list(read_solutions(path))
    else:
        from prmkit.convert import read_solutions_only

        solutions = read_solutions_only(path, fmt, command="label auto")
    if not solutions:
        raise NoRecords(path)
    return solutions


def _bar(cfg: AutoLabelConfig, total: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"label {cfg.method}", unit="solution", disable=not cfg.progress)
