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
    """The quick preset's policy (the default family) at a test's size: one round on 400 x 8 fresh samples, measured on 100 x 8."""
    sft = {"sft.problems": 400, "sft.samples": 8, "sft.measure_problems": 100, "sft.measure_samples": 8,
           "sft.rounds": 1, "sft.target": 0.99}
    return preset("quick").replace({"policy": "sft", **sft, **over})


@pytest.mark.slow
def test_expert_iteration_raises_pass_at_1_and_resumes_a_killed_fine_tuning(lab_cache, monkeypatch):
    import prmkit.lab.policy as policy

    cfg = small()

    def killed(*args):
        raise KeyboardInterrupt  # killed after its rounds, before the policy is published

    monkeypatch.setattr(policy, "_publish", killed)
    with pytest.raises(KeyboardInterrupt):
        policy.ensure_policy(cfg, log=lambda *a: None)
    assert not policy.policy_path(cfg).exists()
    monkeypatch.undo()

    def again(*args):
        raise AssertionError("a finished round was fine-tuned again")

    monkeypatch.setattr(policy, "_fine_tune", again)
    folder = policy.ensure_policy(cfg, log=lambda *a: None)
    rounds = json.loads((folder / "policy.json").read_text())["rounds"]
    assert len(rounds) == 2 and rounds[1]["kept"] >= 40
    assert rounds[1]["pass@1"] > rounds[0]["pass@1"] + 0.03, rounds  # the base's own right answers teach it
    assert not any(Path(folder).rglob("checkpoints"))


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
