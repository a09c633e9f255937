"""The GRPO loop (:mod:`prmkit.rl.grpo`): it optimises a toy reward, a run repeats under its seed, the
KL estimate is zero against itself, and the evaluation hook runs when it should."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("trl")

from prmkit.model.formatter import FormatConfig
from prmkit.rl.grpo import RLConfig, Rollout, prompt_ids, rollout_seed, sequence_logprobs, train_grpo

PROBLEMS = [{"problem": f"{a} + {b} ="} for a in range(4) for b in range(2)]
FMT = FormatConfig(separator="\n", marker="", max_length=64)


def digit_share(prompts, completions, **columns) -> list[float]:
    """A toy reward a random policy scores low on: the share of a completion's characters that are digits."""
    return [sum(ch.isdigit() for ch in c) / max(1, len(c)) for c in completions]


def _policy(folder):
    import torch
    import transformers

    torch.manual_seed(0)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    return transformers.AutoModelForCausalLM.from_pretrained(folder), tok


@pytest.mark.slow
def test_grpo_raises_a_toy_reward(tiny_lm, tmp_path):
    model, tok = _policy(tiny_lm)
    cfg = RLConfig(steps=14, prompts_per_step=4, group=8, lr=5e-3, warmup_steps=0, beta=0.0, max_new_tokens=12,
                   eval_every=0)
    digit_share.__name__ = "digits"
    history, _ = train_grpo(model, tok, FMT, PROBLEMS, [digit_share], cfg, str(tmp_path))
    rewards = [h["reward"] for h in history if "reward" in h]
    assert len(rewards) == cfg.steps
    first, last = np.mean(rewards[:4]), np.mean(rewards[-4:])
    assert last > first + 0.1, f"the toy reward did not rise: {first:.3f} -> {last:.3f} ({rewards})"


@pytest.mark.slow
def test_a_run_repeats_under_its_seed_and_the_hook_sees_every_evaluation(tiny_lm, tmp_path):
    import torch

    def run(out):
        model, tok = _policy(tiny_lm)
        cfg = RLConfig(steps=3, prompts_per_step=2, group=4, lr=1e-3, max_new_tokens=8, eval_every=2, beta=0.04)
        digit_share.__name__ = "digits"
        history, records = train_grpo(model, tok, FMT, PROBLEMS, [digit_share], cfg, str(out),
                                      hook=lambda step, m: step)
        return [h["reward"] for h in history if "reward" in h], records, model

    r1, steps1, m1 = run(tmp_path / "a")
    r2, steps2, m2 = run(tmp_path / "b")
    assert r1 == r2 and steps1 == steps2 == [0, 2, 3]
    for (name, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert torch.equal(a, b), f"{name} differs between two runs of one seed"


def test_rollouts_are_seeded_per_step_and_sample(tiny_lm):
    import types

    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(tiny_lm)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_lm)
    rollout = Rollout(tok, FMT, RLConfig(max_new_tokens=6))
    # what the rollout reads of TRL's trainer: the live model and the optimiser step
    trainer = types.SimpleNamespace(model=model, state=types.SimpleNamespace(global_step=3))
    prompts = ["1 + 1 =", "1 + 1 =", "2 + 0 ="]
    a = rollout(prompts, trainer)
    assert set(a) >= {"prompt_ids", "completion_ids", "logprobs", "steps", "text"}
    assert len(a["completion_ids"]) == 3 and a["prompt_ids"][0] == prompt_ids(tok, FMT, "1 + 1 =")
    seeds = {rollout_seed(0, 0, "x", 0), rollout_seed(0, 1, "x", 0), rollout_seed(0, 0, "x", 1), rollout_seed(1, 0, "x", 0)}
    assert len(seeds) == 4
    # a new rollout (a resumed run's) at the same step samples the same; at another step, others
    b = Rollout(tok, FMT, RLConfig(max_new_tokens=6))(prompts, trainer)
    assert a["completion_ids"] == b["completion_ids"], "the same seed and step gave other samples"
    trainer.state.global_step = 4
    assert Rollout(tok, FMT, RLConfig(max_new_tokens=6))(prompts, trainer)["completion_ids"] != a["completion_ids"]


def test_sequence_logprobs_sum_the_completion_tokens_and_give_a_kl_estimate(tiny_lm):
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_lm).eval()
    prompts, completions = [[1, 5, 9], [1, 7]], [[4, 4, 2], [3]]
    lp = sequence_logprobs(model, prompts, completions, batch_size=1)
    for i, (p, c) in enumerate(zip(prompts, completions)):  # the reference: one token at a time
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([p + c])).logits[0].float()
        want = sum(float(torch.log_softmax(logits[len(p) - 1 + t], -1)[tok]) for t, tok in enumerate(c))
        assert lp[i] == pytest.approx(want, abs=1e-4)
    np.testing.assert_allclose(lp, sequence_logprobs(model, prompts, completions, batch_size=2), atol=1e-5)
    other = transformers.AutoModelForCausalLM.from_pretrained(tiny_lm).eval()
    with torch.no_grad():
        for w in other.parameters():
            w.mul_(1.5)
    assert np.all(lp - sequence_logprobs(model, prompts, completions) == 0)
    assert np.any(lp - sequence_logprobs(other, prompts, completions) != 0)


def test_the_config_refuses_what_grpo_cannot_do():
    with pytest.raises(ValueError, match="group"):
        RLConfig(group=1)
    with pytest.raises(ValueError, match="beta"):
        RLConfig(beta=-1)
    with pytest.raises(ValueError, match="warmup"):
        RLConfig(warmup_steps=-1)
    assert RLConfig(prompts_per_step=3, group=4).batch == 12
