"""A tiny model really trained on CPU: parameters change, loss is finite, splits and resumes are exact."""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch
from safetensors.torch import load_file

from prmkit.cli import main
from prmkit.testing.toydata import make_solutions
from prmkit.train.checkpoints import latest_checkpoint
from prmkit.train.config import TrainConfig
from prmkit.train.loop import build_model, train

torch.set_num_threads(1)

QUICK = {"max_steps": 6, "batch_size": 8, "eval_every": 3, "save_every": 0, "progress": False, "tensorboard": False,
             "log_every": 1, "warmup_steps": 2, "max_length": 128}


@pytest.fixture(scope="module")
def data(toy_data):
    return toy_data


def _cfg(data, out, **kw) -> TrainConfig:
    return TrainConfig(data=str(data / "train.jsonl"), eval_data=str(data / "eval.jsonl"), out=str(out), **{**QUICK, **kw})


def _weights(folder) -> dict:
    return load_file(str(folder / "model.safetensors"))


@pytest.mark.parametrize("head, extra", [("lm", {}), ("classify", {"classes": 3, "neutral": "class"}),
                                         ("regress", {"label_source": "value"})])
def test_few_steps_change_parameters_and_loss_is_finite(data, tmp_path, head, extra):
    cfg = _cfg(data, tmp_path / head, head=head, **extra)
    sols = make_solutions(96, seed=1)
    before, *_ = build_model(cfg, [t for s in sols for t in [s.problem.problem, *s.texts]])
    train(cfg)
    after = _weights(tmp_path / head)
    changed = [k for k, v in before.backbone.state_dict().items() if k in after and not torch.equal(v, after[k])]
    assert len(changed) >= len(after) // 2, f"only {changed} changed"
    lines = [json.loads(x) for x in (tmp_path / head / "metrics.jsonl").read_text().splitlines()]
    losses = [x["loss"] for x in lines if "loss" in x]
    assert len(losses) == 6 and all(math.isfinite(v) for v in losses)
    assert any("step_auroc" in x for x in lines)
    card = json.loads((tmp_path / head / "prmkit_config.json").read_text())
    assert card["head"]["kind"] == head


def test_grad_accumulation_equals_bigger_batch(data, tmp_path):
    train(_cfg(data, tmp_path / "a", batch_size=8, grad_accum=2, max_steps=3))
    train(_cfg(data, tmp_path / "b", batch_size=16, grad_accum=1, max_steps=3))
    a, b = _weights(tmp_path / "a"), _weights(tmp_path / "b")
    assert max((a[k] - b[k]).abs().max().item() for k in a) < 1e-5


def test_killed_and_resumed_equals_uninterrupted(data, tmp_path):
    train(_cfg(data, tmp_path / "full", max_steps=8, save_every=4))
    stopped = train(_cfg(data, tmp_path / "resumed", max_steps=8, save_every=4, stop_after=4))
    assert stopped == {"stopped_at": 4} and latest_checkpoint(tmp_path / "resumed").name == "step-0000004"
    assert not (tmp_path / "resumed" / "model.safetensors").exists()
    train(_cfg(data, tmp_path / "resumed", max_steps=8, save_every=4))
    a, b = _weights(tmp_path / "full"), _weights(tmp_path / "resumed")
    assert all(torch.equal(a[k], b[k]) for k in a), "resumed run differs from the uninterrupted one"
    full = (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()
    resumed = (tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()
    strip = lambda lines: [{k: v for k, v in json.loads(x).items() if k != "time"} for x in lines]
    assert strip(full) == strip(resumed)


def test_orm_and_lora(data, tmp_path):
    train(_cfg(data, tmp_path / "orm", kind="orm", head="classify"))
    assert json.loads((tmp_path / "orm" / "prmkit_config.json").read_text())["kind"] == "orm"
    train(_cfg(data, tmp_path / "lora", lora=True, lr=1e-2))
    assert not any("lora" in k for k in _weights(tmp_path / "lora"))  # merged: a plain model folder


def test_cli_recipe_and_flag_precedence(data, tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"data: {data / 'train.jsonl'}\nmax_steps: 99\nbatch_size: 8\nlr: 0.01\nprogress: false\n"
                      "tensorboard: false\neval_fraction: 0.25\nsave_every: 0\n")
    out = tmp_path / "cli"
    assert main(["train", "prm", "--recipe", str(recipe), "--max-steps", "2", "--out-dir", str(out),
                 "--eval-every", "0"]) == 0
    saved = json.loads((out / "train_config.json").read_text())
    assert saved["max_steps"] == 2 and saved["lr"] == 0.01 and saved["kind"] == "prm"
    with pytest.raises(ValueError, match="unknown setting"):
        from prmkit.train.config import resolve
        resolve(TrainConfig, {"max_stpes": 3})


def _tensorboard_scalars(folder) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder / "tensorboard"))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_tensorboard_mirrors_metrics_and_resumes_without_duplicates(data, tmp_path):
    pytest.importorskip("tensorboard", reason="TensorBoard is optional; the dev install has it")
    train(_cfg(data, tmp_path / "full", max_steps=8, save_every=4, tensorboard=True))
    lines = [json.loads(x) for x in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    scalars = _tensorboard_scalars(tmp_path / "full")
    logged = [(x["step"], x["loss"]) for x in lines if "loss" in x]
    assert [s for s, _ in scalars["loss"]] == [s for s, _ in logged] == list(range(1, 9))
    assert all(math.isclose(a, b, rel_tol=1e-6) for (_, a), (_, b) in zip(scalars["loss"], logged))
    assert "step_auroc" in scalars

    # killed at step 6 after a checkpoint at 4 (stop_after saves at 6: that checkpoint is removed), so the
    # resumed run starts from 4 and its events must replace the killed run's 5 and 6
    train(_cfg(data, tmp_path / "resumed", max_steps=8, save_every=4, stop_after=6, tensorboard=True))
    shutil.rmtree(latest_checkpoint(tmp_path / "resumed"))
    assert latest_checkpoint(tmp_path / "resumed").name == "step-0000004"
    train(_cfg(data, tmp_path / "resumed", max_steps=8, save_every=4, tensorboard=True))
    resumed = _tensorboard_scalars(tmp_path / "resumed")
    assert [s for s, _ in resumed["loss"]] == list(range(1, 9))
    assert all(math.isclose(a, b, rel_tol=1e-6) for (_, a), (_, b) in zip(resumed["loss"], scalars["loss"]))
