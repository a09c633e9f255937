"""Per-token features and next-token training in the product trainer, and their equivalences.

- an lm run (next-token pretraining) really trains, and its folder loads as a plain causal LM;
- a reward model with ``features: surprise:LM`` trains, saves its adapter and source LM, and scores
  through ``Scorer`` with the same values as the training-time forward;
- the adapter starts at zero: off (as initialised) it gives exactly the backbone's logits;
- packed == padded with features; two gloo processes == one with features (``test_train_ddp``).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from prmkit.io import read_solutions
from prmkit.model.features import FeatureAdapter, SurpriseSource
from prmkit.model.heads import RewardModel
from prmkit.score import Scorer
from prmkit.train.config import TrainConfig
from prmkit.train.data import build_examples, collate, model_inputs
from prmkit.train.loop import build_model, train

torch.set_num_threads(1)

QUICK = {"batch_size": 8, "eval_every": 0, "save_every": 0, "progress": False, "tensorboard": False,
         "log_every": 1, "warmup_steps": 2, "max_length": 128}


@pytest.fixture(scope="module")
def data(toy_data):
    return toy_data


@pytest.fixture(scope="module")
def base(data, tmp_path_factory):
    """A tiny causal LM pretrained by the product trainer's next-token objective."""
    out = tmp_path_factory.mktemp("base")
    metrics = train(TrainConfig(kind="lm", data=str(data / "train.jsonl"), eval_data=str(data / "eval.jsonl"),
                                out=str(out), max_steps=20, lr=5e-3, **QUICK))
    return out, metrics


def test_lm_run_learns_and_loads_as_a_plain_causal_lm(base):
    import transformers

    out, metrics = base
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if '"loss"' in x]
    assert lines[-1]["loss"] < lines[0]["loss"] - 0.5, "next-token loss did not fall"
    assert math.isfinite(metrics["eval_loss"]) and metrics["eval_loss"] < lines[0]["loss"]
    assert json.loads((out / "prmkit_config.json").read_text())["kind"] == "lm"
    model = transformers.AutoModelForCausalLM.from_pretrained(out)
    assert model.config.vocab_size >= len(transformers.AutoTokenizer.from_pretrained(out))


def test_surprise_features_are_the_lms_own_log_probabilities(base):
    import transformers

    out, _ = base
    source = SurpriseSource(out)
    tok = transformers.AutoTokenizer.from_pretrained(out)
    ids = tok.encode("2 + 3 = 5", add_special_tokens=False)
    raw = source.raw([ids])[0]
    model = transformers.AutoModelForCausalLM.from_pretrained(out).eval()
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1)
    expect = [0.0] + [float(logp[t - 1, ids[t]]) for t in range(1, len(ids))]
    np.testing.assert_allclose(raw[:, 0], expect, atol=1e-5)
    assert raw[0, 1] == 0.0 and (raw[1:, 1] > 0).all()


@pytest.fixture(scope="module")
def featured(data, base, tmp_path_factory):
    out = tmp_path_factory.mktemp("prm-features")
    cfg = TrainConfig(data=str(data / "train.jsonl"), eval_data=str(data / "eval.jsonl"), out=str(out),
                      base_model=str(base[0]), features=f"surprise:{base[0]}", head="classify", new_lr=1e-2,
                      max_steps=6, **QUICK)
    train(cfg)
    return cfg, out


def test_a_featured_model_saves_its_adapter_and_source_and_scores(featured, data):
    _, out = featured
    card = json.loads((out / "prmkit_config.json").read_text())
    assert card["features"]["source"] == "surprise" and card["features"]["model"] == "feature_model"
    assert (out / "feature_adapter.safetensors").is_file() and (out / "feature_model" / "config.json").is_file()
    sols = list(read_solutions(data / "eval.jsonl"))[:12]
    scorer = Scorer(out, device="cpu")
    assert scorer.model.adapter is not None
    probs = scorer.probabilities([s.problem.problem for s in sols], [s.texts for s in sols], batch_size=5)
    # the same model as in training: build the examples and features the way the trainer does
    examples, _ = build_examples(sols, scorer.tokenizer, scorer.fmt, supervise="all")
    feats = SurpriseSource(out / "feature_model")([e.input_ids for e in examples])
    for e, f in zip(examples, feats):
        e.features = f
    batch = collate(examples, scorer.tokenizer.pad_token_id, 2)
    with torch.no_grad():
        ref = torch.softmax(scorer.model(**model_inputs(batch)), -1).numpy()
    for i, e in enumerate(examples):
        np.testing.assert_allclose(probs[e.index], ref[i, : len(e.positions)], atol=1e-5)


def test_the_adapter_learned_something(featured):
    from safetensors.torch import load_file

    _, out = featured
    weights = load_file(str(out / "feature_adapter.safetensors"))
    assert weights["net.2.weight"].abs().sum() > 0, "the adapter's last layer is still zero"


def test_adapter_at_initialisation_equals_no_adapter(base, data):
    cfg = TrainConfig(data="d", out="o", base_model=str(base[0]), max_length=128)
    sols = list(read_solutions(data / "eval.jsonl"))[:6]
    model, tok, *_ = build_model(cfg, [])
    examples, _ = build_examples(sols, tok, _fmt(cfg), supervise="all")
    batch = collate(examples, tok.pad_token_id, 2)
    plain = model(**model_inputs(batch))
    with_adapter = RewardModel(model.backbone, model.head, FeatureAdapter(3, 32, model.backbone.config.hidden_size))
    feats = SurpriseSource(base[0])([e.input_ids for e in examples])
    for e, f in zip(examples, feats):
        e.features = f
    featured = with_adapter(**model_inputs(collate(examples, tok.pad_token_id, 2)))
    assert torch.equal(plain, featured)


