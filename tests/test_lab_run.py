"""``prmkit lab run``: the job mechanism, the base model's cache key, and the quick preset end to end.

The slow tests share one run of ``prmkit lab run --preset quick --seeds 0,1,2`` (about 7 minutes on an
idle 2-core machine; the base model is pretrained into a temporary cache, never the user's): end to end through the
CLI, resume (a second run skips every stage and changes no output), and the direction of each gap of
the issue's targets on those three seeds.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from prmkit.cli import main
from prmkit.io import read_solutions
from prmkit.lab import preset
from prmkit.lab.base import BaseConfig, base_key, lab_format, lab_tokenizer
from prmkit.lab.features import Features, likelihood_scores
from prmkit.lab.run import key_of, run_job

SEEDS = (0, 1, 2)


# --- fast: pure pieces ------------------------------------------------------------------------------

def test_base_key_is_deterministic_and_depends_on_what_pretraining_reads():
    cfg = preset("default")
    key = base_key(cfg.base, cfg)
    assert key == base_key(BaseConfig(), preset("default")) and len(key) == 16
    changed = [cfg.replace({"base.steps": 10}), cfg.replace({"base.seed": 1}), cfg.replace({"pretrain_problems": 10}),
               cfg.replace({"generator.check_rate": 0.2}), cfg.replace({"domain.max_operand": 8})]
    assert len({key, *(base_key(c.base, c) for c in changed)}) == 1 + len(changed)
    unrelated = [cfg.replace({"eval_problems": 10}), cfg.replace({"rm.steps": 3}), cfg.replace({"labellers.flip_rate": 0})]
    assert {base_key(c.base, c) for c in unrelated} == {key}


def test_run_job_skips_a_done_job_and_reruns_when_the_key_changes(tmp_path):
    calls = []

    def fn(out, x):
        calls.append(x)
        (out / "x.txt").write_text(str(x))
        return {"x": x}

    folder = str(tmp_path / "job")
    assert run_job(folder, "k1", fn, 1)["cached"] is False
    assert run_job(folder, "k1", fn, 2)["cached"] is True and calls == [1]
    assert run_job(folder, "k2", fn, 3)["x"] == 3 and (tmp_path / "job" / "x.txt").read_text() == "3"


def test_a_failed_job_leaves_nothing_that_looks_done(tmp_path):
    def boom(out):
        (out / "half.txt").write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        run_job(str(tmp_path / "job"), "k", boom)
    assert not (tmp_path / "job").exists()


def test_key_of_is_stable_and_tells_configs_apart():
    assert key_of(BaseConfig(), 1) == key_of(BaseConfig(), 1) != key_of(BaseConfig(steps=1), 1)


def test_lab_tokenizer_keeps_numbers_whole_and_never_fails():
    tok = lab_tokenizer()
    pieces = tok.convert_ids_to_tokens(tok.encode("D * 2 : 14 * 2 = 28\n# Answer\n\n28", add_special_tokens=False))
    assert pieces[:9] == ["D", "*", "2", ":", "14", "*", "2", "=", "28"] and "\n" in pieces
    assert "<unk>" in tok.convert_ids_to_tokens(tok.encode("x ~ 5000", add_special_tokens=False))


def test_features_of_a_truncated_solution_are_a_prefix():
    from prmkit.model.formatter import encode

    tok, fmt = lab_tokenizer(), lab_format()
    sol = next(iter(_pool()))
    full = encode(tok, sol.problem.problem, sol.texts, fmt).input_ids
    cut = encode(tok, sol.problem.problem, sol.texts[:2], fmt).input_ids
    assert full[: len(cut)] == cut  # why Features.of(id, length) serves phase-2 records
    f = Features(np.arange(2 * len(full), dtype=np.float32).reshape(-1, 2), np.array([0, len(full)]), [sol.id])
    assert (f.of(sol.id, len(cut)) == f.of(sol.id)[: len(cut)]).all()


def test_likelihood_scores_ignore_the_problem_tokens():
    logp = np.array([0.0, -9.0, -9.0, -0.5, -0.1, -1.0])
    d = likelihood_scores(logp, [(3, 5), (5, 6)])
    assert d["likelihood_min"] == -1.0 and abs(d["likelihood_mean"] - (-1.6 / 3)) < 1e-12


def _pool():
    from prmkit.lab import generate_pool

    return generate_pool(preset("quick"), 0, "eval", problems=1, samples=1)


# --- slow: the quick preset end to end --------------------------------------------------------------

@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One quick run of three seeds (cache and run folder in a temporary folder); its stdout and folder."""
    root = tmp_path_factory.mktemp("lab-run")
    mp = pytest.MonkeyPatch()
    mp.setenv("PRMKIT_CACHE", str(root / "cache"))
    out = root / "run"
    argv = ["lab", "run", "--preset", "quick", "--seeds", ",".join(map(str, SEEDS)), "--out", str(out), "--quiet"]
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0
    yield {"out": out, "stdout": buf.getvalue(), "argv": argv}
    mp.undo()


