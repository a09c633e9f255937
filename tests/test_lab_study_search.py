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

    class Encodings:  # what the PRM's formatter gives: the oracle's arm is charged these tokens
        class scorer:
            @staticmethod
            def encodings(problems, steps):
                return [type("Enc", (), {"input_ids": [0] * (3 * len(s))})() for s in steps]

    check = ["check : 10", *RIGHT]  # a neutral line is a valid step
    early = ["A + 2 : 10 + 2 = 12", "# Answer\n\n12"]  # an answer before the last transaction is wrong
    scored = OracleScorer(Encodings).score([(PROBLEM, RIGHT), (PROBLEM, LUCKY), (PROBLEM, WRONG[:2]), (PROBLEM, check),
                                            (PROBLEM, early)])
    truth = [p.tolist() for p, _ in scored]
    assert truth[0] == [1, 1, 1] and truth[1][0] == 0 and truth[2] == [1, 0] and truth[3] == [1, 1, 1, 1]
    assert truth[4] == [1, 0] and [t for _, t in scored] == [9, 9, 6, 12, 6]
    assert OracleScorer().score([(PROBLEM, RIGHT)])[0][1] == 0


def pool_sample(steps, score, problem=0):
    return {"problem": problem, "steps": steps, "scores": [score] * len(steps), "tokens": 10, "prm_tokens": 5}


def test_pool_picks_average_the_disjoint_subsets():
    from prmkit.lab.study.search_summary import block_picks, graded

    steps = [RIGHT, LUCKY, WRONG, WRONG]
    g = graded([PROBLEM] * 4, steps)
    assert g.gold.tolist() == [True, True, False, False] and g.valid.tolist() == [True, False, False, False]
    samples = [pool_sample(s, p) for s, p in zip(steps, (0.9, 0.95, 0.1, 0.99))]
    # subsets {0, 1} and {2, 3}: the PRM picks LUCKY (right, not valid), then the last WRONG
    assert block_picks(samples, g, 2, "best_of_n", "prm") == (0.5, 0.0, 20.0, 10.0)
    # the oracle picks the valid one in the first subset; in the second both score 0 and the first of them is kept
    assert block_picks(samples, g, 2, "best_of_n", "oracle")[:2] == (0.5, 0.5)
    assert block_picks(samples, g, 4, "best_of_n", "prm")[:2] == (0.0, 0.0)
    # weighted: answer 11 holds 0.9 + 0.95 against 10's 0.1 + 0.99; its best member is LUCKY
    assert block_picks(samples, g, 4, "weighted", "prm")[:2] == (1.0, 0.0)


def test_the_oracle_never_prefers_an_unanswered_sample_and_a_truncated_one_ranks_last():
    from prmkit.lab.study.search_summary import block_picks, graded

    unanswered = RIGHT[:2]  # every step valid, no answer: no valid solution
    g = graded([PROBLEM] * 2, [unanswered, RIGHT])
    assert g.truth[0] == [1.0, 1.0, 0.0]
    assert block_picks([pool_sample(unanswered, 0.5), pool_sample(RIGHT, 0.5)], g, 2, "best_of_n", "oracle")[:2] == (1, 1)
    cut = pool_sample(WRONG, 0.99) | {"scores": [0.99]}  # the PRM scored one of its three steps
    g = graded([PROBLEM] * 2, [WRONG, RIGHT])
    assert block_picks([cut, pool_sample(RIGHT, 0.5)], g, 2, "best_of_n", "prm")[:2] == (1, 1)


def write_seed(root: Path, problems: list, pools: list[list[dict]], trees: dict, pass1: list[float]) -> None:
    """A seed's job outputs as the study's jobs write them."""
    from prmkit.io import write_records

    write_records(root / "problems" / "problems.jsonl", problems)
    write_records(root / "pool" / "pool.jsonl.gz", [r for pool in pools for r in pool])
    write_records(root / "difficulty" / "difficulty.jsonl", [{"samples": 4, "pass1": pass1}])
    for name, chosen in trees.items():
        write_records(root / name / "results.jsonl.gz", [
            {"problem": p.problem, "answer": p.answer, "chosen": {"steps": c, "scores": [], "id": 0, "finished": True},
             "cost": {"generated_tokens": 40, "prm_tokens": 60, "prm_calls": 4}, "candidates": 4}
            for p, c in zip(problems, chosen)])


