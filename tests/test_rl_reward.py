"""PRMReward on a real tiny PRM: ranges, determinism, credit rules against the scorer, columns, the answer
mix, and a real (tiny) TRL GRPO run on CPU that trains a policy against it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.model.labels import step_scores as class_scores
from prmkit.model.tiny import toy_tokenizer
from prmkit.rl import PRMReward, solution_reward, step_char_ends, step_token_ends
from prmkit.rl.reward import completion_text, problem_of
from prmkit.steps import split_steps

torch.set_num_threads(1)

PROBLEM = "Start at 3. +4 +2 -1 +5 -2."
SHORT_STEPS = ["3 + 4 = 7", "7 + 2 = 9"]
LONG_STEPS = ["3 + 4 = 7", "7 + 2 = 9", "9 - 1 = 8", "8 + 5 = 13", "13 - 2 = 11", "# Answer\n\n11"]
SHORT, LONG = "\n".join(SHORT_STEPS), "\n".join(LONG_STEPS)


@pytest.fixture(scope="module")
def reward(tiny_prm):
    return PRMReward(tiny_prm)


def p_correct(scorer, problem: str, steps: list[str]) -> list[float]:
    """The reference: the scorer's class probabilities, read the way ``prmkit score`` reads them."""
    [probs] = scorer.probabilities([problem], [steps])
    return [class_scores(list(row), scorer.neutral)["p_correct"] for row in probs]


def test_rewards_are_probabilities_and_deterministic(reward):
    prompts, completions = [PROBLEM + "\n"] * 3, [SHORT, LONG, "3 + 4 = 8"]
    first = reward(prompts, completions)
    assert len(first) == 3 and all(0.0 <= r <= 1.0 for r in first)
    assert reward(prompts, completions) == first
    assert reward.__name__ == "prm_min" and reward.kind == "prm"


@pytest.mark.parametrize("rule", ["min", "product", "sum", "last"])
def test_each_credit_rule_is_the_rule_on_the_scorers_own_probabilities(tiny_prm, reward, rule):
    by_rule = PRMReward(tiny_prm, credit=rule)
    got = by_rule([PROBLEM + "\n"] * 2, [SHORT, LONG])
    for steps, value in zip([SHORT_STEPS, LONG_STEPS], got):
        assert value == pytest.approx(solution_reward(p_correct(reward.scorer, PROBLEM, steps), rule), abs=1e-6)
    assert by_rule.__name__ == f"prm_{rule}"


def test_summed_credit_pays_for_length_where_product_does_not(tiny_prm):
    # Both completions are right as far as they go; the long one only has more steps.
    prompts, pair = [PROBLEM + "\n"] * 2, [SHORT, LONG]
    short_sum, long_sum = PRMReward(tiny_prm, credit="sum")(prompts, pair)
    short_prod, long_prod = PRMReward(tiny_prm, credit="product")(prompts, pair)
    short_min, long_min = PRMReward(tiny_prm, credit="min")(prompts, pair)
    assert long_sum > short_sum + 1.0  # about one more unit per extra step
    assert long_prod < short_prod
    assert long_prod <= long_min + 1e-9 and short_prod <= short_min + 1e-9


def test_step_rewards_sum_to_the_reward(reward):
    prompts, completions = [PROBLEM + "\n"] * 2, [SHORT, LONG]
    dense = reward.step_rewards(prompts, completions)
    assert [len(d) for d in dense] == [2, 6]
    np.testing.assert_allclose([sum(d) for d in dense], reward(prompts, completions), atol=1e-6)


