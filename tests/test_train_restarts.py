"""Restarts: the best of several seeds kept on held-out labelled data; a stalled run is caught."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch

from prmkit.io import write_records
from prmkit.testing.toydata import make_solutions
from prmkit.train.config import TrainConfig
from prmkit.train.data import Example
from prmkit.train.loop import train
from prmkit.train.plateau import class_prior_entropy, plateau_check, prior_loss
from prmkit.train.restarts import pick, train_with_restarts

torch.set_num_threads(1)


def _fake_train(stalls: set[int]):
    """A stand-in for one run: writes a model file; a run whose seed is in ``stalls`` ends at chance."""
    seen = []

    def train_once(cfg):
        seen.append(cfg)
        from pathlib import Path

        Path(cfg.out).mkdir(parents=True, exist_ok=True)
        (Path(cfg.out) / "model.safetensors").write_text(f"seed {cfg.seed}")
        return {"step_auroc": 0.5 if cfg.seed in stalls else 0.8 + cfg.seed / 1e5, "eval_loss": 1.0}

    return train_once, seen


def test_a_stalled_seed_is_not_kept_and_every_restart_shares_the_split(tmp_path):
    cfg = TrainConfig(data="d", out=str(tmp_path / "out"), restarts=3, seed=7)
    train_once, seen = _fake_train(stalls={7, 2007})
    metrics = train_with_restarts(cfg, train_once)
    assert [c.seed for c in seen] == [7, 1007, 2007] and {c.split_seed for c in seen} == {7}
    assert metrics["step_auroc"] > 0.8 and (tmp_path / "out" / "model.safetensors").read_text() == "seed 1007"
    record = json.loads((tmp_path / "out" / "restarts.json").read_text())
    assert record["chosen"] == 1 and record["metric"] == "step_auroc" and len(record["runs"]) == 3
    assert not (tmp_path / "out" / "restarts").exists()
    again, seen_again = _fake_train(stalls=set())
    assert train_with_restarts(cfg, again) == metrics and seen_again == []  # a finished job is not redone


def test_an_interrupted_restart_job_keeps_its_finished_runs(tmp_path):
    cfg = TrainConfig(data="d", out=str(tmp_path / "out"), restarts=2)
    first, _ = _fake_train(stalls=set())
    calls = []

    def dies_on_second(c):
        calls.append(c.seed)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return first(c)

    with pytest.raises(KeyboardInterrupt):
        train_with_restarts(cfg, dies_on_second)
    rerun, seen = _fake_train(stalls=set())
    train_with_restarts(cfg, rerun)
    assert [c.seed for c in seen] == [1000]  # restart 0 was finished and kept


def test_restarts_need_held_out_labels_and_pick_ignores_nan(tmp_path):
    with pytest.raises(ValueError, match="held-out"):
        train_with_restarts(TrainConfig(data="d", out=str(tmp_path), restarts=2, eval_fraction=0), _fake_train(set())[0])
    assert pick([{"step_auroc": math.nan}, {"step_auroc": 0.6}], "step_auroc") == 1
    with pytest.raises(ValueError, match="no restart"):
        pick([{"step_auroc": math.nan}], "step_auroc")


def test_real_restarts_keep_the_run_with_the_best_held_out_auroc(tmp_path):
    write_records(tmp_path / "train.jsonl", make_solutions(96, seed=1))
    cfg = TrainConfig(data=str(tmp_path / "train.jsonl"), out=str(tmp_path / "out"), restarts=2, eval_fraction=0.25,
                      max_steps=4, batch_size=8, eval_every=0, save_every=0, progress=False, tensorboard=False,
                      max_length=128)
    final = train(cfg)
    record = json.loads((tmp_path / "out" / "restarts.json").read_text())
    aurocs = [r["step_auroc"] for r in record["runs"]]
    assert final["step_auroc"] == max(aurocs) and record["chosen"] == aurocs.index(max(aurocs))
    assert len({r["eval_steps"] for r in record["runs"]}) == 1  # the same held-out split for every restart
    from prmkit.score import Scorer

    assert Scorer(tmp_path / "out", device="cpu").card.kind == "prm"


def test_a_loss_at_the_class_prior_entropy_is_flagged(capsys):
    examples = [Example([1, 2], [1], [[1.0, 0.0]]), Example([1, 2], [1], [[0.0, 1.0]]),
                Example([1, 2], [1], [[1.0, 0.0]]), Example([1, 2], [1], [[1.0, 0.0]])]
    prior = class_prior_entropy(examples)
    assert prior == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    run = SimpleNamespace(train=examples, accelerator=SimpleNamespace(print=print))
    assert plateau_check(run, [prior + 0.001] * 5)["plateau"] is True
    assert "class-prior entropy" in capsys.readouterr().out
    assert plateau_check(run, [0.1] * 5)["plateau"] is False


def test_the_held_out_check_catches_a_stall_that_noisy_batch_losses_hide(capsys):
    # the case seen in the lab: an ORM whose last batch losses (0.48) sat above the prior entropy (0.40)
    # by more than the margin, while its held-out loss was the base rate's
    train = [Example([1, 2], [1], [[1.0, 0.0]])] + [Example([1, 2], [1], [[0.0, 1.0]])] * 6
    held = [Example([1, 2], [1], [[1.0, 0.0]])] + [Example([1, 2], [1], [[0.0, 1.0]])] * 5
    run = SimpleNamespace(train=train, eval=held, accelerator=SimpleNamespace(print=print))
    base_rate = prior_loss(train, held)
    assert base_rate == pytest.approx(-(math.log(1 / 7) + 5 * math.log(6 / 7)) / 6)
    stalled = plateau_check(run, [0.48] * 5, eval_loss=base_rate - 0.01)
    assert stalled["plateau"] is True and stalled["eval_prior_loss"] == pytest.approx(base_rate)
    assert "no better than the base rate" in capsys.readouterr().out
    assert plateau_check(run, [0.48] * 5, eval_loss=base_rate + 0.3)["plateau"] is True  # worse than the base rate
    assert plateau_check(run, [0.48] * 5, eval_loss=base_rate - 0.1)["plateau"] is False


def test_restarts_reject_stalled_runs_before_choosing():
    runs = [{"eval_loss": 0.30, "plateau": True}, {"eval_loss": 0.35, "plateau": False}]
    assert pick(runs, "eval_loss") == 1  # the lower loss stalled: it is not chosen
    assert pick([dict(r, plateau=True) for r in runs], "eval_loss") == 0  # all stalled: the best of them


def test_a_run_built_to_stall_is_flagged_and_recorded_as_rejected(tmp_path):
    write_records(tmp_path / "train.jsonl", make_solutions(96, seed=1))
    cfg = TrainConfig(data=str(tmp_path / "train.jsonl"), out=str(tmp_path / "out"), restarts=2, eval_fraction=0.25,
                      max_steps=4, batch_size=8, eval_every=0, save_every=0, progress=False, tensorboard=False,
                      max_length=128, lr=0.0)  # nothing moves: the model keeps its initial guess
    final = train(cfg)
    record = json.loads((tmp_path / "out" / "restarts.json").read_text())
    assert final["plateau"] is True and record["rejected"] == [0, 1]
    assert all(r["eval_loss"] >= r["eval_prior_loss"] - 0.02 for r in record["runs"])


def test_restarts_are_redone_without_resume_or_after_a_change(tmp_path):
    import dataclasses

    cfg = TrainConfig(data="d", out=str(tmp_path / "out"), restarts=2)
    train_with_restarts(cfg, _fake_train(set())[0])
    for changed in (dataclasses.replace(cfg, resume=False), dataclasses.replace(cfg, lr=0.5)):
        again, seen = _fake_train(set())
        train_with_restarts(changed, again)
        assert [c.seed for c in seen] == [0, 1000], changed