def _fmt(cfg):
    from prmkit.train.loop import format_config

    return format_config(cfg)


def test_packed_equals_padded_with_features(featured, data):
    _, out = featured
    sols = list(read_solutions(data / "eval.jsonl"))[:10]
    padded = Scorer(out, device="cpu", packing="off").probabilities([s.problem.problem for s in sols],
                                                                    [s.texts for s in sols])
    scorer = Scorer(out, device="cpu", packing="on")
    packed = scorer.probabilities([s.problem.problem for s in sols], [s.texts for s in sols])
    assert scorer.packed
    for a, b in zip(padded, packed):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_packed_training_equals_padded_training_with_features(data, base, tmp_path):
    from safetensors.torch import load_file

    outs = {}
    for mode in ("on", "off"):
        outs[mode] = tmp_path / mode
        train(TrainConfig(data=str(data / "train.jsonl"), eval_data=str(data / "eval.jsonl"), out=str(outs[mode]),
                          base_model=str(base[0]), features=f"surprise:{base[0]}", packing=mode, group_by_length=False, max_steps=3,
                          **QUICK))
    a, b = (load_file(str(outs[m] / "feature_adapter.safetensors")) for m in ("on", "off"))
    for k in a:
        torch.testing.assert_close(a[k], b[k], atol=1e-5, rtol=1e-4)


def test_a_source_with_another_tokenizer_is_refused(data, base, tmp_path):
    with pytest.raises(ValueError, match="another tokenizer"):
        train(TrainConfig(data=str(data / "train.jsonl"), out=str(tmp_path / "x"), features=f"surprise:{base[0]}",
                          vocab_size=200, max_steps=1, **QUICK))


def test_new_parameters_get_their_own_learning_rate(featured):
    cfg, _ = featured
    from prmkit.train.loop import param_groups, setup

    class _Acc:  # setup only prints and reads the device here
        device = "cpu"
        num_processes = 1

        @staticmethod
        def print(*a):
            pass

    run = setup(cfg, _Acc())
    groups = param_groups(run)
    assert [g["lr"] for g in groups] == [cfg.lr, cfg.new_lr]
    new = {id(p) for p in groups[1]["params"]}
    names = {n for n, p in run.model.named_parameters() if id(p) in new}
    assert names == {n for n in names if n.startswith(("adapter.", "backbone.score."))}
    assert any(n.startswith("adapter.") for n in names) and any(n.startswith("backbone.score.") for n in names)


def test_restarts_compute_each_example_s_features_once(data, base, tmp_path, monkeypatch):
    from prmkit.model import features

    made, forwards = [], []
    real_make, real_forward = features.make_source, features.SurpriseSource._forward

    def make(*a, **kw):
        made.append(kw.get("keep"))
        return real_make(*a, **kw)

    def forward(self, batch):
        forwards.extend(len(t) for t in batch)
        return real_forward(self, batch)

    monkeypatch.setattr(features, "make_source", make)
    monkeypatch.setattr(features.SurpriseSource, "_forward", forward)
    cfg = TrainConfig(data=str(data / "train.jsonl"), eval_data=str(data / "eval.jsonl"), out=str(tmp_path / "out"),
                      base_model=str(base[0]), features=f"surprise:{base[0]}", restarts=2, max_steps=2, **QUICK)
    train(cfg)
    n_examples = len(list(read_solutions(data / "train.jsonl"))) + len(list(read_solutions(data / "eval.jsonl")))
    assert made == [True] and len(forwards) <= n_examples  # one source, each distinct solution once
    assert json.loads((tmp_path / "out" / "restarts.json").read_text())["chosen"] in (0, 1)
    train(TrainConfig(**{**cfg.to_dict(), "out": str(tmp_path / "single"), "restarts": 1}))
    assert made == [True, None]  # outside restarts nothing is kept (the default source)


def test_a_restart_reading_saved_features_is_the_run_it_would_be(data, base, tmp_path, monkeypatch):
    """Features computed once (``save_features_of``) and read by a restart in another process (``features_from``)
    give the same run as restarts that compute them: what lets the lab train restarts in parallel."""
    import dataclasses

    from prmkit.model import features
    from prmkit.train.loop import features_from, save_features_of, train_once
    from prmkit.train.restarts import restart_config, train_restart

    cfg = TrainConfig(data=str(data / "train.jsonl"), eval_data=str(data / "eval.jsonl"), out=str(tmp_path / "out"),
                      base_model=str(base[0]), features=f"surprise:{base[0]}", restarts=2, max_steps=3, **QUICK)
    train(cfg)
    runs = json.loads((tmp_path / "out" / "restarts.json").read_text())["runs"]
    apart = dataclasses.replace(cfg, out=str(tmp_path / "apart"))
    n = save_features_of(restart_config(apart, 0), tmp_path / "surprise.npz")
    # each distinct solution once (the toy data repeats some)
    assert 0 < n <= len(list(read_solutions(data / "train.jsonl"))) + len(list(read_solutions(data / "eval.jsonl")))

    def no_forward(self, batch):
        raise AssertionError("a feature was computed, not read")

    monkeypatch.setattr(features.SurpriseSource, "_forward", no_forward)
    with features_from(apart, tmp_path / "surprise.npz"):
        second = train_restart(apart, 1, train_once)
    assert second == {k: v for k, v in runs[1].items() if k != "seed"}
    with pytest.raises(ValueError, match="reads no per-token features"):
        save_features_of(dataclasses.replace(apart, features=""), tmp_path / "none.npz")
