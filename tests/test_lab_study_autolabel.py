"""``prmkit lab study autolabel``: its pure parts, and the quick preset end to end (the served judge included)."""

from __future__ import annotations

import gzip
import json

import pytest

from prmkit.lab.study.autolabel import ARMS, within_budget
from prmkit.lab.study.autolabel_quality import REASONS, label_quality, reason, step_truth
from prmkit.lab.study.config import AutolabelConfig, study_preset
from prmkit.schema import Problem, Solution


def _sol(steps, answer="3"):
    p = Problem("Start at 5.\nA + 3\nB set to 2\nC + 1\nWhat is the final value?", answer=answer)
    return Solution.from_steps(p, steps)


def test_step_truth_tells_correctness_from_value():
    right = _sol(["A + 3 : 5 + 3 = 8", "B set 2 : 2", "C + 1 : 2 + 1 = 3", "# Answer\n\n3"])
    assert [(t.rating, t.on_track) for t in step_truth(right)] == [(1, True)] * 4
    slip = _sol(["A + 3 : 5 + 3 = 9", "B set 2 : 2", "C + 1 : 2 + 1 = 3", "# Answer\n\n3"])
    first = step_truth(slip)[0]
    assert (first.rating, first.on_track, first.set_ahead) == (-1, False, True)
    # the slip is wiped by the set: rollouts say +1 there, the oracle -1
    assert reason(first, 1) == "missed: a later set wipes it" and reason(first, -1) is None
    # a right step carrying an earlier error, flagged wrong, is a false alarm "after an earlier error"
    carried = _sol(["A + 3 : 5 + 3 = 9", "check : 9"], answer="3")
    assert reason(step_truth(carried)[1], -1) == "false alarm: after an earlier error"
    assert {reason(t, -1) for t in step_truth(slip)[1:]} == {"false alarm: on track"}  # the set put it back on track
    assert all(why in REASONS for why in ("missed: off track", "missed: the value is still right"))


def test_label_quality_counts_against_the_oracle():
    slip = _sol(["A + 3 : 5 + 3 = 9", "B set 2 : 2", "C + 1 : 2 + 1 = 3", "# Answer\n\n3"])
    perfect = Solution.from_steps(slip.problem, slip.texts, ratings=[-1, None, None, None])
    wrong = Solution.from_steps(slip.problem, slip.texts, ratings=[1, 1, -1, 1])
    q = label_quality([slip, slip], [perfect, wrong])
    assert q["labelled_solutions"] == 2 and q["labelled_steps"] == 5
    assert q["wrong_precision"] == 0.5 and q["wrong_recall"] == 0.5  # one of two -1 right; one of two -1 steps found
    assert q["first_error_accuracy"] == 0.5
    assert q["reasons"]["missed: a later set wipes it"] == 1 and q["reasons"]["false alarm: on track"] == 1


def test_equal_cost_takes_the_longest_prefix_within_budget():
    from types import SimpleNamespace

    recs = [SimpleNamespace(meta={"autolabel": {"cost": {"rollouts": 8, "judge_calls": 1}}}) for _ in range(5)]
    assert len(within_budget(recs, 27)) == 3 and len(within_budget(recs, 8)) == 0  # a judge call costs one


def test_config_checks_and_the_quick_size():
    quick = study_preset("autolabel", "quick").autolabel
    assert quick == AutolabelConfig(train_problems=50, eval_problems=40, eval_samples=16, judge_labels=200, rm_steps=80,
                                    restarts=1)  # prmkit/lab/recipes/studies/quick.yaml
    assert study_preset("autolabel", "default").autolabel == AutolabelConfig()
    for bad in ({"k": 0}, {"judge_threshold": 1.0}, {"rm_steps": -1}):
        with pytest.raises(ValueError):
            AutolabelConfig(**bad)


@pytest.mark.slow
@pytest.mark.timeout(2400)  # pretrains the base model when the session has none
def test_quick_study_runs_every_labeller_and_arm(tmp_path, lab_cache, lab_jobs):
    """The quick preset, seed 0 (about 2 minutes): every labeller labels the pool (the judge through a real
    `prmkit serve --critic` and the openai client), every arm with enough labels trains and is scored, the
    pages and the docs tables render, and a rerun runs no job."""
    from prmkit.lab.doctables import TABLES
    from prmkit.lab.study.autolabel import STUDY
    from prmkit.lab.study.protocol import run_study

    cfg = study_preset("autolabel", "quick")
    lines = []
    summary = run_study(STUDY, cfg, [0], tmp_path, jobs=lab_jobs, progress=False, log=lines.append)
    out = tmp_path / "study-autolabel"
    for name in ("summary.json", "section.html", "report.html", "figures/autolabel.png"):
        assert (out / name).is_file(), name
    labels = out / "seed-0" / "label"
    with gzip.open(labels / "judge.jsonl.gz", "rt") as f:
        judged = [json.loads(line) for line in f]
    assert all("\\boxed{" in r["meta"]["autolabel"]["judge"]["reply"] for r in judged)  # the served critic's replies
    assert summary["cost"]["mc"]["rollouts"][0] > summary["cost"]["omegaprm"]["rollouts"][0] > 0
    assert summary["prm"]["human"]["trained"] and summary["prm"]["mc"]["trained"]
    for arm, r in summary["prm"].items():
        assert arm in ARMS and (not r["trained"] or 0.0 <= r["bon@16"]["mean"] <= 1.0)
    mc = summary["quality"]["mc"]
    assert mc["labelled_steps"][0] > summary["quality"]["omegaprm"]["labelled_steps"][0]  # mc labels every step
    assert "stands in" in (out / "section.html").read_text() or "stand-in" in (out / "section.html").read_text()
    for name in ("quality", "reasons", "hard", "cost", "prm", "difference", "findings", "examples"):
        assert TABLES[f"autolabel-{name}"](summary)
    lines.clear()
    run_study(STUDY, cfg, [0], tmp_path, jobs=lab_jobs, progress=False, log=lines.append)
    assert all("(all cached)" in line for line in lines if line.startswith("stage ")), lines
