"""The lab run's data arms: the equal-data pair, the paper's arms, and the one validation split they share.

A tiny run end to end (a 1-layer base pretrained a few steps, reward models trained two steps): what
matters here is what each model was given, not how good it is.
"""

from __future__ import annotations

import json
import os

import pytest

from prmkit.io import read_solutions
from prmkit.lab.arms import MAX_PASSES, PAPER, WRONG_SHARE, count_of, held_problems, kind_of, recipe_for
from prmkit.lab.config import preset
from prmkit.lab.run import rm_names, run_lab
from prmkit.lab.study.config import study_preset

TINY = {"eval_problems": 4, "eval_samples": 4, "ood_problems": 2, "ood_samples": 4, "train_problems": 20,
        "train_samples": 2, "pretrain_problems": 8, "ood_pretrain_problems": 2, "base.hidden_size": 32,
        "base.intermediate_size": 64, "base.layers": 1, "base.heads": 2, "base.steps": 3, "base.batch_size": 4,
        "base.warmup": 1, "rm.max_steps": 2, "rm.batch_size": 4, "rm.warmup_steps": 1, "rm.restarts": 1,
        "rm.save_every": 0, "bootstrap": 20, "paper_arms": True, "orm_ratio": 3}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("arms")
    old = os.environ.get("PRMKIT_CACHE")
    os.environ["PRMKIT_CACHE"] = str(root / "cache")
    try:
        cfg = preset("quick").replace(TINY)
        summary = run_lab(cfg, [0], root / "run", jobs=1, progress=False, log=lambda *a: None)
    finally:
        os.environ.pop("PRMKIT_CACHE") if old is None else os.environ.__setitem__("PRMKIT_CACHE", old)
    return cfg, root / "run" / "seed-0", summary


def ids(path) -> list[str]:
    return [s.id for s in read_solutions(path)]


def problems(path) -> set[str]:
    return {s.problem.id for s in read_solutions(path)}


def test_the_paper_arms_come_after_the_equal_pair_and_only_when_asked():
    first, after = rm_names(preset("quick").replace({"paper_arms": True}))
    assert first == [("prm", 2000), ("orm", 2000)] and after == [(PAPER["orm"], 2000), (PAPER["prm"], 2000)]
    assert rm_names(preset("quick"))[1] == []
    assert {kind_of(n) for n, _ in first + after} == {"prm", "orm"}


def test_the_step_cap_grows_with_the_arms_data_and_only_with_early_stopping():
    cfg = preset("default")
    rm = cfg.rm
    assert recipe_for(rm, count_of("prm", cfg.labelled, cfg)) is rm  # a pass is far below the cap
    big = recipe_for(rm, count_of(PAPER["orm"], cfg.labelled, cfg))
    per_pass = -(-cfg.labelled * cfg.orm_ratio // rm.batch_size)
    assert (big.max_steps, big.early_stop_min_steps) == (MAX_PASSES * per_pass, per_pass) > (rm.max_steps, 0)
    assert {k for k in rm.to_dict() if rm.to_dict()[k] != big.to_dict()[k]} == {"max_steps", "early_stop_min_steps"}
    study = study_preset("budget").rm
    assert study.early_stop_patience == 0 and recipe_for(study, 10**6) is study


@pytest.mark.slow
def test_every_arm_validates_on_the_same_solutions_and_none_trains_on_them(tiny_run):
    cfg, seed_dir, _ = tiny_run
    held = held_problems(seed_dir / "data", 0)
    assert len(held) == 2  # a tenth of the 20 training problems
    folders = {name: seed_dir / f"rm-{name}-{cfg.labelled}" for name in ("prm", "orm", *PAPER.values())}
    valid = {name: ids(f / "valid.jsonl.gz") for name, f in folders.items()}
    assert len(set(map(tuple, valid.values()))) == 1 and len(valid["prm"]) == 2 * cfg.train_samples
    for name, folder in folders.items():
        assert not problems(folder / "train.jsonl.gz") & held, name
        assert problems(folder / "valid.jsonl.gz") == held, name
    orm, orm_paper = (list(read_solutions(folders[n] / "train.jsonl.gz")) for n in ("orm", "orm_paper"))
    assert len(orm_paper) == cfg.orm_ratio * len(orm)  # 10x in the default: uniform, graded, never rated
    assert all(s.ratings == [None] * len(s.steps) and s.grade for s in orm_paper)


@pytest.mark.slow
def test_the_paper_prm_trains_on_labelled_convincing_wrong_answers(tiny_run):
    cfg, seed_dir, _ = tiny_run
    chosen = list(read_solutions(seed_dir / f"rm-{PAPER['prm']}-{cfg.labelled}" / "train.jsonl.gz"))
    assert len(chosen) == cfg.train_samples * 18  # per problem, the 18 not held out
    assert all(s.labeller and all(r is not None for r in s.ratings) for s in chosen)  # rated by the labellers
    assert not any(k.startswith("selector") for s in chosen for k in s.scores)  # the selector's scores dropped
    done = json.loads((seed_dir / f"rm-{PAPER['prm']}-{cfg.labelled}" / "select" / "selection.json").read_text())
    # the selector keeps the 80% quota of wrong answers wherever the candidates hold enough of them
    assert done["wrong_share"] >= min(WRONG_SHARE, done["candidates_wrong_share"]) - 0.05
    uniform = set(ids(seed_dir / "data" / "train.jsonl.gz"))
    assert not {s.id for s in chosen} & uniform  # chosen among samples the selector never learned from


@pytest.mark.slow
def test_the_report_has_both_comparisons_with_their_ceilings(tiny_run):
    _, seed_dir, summary = tiny_run
    assert set(summary["paper_findings"]) == set(summary["findings"]) == {"eval", "ood"}
    row = summary["paper_findings"]["eval"][0]
    assert {"answer", "valid", "pass", "step_limit"} <= set(row)
    head = summary["results"]["0"]["eval"]
    assert {"prm_paper_min@4", "orm_paper@4", "valid_prm_paper_min@4", "prm_paper_step_auroc"} <= set(head)
    spreads = summary["auroc_spreads"]  # the spread and the floor hold for every PRM of the run
    assert set(spreads) == {"PRM", "paper PRM"} and spreads["paper PRM"]["values"] == [head["prm_paper_step_auroc"]]
    assert spreads["PRM"] == summary["auroc_spread"] and spreads["PRM"]["lowest"] == head["prm_step_auroc"]
    models = summary["models"]["0"]
    assert set(models) == {f"rm-{n}-40" for n in ("prm", "orm", "prm_paper", "orm_paper")}
    assert models["rm-prm_paper-40"]["selection"]["selected"] == 36 and "eval_loss" in models["rm-orm-40"]
    assert "the paper&#39;s data arms" in (seed_dir.parent / "report.html").read_text() or \
        "the paper's data arms" in (seed_dir.parent / "report.html").read_text()
