"""Early stopping: the run ends when the held-out split stops improving, and keeps its best weights."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from prmkit.io import write_records
from prmkit.schema import Solution
from prmkit.testing.toydata import make_solutions
from prmkit.train.config import TrainConfig
from prmkit.train.early_stop import EarlyStop
from prmkit.train.loop import train

torch.set_num_threads(1)

values = st.lists(st.one_of(st.floats(0, 1), st.just(math.nan)), min_size=1, max_size=30)


@given(values, st.integers(1, 5), st.sampled_from(["eval_loss", "step_auroc"]))
def test_early_stop_keeps_the_first_best_and_counts_evaluations_since(seq, patience, metric):
    s = EarlyStop(metric, patience)
    better = max if metric == "step_auroc" else min
    for i, v in enumerate(seq):
        seen = [x for x in seq[:i] if not math.isnan(x)]
        expect = not math.isnan(v) and (not seen or better(seen + [v]) == v != better(seen))
        assert s.update(10 * (i + 1), v) is expect
    finite = [(x, i) for i, x in enumerate(seq) if not math.isnan(x)]
    if not finite:
        assert math.isnan(s.best) and s.best_step == 0 and s.stop is (len(seq) >= patience)
        return
    best = better(x for x, _ in finite)
    first = next(i for x, i in finite if x == best)
    assert s.best == best and s.best_step == 10 * (first + 1)
    assert s.since_best == len(seq) - 1 - first and s.stop is (s.since_best >= patience)
    assert EarlyStop.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_no_stop_before_min_steps():
    s = EarlyStop("eval_loss", patience=1, min_steps=30)
    s.update(10, 0.5), s.update(20, 0.6)
    assert not s.stop
    s.update(30, 0.7)
    assert s.stop and s.best_step == 10


def test_min_delta_asks_for_a_real_improvement():
    s = EarlyStop("step_auroc", patience=2, min_delta=0.01)
    assert s.update(1, 0.80) and not s.update(2, 0.805) and s.update(3, 0.82) and s.best_step == 3


def _noise_run(tmp_path, **kw) -> TrainConfig:
    """A run built to overfit: step labels drawn at random, so what the model learns of the training set
    only makes its held-out loss worse after the first steps."""
    rng = random.Random(0)
    sols = [Solution.from_steps(s.problem, s.texts, ratings=[rng.choice([1, -1]) for _ in s.texts], id=s.id,
                                answer=s.answer, grade=s.grade, label_source="oracle")
            for s in make_solutions(64, seed=3)]
    write_records(tmp_path / "noise.jsonl", sols)
    base = dict(data=str(tmp_path / "noise.jsonl"), out=str(tmp_path / "out"), eval_fraction=0.5, max_steps=80,
                batch_size=8, lr=3e-3, eval_every=4, save_every=8, early_stop_patience=3, select_metric="eval_loss",
                progress=False, tensorboard=False, max_length=128, allow_truncation=True)  # noise: a cut step is moot
    return TrainConfig(**{**base, **kw})


def _evals(out) -> list[dict]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if "eval_loss" in r]


@pytest.mark.slow
def test_a_run_that_overfits_stops_early_and_keeps_its_best_weights(tmp_path):
    cfg = _noise_run(tmp_path)
    final = train(cfg)
    assert final["stopped_early"] and final["best_step"] < final["last_step"] < cfg.max_steps
    evals = _evals(tmp_path / "out")[:-1]  # the last line is the final (restored) evaluation
    best = min(evals, key=lambda r: r["eval_loss"])
    assert final["best_step"] == best["step"]
    assert final["eval_loss"] == pytest.approx(best["eval_loss"], abs=1e-6)  # the saved model is the best one
    assert final["last_step"] == final["best_step"] + cfg.early_stop_patience * cfg.eval_every
    from prmkit.score import Scorer

    assert Scorer(tmp_path / "out", device="cpu").card.kind == "prm"


@pytest.mark.slow
def test_an_interrupted_early_stopping_run_stops_where_the_whole_one_does(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    whole = train(_noise_run(tmp_path / "a"))
    cut = _noise_run(tmp_path / "b", stop_after=8)
    assert train(cut) == {"stopped_at": 8}
    resumed = train(_noise_run(tmp_path / "b"))
    assert resumed["best_step"] == whole["best_step"] and resumed["last_step"] == whole["last_step"]
    assert resumed["eval_loss"] == pytest.approx(whole["eval_loss"], abs=1e-6)


def test_early_stopping_needs_held_out_data_and_evaluations():
    with pytest.raises(ValueError, match="held-out"):
        TrainConfig(data="d", early_stop_patience=2, eval_fraction=0)
    with pytest.raises(ValueError, match="eval_every"):
        TrainConfig(data="d", early_stop_patience=2, eval_every=0)
