"""``prmkit search``: search every problem of a file with a generator backend and a PRM, into a JSONL file.

Each output line is one problem's :meth:`~prmkit.search.core.SearchResult.record` (the chosen solution, the
trace, the cost) with ``stamp``: what the result depends on (the search settings, the backend's identity, the
PRM's weights). Problems are searched in chunks; each finished chunk is appended to ``.OUT.part``, so a stopped
run resumes where it stopped, and a rerun with other settings or models is refused rather than mixed in.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from prmkit.config import differing
from prmkit.generate.config import GenerateConfig
from prmkit.search.strategies import SearchConfig

GENERATION_ONLY = ("n", "seed", "resume", "shard", "flush_every", "progress")
"""Generation settings a search sets itself (how many samples, their seed) or has no use for."""


@dataclass(frozen=True)
class SearchRunConfig(SearchConfig):
    """``prmkit search``: the strategy's settings, the PRM, the generator (``generate``: a ``prmkit generate``
    config) and how many problems go to the backend at once."""

    prm: str = field(default="", metadata={"help": "the PRM: a folder written by `prmkit train prm`"})
    prm_url: str = field(default="", metadata={
        "help": "or a PRM served by `prmkit serve --scorer` (its API root, http://host:port/v1), scored over /v1/score"})
    prm_device: str = field(default="auto", metadata={"help": "where the PRM runs: auto, cpu or cuda"})
    incremental: bool = field(default=False, metadata={
        "help": "keep each scored prefix's key/value cache, so a round runs the PRM on new tokens only "
                "(prmkit.search.incremental: a round's prefixes in one batch; in fp32 the same scores to 1e-5; "
                "bench/bench_incremental_scoring.py)"})
    chunk: int = field(default=8, metadata={"help": "problems searched together (one batch per round)"})
    generate: GenerateConfig = field(default_factory=GenerateConfig)


def stamp_of(cfg: SearchRunConfig, backend, scorer=None) -> dict:
    """What a search result depends on: every search setting, what one step is, the generator's identity, the PRM's
    weights (a served PRM's as its server reports them: the same weights served elsewhere give the same stamp)."""
    from prmkit.model.identity import weights_digest

    settings = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(SearchConfig)}
    steps = {"steps": cfg.generate.steps, "step_separator": cfg.generate.step_separator}  # what one step is
    if cfg.prm_url:
        prm = {"prm": "served", "prm_weights": scorer.identity["scorer_weights"]}
    else:
        prm = {"prm": cfg.prm, "prm_weights": weights_digest(cfg.prm)}
        if cfg.incremental:  # (only when set: outputs written before the option resume as they were)
            prm["prm_incremental"] = True
    return {"search": settings, "steps": steps, "generator": backend.identity(), **prm}


def check_prm(cfg: SearchRunConfig) -> None:
    """Refuse settings that name no PRM, or two, or a served one with ``incremental``."""
    if bool(cfg.prm) == bool(cfg.prm_url):
        raise ValueError("prmkit search needs one PRM: --prm (a folder written by `prmkit train prm`) or --prm-url "
                         "(a `prmkit serve --scorer` server)")
    if cfg.prm_url and cfg.incremental:
        raise ValueError("--incremental keeps caches in this process: it needs --prm, not --prm-url")


def make_scorer(cfg: SearchRunConfig):
    """The PRM of ``cfg``: the folder ``prm`` loaded in this process, or the server at ``prm_url``."""
    from prmkit.search.adapters import PRMScorer, ServedScorer

    check_prm(cfg)
    if cfg.prm_url:
        return ServedScorer(cfg.prm_url)
    from prmkit.device import torch_device

    if cfg.incremental:
        from prmkit.search.incremental import IncrementalPRMScorer

        return IncrementalPRMScorer(cfg.prm, device=str(torch_device(cfg.prm_device)))
    return PRMScorer(cfg.prm, device=str(torch_device(cfg.prm_device)))