def test_problem_column_and_steps_column_are_used(reward):
    with_marker = "3 + 4 = 7<step>7 + 2 = 9<step>"
    # The problem column wins over the prompt; a marker-split completion equals its newline form.
    a = reward(["Solve this carefully:"], [with_marker], problem=[PROBLEM])
    assert a == reward([PROBLEM + "\n"], [SHORT])
    # A steps column replaces the split: one step given is one step scored.
    b = reward.step_rewards([PROBLEM + "\n"], [SHORT], steps=[["3 + 4 = 7"]])
    assert len(b[0]) == 1
    assert b[0][0] == pytest.approx(p_correct(reward.scorer, PROBLEM, ["3 + 4 = 7"])[0], abs=1e-6)
    with pytest.raises(ValueError, match="'steps' has 1 entries for 2 completions"):
        reward([PROBLEM] * 2, [SHORT, LONG], steps=[["x"]])


def test_conversational_prompts_and_completions(reward):
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROBLEM}]
    completion = [{"role": "assistant", "content": SHORT}]
    assert reward([prompt], [completion]) == reward([PROBLEM + "\n"], [SHORT])
    assert problem_of(prompt) == PROBLEM and completion_text(completion) == SHORT


def test_empty_completion_earns_nothing(reward):
    before = reward.stats["empty"]
    assert reward([PROBLEM], ["   \n"]) == [0.0]
    assert reward.step_rewards([PROBLEM], [""]) == [[]]
    assert reward.stats["empty"] == before + 2


def test_answer_check_adds_exactly_the_weight_on_right_answers(tiny_prm, reward):
    wrong = LONG.replace("11", "12")
    prompts, completions = [PROBLEM + "\n"] * 3, [LONG, wrong, SHORT]  # right, wrong, no answer
    base = reward(prompts, completions)
    mixed = PRMReward(tiny_prm, answer_weight=0.5, answer_check="grader")
    got = mixed(prompts, completions, answer=["11"] * 3)
    np.testing.assert_allclose(np.array(got) - base, [0.5, 0.0, 0.0], atol=1e-9)
    assert mixed.stats["answer_correct"] == 1 and mixed.stats["ungradable"] == 0
    dense = mixed.step_rewards(prompts, completions, answer=["11"] * 3)
    np.testing.assert_allclose([sum(d) for d in dense], got, atol=1e-6)

    seen = []

    def unsure(problem, completion, **row):
        seen.append((problem, row["level"]))
        return True if row["level"] < 3 else None  # None: ungradable, adds nothing, counted

    custom = PRMReward(tiny_prm, answer_weight=1.0, answer_check=unsure)
    assert custom(prompts[:1], completions[:1], level=[3], trainer_state=object()) == base[:1]
    assert seen == [(PROBLEM, 3)] and custom.stats["ungradable"] == 1


@pytest.fixture(scope="module")
def tiny_orm(tmp_path_factory):
    from prmkit.io import write_records
    from prmkit.testing.toydata import make_solutions
    from prmkit.train.config import TrainConfig
    from prmkit.train.loop import train

    folder = tmp_path_factory.mktemp("tiny-orm")
    write_records(folder / "train.jsonl", make_solutions(64, seed=1))
    train(TrainConfig(data=str(folder / "train.jsonl"), out=str(folder / "model"), kind="orm", max_steps=4,
                      batch_size=8, eval_fraction=0, save_every=0, progress=False, tensorboard=False))
    return folder / "model"


def test_an_orm_rewards_its_final_step_only(tiny_orm):
    orm = PRMReward(tiny_orm)
    assert orm.__name__ == "orm" and orm.kind == "orm" and orm.credit == "last"
    [value] = orm([PROBLEM + "\n"], [LONG])
    assert value == pytest.approx(p_correct(orm.scorer, PROBLEM, LONG_STEPS)[-1], abs=1e-6)
    assert orm.step_rewards([PROBLEM + "\n"], [LONG]) == [[0.0] * 5 + [value]]
    with pytest.raises(ValueError, match="an ORM scores only the final step"):
        PRMReward(tiny_orm, credit="min")


