"""The ``sft`` policy (issue 34, "a policy worth optimising"): expert iteration raises the base's pass@1, keeps
what its filter says, resumes a killed fine-tuning at the round it reached, and keys every pool it samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prmkit.lab import preset
from prmkit.lab.config import PolicyConfig


def test_the_filter_keeps_right_answers_or_fully_valid_solutions():
    from prmkit.lab.domains import oracle_labels
    from prmkit.lab.policy import passes
    from prmkit.lab.pools import generate_pool

    pool = generate_pool(preset("easy"), seed=3, split="eval", problems=40)
    valid = [all(lab.rating >= 0 for lab in oracle_labels(s)) for s in pool]
    kinds = {(s.grade, v) for s, v in zip(pool, valid)}
    assert {("correct", True), ("correct", False), ("incorrect", False)} <= kinds  # the pool has every case
    for s, v in zip(pool, valid):
        assert passes(s, "correct") == (s.grade == "correct")
        assert passes(s, "valid") == (s.grade == "correct" and v)


@pytest.mark.parametrize("bad", [{"keep": "answered"}, {"rounds": -1}, {"warm_start": -5}, {"target": 0.0},
                                 {"epochs": 0.0}, {"samples": 0}])
def test_the_fine_tuning_settings_are_checked(bad):
    with pytest.raises(ValueError, match="sft"):
        PolicyConfig(**bad)


def small(**over) -> object:
    """The quick preset's policy at a test's size: a warm start of 375 steps (3,000 of the generator's right answers,
    four epochs), then one round of expert iteration on 200 x 8 of its own samples, measured on 100 x 8."""
    sft = {"sft.warm_start": 3000, "sft.epochs": 4, "sft.problems": 200, "sft.samples": 8, "sft.measure_problems": 100,
           "sft.measure_samples": 8, "sft.rounds": 1, "sft.target": 0.99}
    return preset("quick").replace({"policy": "sft", **sft, **over})


@pytest.mark.slow
def test_fine_tuning_raises_pass_at_1_and_resumes_a_run_killed_mid_round(lab_cache, monkeypatch):
    import torch

    import prmkit.lab.policy as policy
    import prmkit.train.loop as loop

    torch.set_num_threads(1)
    cfg = small()
    train = loop.train

    def killed_in_round_1(config):
        if "round-1" in config.out:
            raise KeyboardInterrupt  # killed as round 1 starts to train: its samples are kept, nothing else
        return train(config)

    monkeypatch.setattr(loop, "train", killed_in_round_1)
    with pytest.raises(KeyboardInterrupt):
        policy.ensure_policy(cfg, log=lambda *a: None)
    part = policy.policy_path(cfg).with_name(f".{policy.policy_path(cfg).name}.part")
    assert (part / "warm" / "round.json").is_file() and (part / "round-1" / "kept.jsonl.gz").is_file()
    assert not (part / "round-1" / "round.json").exists() and not policy.policy_path(cfg).exists()
    monkeypatch.setattr(loop, "train", train)  # (not undo(): that would drop lab_cache's PRMKIT_CACHE too)

    sample = policy._sample

    def measure_only(cfg, model, split, *args):
        assert split == "sft-measure", f"{split} sampled again: the killed round's kept samples were not reused"
        return sample(cfg, model, split, *args)

    def no_rules(*args):
        raise AssertionError("the finished warm start was redone")

    monkeypatch.setattr(policy, "_sample", measure_only)
    monkeypatch.setattr(policy, "rules_passing", no_rules)
    folder = policy.ensure_policy(cfg, log=lambda *a: None)
    rounds = json.loads((folder / "policy.json").read_text())["rounds"]
    assert [r["source"] for r in rounds] == ["base", "rules", "self"]
    assert rounds[1]["kept"] == 3000 and rounds[2]["kept"] > 0
    assert rounds[1]["pass@1"] > rounds[0]["pass@1"] + 0.05, rounds  # the generator's right answers teach it
    assert rounds[1]["step_limit@1"] > rounds[0]["step_limit@1"], rounds
    assert not any(Path(folder).rglob("checkpoints")) and not part.exists()
    monkeypatch.setattr(policy, "_sample", sample)
    tuned, base = (policy.measure_pool(cfg.replace({"policy": p}), seed=0, problems=30, samples=4) for p in ("sft", "lm"))
    assert tuned["pass@1"] > base["pass@1"]  # the lab's pools under policy=sft are the fine-tuned model's samples


def test_the_policy_keys_the_pressure_studys_pools_and_rl_runs(tmp_path):
    """Another fine-tuning setting reruns the pools, their reward models and the RL runs; the prompts stay."""
    pytest.importorskip("trl")
    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.pressure import STUDY
    from prmkit.lab.study.protocol import Context, Policy

    cfg = STUDY.prepare(study_preset("pressure", "quick").replace({"policy": "sft"}), [0])
    other = cfg.replace({"sft.lr": cfg.sft.lr / 2})

    def jobs(c):
        return {job.folder: job for _, js in STUDY.stages(c, Context(tmp_path, (0,))) for job in js}

    before, after = jobs(cfg), jobs(other)
    assert isinstance(before[str(tmp_path / "policy")], Policy)
    changed = {Path(f).name for f in before if before[f].key != after[f].key}
    assert "prompts" not in changed and "base" not in changed
    assert {"policy", "data", f"rm-prm-{max(cfg.pressure.budgets)}", "rl-prm-min"} <= changed
    assert jobs(cfg.replace({"policy": "lm"})).get(str(tmp_path / "policy")) is None


def test_the_lab_runs_data_key_names_every_fine_tuning_setting():
    """``prmkit lab run --set policy=sft``: another fine-tuning setting samples other pools, so it must rerun the
    data job (and everything after it); under the base as the policy the fine-tuning settings change nothing."""
    from prmkit.lab.run import data_key_of

    sft = preset("quick").replace({"policy": "sft"})
    variants = (sft, sft.replace({"sft.lr": 5e-4}), sft.replace({"sft.warm_start": 0}), sft.replace({"policy": "lm"}))
    assert len({data_key_of(c, 0, "base-key") for c in variants}) == 4
    lm = preset("quick").replace({"policy": "lm"})
    assert data_key_of(lm, 0, "base-key") == data_key_of(lm.replace({"sft.lr": 5e-4}), 0, "base-key")