def record_id(record: dict) -> str:
    """The problem an output line answers (its key, :func:`prmkit.generate.backend.problem_key`)."""
    return record["id"]


def search_file(inp: str, out: str, cfg: SearchRunConfig, input_format: str = "prmkit", progress: bool = True) -> dict:
    """Search every problem of ``inp``; write ``out``; return a summary (problems, seconds, mean cost)."""
    from prmkit.generate.backend import make_backend, problem_key
    from prmkit.generate.run import read_problem_file
    from prmkit.io import finished_lines, merge_partial, output_keys
    from prmkit.search.adapters import BackendExpander

    check_prm(cfg)  # before anything is loaded
    problems = read_problem_file(inp, input_format)
    out_path = Path(out)
    part = out_path.with_name(f".{out_path.name}.part")
    backend, scorer = make_backend(dataclasses.replace(cfg.generate, seed=cfg.seed)), None
    start = time.perf_counter()
    try:  # the backend and the scorer closed however the search ends (a served scorer holds a connection)
        scorer = make_scorer(cfg)
        stamp = stamp_of(cfg, backend, scorer)
        check_stamps([out_path, part], stamp)
        done = output_keys(out_path, record_id) | finished_lines(part, record_id)
        todo = [p for p in problems if problem_key(p) not in done]
        totals = search_into(part, todo, len(problems), BackendExpander(backend, cfg.generate.steps), scorer, cfg,
                             stamp, progress)
    finally:
        backend.close()
        if hasattr(scorer, "close"):
            scorer.close()
    merge_partial(out_path, part, record_id, inputs=[inp])
    searched = max(len(todo), 1)
    return {"problems": len(problems), "searched": len(todo), "skipped": len(problems) - len(todo),
            "seconds": round(time.perf_counter() - start, 2), "strategy": cfg.strategy,
            **{f"mean_{k}": round(v / searched, 1) for k, v in totals.items()}}


def search_into(part: Path, todo: list, total: int, expander, scorer, cfg: SearchRunConfig, stamp: dict,
                progress: bool) -> dict:
    """Search the problems ``todo`` a chunk at a time, appending each result to ``part`` as it is found; the summed
    costs."""
    from tqdm.auto import tqdm

    from prmkit.generate.backend import problem_key
    from prmkit.io import append_partial
    from prmkit.search.strategies import search

    totals = {"generated_tokens": 0, "prm_calls": 0, "prm_tokens": 0}
    start = time.perf_counter()
    with append_partial(part) as f, tqdm(total=total, initial=total - len(todo), unit="problem",
                                         desc=f"search ({cfg.strategy})", disable=not progress) as bar:
        for s in range(0, len(todo), cfg.chunk):
            chunk = todo[s:s + cfg.chunk]
            for problem, result in zip(chunk, search(chunk, expander, scorer, cfg)):
                f.write(json.dumps({"id": problem_key(problem), **result.record(), "stamp": stamp}) + "\n")
                for k in totals:
                    totals[k] += getattr(result.cost, k)
            f.flush()
            bar.update(len(chunk))
            bar.set_postfix(tokens_per_s=f"{totals['generated_tokens'] / (time.perf_counter() - start):.0f}")
    return totals


def check_stamps(paths: list[Path], stamp: dict) -> None:
    """Refuse an output (or its partial file) that holds results of another search, naming what differs."""
    for path in paths:
        if not path.exists():
            continue
        from prmkit.io import open_text

        with open_text(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip() or not line.endswith("\n"):
                    continue
                theirs = json.loads(line).get("stamp")
                if theirs != json.loads(json.dumps(stamp)):
                    differ = differing(stamp, theirs)
                    raise ValueError(f"{path}, line {number}: a result of another search (it differs in "
                                     f"{', '.join(differ) or 'its stamp'}): write to another OUT, or delete it")


__all__ = ["GENERATION_ONLY", "SearchRunConfig", "check_prm", "check_stamps", "make_scorer", "search_file", "search_into", "stamp_of"]