def test_clear_errors(tmp_path, tiny_prm):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "nowhere")):
        PRMReward(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="min, product, sum, last"):
        PRMReward(tiny_prm, credit="mean")
    with pytest.raises(ValueError, match="answer_check"):
        PRMReward(tiny_prm, answer_weight=1.0)
    with pytest.raises(ValueError, match="'answer' column"):
        PRMReward(tiny_prm, answer_weight=1.0, answer_check="grader")([PROBLEM], [LONG])


def test_step_char_ends_place_each_step_on_the_text():
    text = "3 + 4 = 7<step>\n7 + 2 = 9\n# Answer\n\n 9\n"
    ends = step_char_ends(text, ["3 + 4 = 7", "7 + 2 = 9", "# Answer\n\n9"])
    assert [text[:e].rsplit("\n", 1)[-1] for e in ends] == ["3 + 4 = 7", "7 + 2 = 9", " 9"]
    with pytest.raises(ValueError, match="step 1"):
        step_char_ends(text, ["3 + 4 = 7", "not there"])


TOKENIZER = toy_tokenizer()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text("0123456789+-= x", min_size=1, max_size=12).filter(str.strip), min_size=1, max_size=6),
       st.booleans())
def test_each_step_ends_on_the_token_holding_its_last_character(lines, answer):
    text = "\n".join(lines) + ("\n# Answer\n\n 7 \n" if answer else "")
    steps = split_steps(text)
    ends = step_char_ends(text, steps)
    assert len(ends) == len(steps) and ends == sorted(ends)
    for step, end in zip(steps, ends):
        assert text[:end].endswith(step.split("\n")[-1])
    offsets = TOKENIZER(text, return_offsets_mapping=True, add_special_tokens=False)["offset_mapping"]
    for k, end in zip(step_token_ends(offsets, ends), ends):
        assert offsets[k][0] <= end - 1 < offsets[k][1]


class Recording(PRMReward):
    """PRMReward keeping what the trainer passed it."""

    calls: list

    def __call__(self, prompts, completions, **columns):
        self.calls = getattr(self, "calls", [])
        self.calls.append({"prompts": prompts, "completions": completions, **columns})
        return super().__call__(prompts, completions, **columns)


@pytest.mark.slow
def test_a_tiny_grpo_run_on_cpu_trains_against_the_prm(tiny_prm, tiny_lm, tmp_path):
    trl = pytest.importorskip("trl")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    policy = AutoModelForCausalLM.from_pretrained(tiny_lm)
    tokenizer = AutoTokenizer.from_pretrained(tiny_lm)
    before = [p.detach().clone() for p in policy.parameters()]
    problems = [f"Start at {a}. +{b} +{a}." for a, b in zip(range(1, 9), range(9, 1, -1))]
    data = Dataset.from_list([{"prompt": f"{p}\n", "problem": p} for p in problems])
    reward = Recording(tiny_prm)
    args = trl.GRPOConfig(output_dir=str(tmp_path), use_cpu=True, max_steps=2, num_generations=4,
                          per_device_train_batch_size=8, max_completion_length=16, report_to="none",
                          save_strategy="no", beta=0.04, bf16=False, logging_steps=1, seed=0,
                          learning_rate=1e-2, disable_tqdm=True, dataloader_num_workers=0)
    trainer = trl.GRPOTrainer(model=policy, reward_funcs=[reward], args=args, train_dataset=data,
                              processing_class=tokenizer)
    trainer.train()

    logged = [row["rewards/prm_min/mean"] for row in trainer.state.log_history if "rewards/prm_min/mean" in row]
    assert len(logged) == 2 and all(math.isfinite(v) for v in logged)
    assert all("prm_min/truncated" in row for row in trainer.state.log_history if "rewards/prm_min/mean" in row)
    assert len(reward.calls) == 2
    for call in reward.calls:
        assert len(call["completions"]) == 8 and set(call["problem"]) <= set(problems)
        # The real completions: what the policy generated, decoded as TRL decodes them.
        decoded = tokenizer.batch_decode(call["completion_ids"], skip_special_tokens=True)
        assert call["completions"] == decoded
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters()))