# The shared run takes ~7 minutes on an idle 2-core machine (the base model is pretrained into an empty
# cache); the suite's default 600 s timeout would cut it on a busy one.
@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_quick_run_end_to_end_through_the_cli(quick_run):
    out = quick_run["out"]
    html = (out / "report.html").read_text()
    assert "prmkit lab run --preset quick --seeds 0,1,2" in html and "data:image/png;base64" in html
    assert all(f"seed {s}" in html for s in SEEDS) and "Wall time per stage" in html and "Configuration" in html
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["results"]) == {str(s) for s in SEEDS}
    assert set(summary["timings"]) >= {"data", "base", "features", "rm", "score", "evaluate", "report"}
    sol = next(iter(read_solutions(out / "seed-0" / "score" / "eval.jsonl.gz")))
    assert {"prm_min", "prm_product", "prm_last", "prm_mean", "orm", "likelihood_mean", "likelihood_min"} <= set(sol.scores)
    assert {"p_correct", "p_pos", "p_neg", "base_logp_min"} <= set(sol.steps[0].scores)
    ood = next(iter(read_solutions(out / "seed-0" / "score" / "ood.jsonl.gz")))
    assert ood.problem.subject == "ledger-ood" and "prm_min" in ood.scores
    assert "seed 2: PRM(min)@16" in quick_run["stdout"]


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_a_second_run_skips_every_stage_and_changes_nothing(quick_run, capsys):
    out = quick_run["out"]
    files = sorted(p for p in out.glob("seed-*/**/*") if p.is_file() and p.suffix in (".gz", ".json", ".npz"))
    before = {p: p.read_bytes() for p in files}
    mp = pytest.MonkeyPatch()
    mp.setenv("PRMKIT_CACHE", str(out.parent / "cache"))
    try:
        assert main(quick_run["argv"]) == 0
    finally:
        mp.undo()
    log = capsys.readouterr().out
    for stage in ("data", "base", "features", "rm", "score", "evaluate"):
        assert f"stage {stage}: 0 of" in log and "(all cached)" in log
    assert {p: p.read_bytes() for p in files} == before


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_direction_of_every_gap_on_the_quick_seeds(quick_run):
    """The issue's target gaps, as directions, on seeds 0, 1, 2 of the quick preset (N = 16 there)."""
    summary = json.loads((quick_run["out"] / "summary.json").read_text())
    for seed in SEEDS:
        h = summary["results"][str(seed)]["eval"]
        n = h["N"]
        assert h[f"prm_min@{n}"] > h[f"orm@{n}"], (seed, h)
        assert h[f"prm_min@{n}"] > h[f"majority@{n}"], (seed, h)
        assert h["prm_min@16"] > h["label_free@16"], (seed, h)
        assert h["prm_step_auroc"] > 0.85, (seed, h)


def test_quick_preset_keeps_the_run_affordable():
    cfg = preset("quick")
    assert cfg.labelled == preset("default").labelled  # the same label budget as default: the gaps mean something
    assert dataclasses.replace(cfg.rm) == preset("default").rm


@pytest.mark.parametrize("head,features", [("classify", True), ("lm", False)])
def test_a_tiny_reward_model_trains_and_scores_every_kept_step(tmp_path, head, features):
    """Tier 2: a 1-layer base and a few steps; PRM and ORM train (weights move) and score with the one formatter."""
    import torch

    from prmkit.lab import generate_pool, label
    from prmkit.lab.base import pretrain
    from prmkit.lab.features import token_features
    from prmkit.lab.rm import RMConfig, rm_probabilities, train_rm

    cfg = preset("quick")
    sols = generate_pool(cfg, 0, "train", problems=8)
    base = BaseConfig(hidden_size=32, intermediate_size=64, layers=1, heads=2, steps=2, batch_size=4, warmup=1)
    model, tok, _ = pretrain(sols, base, progress=False)
    model.save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    fmt = lab_format()
    feats = token_features(model, tok, sols, fmt, progress=False)
    rm_cfg = RMConfig(head=head, features=features, steps=3, batch_size=4, warmup=1)
    for kind, data in (("prm", label(sols, cfg.labellers, 0)), ("orm", sols)):
        rm, info = train_rm(kind, data, feats, tmp_path / "base", rm_cfg, 0, fmt, progress=False)
        moved = [not torch.equal(p, q) for (n, p), q in zip(rm.backbone.named_parameters(), model.parameters())]
        assert any(moved) and info["data"]["examples"] == len(sols)
        probs = rm_probabilities(rm, tok, sols[:5], feats, fmt, progress=False)
        assert [len(p) for p in probs] == [len(s.texts) for s in sols[:5]]
        assert all(np.allclose(p.sum(axis=1), 1.0) for p in probs)


def test_evaluate_scored_runs_the_sweep_where_its_columns_exist(tmp_path):
    """Scored records -> every headline number; the sweep where the pool has its columns (eval), none elsewhere (ood)."""
    from prmkit.io import write_records
    from prmkit.lab import generate_pool, oracle_labels
    from prmkit.lab.scoring import evaluate_scored

    cfg = preset("quick").replace({"label_budgets": "500", "bootstrap": 20})
    rng = np.random.default_rng(0)
    pool = generate_pool(cfg, 0, "eval", problems=6, samples=8)
    for sol in pool:
        truth = [lab.rating >= 0 for lab in oracle_labels(sol)]
        for step, ok in zip(sol.steps, truth):
            step.scores.update(p_correct=0.9 if ok else 0.1, base_logp_min=float(rng.normal()))
        sol.scores.update({c: float(rng.random()) for c in ("prm_min", "prm_product", "prm_last", "prm_mean", "orm",
                                                            "likelihood_mean", "likelihood_min")})
    with_sweep, without = tmp_path / "eval.jsonl", tmp_path / "ood.jsonl"
    write_records(without, pool)
    for sol in pool:
        sol.scores.update(prm500_min=0.5, prm500_product=0.5, orm500=0.5)
    write_records(with_sweep, pool)
    a, b = evaluate_scored(with_sweep, cfg, 0), evaluate_scored(without, cfg, 0)
    assert set(a["sweep"]) == {"500"} and b["sweep"] == {}
    assert a["headline"]["N"] == 8 and a["headline"]["prm_step_auroc"] == 1.0
    assert a["headline"]["label_free@8"] == max(a["headline"]["likelihood_mean@8"], a["headline"]["likelihood_min@8"])
