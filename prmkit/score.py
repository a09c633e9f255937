"""Scoring solutions with a trained PRM or ORM: one forward pass per solution, batches grouped by length
and, where the model allows, packed with no padding (:mod:`prmkit.model.packing`).

:class:`Scorer` is the interface: ``Scorer(model_dir).probabilities(problems, step_lists)`` returns, per
solution, an array ``[kept_steps, outputs]`` of class probabilities (output order of
:mod:`prmkit.model.labels`). It formats with the model's saved :class:`~prmkit.model.formatter.FormatConfig`,
so scoring sees exactly what training saw. :func:`score_file` streams a JSONL file through it:

- PRM: every step gets ``p_pos``, ``p_neg`` (``p_neu`` for 3 classes) and ``p_correct`` in ``Step.scores``
  (prefixed ``NAME_`` when ``name`` is not ``prm``); the solution gets ``NAME_product``, ``NAME_min``,
  ``NAME_last``, ``NAME_mean`` (the aggregations asked for, by name, from :mod:`prmkit.evaluate.aggregate`).
- ORM: the solution gets ``NAME`` (default ``orm``) = P(correct) read at its final token.
- Steps dropped by truncation get no scores; the solution records ``NAME_steps_lost``.

Memory stays flat (``chunk`` records at a time), output is written in input order, a rerun skips
records already scored by the same model and settings (``meta.scored_by``; by ``id``, else by position),
adds a new column to an output scored under other names, refuses an output whose scores of this name
came from another model or settings, and under ``accelerate launch`` each process
scores a shard and the main process merges them in order.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

import numpy as np

from prmkit.config import differing
from prmkit.evaluate.aggregate import AGGREGATIONS, aggregate
from prmkit.io import (
    append_partial,
    atomic_output,
    dumps,
    finished_lines,
    open_text,
    read_solutions,
    same_file,
)
from prmkit.model.formatter import TruncationReport, encode, encode_many
from prmkit.model.labels import step_scores
from prmkit.schema import Solution


@dataclass
class ScoreConfig:
    """Settings of ``prmkit score`` (the model's own settings come from its ``prmkit_config.json``)."""

    batch_size: int = field(default=32, metadata={"help": "solutions per forward pass"})
    chunk: int = field(default=1024, metadata={"help": "records read, sorted by length and scored at a time "
                                                        "(bounds memory)"})
    aggregations: list | None = field(default=None, metadata={
        "help": "solution scores to write, by name (product, min, last, mean); unset: the model's own "
                "(its training config's aggregations)"})
    name: str = field(default="", metadata={"help": "score name prefix; default: the model kind (prm or orm)"})
    neutral: str = field(default="", metadata={
        "help": "3-class models: count neutral as positive or negative in p_correct; default: the model's setting"})
    sort_by_length: bool = field(default=True, metadata={"help": "group batches by length (less padding)"})
    packing: str = field(default="auto", metadata={
        "help": "lay each batch's solutions end to end with no padding (same scores, less compute and memory); "
                "auto: when the model allows it", "choices": ("auto", "on", "off")})
    resume: bool = field(default=True, metadata={"help": "skip records this model and these settings already scored in the output or "
                                                        "its partial file (other models' scores: refused or a new column)"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})
    cpu_threads: int = field(default=1, metadata={"help": "torch threads per process on CPU (0: torch's choice)"})
    device: str = field(default="auto", metadata={"help": "auto: CUDA when visible, else CPU; or cpu, cuda",
                                                  "choices": ("auto", "cpu", "cuda")})

    def __post_init__(self):
        bad = [a for a in self.aggregations or () if a not in AGGREGATIONS]
        if bad:
            raise ValueError(f"unknown aggregations {bad} (expected some of {', '.join(AGGREGATIONS)})")
        if self.neutral not in ("", "positive", "negative"):
            raise ValueError(f"neutral must be positive or negative, not {self.neutral!r}")
        if self.batch_size < 1 or self.chunk < 1:
            raise ValueError("batch_size and chunk must be at least 1")


class Scorer:
    """A loaded reward model. ``probabilities(problems, step_lists) -> [array [kept_steps, outputs]]``.

    A model trained with per-token features (:mod:`prmkit.model.features`) computes them from the source
    LM saved in its folder; ``features`` passes a source to share instead (several models reading the
    same LM's surprise then compute it once per solution)."""

    def __init__(self, model_dir: str | os.PathLike, device=None, neutral: str = "", dtype=None,
                 packing: str = "auto", features=None):
        import torch

        from prmkit.model.hub import load_model
        from prmkit.model.packing import choose

        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if dtype is None and str(device).startswith("cuda"):
            dtype = torch.bfloat16
        self.model, self.tokenizer, self.card = load_model(model_dir, device, dtype)
        self.device = device
        self.fmt = self.card.format_config
        self.head = self.card.head_spec
        if neutral and self.head.n_outputs != 3:
            raise ValueError(f"this model has no neutral class (its neutral policy {self.card.neutral!r} was "
                             "fixed in training); --neutral applies to 3-class models only")
        self.neutral = neutral or self.card.score_neutral
        self.truncation = TruncationReport()
        self.packed = choose(packing, self.model.backbone)
        self.features = None
        if self.card.features:  # ``features``: a source shared with other scorers (the same LM), else its own
            from prmkit.model.features import make_source, saved_spec

            self.features = features or make_source(saved_spec(model_dir, self.card.features), device)
            self.features.check_tokenizer(self.tokenizer)

    def probabilities(self, problems: list[str], step_lists: list[list[str]], batch_size: int = 32,
                      sort_by_length: bool = True) -> list[np.ndarray]:
        """Per solution, the class probabilities of each kept step, in one forward pass per solution."""
        return self.probabilities_of(self.encodings(problems, step_lists), batch_size, sort_by_length)

    def encodings(self, problems: list[str], step_lists: list[list[str]]) -> list:
        """The formatter's encoding of each solution, as :meth:`probabilities_of` reads it (truncation counted)."""
        encs = encode_many(self.tokenizer, list(zip(problems, step_lists)), self.fmt)
        for enc in encs:
            self.truncation.add(enc)
        return encs

    def probabilities_of(self, encs: list, batch_size: int = 32, sort_by_length: bool = True) -> list[np.ndarray]:
        """:meth:`probabilities` of solutions already encoded (:meth:`encodings`): for a caller that also needs
        the encodings (a search counting the tokens it scored)."""
        order = sorted(range(len(encs)), key=lambda i: len(encs[i])) if sort_by_length else list(range(len(encs)))
        out: list[np.ndarray] = [None] * len(encs)  # type: ignore[list-item]
        for s in range(0, len(order), batch_size):
            idx = order[s:s + batch_size]
            for i, probs in zip(idx, self._forward([encs[i] for i in idx])):
                out[i] = probs
        return out

    def _forward(self, encs) -> list[np.ndarray]:
        import torch

        from prmkit.model.heads import probabilities
        from prmkit.train.data import Example, collate, model_inputs

        examples = [Example(e.input_ids, e.step_ends or [0], [None] * max(1, len(e.step_ends))) for e in encs]
        if self.features is not None:
            for ex, values in zip(examples, self.features([e.input_ids for e in examples])):
                ex.features = values
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        batch = collate(examples, pad, self.head.n_outputs, self.packed)
        with torch.no_grad():
            logits = self.model(**model_inputs(batch, self.device))
        probs = probabilities(logits).float().cpu().numpy()
        return [probs[i, : len(e.step_ends)] for i, e in enumerate(encs)]

    def per_prefix_probabilities(self, problem: str, steps: list[str]) -> np.ndarray:
        """The slow reference: one forward pass per step prefix, reading the prefix's last step end."""
        rows = []
        for k in range(1, len(steps) + 1):
            enc = encode(self.tokenizer, problem, steps[:k], self.fmt)
            if len(enc.step_ends) < k:
                break
            rows.append(self._forward([enc])[0][-1])
        return np.asarray(rows).reshape(len(rows), -1)

    def annotate(self, solution, probs: np.ndarray, aggregations=None, name: str = "") -> None:
        """Write step and solution scores of one solution in place (see the module docstring for names);
        ``aggregations`` default to the model's own (its card's)."""
        name = name or self.card.kind
        aggregations = self.card.aggregations if aggregations is None else aggregations
        taken = [s for s in solution.steps if s.taken is not None]
        lost = len(taken) - len(probs)
        if self.card.kind == "orm":
            if lost == 0 and len(probs):
                solution.scores[name] = step_scores(list(probs[-1]), self.neutral)["p_correct"]
        else:
            prefix = "" if name == "prm" else f"{name}_"
            for step, row in zip(taken, probs):
                step.scores.update(step_scores(list(row), self.neutral, prefix))
            p = [step_scores(list(row), self.neutral)["p_correct"] for row in probs]
            for how in aggregations:
                if p:
                    solution.scores[f"{name}_{how}"] = aggregate(p, how)
        if lost:
            solution.scores[f"{name}_steps_lost"] = lost


# --- files: streamed, resumable, sharded -------------------------------------------------------------
# A rerun skips records already scored only when they were scored by the same model and settings: every
# record carries ``meta.scored_by[NAME]`` (the model folder, its weights' digest, the settings), and an
# output holding NAME's scores from anything else is refused, never kept. An output scored under other
# names only (a PRM-scored file, now an ORM) gets the new column added to its records.

SCORED_BY = "scored_by"
"""The record's ``meta`` key naming, per score name, the model and settings that wrote those scores."""


def score_stamp(scorer: Scorer, model_dir: str | os.PathLike, cfg: ScoreConfig) -> dict:
    """Everything one score column depends on: the model (folder, weights' digest, kind) and the settings."""
    from prmkit.model.identity import weights_digest

    aggregations = scorer.card.aggregations if cfg.aggregations is None else cfg.aggregations
    return {"model": str(Path(model_dir).resolve()), "weights": weights_digest(model_dir), "kind": scorer.card.kind,
            "aggregations": [] if scorer.card.kind == "orm" else list(aggregations), "neutral": scorer.neutral}


def _key(solution, position: int) -> str:
    return solution.id if solution.id is not None else f"#{position}"


def _record_key(record: dict) -> str:
    return record["id"] if record.get("id") is not None else record["meta"]["prmkit_score_position"]


def _stamp_of(record: dict, name: str) -> dict | None:
    return (record.get("meta") or {}).get(SCORED_BY, {}).get(name)


STEP_SCORES = ("p_pos", "p_neg", "p_neu", "p_correct")
"""The step scores a PRM writes (``NAME_`` before each for a model not named ``prm``)."""


def score_columns(name: str) -> tuple[set[str], set[str]]:
    """The solution and step score keys ``prmkit score --name NAME`` writes, exactly (``prm`` and ``prm_v2``
    are two names: neither's columns are the other's).

    >>> sorted(score_columns("orm")[0])[:3], sorted(score_columns("prm")[1])
    (['orm', 'orm_last', 'orm_mean'], ['p_correct', 'p_neg', 'p_neu', 'p_pos'])
    """
    prefix = "" if name == "prm" else f"{name}_"
    return ({name, f"{name}_steps_lost", *(f"{name}_{how}" for how in AGGREGATIONS)},
            {f"{prefix}{key}" for key in STEP_SCORES})


def _has_column(record: dict, name: str) -> bool:
    return bool(score_columns(name)[0] & set(record.get("scores") or {}))


def check_output(path: Path, name: str, stamp: dict, partial: bool = False) -> None:
    """Refuse to resume into ``path`` (an output or, ``partial``, a partial file) when it holds ``name`` scores
    written by another model or settings, or of unknown origin; say what differs and the ways out. Every
    record of a partial file must carry this run's ``name`` scores (one left by a run under another name is
    no part of this one)."""
    if not path.exists():
        return
    with open_text(path) as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            theirs = _stamp_of(record, name)
            if theirs is None and not _has_column(record, name) and not partial:
                continue
            if theirs != stamp:
                what = (f"is the partial file of another run (its records carry no {name!r} scores)"
                        if partial and theirs is None else f"holds {name!r} scores {_difference(theirs, stamp)}")
                raise ValueError(f"{path}:{number}: {what}; refusing to keep them. Rerun with --no-resume to "
                                 "replace them, --name NEW to add another column, or write another OUT")


def _difference(theirs: dict | None, ours: dict) -> str:
    if theirs is None:
        return "of unknown origin (no meta.scored_by: written before prmkit recorded which model scored a file)"
    keys = differing(ours, theirs)
    return "from another model or settings (" + "; ".join(
        f"{k}: {theirs.get(k)!r} there, {ours.get(k)!r} now" for k in keys) + ")"


def _joined(inp, out: Path):
    """``(position, key, record to score, OUT's line when OUT already holds that record)`` for every record of
    ``inp``, in order; ``out`` (written by an earlier run, in input order) is read alongside."""
    old = open_text(out) if out.exists() else contextlib.nullcontext(iter(()))
    with old as lines:
        lines = (line for line in lines if line.strip())
        pending = next(lines, None)
        for i, sol in enumerate(read_solutions(inp)):
            key, line = _key(sol, i), None
            if pending is not None and _record_key(json.loads(pending)) == key:
                line, pending = pending, next(lines, None)
            yield i, key, sol, line
        if pending is not None:
            raise ValueError(f"{out} holds a record {_record_key(json.loads(pending))!r} that {inp} does not (or "
                             "not in this order): it is not a scored copy of this input; write another OUT")


def score_file(model_dir: str | os.PathLike, inp: str | os.PathLike, out: str | os.PathLike,
               cfg: ScoreConfig | None = None, scorer: Scorer | None = None) -> dict:
    """Score every record of ``inp`` into ``out`` (see the module docstring); return a summary."""
    import torch
    from accelerate import PartialState
    from tqdm.auto import tqdm

    from prmkit.device import uses_cuda

    cfg = cfg or ScoreConfig()
    state = PartialState(cpu=not uses_cuda(cfg.device))
    if cfg.cpu_threads and state.device.type == "cpu":
        torch.set_num_threads(cfg.cpu_threads)
    scorer = scorer or Scorer(model_dir, device=state.device, neutral=cfg.neutral, packing=cfg.packing)
    name, stamp = cfg.name or scorer.card.kind, score_stamp(scorer, model_dir, cfg)
    out = Path(out)
    if same_file(inp, out):
        raise ValueError(f"output {out} is the same file as input {inp}; refusing to overwrite the input")
    world, rank = state.num_processes, state.process_index
    shard = _shard_path(out, rank, world)
    if not cfg.resume and state.is_main_process:
        out.unlink(missing_ok=True)  # no resume: an earlier output is replaced, not merged into
    state.wait_for_everyone()
    if not cfg.resume:
        shard.unlink(missing_ok=True)
    in_shard = finished_lines(shard, _record_key)  # first: it cuts a line torn by a killed run
    # this process alone, from nothing: it writes its shard in input order itself, so the merge need not check
    alone = world == 1 and not in_shard and not out.exists()
    check_output(out, name, stamp)
    check_output(shard, name, stamp, partial=True)
    if out.exists():  # an OUT that is no scored copy of this input is refused before anything is scored
        for _ in _joined(inp, out):
            pass
    counts = {"scored": 0, "skipped_already_scored": 0, "added_to_existing": 0}
    bar = tqdm(desc=f"score[{rank}]", unit="sol", disable=not cfg.progress or not state.is_local_main_process)
    with append_partial(shard) as f:  # left empty (a bad input, an early stop): deleted
        todo = _todo(inp, out, name, rank, world, in_shard, counts)
        while batch := list(islice(todo, cfg.chunk)):
            _score_chunk(scorer, batch, cfg, name, stamp, f)
            counts["scored"] += len(batch)
            bar.update(len(batch))
    bar.close()
    state.wait_for_everyone()
    if state.is_main_process:
        _copy_shard(shard, out, counts["scored"]) if alone else _merge(inp, out, name, world)
    state.wait_for_everyone()
    truncation = {**scorer.truncation.to_dict(), "max_length": scorer.fmt.max_length}
    return {**counts, "processes": world, "truncation": truncation}


def _shard_path(out: Path, rank: int, world: int) -> Path:
    return out.with_name(f".{out.name}.part{rank}of{world}")


def _todo(inp, out: Path, name: str, rank: int, world: int, in_shard: set, counts: dict):
    """This process's records still to score: OUT's version of a record (its other columns kept) where OUT
    holds it without ``name`` scores, else the input's; counts what is skipped and what is extended."""
    for i, key, sol, line in _joined(inp, out):
        if i % world != rank:
            continue
        if key in in_shard or (line is not None and _stamp_of(json.loads(line), name) is not None):
            counts["skipped_already_scored"] += 1
            continue
        if line is not None:
            sol = Solution.from_dict(json.loads(line))
            counts["added_to_existing"] += 1
        yield i, sol


def _score_chunk(scorer: Scorer, batch: list, cfg: ScoreConfig, name: str, stamp: dict, f) -> None:
    sols = [s for _, s in batch]
    probs = scorer.probabilities([s.problem.problem for s in sols], [s.texts for s in sols], cfg.batch_size,
                                 cfg.sort_by_length)
    for (i, sol), p in zip(batch, probs):
        clear_scores(sol, name)
        scorer.annotate(sol, p, cfg.aggregations, name)
        sol.meta.setdefault(SCORED_BY, {})[name] = stamp
        if sol.id is None:
            sol.meta["prmkit_score_position"] = f"#{i}"
        f.write(dumps(sol) + "\n")
    f.flush()


def clear_scores(solution, name: str) -> None:
    """Remove ``name``'s solution and step scores (an input scored before, by another model or with other
    aggregations, must not keep a column this run does not rewrite).

    >>> from prmkit.schema import Solution
    >>> s = Solution.from_steps("1+1?", ["2"], ratings=[1]); s.scores.update(prm_product=0.4, orm=0.9)
    >>> s.scores["prm_v2_min"] = 0.3; s.steps[0].scores.update(p_correct=0.4, orm2_p_correct=0.1)
    >>> clear_scores(s, "prm"); s.scores, s.steps[0].scores
    ({'orm': 0.9, 'prm_v2_min': 0.3}, {'orm2_p_correct': 0.1})
    """
    own, steps = score_columns(name)
    for key in own & set(solution.scores):
        del solution.scores[key]
    for step in solution.steps:
        for key in steps & set(step.scores):
            del step.scores[key]
    if SCORED_BY in solution.meta:
        solution.meta[SCORED_BY].pop(name, None)


def _copy_shard(shard: Path, out: Path, scored: int) -> None:
    """Output = the shard, when one process scored every record into it in input order (nothing to merge)."""
    lines = 0
    with open(shard, encoding="utf-8") as f, atomic_output(out) as w:
        for line in f:
            w.write(line)
            lines += 1
    if lines != scored:
        raise RuntimeError(f"{shard}: {lines} records where {scored} were scored; it was changed while scoring")
    shard.unlink()


def _merge(inp, out: Path, name: str, world: int) -> None:
    """Output = in input order, OUT's line for a record it holds with ``name`` scores, else the shards'."""
    shards = [_shard_path(out, r, world) for r in range(world)]
    handles = [open(s, encoding="utf-8") for s in shards]  # noqa: SIM115  (closed in finally)
    try:
        with atomic_output(out, [inp]) as w:
            for i, key, _, line in _joined(inp, out):
                if line is None or _stamp_of(json.loads(line), name) is None:
                    line = handles[i % world].readline()
                    if not line or _record_key(json.loads(line)) != key:
                        raise RuntimeError(f"{shards[i % world]}: record {key!r} missing from the scored shard")
                w.write(line if line.endswith("\n") else line + "\n")
    finally:
        for h in handles:
            h.close()
    for s in shards:
        s.unlink()