def test_the_summary_reads_every_job_output_in_problem_order(tmp_path):
    """Two problems, a pool of 4 each, one tree search: every number checked by hand."""
    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.search_summary import summarise

    other = Problem("Start at 5.\nA - 1\nWhat is the final value?", answer="4")
    o_right, o_wrong = ["A - 1 : 5 - 1 = 4", "# Answer\n\n4"], ["A - 1 : 5 - 1 = 3", "# Answer\n\n3"]
    pools = [[pool_sample(s, p) for s, p in zip([WRONG, RIGHT, WRONG, LUCKY], (0.9, 0.8, 0.1, 0.2))],
             [pool_sample(s, p, 1) for s, p in zip([o_wrong, o_wrong, o_wrong, o_right], (0.5, 0.4, 0.3, 0.2))]]
    cfg = study_preset("search", "quick").replace({"search.budgets": [4], "search.strategies": ["beam"],
                                                    "search.problems": 2})
    write_seed(tmp_path / "seed-0", [PROBLEM, other], pools, {"beam-prm-4": [RIGHT, o_wrong],
                                                             "beam-oracle-4": [RIGHT, o_right]}, [0.5, 0.1])
    s = summarise(cfg, [0], tmp_path)
    cell = {(c["strategy"], c["scorer"]): c for c in s["cells"]}
    assert cell["best_of_n", "prm"]["gold"]["mean"] == 0.0  # the PRM picks WRONG (0.9) and o_wrong (0.5)
    assert cell["best_of_n", "oracle"]["valid"]["mean"] == 1.0  # the step-judge limit at the pool's size
    assert s["ceilings"][0]["judge"]["mean"] == 1.0 and s["ceilings"][0]["pass"]["mean"] == 1.0
    beam = cell["beam", "prm"]
    assert beam["gold"]["mean"] == 0.5 and beam["vs_best_of_n"]["gold"]["mean"] == 0.5 and beam["cost"] == 100.0
    m = beam["vs_best_of_n_compute"]
    assert m["n_star"] == [pytest.approx(100 / 15)] and m["capped"]  # 100 tokens against 15 a sample: N* > 4
    assert m["gold"]["mean"] == 0.5  # best-of-N read at the pool's 4
    assert s["difficulty"]["bins"] == {"hard": 1, "medium": 1, "easy": 0}
    assert beam["bins"]["hard"]["problems"] == 1 and beam["bins"]["hard"]["gold"]["mean"] == 0.0
    write_seed(tmp_path / "seed-0", [other, PROBLEM], pools, {}, [0.5, 0.1])  # the problems file reordered
    with pytest.raises(ValueError, match="not the problems file's"):
        summarise(cfg, [0], tmp_path)


def test_cell_summary_pairs_each_problem_with_best_of_n():
    from prmkit.lab.study.search_summary import Seed, cell_summary

    # two seeds, three problems: (gold, valid, generated tokens, PRM tokens)
    mine = [np.array([[1, 1, 10, 5], [1, 0, 10, 5], [0, 0, 10, 5]], float),
            np.array([[1, 1, 10, 5], [1, 1, 10, 5], [0, 0, 10, 5]], float)]
    bon = np.array([[0, 0, 4, 2], [1, 1, 4, 2], [0, 0, 4, 2]], float)
    curves = {"prm": {"gold": np.tile([[0.0, 0.5, 0.5, 1.0]], (3, 1)), "valid": np.zeros((3, 4))}}
    seeds = [Seed({("beam", "prm", 4): m, ("best_of_n", "prm", 4): bon}, curves, np.full(3, 5.0), np.zeros(3), {}, 0.9)
             for m in mine]
    c = cell_summary(("beam", "prm", 4), seeds, np.array([[0, 1, 2], [0, 1, 2]]))
    assert c["gold"]["mean"] == pytest.approx(2 / 3) and c["cost"] == 15.0 and c["prm_tokens"] == 5.0
    assert c["vs_best_of_n"]["gold"]["mean"] == pytest.approx(1 / 3) and c["vs_best_of_n"]["valid"]["mean"] == pytest.approx(1 / 6)
    assert c["exploitation"]["mean"] == pytest.approx(0.25)
    assert c["vs_best_of_n"]["bins"]["hard"]["gold"]["mean"] == 1.0
    m = c["vs_best_of_n_compute"]
    assert m["n_star"] == [3.0, 3.0] and not m["capped"]  # 15 tokens a problem, 5 a sample
    assert m["gold"]["mean"] == pytest.approx(2 / 3 - 0.5)


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
    assert before["difficulty"] != after["difficulty"]
    assert set(after) - set(before) == {f"{s}-{k}-16" for s in cfg.search.strategies for k in cfg.search.scorers}


def test_settings_are_checked():
    from prmkit.lab.study.config import SearchStudyConfig, study_preset

    with pytest.raises(ValueError, match="multiples of search.m"):
        SearchStudyConfig(budgets=(4, 6))
    with pytest.raises(ValueError, match="strategies"):
        SearchStudyConfig(strategies=("best_of_n",))
    with pytest.raises(ValueError, match="two increasing"):
        SearchStudyConfig(difficulty=(0.2, 0.5, 0.8))
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
    again = run_study(STUDY, cfg, [0], tmp_path, progress=False)  # a rerun recomputes nothing
    assert all(t.get("ran", 0) == 0 for name, t in again["rerun"]["timings"].items() if name != "evaluate")
    assert again["timings"] == s["timings"]  # the run that did the work keeps its wall times


def test_the_plan_prices_a_search_by_its_size(tmp_path):
    """``--plan`` scales a done search's seconds by N x problems, and prices the oracle's searches apart."""
    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.plan import estimate
    from prmkit.lab.study.protocol import Context
    from prmkit.lab.study.search import STUDY, Tree

    cfg = STUDY.prepare(study_preset("search", "quick"), [0])
    trees = [j for _, jobs in STUDY.stages(cfg, Context(tmp_path, (0,))) for j in jobs if isinstance(j, Tree)]
    small, large = (next(t for t in trees if t.scorer == "prm" and t.n == n) for n in (4, 8))
    assert large.work == 2 * small.work == 2 * 4 * cfg.search.problems and small.plan_kind == "Tree/prm"
    rows = [{"stage": "search", "job": "Tree", "kind": t.plan_kind, "work": t.work, "status": s, "seconds": sec}
            for t, s, sec in ((small, "done", 10.0), (large, "to run", None))]
    assert estimate(rows, {})[1]["estimate"] == 20.0
