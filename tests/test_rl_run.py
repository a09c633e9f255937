"""``prmkit rl`` end to end on a tiny policy and a tiny PRM: the run folder, a resume that gives the very weights
of the uninterrupted run, a refusal of another run's folder, and a summed credit the policy learns to game."""

from __future__ import annotations

import json

import pytest
import torch

from prmkit.cli import main
from prmkit.rl.run import RunConfig, check_resume, policy_format, run_identity

torch.set_num_threads(1)

SMALL = ["--prompts-per-step", "2", "--group", "4", "--max-new-tokens", "16", "--eval-problems", "2",
         "--eval-samples", "2", "--save-every", "2", "--eval-every", "2", "--lr", "1e-2"]


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    path = tmp_path_factory.mktemp("rl") / "problems.jsonl"
    path.write_text("".join(json.dumps({"problem": f"Start at {a}. +{a % 5 + 1}.", "answer": str(a + a % 5 + 1)})
                            + "\n" for a in range(1, 13)))
    return path


def rl(problems, policy, reward, out, *extra) -> int:
    return main(["rl", str(problems), "--policy", str(policy), "--reward", str(reward), "--out-dir", str(out),
                 "--no-progress", *SMALL, *extra])


def test_a_run_resumed_gives_the_weights_and_the_evaluations_of_one_run(problems, tiny_lm, tiny_prm, tmp_path):
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    assert rl(problems, tiny_lm, tiny_prm, tmp_path / "once", "--steps", "4") == 0
    assert rl(problems, tiny_lm, tiny_prm, tmp_path / "twice", "--steps", "3", "--save-every", "1") == 0
    metrics = tmp_path / "twice" / "metrics.jsonl"
    assert [json.loads(line)["step"] for line in metrics.read_text().splitlines()] == [0, 2, 3]
    with open(metrics, "a") as f:
        f.write('{"step": 4, "pro')  # a line a kill cut short
    assert rl(problems, tiny_lm, tiny_prm, tmp_path / "twice", "--steps", "4") == 0  # extends from checkpoint 3
    assert rl(problems, tiny_lm, tiny_prm, tmp_path / "twice", "--steps", "2") == 2  # cut back: refused
    once, twice = (load_file(tmp_path / r / "policy" / "model.safetensors") for r in ("once", "twice"))
    assert all(torch.equal(once[k], twice[k]) for k in once)
    assert any(not torch.equal(a, b) for a, b in zip(
        once.values(), AutoModelForCausalLM.from_pretrained(tiny_lm).state_dict().values()))  # it trained
    metrics = [[json.loads(line) for line in (tmp_path / r / "metrics.jsonl").read_text().splitlines()]
               for r in ("once", "twice")]
    assert [m["step"] for m in metrics[0]] == [0, 2, 4]
    assert [{k: v for k, v in m.items() if k != "seconds"} for m in metrics[0]] == \
           [{k: v for k, v in m.items() if k != "seconds"} for m in metrics[1]]
    summary = json.loads((tmp_path / "twice" / "summary.json").read_text())
    assert summary["kind"] == "rl" and summary["resumed_from"].endswith("checkpoint-3")
    assert [h["step"] for h in summary["history"]] == [1, 2, 3, 4]  # TRL's log, kept across the resume
    assert summary["records"][0]["gold"] == 0.0 and summary["stack"]["trl"] != "absent"
    page = (tmp_path / "twice" / "report.html").read_text()
    assert "RL against" in page and "data:image/png;base64" in page
    AutoModelForCausalLM.from_pretrained(tmp_path / "twice" / "policy")  # the real loading path


def test_another_run_in_the_folder_is_refused(problems, tmp_path):
    identity = {"settings": {"lr": 1e-2, "seed": 0}, "policy_weights": "a", "reward_weights": "b", "problems": "c"}
    (tmp_path / "run.json").write_text(json.dumps({"identity": identity}))
    check_resume(tmp_path, json.loads(json.dumps(identity)))  # the same run: resumed
    other = {**identity, "settings": {"lr": 1e-3, "seed": 0}, "reward_weights": "d"}
    with pytest.raises(ValueError, match=r"differs in lr, reward_weights"):
        check_resume(tmp_path, other)


def test_steps_and_checkpoints_are_not_part_of_a_run(problems, tiny_lm, tiny_prm):
    a = run_identity(RunConfig(policy=str(tiny_lm), reward=str(tiny_prm), steps=2, save_every=1), str(problems))
    b = run_identity(RunConfig(policy=str(tiny_lm), reward=str(tiny_prm), steps=9, save_every=3), str(problems))
    c = run_identity(RunConfig(policy=str(tiny_lm), reward=str(tiny_prm), steps=2, beta=0.1), str(problems))
    assert a == b != c


def test_a_marker_the_policy_cannot_write_is_left_out(tiny_lm, tiny_prm):
    from transformers import AutoTokenizer

    from prmkit.model.formatter import FormatConfig

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm)
    assert policy_format(FormatConfig(marker="<step>"), tokenizer).marker is None
    assert policy_format(FormatConfig(marker="<step>"), tokenizer).separator == "\n"
    one = tokenizer.convert_ids_to_tokens(5)
    assert policy_format(FormatConfig(marker=one), tokenizer).marker == one


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="credit"):
        RunConfig(credit="mean")
    with pytest.raises(ValueError, match="save_every"):
        RunConfig(save_every=0)


def test_a_summed_credit_is_gamed_by_padding_and_the_detectors_see_it(problems, tiny_lm, tiny_prm, tmp_path):
    """The reward rises: the policy learns that every extra step adds to a summed credit, and writes more of
    them, most of them repeats (the hack the lab's pressure study found; here on a tiny random policy)."""
    assert rl(problems, tiny_lm, tiny_prm, tmp_path / "sum", "--credit", "sum", "--kl", "0", "--warmup-steps", "0",
              "--lr", "3e-2", "--prompts-per-step", "4", "--max-new-tokens", "24", "--eval-samples", "8",
              "--eval-every", "6", "--steps", "6") == 0
    first, last = (json.loads(line) for line in (tmp_path / "sum" / "metrics.jsonl").read_text().splitlines())
    assert last["proxy"] > 2 * first["proxy"]
    assert last["steps"] > 2 * first["steps"] and last["repeated_steps"] > first["repeated_steps"]
