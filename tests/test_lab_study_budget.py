"""The label-budget study: its statistics on hand-made curves, its parts, and one quick run (slow)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prmkit.lab.study.budget import (
    STUDY,
    Data,
    curve_stats,
    equivalence,
    equivalent_labels,
    findings,
    majority_per_problem,
    matched,
    matched_labels,
    plot_curve,
    section_html,
    study_config,
)
from prmkit.lab.study.config import BudgetConfig, study_preset
from prmkit.lab.study.protocol import run_study
from prmkit.schema import Problem, Solution

LABELS = [250, 500, 1000, 2000]


def curves(prm_shift: float, orm_slope: float = 0.05, seeds: int = 3, problems: int = 20, noise: float = 0.0):
    """[seeds, budgets, problems] accuracies on lines in ln(labels): the ORM's, and the PRM's shifted left
    by a factor ``exp(prm_shift)`` in labels (same slope)."""
    rng = np.random.default_rng(0)
    x = np.log(LABELS)[None, :, None]
    orm = 0.1 + orm_slope * (x - np.log(LABELS[0])) + noise * rng.normal(size=(seeds, len(LABELS), problems))
    prm = orm + orm_slope * prm_shift
    return prm, orm


def test_equivalent_labels_of_parallel_lines_is_the_shift():
    # The PRM's line is the ORM's moved left by a factor 4 in labels: the ORM needs 4x the labels everywhere.
    orm = [0.1 + 0.05 * math.log(b) for b in LABELS]
    prm = [0.1 + 0.05 * math.log(4 * b) for b in LABELS]
    assert np.allclose(np.array(equivalent_labels(LABELS, prm, orm)) / LABELS, 4.0)
    assert np.allclose(np.array(equivalent_labels(LABELS, orm, orm)) / LABELS, 1.0)


def test_a_flat_or_falling_orm_never_catches_up():
    assert equivalent_labels(LABELS, [0.5, 0.6, 0.7, 0.8], [0.3] * 4) == [math.inf] * 4
    assert equivalent_labels(LABELS, [0.5, 0.6, 0.7, 0.8], [0.4, 0.35, 0.3, 0.25]) == [math.inf] * 4


@settings(max_examples=30, deadline=None)
@given(shift=st.floats(-1.5, 2.5), slope=st.floats(0.01, 0.2))
def test_equivalence_recovers_the_shift_without_noise(shift, slope):
    prm, orm = curves(shift, slope, seeds=2, problems=5)
    eq = equivalence(LABELS, prm, orm, n_boot=20)
    for b in LABELS:
        assert eq[str(b)]["factor"] == pytest.approx(math.exp(shift), rel=1e-6)
        lo, hi = eq[str(b)]["ci95"]
        assert lo == pytest.approx(math.exp(shift), rel=1e-6) and hi == pytest.approx(math.exp(shift), rel=1e-6)
        needed = math.exp(shift) * b
        if min(abs(needed / LABELS[0] - 1), abs(needed / LABELS[-1] - 1)) > 1e-6:  # not on an edge
            assert eq[str(b)]["extrapolated"] == (not LABELS[0] <= needed <= LABELS[-1])


def test_matched_labels_reads_the_measured_curves_and_says_where_the_orm_never_gets_there():
    prm, orm = curves(math.log(4))  # the PRM's line is the ORM's moved four times fewer labels to the left
    got = matched(LABELS, prm, orm, n_boot=50)
    # at 250 and 500 PRM labels the ORM matches at 1,000 and 2,000; at 1,000 and 2,000 it would need 4,000 and 8,000
    assert [round(got[str(b)]["factor"], 6) for b in LABELS[:2]] == [4.0, 4.0]
    assert [got[str(b)]["censored"] for b in LABELS] == ["", "", "above", "above"]
    prm, orm = curves(math.log(2), noise=0.05)  # noisy: the seeds and the resamples differ
    got = matched(LABELS, prm, orm, n_boot=200)["250"]
    assert got["prm_accuracy"] == pytest.approx(prm[:, 0].mean())
    assert got["ci95"][0] < got["factor"] < got["ci95"][1] and len(set(got["per_seed"])) == 3
    assert got["per_seed"][0] == pytest.approx(matched_labels(LABELS, prm[0].mean(axis=1), orm[0].mean(axis=1))[0] / 250)
    assert matched_labels([10, 100], [0.2, 0.3], [0.5, 0.6]) == [10.0, 10.0]  # the ORM ahead already: at most 10
    assert matched(LABELS, orm, prm, n_boot=50)["250"]["censored"] == "below"
    assert matched_labels([10, 100, 1000], [0.6], [0.5, 0.7, 0.4])[0] == pytest.approx(10 ** 1.5)  # first crossing


def test_curve_stats_reads_directions_and_slopes():
    prm, orm = curves(math.log(4), 0.05, noise=0.02)
    acc = {"prm": prm, "orm": orm, "majority": np.full_like(prm, 0.3)}
    d = curve_stats(LABELS, acc, n_boot=200)
    assert d["direction"] == {"prm_rises": True, "prm_ge_orm_at_smallest": True, "prm_ge_orm_every_budget": True}
    assert d["fit"]["prm"]["points_per_doubling"] == pytest.approx(100 * 0.05 * math.log(2), abs=0.5)
    assert d["efficiency"]["factor"] == pytest.approx(1.0, abs=0.15)  # parallel lines: equal slopes
    assert 2.5 < d["equivalent_labels"]["1000"]["factor"] < 6.5
    gap = d["gap_prm_orm"]["250"]
    assert gap["mean"] == pytest.approx(0.05 * math.log(4)) and gap["ci95"][0] < gap["mean"] < gap["ci95"][1] + 1e-12
    ci = d["accuracy"]["prm"]["500"]["ci95"]
    assert ci[0] <= d["accuracy"]["prm"]["500"]["mean"] <= ci[1]


def test_figure_and_section_from_a_summary(tmp_path):
    prm, orm = curves(math.log(3), 0.04, noise=0.05)
    summary = {"budgets": LABELS, "n": 32, "seeds": [0, 1, 2], "rm_steps": 150, "eval": "20 problems x 32 samples",
               **curve_stats(LABELS, {"prm": prm, "orm": orm, "majority": np.full_like(prm, 0.3)}, n_boot=100)}
    fig = plot_curve(summary, tmp_path / "figures" / "budget.png")
    html = section_html(summary, tmp_path / "figures" / "budget.png")
    assert (tmp_path / "figures" / "budget.png").stat().st_size > 1000 and fig.endswith("budget.png")
    assert html.startswith("<h2>") and "data:image/png;base64," in html
    assert "Data-efficiency factor" in html and "PRM min@32" in html and "2,000" in html
    assert "measured curve" in html and "How well each reward model ranks" not in html  # no AUROCs recorded
    summary["auroc"] = {"prm": {str(b): [0.95, 0.85, 0.92] for b in LABELS}, "orm": {str(b): [0.8] * 3 for b in LABELS}}
    text = findings(summary)
    assert "PRMs below 0.9 step AUROC: 250 labels, seed 1 (0.850)" in text and "at 250 labels at least one kind is not above" in text
    assert "from 1,000 to 2,000 labels the PRM gains" in text
    flat = {**summary, "over_majority": {k: {"250": {"mean": 0.1, "ci95": [0.05, 0.15]}} for k in ("prm", "orm")},
            "top_gain": {"prm": {"mean": 0.1, "ci95": [0.05, 0.15]}, "orm": {"mean": -0.1, "ci95": [-0.15, -0.05]}}}
    text = findings(flat)
    assert "at 250 labels both kinds are above majority voting" in text
    assert "the PRM gains +10.0 [+5.0, +15.0] points (not saturated)" in text and "(it falls: its CI is below 0)" in text
    assert "How well each reward model ranks" in section_html(summary, tmp_path / "figures" / "budget.png")


def _sol(pid: str, answer: str | None, grade: str, steps: int = 2) -> Solution:
    return Solution.from_steps(Problem(f"problem {pid}", id=pid), [f"step {i}" for i in range(steps)],
                               answer=answer, grade=grade)


def test_majority_per_problem():
    sols = [_sol("a", "1", "correct"), _sol("a", "1", "correct"), _sol("a", "2", "incorrect"),
            _sol("b", "5", "incorrect"), _sol("b", "5", "incorrect"), _sol("b", "3", "correct")]
    assert majority_per_problem(sols, 3, 0.003, 0).tolist() == [1.0, 0.0]


def test_the_data_job_nests_every_budget_in_one_shuffled_labelled_pool(tmp_path):
    from prmkit.io import read_solutions

    cfg = study_preset("budget", "quick").replace({"budget.n": 4, "budget.budgets": "6,10", "budget.eval_problems": 3,
                                   "budget.eval_samples": 4})
    info = Data(str(tmp_path), cfg, 0).run(tmp_path)
    train = list(read_solutions(tmp_path / "train.jsonl.gz"))
    labelled = list(read_solutions(tmp_path / "labelled.jsonl.gz"))
    assert info == {"labelled": 10, "train_problems": 3, "eval": 12}
    assert [s.id for s in train] == [s.id for s in labelled] and len({s.id for s in train}) == 10
    assert [s.problem.id for s in train] != sorted(s.problem.id for s in train)  # shuffled
    assert all(s.label_source == "human" for s in labelled) and all(s.grade for s in train)


def test_config_checks_and_the_rm_steps_override():
    assert BudgetConfig(budgets=(1000, 250, 250)).budgets == (250, 1000)
    for bad in ({"budgets": (5,)}, {"budgets": (0, 5)}, {"n": 0}, {"rm_steps": -1}, {"eval_problems": 0},
                {"rm_epochs": -1}, {"rm_epochs": float("nan")}, {"rm_epochs": float("inf")}):
        with pytest.raises(ValueError):
            BudgetConfig(**bad)
    cfg = study_preset("budget", "default")
    assert study_config(cfg).rm.max_steps == cfg.rm.max_steps == 300  # rm_steps 0: the lab's reward-model recipe
    assert study_config(cfg.replace({"budget.rm_steps": 40})).rm.max_steps == 40


def test_passes_raise_the_cap_of_the_larger_budgets_only_and_leave_the_default_keys_alone(tmp_path):
    from prmkit.lab.study.budget import RewardModel
    from prmkit.lab.study.protocol import Context

    cfg = STUDY.prepare(study_preset("budget", "default"), [0])

    def models(c):
        return {(j.kind, j.budget): j for _, jobs in STUDY.stages(c, Context(tmp_path, (0,))) for j in jobs
                if isinstance(j, RewardModel)}

    plain, passes = models(cfg), models(cfg.replace({"budget.rm_epochs": 10.0}))
    assert all(j.cfg == cfg for j in plain.values())  # off by default: every model's config, so its key, as before
    steps = {k: j.cfg.rm.max_steps for k, j in passes.items()}
    assert steps[("prm", 4000)] == steps[("orm", 4000)] == math.ceil(10 * 4000 / cfg.rm.batch_size)
    assert steps[("prm", 250)] == cfg.rm.max_steps  # already more than ten passes over 250 labels
    assert plain[("prm", 250)].key == passes[("prm", 250)].key  # a model whose cap did not move is not retrained
    assert plain[("prm", 4000)].key != passes[("prm", 4000)].key



def test_the_lab_protocol_trains_every_model_as_the_lab_run_does_and_the_plan_prices_raised_caps(tmp_path):
    from prmkit.lab.config import preset
    from prmkit.lab.study.budget import RewardModel
    from prmkit.lab.study.protocol import Context

    lab = study_preset("budget", "default", rm_protocol="lab")
    assert lab.rm == preset("default").rm and lab.rm.early_stop_patience > 0 and lab.rm.restarts == 3
    assert study_preset("budget", "default").rm.restarts == 1  # the studies' own recipe stays the default
    with pytest.raises(ValueError, match="protocol"):
        study_preset("budget", "default", rm_protocol="nope")
    cfg = STUDY.prepare(lab.replace({"budget.budgets": (125, 8000), "budget.rm_epochs": 9.6}), [0])
    work = {(j.kind, j.budget): j.work for _, jobs in STUDY.stages(cfg, Context(tmp_path, (0,))) for j in jobs
            if isinstance(j, RewardModel)}
    rm = lab.rm
    assert work[("prm", 125)] == work[("orm", 125)] == rm.early_stop_min_steps + rm.early_stop_patience * rm.eval_every
    assert work[("prm", 8000)] == 250 + 4 * 25  # its floor is one pass (250 steps), its cap 2,400: it stops early
    study = STUDY.prepare(study_preset("budget", "default").replace({"budget.budgets": (125, 8000),
                                                                      "budget.rm_epochs": 9.6}), [0])
    fixed = {j.budget: j.work for _, jobs in STUDY.stages(study, Context(tmp_path, (0,))) for j in jobs
             if isinstance(j, RewardModel)}
    assert fixed == {125: 300.0, 8000: 2400.0}  # no early stopping: each trains its cap

@pytest.mark.slow
@pytest.mark.timeout(2400)  # pretrains the base model when the session has none: ~2 min quiet, 10+ busy
def test_quick_study_runs_and_its_prms_learn(tmp_path, lab_cache, lab_jobs):
    """The quick preset (250 and 4,000 labels, the lab's 300 steps), seed 0: every output, PRMs far above
    majority at both budgets, and numbers that hold together. One seed keeps it near 4 minutes (four reward models of ~100 s each)."""
    cfg = study_preset("budget", "quick")
    lines = []
    summary = run_study(STUDY, cfg, [0], tmp_path, jobs=lab_jobs, progress=False, log=lines.append)
    out = tmp_path / "study-budget"
    for name in ("summary.json", "section.html", "report.html", "figures/budget.png"):
        assert (out / name).is_file(), name
    small, large = (str(b) for b in cfg.budget.budgets)
    prm, gap = summary["accuracy"]["prm"], summary["gap_prm_orm"]
    # the PRM learned at both budgets: far above majority voting (whether it rises with labels at a fixed
    # 300 steps, and its sign against the ORM, are research outcomes: reported, not asserted)
    majority = summary["accuracy"]["majority"]
    orm = summary["accuracy"]["orm"]
    for b in (small, large):
        assert prm[b]["mean"] > majority[b]["mean"] + 0.05, (b, prm, majority)
        # the gap is the two arms' difference, seed by seed
        assert gap[b]["per_seed"] == pytest.approx(np.subtract(prm[b]["per_seed"], orm[b]["per_seed"]), abs=1e-9)
    assert json.loads((out / "summary.json").read_text())["efficiency"]["factor"] == summary["efficiency"]["factor"]
    # each model's AUROC read back from its scores under its own score name: a PRM that learned ranks steps well
    # (a wrong step-score key would read nothing: NaN), an ORM its solutions better than chance
    assert all(0.8 < summary["auroc"]["prm"][b][0] <= 1 for b in (small, large)), summary["auroc"]
    assert all(0.5 < summary["auroc"]["orm"][b][0] <= 1 for b in (small, large)), summary["auroc"]
    assert summary["rm"]["restarts"] == cfg.rm.restarts and summary["rm"]["max_steps"] == cfg.rm.max_steps
    # no scorer beats the pool's ceilings: the step-judge limit below pass@N, every best-of-N at most pass@N
    ceilings = summary["ceilings"]
    assert 0 < ceilings["step_judge"]["mean"] <= ceilings["pass"]["mean"] <= 1
    assert all(acc[b]["mean"] <= ceilings["pass"]["mean"] + 1e-9 for acc in (prm, orm, majority) for b in (small, large))
    lines.clear()
    run_study(STUDY, cfg, [0], tmp_path, jobs=lab_jobs, progress=False, log=lines.append)  # a rerun skips every job
    assert all("(all cached)" in line for line in lines if line.startswith("stage ")), lines
    assert sum(line.startswith("stage ") for line in lines) == 3  # data, base, rm
