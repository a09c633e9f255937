"""``prmkit lab study search``: the oracle as a prefix scorer, the pool's disjoint-subset picks, the summary's
maths, the cache keys, and the study end to end at its quick size (the base as the policy, so the suite does
not fine-tune one)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from prmkit.schema import Problem

PROBLEM = Problem("Start at 10.\nA + 2\nB - 1\nWhat is the final value?", answer="11")
RIGHT = ["A + 2 : 10 + 2 = 12", "B - 1 : 12 - 1 = 11", "# Answer\n\n11"]
LUCKY = ["A + 2 : 10 + 2 = 13", "B - 1 : 12 - 1 = 11", "# Answer\n\n11"]  # a wrong step, a right answer
WRONG = ["A + 2 : 10 + 2 = 12", "B - 1 : 12 - 1 = 10", "# Answer\n\n10"]


def test_the_oracle_scores_each_step_of_a_prefix_by_its_truth():
    from prmkit.lab.study.search import OracleScorer

    (right, _), (lucky, _), (prefix, tokens) = OracleScorer().score([(PROBLEM, RIGHT), (PROBLEM, LUCKY),
                                                                     (PROBLEM, WRONG[:2])])
    assert right.tolist() == [1, 1, 1] and lucky.tolist()[0] == 0 and prefix.tolist() == [1, 0] and tokens == 0


def test_pool_picks_average_the_disjoint_subsets():
    from prmkit.lab.study.search_summary import block_picks, graded

    steps = [RIGHT, LUCKY, WRONG, WRONG]
    gold, valid, truth = graded([PROBLEM] * 4, steps)
    assert gold.tolist() == [True, True, False, False] and valid.tolist() == [True, False, False, False]
    samples = [{"steps": s, "scores": p, "tokens": 10, "prm_tokens": 5}
               for s, p in zip(steps, ([0.9] * 3, [0.95] * 3, [0.1] * 3, [0.99] * 3))]
    # subsets {0, 1} and {2, 3}: the PRM picks LUCKY (right, not valid), then the last WRONG
    assert block_picks(samples, truth, gold, valid, 2, "best_of_n", "prm") == (0.5, 0.0, 20.0, 10.0)
    # the oracle picks the valid one in the first subset; in the second both score 0 and the first of them is kept
    assert block_picks(samples, truth, gold, valid, 2, "best_of_n", "oracle")[:2] == (0.5, 0.5)
    assert block_picks(samples, truth, gold, valid, 4, "best_of_n", "prm")[:2] == (0.0, 0.0)


def test_cell_summary_pairs_each_problem_with_best_of_n():
    from prmkit.lab.study.search_summary import cell_summary

    # two seeds, three problems: (gold, valid, generated tokens, PRM tokens)
    mine = [np.array([[1, 1, 10, 5], [1, 0, 10, 5], [0, 0, 10, 5]], float)] * 2
    bon = [np.array([[0, 0, 4, 2], [1, 1, 4, 2], [0, 0, 4, 2]], float)] * 2
    bins = [np.array([0, 1, 2])] * 2
    c = cell_summary(("beam", "prm", 4), mine, bon, bins)
    assert c["gold"]["mean"] == pytest.approx(2 / 3) and c["cost"] == 15.0 and c["prm_tokens"] == 5.0
    assert c["vs_best_of_n"]["gold"]["mean"] == pytest.approx(1 / 3) and c["vs_best_of_n"]["valid"]["mean"] == 0.0
    assert c["exploitation"] == pytest.approx(0.5)
    assert c["bins"]["hard"]["problems"] == 2 and c["bins"]["hard"]["vs_best_of_n_gold"]["mean"] == 1.0


def test_search_settings_key_no_reward_model(tmp_path):
    """More budgets rerun the pool and add searches; they never retrain the PRM or resample its data."""
    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.protocol import Context
    from prmkit.lab.study.search import STUDY

    cfg = STUDY.prepare(study_preset("search", "quick"), [0])
    more = cfg.replace({"search.budgets": [*cfg.search.budgets, 16], "search.problems": 5})

    def keys(c):
        return {Path(job.folder).name: job.key for _, jobs in STUDY.stages(c, Context(tmp_path, (0,))) for job in jobs}

    before, after = keys(cfg), keys(more)
    assert before["data"] == after["data"] and before["prm"] == after["prm"]
    assert before["pool"] != after["pool"] and before["problems"] != after["problems"]
    assert set(after) - set(before) == {f"{s}-{k}-16" for s in cfg.search.strategies for k in cfg.search.scorers}


def test_settings_are_checked():
    from prmkit.lab.study.config import SearchStudyConfig, study_preset

    with pytest.raises(ValueError, match="multiples of search.m"):
        SearchStudyConfig(budgets=(4, 6))
    with pytest.raises(ValueError, match="strategies"):
        SearchStudyConfig(strategies=("best_of_n",))
    assert study_preset("search", "quick").policy == "sft"
    with pytest.raises(ValueError, match="ledger only"):
        study_preset("search", "quick", "plans")


@pytest.mark.slow
def test_the_quick_study_runs_end_to_end(tmp_path, lab_cache):
    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.protocol import run_study
    from prmkit.lab.study.search import STUDY

    cfg = study_preset("search", "quick").replace({"policy": "lm"})
    s = run_study(STUDY, cfg, [0], tmp_path, progress=False)
    root = tmp_path / "study-search"
    assert json.loads((root / "summary.json").read_text())["seeds"] == [0]
    assert (root / "report.html").exists() and (root / "figures" / "search.png").exists()
    strategies = {c["strategy"] for c in s["cells"]}
    assert strategies == {"best_of_n", "weighted", "beam", "dvts", "particles"}
    assert len(s["cells"]) == 5 * 2 * len(cfg.search.budgets)
    for c in s["cells"]:
        assert 0 <= c["valid"]["mean"] <= c["gold"]["mean"] <= 1 and c["generated_tokens"] > 0
        # the oracle's arm is charged the PRM's tokens too
        assert c["prm_tokens"] > 0
    oracle = {(c["strategy"], c["n"]): c for c in s["cells"] if c["scorer"] == "oracle"}
    ceilings = {c["n"]: c for c in s["ceilings"]}
    top = max(cfg.search.budgets)
    for (strategy, n), c in oracle.items():  # best-of-the-whole-pool with exact step truth: the step-judge limit
        if strategy == "best_of_n" and n == top:
            assert c["valid"]["mean"] == pytest.approx(ceilings[n]["judge"]["mean"])
    again = run_study(STUDY, cfg, [0], tmp_path, progress=False)  # a rerun recomputes nothing
    assert all(t.get("ran", 0) == 0 for name, t in again["timings"].items() if name != "evaluate")
