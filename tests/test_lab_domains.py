"""The lab's domains behind one interface (prmkit.lab.domains): the registry, configs that cannot mix two
domains, each domain's words as the base's whole vocabulary, a pool read by its own domain's oracle, and
a toy third domain that the lab's generic parts take without a change."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from prmkit.cli import main
from prmkit.io import write_records
from prmkit.lab import LabConfig, generate_pool, label, pool_stats, preset
from prmkit.lab.base import lab_tokenizer
from prmkit.lab.domains import DOMAINS, LEDGER, PLANS, Domain, domain_of, register
from prmkit.lab.labellers import LabellerConfig
from prmkit.lab.plans.generator import PlansGeneratorConfig
from prmkit.schema import Problem, Solution, Step

TINY = {"eval_problems": 4, "eval_samples": 4, "ood_problems": 2, "ood_samples": 4, "train_problems": 20,
        "train_samples": 2, "pretrain_problems": 8, "ood_pretrain_problems": 2, "base.hidden_size": 32,
        "base.intermediate_size": 64, "base.layers": 1, "base.heads": 2, "base.steps": 3, "base.batch_size": 4,
        "base.warmup": 1, "rm.max_steps": 2, "rm.batch_size": 4, "rm.warmup_steps": 1, "rm.restarts": 1,
        "rm.save_every": 0, "rm.early_stop_patience": 0, "rm.eval_every": 0, "bootstrap": 20, "paper_arms": True,
        "orm_ratio": 3}
"""Seconds on a CPU: every stage of the run, both data arms, nothing trained to mean anything."""


@pytest.mark.parametrize("name", ["ledger", "plans"])
def test_every_word_of_a_domain_is_in_its_base_vocabulary(name):
    cfg = preset("quick", name)
    assert cfg.lab_domain is DOMAINS[name]
    tok = lab_tokenizer(cfg.lab_domain.words)
    texts = [t for split in ("eval", "ood") for s in generate_pool(cfg, 0, split, problems=20, samples=4)
             for t in (s.problem.problem, *s.texts)]
    assert texts and not any(tok.unk_token_id in tok.encode(t, add_special_tokens=False) for t in texts)


def test_the_ledger_vocabulary_is_the_one_every_cached_base_was_built_with():
    vocab = lab_tokenizer().get_vocab()
    assert len(vocab) == 1058 and vocab["Start"] == 15 and vocab["undo"] == 31 and vocab["0"] == 58


def test_a_config_cannot_mix_two_domains():
    with pytest.raises(ValueError, match="a ledger lab config needs every part of the ledger domain: generator is a "
                                         "PlansGeneratorConfig"):
        LabConfig(generator=PlansGeneratorConfig())
    with pytest.raises(ValueError, match="ood is a LedgerConfig"):
        dataclasses.replace(preset("quick", "plans"), ood=LEDGER.ood)
    with pytest.raises(ValueError, match="policy lm: its base model cannot yet sample"):
        preset("quick", "plans").replace({"policy": "lm"})
    with pytest.raises(ValueError, match="domain.family 'chores' does not start with 'plans'"):
        preset("quick", "plans").replace({"domain.family": "chores"})
    with pytest.raises(ValueError, match="unknown preset 'easy' of the plans domain"):
        preset("easy", "plans")


def test_the_plans_pools_are_labelled_with_its_delayed_errors_missed_more():
    cfg = preset("quick", "plans")
    pool = generate_pool(cfg, 0, "train", problems=40, samples=4)
    assert {domain_of(s).name for s in pool} == {"plans"} and pool[0].problem.subject == "plans"
    strict = dataclasses.replace(cfg.labellers, delayed_miss_factor=1.0, stop_at_first_error=False)
    lenient = dataclasses.replace(strict, delayed_miss_factor=3.0)
    missed = [sum(r == 1 and t.rating == -1 and t.reason in PLANS.delayed
                  for s, lab in zip(pool, label(pool, c, seed=0))
                  for t, r in zip(PLANS.oracle.oracle_labels(s), lab.ratings)) for c in (strict, lenient)]
    assert missed[1] > missed[0]


def test_lab_stats_reads_a_pool_file_by_its_own_domain(tmp_path, capsys):
    path = tmp_path / "plans.jsonl"
    write_records(path, generate_pool(preset("quick", "plans"), 0, "eval", problems=4, samples=4))
    assert main(["lab", "stats", str(path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert "error_kinds" in d and "unparseable step" not in d["step_reasons"]
    with pytest.raises(SystemExit, match=f"{path}: the pool holds problems of the plans domain, not of ledger"):
        main(["lab", "stats", str(path), "--domain", "ledger"])


# --- a third domain: a few lines, taken by the registry, the statistics page and `lab run` unchanged ---

@dataclasses.dataclass(frozen=True)
class CountFamily:
    family: str = "count"
    steps: int = 3


@dataclasses.dataclass(frozen=True)
class CountGenerator:
    name: str = "count-v1"
    slip: float = 0.3


def _count_problems(fam, n, seed, split):
    return [Problem(f"Count to {fam.steps + i % 2}.", answer=str(fam.steps + i % 2), id=f"{fam.family}-{split}-{seed}-{i}",
                    subject=fam.family) for i in range(n)]


def _count_generate(problems, gen, samples, seed):
    """Counts to the target, now and then skipping a number (a wrong step, and a wrong answer)."""
    rng, out = np.random.default_rng(seed), []
    for p in problems:
        for j in range(samples):
            values = np.cumsum(1 + (rng.random(int(p.answer)) < gen.slip)).tolist()
            texts = [*map(str, values), f"# Answer\n\n{values[-1]}"]
            out.append(Solution(p, [Step.of(t) for t in texts], id=f"{p.id}/{seed}-{j}", answer=str(values[-1]),
                                grade="correct" if str(values[-1]) == p.answer else "incorrect"))
    return out


def _count_labels(solution):
    prev, labels = 0, []
    for t in solution.texts:
        value = int(t.split()[-1])
        right = value == (prev if t.startswith("#") else prev + 1)
        labels.append(SimpleNamespace(rating=1 if right else -1, reason="right" if right else "wrong"))
        prev = value
    return labels


COUNT = Domain(name="count", family_config=CountFamily, ood=CountFamily(family="count-ood", steps=5),
               generator_config=CountGenerator, make_problems=_count_problems, generate=_count_generate,
               oracle=SimpleNamespace(oracle_labels=_count_labels, REASONS={"right": (1, ""), "wrong": (-1, "")}),
               words=("Count", "to", ".", "#", "Answer", "\n"))


@pytest.fixture
def count_domain():
    register(COUNT)
    yield COUNT
    DOMAINS.pop("count", None)


def test_a_third_domain_is_one_registration(count_domain):
    with pytest.raises(ValueError, match="already registered"):
        register(dataclasses.replace(COUNT))
    p = _count_problems(CountFamily(), 2, 0, "eval")
    sols = [Solution(p[0], [Step.of("1"), Step.of("2"), Step.of("3"), Step.of("# Answer\n\n3")], answer="3",
                     grade="correct"),
            Solution(p[1], [Step.of("1"), Step.of("3"), Step.of("# Answer\n\n3")], answer="3", grade="incorrect")]
    assert domain_of(sols[0]) is COUNT
    d = pool_stats(sols, "count")
    assert d["wrong_step_solutions"] == 0.5 and d["step_limit@1"] == 0.5 and "misread" not in d
    assert label(sols, LabellerConfig(flip_rate=0.0, bias=0.0), seed=0)[1].ratings == [1, -1]


@pytest.mark.slow
def test_lab_run_takes_a_third_domain_through_every_stage(count_domain, tmp_path, monkeypatch):
    from prmkit.lab.config import domain_defaults
    from prmkit.lab.run import run_lab

    monkeypatch.setenv("PRMKIT_CACHE", str(tmp_path / "cache"))
    cfg = domain_defaults("count").replace(TINY)
    assert cfg.lab_domain is COUNT
    summary = run_lab(cfg, [0], tmp_path / "run", jobs=1, progress=False, log=lambda *a: None)
    assert summary["domain"] == "count" and summary["results"]["0"]["eval"]["N"] == TINY["eval_samples"]
    steps = json.loads((tmp_path / "run" / "seed-0" / "evaluate" / "eval.json").read_text())["steps"]["prm"]
    assert steps["steps"] > 0 and set(steps["by_reason"]) == {"wrong"}


def test_a_pool_of_two_domains_is_refused():
    mixed = generate_pool(preset("quick"), 0, "eval", problems=1, samples=1) + \
        generate_pool(preset("quick", "plans"), 0, "eval", problems=1, samples=1)
    with pytest.raises(ValueError, match="the pool holds problems of the ledger and plans domains"):
        pool_stats(mixed)


def test_step_auroc_tells_delayed_errors_from_immediate_ones_in_the_plans_domain(tmp_path):
    """A step score that sees every immediate error and no delayed one: AUROC 1 on the immediate kind, 0 on
    the delayed (each scored above every right step), and a ledger pool gets no kinds at all."""
    from prmkit.lab.domains import oracle_labels
    from prmkit.lab.scoring import step_auroc

    pool = generate_pool(preset("quick", "plans"), 0, "eval", problems=30, samples=8)
    score = {"immediate": 0.1, "delayed": 0.95, None: 0.9}
    for sol in pool:
        for step, lab in zip([s for s in sol.steps if s.taken is not None], oracle_labels(sol)):
            step.scores["p_correct"] = score[PLANS.error_kind(lab.reason)]
    write_records(tmp_path / "plans.jsonl.gz", pool)
    kinds = step_auroc(tmp_path / "plans.jsonl.gz")["by_kind"]
    assert kinds["immediate"]["auroc"] == 1.0 and kinds["delayed"]["auroc"] == 0.0
    assert min(k["wrong_steps"] for k in kinds.values()) > 0
    ledger = generate_pool(preset("quick"), 0, "eval", problems=5, samples=4)
    for sol in ledger:
        for step in sol.steps:
            step.scores["p_correct"] = 0.5
    write_records(tmp_path / "ledger.jsonl.gz", ledger)
    steps = step_auroc(tmp_path / "ledger.jsonl.gz")
    assert steps["by_reason"] and "by_kind" not in steps


def test_step_auroc_to_the_first_error_reads_each_solution_up_to_its_first_wrong_step(tmp_path):
    """A score that finds every solution's first mistake and rates every step after it right: AUROC 1 up to the
    first error, below 1 over every step (the plans oracle blames later days too); one wrong step per solution
    that has one."""
    from prmkit.lab.domains import oracle_labels
    from prmkit.lab.scoring import first_error_aurocs, step_auroc

    pool = generate_pool(preset("quick", "plans"), 0, "eval", problems=30, samples=8)
    for sol in pool:
        seen = False
        for step, lab in zip([s for s in sol.steps if s.taken is not None], oracle_labels(sol)):
            step.scores["p_correct"] = 0.1 if lab.rating == -1 and not seen else 0.9
            seen = seen or lab.rating == -1
    write_records(tmp_path / "plans.jsonl.gz", pool)
    steps = step_auroc(tmp_path / "plans.jsonl.gz")
    first = steps["to_first_error"]
    assert first["auroc"] == 1.0 and steps["auroc"] < 1.0
    assert first["wrong_steps"] == sum(any(lab.rating == -1 for lab in oracle_labels(s)) for s in pool)
    assert first["wrong_steps"] < steps["wrong_steps"] and set(first["by_kind"]) == {"immediate", "delayed"}
    location = steps["first_error_location"]  # the threshold from one half, every first error found in the other
    assert location["f1"] == 1.0 and location["n"] == len(pool) // 2 and 0.1 < location["threshold"] <= 0.9
    headline = first_error_aurocs({"prm": steps})
    assert headline == {"prm_first_error_auroc": 1.0, "prm_first_error_auroc[delayed]": 1.0,
                        "prm_first_error_auroc[immediate]": 1.0, "prm_first_error_f1": 1.0,
                        "prm_first_error_found[delayed]": 1.0, "prm_first_error_found[immediate]": 1.0}


# --- the plans domain through `prmkit lab run`, at a tiny size -------------------------------------


@pytest.mark.slow
def test_lab_run_takes_the_plans_domain_end_to_end(tmp_path, monkeypatch, capsys):
    from prmkit.io import read_solutions

    monkeypatch.setenv("PRMKIT_CACHE", str(tmp_path / "cache"))
    sets = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
    assert main(["lab", "run", "--domain", "plans", "--preset", "quick", "--seeds", "0", "--workers", "1",
                 "--no-progress", "--out-dir", str(tmp_path / "run"), *sets]) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["domain"] == "plans" and summary["command"].startswith("prmkit lab run --domain plans --preset quick")
    assert "--workers 1" in summary["command"] and summary["workers"] == 1 and summary["threads"] == 1
    scored = list(read_solutions(tmp_path / "run" / "seed-0" / "score-eval" / "eval.jsonl.gz"))
    assert {s.problem.subject for s in scored} == {"plans"} and all("prm_min" in s.scores for s in scored)
    ood = list(read_solutions(tmp_path / "run" / "seed-0" / "score-ood" / "ood.jsonl.gz"))
    assert {s.problem.subject for s in ood} == {"plans-ood"}
    steps = json.loads((tmp_path / "run" / "seed-0" / "evaluate" / "eval.json").read_text())["steps"]["prm"]
    assert steps["steps"] > 0 and set(steps["by_reason"]) <= {k for k, (r, _) in PLANS.oracle.REASONS.items() if r == -1}
    # the delayed-error question's numbers: each kind's wrong steps add up to the reasons' of that kind
    assert set(steps["by_kind"]) <= {"immediate", "delayed"} and steps["by_kind"]
    for kind, got in steps["by_kind"].items():
        assert got["wrong_steps"] == sum(v["wrong_steps"] for r, v in steps["by_reason"].items()
                                         if PLANS.error_kind(r) == kind)
    # what best-of-N picks, by the oracle: a pick valid at every step has the right answer, so the valid and the
    # right-answer-wrong-step shares add up to answer accuracy, and the valid share is valid-solution accuracy
    metrics = json.loads((tmp_path / "run" / "seed-0" / "evaluate" / "eval.json").read_text())["metrics"]
    for col in ("prm_min", "orm", "prm_paper_min", "orm_paper"):
        for n in (1, 4):
            share = {k: metrics.get(f"pick_share@{n}[{col}][{k}]", {"estimate": 0.0})["estimate"]
                     for k in ("valid", "right_answer_wrong_step", "wrong_delayed_only", "wrong_immediate")}
            assert share["valid"] == pytest.approx(metrics[f"valid_acc@{n}[{col}]"]["estimate"])
            assert share["valid"] + share["right_answer_wrong_step"] == pytest.approx(metrics[f"bon_acc@{n}[{col}]"]["estimate"])
            assert sum(share.values()) <= 1 + 1e-9
    picks = {(p["scorer"], p["N"]): p["shares"] for p in summary["picks"]["eval"]}
    assert picks[("PRM min", 1)] == picks[("ORM", 1)]  # at N = 1 every scorer picks the pool's own mix
    report = (tmp_path / "run" / "report.html").read_text()
    assert "the plans domain, preset quick" in report and "What best-of-N picks" in report


def test_the_lab_generate_backend_samples_a_plans_preset_and_refuses_rollouts_it_cannot_make():
    from prmkit.generate.config import GenerateConfig
    from prmkit.lab.backend import lab_backend
    from prmkit.steps import split_steps

    backend = lab_backend(GenerateConfig(backend="lab", model="plans/quick"))
    problem = PLANS.make_problems(PLANS.family_config(), 1, 0, "eval")[0]
    samples = backend.generate([problem], 3)[0]
    for sample in samples:
        labels = PLANS.oracle.label_texts(PLANS.oracle.plan_of(problem.problem), split_steps(sample.text))
        assert labels and "unparseable step" not in {lab.reason for lab in labels}
    with pytest.raises(ValueError, match="cannot continue a plans solution from a prefix"):
        backend.complete(problem, ["Day 1: A"], 2)


def test_the_oracle_labels_a_plans_file_through_the_cli(tmp_path):
    from prmkit.io import read_solutions

    src, out = tmp_path / "plans.jsonl", tmp_path / "rated.jsonl"
    pool = generate_pool(preset("quick", "plans"), 0, "eval", problems=3, samples=4)
    write_records(src, pool)
    assert main(["lab", "label", str(src), str(out), "--oracle"]) == 0
    rated = list(read_solutions(out))
    assert [s.grade for s in rated] == [s.grade for s in pool] and all(s.label_source == "oracle" for s in rated)
    assert [s.ratings for s in rated] == [[lab.rating for lab in PLANS.oracle.oracle_labels(s)] for s in pool]



# --- the studies on the plans domain, at a tiny size ------------------------------------------------

TINY_BASE = {k: v for k, v in TINY.items()
             if k.startswith("base.") or k in ("pretrain_problems", "ood_pretrain_problems", "rm.batch_size", "rm.warmup_steps")}
TINY_STUDIES = {
    "budget": {"budget.budgets": "8,16", "budget.n": 4, "budget.eval_problems": 4, "budget.eval_samples": 4,
               "budget.rm_steps": 2},
    "active": {"active.budgets": "1,2", "active.candidates": 3, "active.train_problems": 8, "active.eval_problems": 4,
               "active.eval_samples": 4, "active.n": 4, "active.rm_steps": 2},
    "synthetic": {"synthetic.per_problem": "1,2", "synthetic.teacher": "oracle", "synthetic.n": 4, "synthetic.problems": 40,
                  "synthetic.eval_problems": 4, "synthetic.eval_samples": 4, "synthetic.rm_steps": 2,
                  "synthetic.large_problems": 8, "synthetic.large_samples": 2, "synthetic.large_steps": 2},
}
"""Seconds on a CPU: every stage of a study on plans problems, nothing trained to mean anything (so the synthetic
study's labels come from the oracle: a large PRM trained for seconds labels every step alike, one class)."""


@pytest.mark.slow
@pytest.mark.parametrize("study", sorted(TINY_STUDIES))
def test_the_domain_general_studies_run_on_plans_problems(study, tmp_path, lab_cache, capsys):
    from prmkit.io import read_solutions

    sets = [a for k, v in {**TINY_BASE, **TINY_STUDIES[study]}.items() for a in ("--set", f"{k}={v}")]
    argv = ["lab", "study", study, "--domain", "plans", "--preset", "quick", "--seeds", "0", "--workers", "1",
            "--no-progress", "--out-dir", str(tmp_path), *sets]
    assert main(argv) == 0
    summary = json.loads((tmp_path / f"study-{study}" / "summary.json").read_text())
    assert summary["command"].startswith(f"prmkit lab study {study} --domain plans --preset quick")
    pools = list((tmp_path / f"study-{study}").rglob("*.jsonl.gz"))
    subjects = [{s.problem.subject for s in read_solutions(p)} for p in pools]
    assert pools and all(found and found <= {"plans", "plans-ood"} for found in subjects)


@pytest.mark.parametrize("study", ["autolabel", "pressure"])
def test_the_ledger_only_studies_refuse_another_domain_and_say_why(study, capsys):
    with pytest.raises(SystemExit, match=f"the {study} study runs on the ledger only: "):
        main(["lab", "study", study, "--domain", "plans", "--preset", "quick"])


def test_the_plans_recipe_rule_reproduces_from_the_development_seeds_and_the_presets_hold_its_choice(monkeypatch):
    from prmkit.lab.config import preset

    root = Path(__file__).parents[1]
    monkeypatch.syspath_prepend(str(root / "scripts"))
    from plans_recipe_rule import apply_rule

    rule = json.loads((root / "docs/results/plans-recipe-rule.json").read_text())
    summaries = [json.loads((root / "docs/results" / name).read_text())
                 for name in ("lab-plans-dev0-eval.json", "lab-plans-dev12.json")]
    again = apply_rule(summaries)
    assert again == {k: rule[k] for k in again} and rule["seeds"] == [0, 1, 2]
    assert preset("default", "plans").aggregation == preset("quick", "plans").aggregation == rule["chosen"]
    assert preset("default").aggregation == "min"  # the ledger keeps the score chosen on it


def test_pooled_picks_line_up_seeds_whose_evaluations_kept_other_classes():
    from prmkit.lab.targets import pooled_picks

    a = {"ns": [1, 4], "per_problem": {"pick_share[orm][valid]": [[0.5, 1.0]], "pick_share[orm][wrong_immediate]": [[0.5, 0.0]]}}
    b = {"ns": [1, 4], "per_problem": {"pick_share[orm][valid]": [[1.0, 1.0]]}}  # an older one: no wrong pick possible
    for results in ({0: a, 1: b}, {0: b, 1: a}):
        rows = {(r["scorer"], r["N"]): r["shares"] for r in pooled_picks(results, 20)}
        assert rows[("ORM", 1)]["wrong_immediate"]["mean"] == 0.25 and rows[("ORM", 1)]["valid"]["mean"] == 0.75


def test_the_findings_read_the_prm_by_the_runs_aggregation():
    from prmkit.lab.targets import has_gold, pooled_findings

    curves = {"bon_acc[prm_min]": [[0], [0]], "bon_acc[prm_product]": [[1], [1]], "bon_acc[orm]": [[0], [1]],
              "valid_acc[prm_min]": [[0], [0]], "valid_acc[prm_product]": [[1], [0]], "valid_acc[orm]": [[0], [0]],
              "maj_acc": [[0], [0]], "pass": [[1], [1]], "step_limit": [[1], [1]]}
    results = {0: {"ns": [4], "per_problem": curves}}
    by = {agg: pooled_findings(results, 20, aggregation=agg)[0] for agg in ("min", "product")}
    assert (by["min"]["answer"]["mean"], by["product"]["answer"]["mean"]) == (-0.5, 0.5)
    assert (by["min"]["valid_prm"], by["product"]["valid_prm"]) == (0.0, 0.5)
    assert has_gold(results, "equal", "product") and not has_gold(results, "paper", "product")
