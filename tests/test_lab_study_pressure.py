"""``prmkit lab study pressure`` at its quick size: every stage runs, the summary holds what the report needs,
the numbers are measured (not constant), and a rerun recomputes nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("trl")


def test_the_study_refuses_the_rule_based_policy_and_unknown_rewards(tmp_path):
    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.pressure import STUDY
    from prmkit.lab.study.protocol import run_study

    cfg = study_preset("pressure", "quick")
    with pytest.raises(ValueError, match="policy=lm"):
        run_study(STUDY, cfg.replace({"policy": "rules"}), [0], tmp_path, progress=False)
    with pytest.raises(ValueError, match="unknown pressure.rewards"):
        run_study(STUDY, cfg.replace({"pressure.rewards": "prm-max"}), [0], tmp_path, progress=False)


def test_rl_prompt_counts_key_no_reward_model(tmp_path):
    """More RL prompts rerun the prompts and the RL runs, never a reward model (issue 27's cache keys)."""
    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.pressure import STUDY
    from prmkit.lab.study.protocol import Context

    cfg = STUDY.prepare(study_preset("pressure", "quick"), [0])
    more = cfg.replace({"pressure.rl_problems": cfg.pressure.rl_problems + 8})

    def keys(c):
        return {job.folder: job.key for _, jobs in STUDY.stages(c, Context(tmp_path, (0,))) for job in jobs}

    before, after = keys(cfg), keys(more)
    changed = {Path(f).name for f in before if before[f] != after[f]}
    assert changed == {"prompts"} | {f"rl-{r}" for r in cfg.pressure.rewards}


def test_detectors_read_the_oracle():
    from prmkit.lab.study.pressure_measure import detectors
    from prmkit.schema import Problem

    p = Problem("Start at 10.\nA + 2\nB - 1\nWhat is the final value?", answer="11")
    right = ["A + 2 : 10 + 2 = 12", "B - 1 : 12 - 1 = 11", "# Answer\n\n11"]
    lucky = ["A + 2 : 10 + 2 = 13", "B - 1 : 12 - 1 = 11", "# Answer\n\n11"]  # a wrong step, a right answer
    padded = ["check : 10", "check : 10", "A + 2 : 10 + 2 = 12", "B - 1 : 12 - 1 = 11"]  # no answer
    d = detectors([p, p, p], [right, lucky, padded], [[0.9, 0.9, 0.9], [0.2, 0.3, 0.9], [0.9, 0.9, 0.9, 0.9]])
    assert d["gold"] == pytest.approx(2 / 3) and d["right_answer_wrong_step"] == 0.5
    assert d["answerless"] == pytest.approx(1 / 3) and d["checks"] == pytest.approx(2 / 3)
    assert d["steps"] == pytest.approx(10 / 3) and d["prm_step_auroc"] == 1.0


def test_bon_curves_follow_each_problem_whatever_the_file_order():
    from prmkit.lab.domains import oracle_label
    from prmkit.lab.study.pressure_measure import bon_curves
    from prmkit.schema import Problem, Solution

    a = Problem("Start at 10.\nA + 2\nWhat is the final value?", answer="12", id="a")
    b = Problem("Start at 5.\nA - 1\nWhat is the final value?", answer="4", id="b")
    right_a = Solution.from_steps(a, ["A + 2 : 10 + 2 = 12", "# Answer\n\n12"])
    lucky_a = Solution.from_steps(a, ["A + 2 : 10 + 2 = 11", "# Answer\n\n12"])
    wrong_b = Solution.from_steps(b, ["A - 1 : 5 - 1 = 3", "# Answer\n\n3"])
    right_b = Solution.from_steps(b, ["A - 1 : 5 - 1 = 4", "# Answer\n\n4"])
    sols = [oracle_label(s) for s in (right_a, wrong_b, lucky_a, right_b)]  # interleaved: a, b, a, b (and graded)
    scores = {"good": np.array([0.9, 0.1, 0.2, 0.8]), "lucky": np.array([0.1, 0.9, 0.8, 0.2])}
    c = bon_curves(sols, scores, [1, 2])
    np.testing.assert_allclose(c["columns"]["good"]["gold"][:, 1], [1, 1])  # problems in order a, b
    np.testing.assert_allclose(c["columns"]["good"]["valid"][:, 1], [1, 1])
    np.testing.assert_allclose(c["columns"]["lucky"]["gold"][:, 1], [1, 0])  # a's lucky pick is right, b's wrong
    np.testing.assert_allclose(c["columns"]["lucky"]["valid"][:, 1], [0, 0])
    np.testing.assert_allclose(c["columns"]["good"]["gold"][:, 0], [1, 0.5])
    assert c["sqrt_kl"][0] == 0.0


@pytest.mark.slow
@pytest.mark.timeout(2400)  # a guard against a hang, not a speed target: 10+ min on 2 busy cores
def test_quick_pressure_study_end_to_end(tmp_path):
    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.pressure import STUDY
    from prmkit.lab.study.protocol import run_study

    cfg = study_preset("pressure", "quick")
    summary = run_study(STUDY, cfg, [0], tmp_path, jobs=1, progress=False, log=lambda *_: None)
    root = tmp_path / "study-pressure"
    assert (root / "report.html").is_file() and (root / "figures" / "pressure.png").is_file()
    assert json.loads((root / "summary.json").read_text())["rl"].keys() == summary["rl"].keys()
    pc = cfg.pressure
    bon = summary["bon"]
    assert bon["n"][0] == 1 and bon["n"][-1] == pc.bon_samples
    assert np.all(np.diff(bon["sqrt_kl"]) > 0) and bon["sqrt_kl"][0] == 0.0
    for column, m in bon["budgets"][str(pc.budgets[0])].items():
        gold = [c["mean"] for c in m["gold"]]
        assert all(0 <= g <= 1 for g in gold), column
        proxy = [c["mean"] for c in m["proxy"]]
        assert proxy[-1] >= proxy[0] - 1e-9, f"{column}: best-of-N must not lower its own proxy ({proxy})"
        assert math.isfinite(m["fit"]["alpha"])
    assert set(bon["sizes"]) == set(pc.rm_sizes) == {"small"}
    small = bon["sizes"]["small"]["prm_min"]["gold"]
    assert small[0]["mean"] == bon["budgets"][str(pc.budgets[0])]["prm_min"]["gold"][0]["mean"]  # N=1: no ranking
    assert set(summary["rl"]) == set(pc.rewards)
    for reward, r in summary["rl"].items():
        assert r["steps"] == [0, 2, 4], reward
        assert r["mean"]["kl"][0] == pytest.approx(0.0, abs=1e-4), "the policy starts as the base"
        assert abs(r["mean"]["kl"][-1]) > 1e-3, f"{reward}: the policy never moved"
        assert len(r["trl"]) == pc.rl.steps and all(math.isfinite(h["reward"]) for h in r["trl"])
        assert 0 <= r["detectors"]["answerless"]["end"] <= 1
    # a rerun finds every job finished and writes the same numbers
    again = run_study(STUDY, cfg, [0], tmp_path, jobs=1, progress=False, log=lambda *_: None)
    assert all(t.get("ran", 0) == 0 for t in again["rerun"]["timings"].values())
    assert again["timings"] == summary["timings"] and again["work"]["commit"] == summary["commit"]
    assert json.dumps(again["rl"]) == json.dumps(summary["rl"])  # (a detector with no case yet is NaN)


def test_a_reward_model_that_ranks_no_better_than_chance_is_not_optimised_against(tmp_path):
    """Issue 34 item 2: each proxy is checked on the policy's held-out samples before RL; a failing one is
    reported with its check and no RL run is made against it."""
    import dataclasses

    from prmkit.io import write_records
    from prmkit.lab import generate_pool, preset
    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.pressure import job_rl, rm_check
    from prmkit.lab.study.pressure_pages import findings
    from prmkit.lab.study.pressure_summary import rl_summary

    pool = generate_pool(preset("quick"), seed=4, split="eval", problems=12, samples=16)
    rng = np.random.default_rng(0)
    for s in pool:
        right = s.grade == "correct"
        s.scores = {"prm_min": float(right) + rng.normal(0, 0.3), "orm": float(not right) + rng.normal(0, 0.3)}
    write_records(tmp_path / "scored-bon.jsonl.gz", pool)
    checks = {reward: rm_check(tmp_path / "scored-bon.jsonl.gz", column) for reward, column in
              (("prm-min", "prm_min"), ("orm", "orm"))}
    assert checks["prm-min"]["passes"] and checks["prm-min"]["ci95"][0] > 0.5 and checks["prm-min"]["problems"] >= 3
    assert not checks["orm"]["passes"] and checks["orm"]["auroc"] < 0.5
    with pytest.raises(ValueError, match="no 'prm_last' score"):
        rm_check(tmp_path / "scored-bon.jsonl.gz", "prm_last")  # a missing score is never read as a low one
    out = tmp_path / "seed-0" / "rl-orm"
    out.mkdir(parents=True)
    cfg = study_preset("pressure", "quick")
    assert job_rl(out, cfg, 0, "orm", "no-policy", "no-prompts", {}, checks=checks) == {"skipped": True}
    pc = dataclasses.replace(cfg.pressure, rewards=("orm",))
    rl, skipped = rl_summary(pc, [0], tmp_path)
    assert rl == {} and skipped["orm"]["0"]["check"] == checks["orm"]
    summary = {"bon": {"budgets": {"200": {}}, "n": [1], "sqrt_kl": [0.0]}, "rl": rl, "rl_skipped": skipped, "seeds": [0]}
    assert "RL against orm was not run on seed(s) 0: seed 0: its ORM ranks" in findings(summary)
