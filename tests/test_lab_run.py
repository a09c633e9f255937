"""``prmkit lab run``: the job mechanism, the base model's cache key, and the quick preset end to end.

The slow tests share one run of ``prmkit lab run --preset quick --seeds 0,1,2`` (about 7 minutes on an
idle 2-core machine; the base model is pretrained into a temporary cache, never the user's): end to end through the
CLI, resume (a second run skips every stage and changes no output), and on those three seeds the large
effects and the mechanism (both reward models above majority, the PRM's step ranking above the base
model's own likelihood, no stalled PRM), never a research outcome.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from prmkit.cli import main
from prmkit.io import read_solutions
from prmkit.lab import preset
from prmkit.lab.base import BaseConfig, base_key, lab_tokenizer
from prmkit.lab.jobs import key_of, run_job
from prmkit.lab.likelihood import likelihood_scores

SEEDS = (0, 1, 2)


# --- fast: pure pieces ------------------------------------------------------------------------------

def test_base_key_is_deterministic_and_depends_on_what_pretraining_reads():
    cfg = preset("default")
    key = base_key(cfg.base, cfg)
    assert key == base_key(BaseConfig(), preset("default")) and len(key) == 16
    changed = [cfg.replace({"base.steps": 10}), cfg.replace({"base.seed": 1}), cfg.replace({"pretrain_problems": 10}),
               cfg.replace({"generator.check_rate": 0.2}), cfg.replace({"domain.max_operand": 8}),
               cfg.replace({"ood_pretrain_problems": 0}), cfg.replace({"ood_pretrain_samples": 2}),
               cfg.replace({"ood.max_operand": 8})]
    assert len({key, *(base_key(c.base, c) for c in changed)}) == 1 + len(changed)
    unrelated = [cfg.replace({"eval_problems": 10}), cfg.replace({"rm.max_steps": 3}), cfg.replace({"labellers.flip_rate": 0})]
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


def test_an_interrupted_job_resumes_in_its_partial_folder_only_under_the_same_key(tmp_path):
    def boom(out):
        (out / "checkpoint.txt").write_text("step 4")
        raise RuntimeError("killed")

    def resume(out):
        return {"found": (out / "checkpoint.txt").read_text() if (out / "checkpoint.txt").exists() else None}

    with pytest.raises(RuntimeError):
        run_job(str(tmp_path / "job"), "k", boom)
    assert run_job(str(tmp_path / "job"), "k", resume)["found"] == "step 4"
    with pytest.raises(RuntimeError):
        run_job(str(tmp_path / "other"), "k", boom)
    assert run_job(str(tmp_path / "other"), "k2", resume)["found"] is None  # another key: a clean start
    assert not (tmp_path / "job" / ".key").exists()


_POOL_SCRIPT = """
import multiprocessing, sys, time
from concurrent.futures import ProcessPoolExecutor
from prmkit.lab.jobs import init_pool_worker
if __name__ == "__main__":
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"), initializer=init_pool_worker)
    list(pool.map(time.sleep, [0.5, 0.5]))
    print(*pool._processes, flush=True)
    time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux's prctl")
def test_pool_workers_exit_when_the_run_is_killed(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(_POOL_SCRIPT)
    run = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(p) for p in run.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(p) for p in workers)
        run.kill()  # SIGKILL: no handler in the parent can clean up; the workers must go by themselves
        run.wait()
        deadline = time.monotonic() + 20
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in workers)
    finally:
        run.kill()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a reaped-later zombie counts as gone
        return f.read().split(") ")[1][0] != "Z"


def test_the_base_reads_both_families_but_never_an_evaluation_problem():
    from prmkit.lab.base import pretrain_pool
    from prmkit.lab.pools import generate_pool

    cfg = preset("quick").replace({"pretrain_problems": 200, "ood_pretrain_problems": 100})
    tok = lab_tokenizer()

    def words(pool):  # every non-number token of the solutions (a rare large number may stay unseen)
        return {t for s in pool for x in s.texts for t in tok.tokenize(x) if not t.isdigit()}

    pre = pretrain_pool(cfg)
    ood = generate_pool(cfg, 0, "ood", problems=40)
    assert words(ood) <= words(pre), words(ood) - words(pre)
    old = pretrain_pool(cfg.replace({"ood_pretrain_problems": 0}))
    assert {"I", "J", "K", "L"} <= words(ood) - words(old)  # what the in-distribution base never read
    texts = {s.problem.problem for s in pre}
    assert not texts & {s.problem.problem for split in ("ood", "eval") for s in generate_pool(cfg, 0, split)}


def test_the_orm_gets_ten_times_the_solutions_of_the_same_problems_graded_only(tmp_path):
    from prmkit.lab.arms import count_of
    from prmkit.lab.run import job_data

    cfg = preset("quick").replace({"eval_problems": 2, "ood_problems": 2, "train_problems": 3, "orm_ratio": 3,
                                   "paper_arms": True})
    job_data(tmp_path, cfg, 0)
    train, orm = (list(read_solutions(tmp_path / f"{n}.jsonl.gz")) for n in ("train", "orm"))
    assert len(orm) == 3 * len(train) == count_of("orm_paper", len(train), cfg)
    assert [s.problem.id for s in orm[::12]] == [s.problem.id for s in train[::4]]  # problem by problem
    assert all(s.grade in ("correct", "incorrect", "unparseable") and s.ratings == [None] * len(s.steps) for s in orm)
    assert len({s.id for s in orm}) == len(orm)


def test_key_of_is_stable_and_tells_configs_apart():
    assert key_of(BaseConfig(), 1) == key_of(BaseConfig(), 1) != key_of(BaseConfig(steps=1), 1)


def test_lab_tokenizer_keeps_numbers_whole_and_never_fails():
    tok = lab_tokenizer()
    pieces = tok.convert_ids_to_tokens(tok.encode("D * 2 : 14 * 2 = 28\n# Answer\n\n28", add_special_tokens=False))
    assert pieces[:9] == ["D", "*", "2", ":", "14", "*", "2", "=", "28"] and "\n" in pieces
    assert "<unk>" in tok.convert_ids_to_tokens(tok.encode("x ~ 5000", add_special_tokens=False))


def test_likelihood_scores_ignore_the_problem_tokens():
    logp = np.array([0.0, -9.0, -9.0, -0.5, -0.1, -1.0])
    d = likelihood_scores(logp, [(3, 5), (5, 6)])
    assert d["likelihood_min"] == -1.0 and abs(d["likelihood_mean"] - (-1.6 / 3)) < 1e-12


def _pool():
    from prmkit.lab import generate_pool

    return generate_pool(preset("quick"), 0, "eval", problems=1, samples=1)


# --- slow: the quick preset end to end --------------------------------------------------------------

@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, lab_jobs):
    """One quick run of three seeds (cache and run folder in a temporary folder); its stdout and folder."""
    root = tmp_path_factory.mktemp("lab-run")
    mp = pytest.MonkeyPatch()
    mp.setenv("PRMKIT_CACHE", str(root / "cache"))
    out = root / "run"
    argv = ["lab", "run", "--preset", "quick", "--seeds", ",".join(map(str, SEEDS)), "--out-dir", str(out), "--no-progress",
            "--workers", str(lab_jobs)]
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
    assert set(summary["timings"]) >= {"data", "base", "rm", "score", "evaluate", "report"}
    sol = next(iter(read_solutions(out / "seed-0" / "score-eval" / "eval.jsonl.gz")))
    assert {"prm_min", "prm_product", "prm_last", "prm_mean", "orm", "likelihood_mean", "likelihood_min"} <= set(sol.scores)
    assert {"p_correct", "p_pos", "p_neg", "base_logp_min"} <= set(sol.steps[0].scores)
    ood = next(iter(read_solutions(out / "seed-0" / "score-ood" / "ood.jsonl.gz")))
    assert ood.problem.subject == "ledger-ood" and "prm_min" in ood.scores
    assert "seed 2: PRM(min)@16" in quick_run["stdout"]


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_a_second_run_skips_every_stage_and_changes_nothing(quick_run, capsys):
    out = quick_run["out"]
    files = sorted(p for p in out.glob("seed-*/**/*") if p.is_file() and p.suffix in (".gz", ".json", ".safetensors"))
    before = {p: p.read_bytes() for p in files}
    mp = pytest.MonkeyPatch()
    mp.setenv("PRMKIT_CACHE", str(out.parent / "cache"))
    try:
        assert main(quick_run["argv"]) == 0
    finally:
        mp.undo()
    log = capsys.readouterr().out
    for stage in ("data", "base", "rm", "score", "evaluate"):
        assert f"stage {stage}: 0 of" in log and "(all cached)" in log
    assert {p: p.read_bytes() for p in files} == before


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_prmkit_eval_bon_on_the_scored_files_reproduces_every_best_of_n_number(quick_run, tmp_path, capsys):
    """The lab's scored files are plain prmkit JSONL: ``prmkit eval bon`` gives the report's exact numbers."""
    for seed in SEEDS:
        for pool in ("eval", "ood"):
            lab = json.loads((quick_run["out"] / f"seed-{seed}" / "evaluate" / f"{pool}.json").read_text())
            columns = lab["settings"]["columns"]
            argv = ["eval", "bon", str(quick_run["out"] / f"seed-{seed}" / f"score-{pool}" / f"{pool}.jsonl.gz"),
                    "--answer-key", "exact", "--no-vote", "--score", ",".join(columns), "--bootstrap", "20",
                    "--out-dir", str(tmp_path), "--name", f"{seed}-{pool}"]
            assert main(argv) == 0
            cli = json.loads((tmp_path / f"{seed}-{pool}.json").read_text())["metrics"]
            exact = [k for k in lab["metrics"] if k.startswith(("bon_acc@", "pass@", "first_acc"))]
            assert len(exact) >= len(columns) * 4
            for k in exact:
                assert cli[k]["estimate"] == pytest.approx(lab["metrics"][k]["estimate"], abs=1e-12), (seed, pool, k)
    capsys.readouterr()


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_large_effects_and_the_mechanism_on_the_quick_seeds(quick_run):
    """What is large against the seed spread, and the mechanism, on seeds 0, 1, 2 of the quick preset (N = 16
    there): both reward models far above majority voting on every seed, no stalled PRM, and the step labels
    at work: the PRM ranks the held-out steps against the oracle better than the label-free baseline it is
    compared with, the base model's own likelihood (``likelihood_step_auroc``, the same surprise the PRM
    reads as features), by at least 0.03 on every seed and 0.05 on average. A PRM that learned nothing from
    its labels fails it either way: stalled on the class prior it ranks steps far below the likelihood, and
    one that only copies its surprise features ranks them as the likelihood does. (On the report seeds the
    margin is 0.07, 0.11 and 0.12: docs/results/lab-default.json.)

    Not asserted, because they are research outcomes: PRM against ORM, and PRM against the label-free
    baseline at best-of-N (report seed 10 has the PRM 1.3 points below it at N = 16; the quick pool of 40
    problems moves by 2.5 points a problem). Both vary with the seeds and the base (docs/lab.md) and are
    reported."""
    summary = json.loads((quick_run["out"] / "summary.json").read_text())
    evals = [summary["results"][str(seed)]["eval"] for seed in SEEDS]
    margin = lambda h: h["prm_step_auroc"] - h["likelihood_step_auroc"]
    for seed, h in zip(SEEDS, evals):
        n = h["N"]
        assert h[f"prm_min@{n}"] > h[f"majority@{n}"] and h[f"orm@{n}"] > h[f"majority@{n}"], (seed, h)
        assert h["prm_step_auroc"] > 0.85, (seed, h)
        assert margin(h) >= 0.03, (seed, h["prm_step_auroc"], h["likelihood_step_auroc"])
    assert sum(margin(h) for h in evals) / len(evals) >= 0.05, [(h["prm_step_auroc"], h["likelihood_step_auroc"])
                                                                for h in evals]
    # the lottery restarts guard against: a PRM stalled on the class-prior plateau ends 0.1-0.3 of step
    # AUROC below a learned one; the report's stricter target (0.03) is reported in summary.json
    spread = summary["auroc_spread"]
    assert spread["values"] == [h["prm_step_auroc"] for h in evals] and spread["spread"] <= 0.10, spread


def test_quick_preset_keeps_the_run_affordable():
    cfg = preset("quick")
    assert cfg.labelled == preset("default").labelled  # the same label budget as default: the gaps mean something
    assert cfg.rm == preset("default").rm


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory):
    """A 1-layer lab base pretrained a few steps by the product's loop (``ensure_base``), in its own cache."""
    import os

    from prmkit.lab.base import ensure_base

    cache = tmp_path_factory.mktemp("cache")
    cfg = preset("quick").replace({"pretrain_problems": 8, "ood_pretrain_problems": 2, "base.hidden_size": 32, "base.intermediate_size": 64,
                                   "base.layers": 1, "base.heads": 2, "base.steps": 3, "base.batch_size": 4,
                                   "base.warmup": 1})
    old = os.environ.get("PRMKIT_CACHE")
    os.environ["PRMKIT_CACHE"] = str(cache)
    try:
        folder = ensure_base(cfg, progress=False, log=lambda *a: None)
    finally:
        os.environ.pop("PRMKIT_CACHE") if old is None else os.environ.__setitem__("PRMKIT_CACHE", old)
    return cfg, folder


def test_the_base_is_pretrained_by_the_product_loop_and_loads_with_transformers(tiny_base):
    import transformers

    cfg, folder = tiny_base
    info = json.loads((folder / "base.json").read_text())
    card = json.loads((folder / "prmkit_config.json").read_text())
    both_families = 8 * cfg.pretrain_samples + 2 * cfg.ood_pretrain_samples
    assert card["kind"] == "lm" and info["pretrain_solutions"] == both_families
    assert not (folder / "checkpoints").exists()
    assert transformers.AutoModelForCausalLM.from_pretrained(folder).config.num_hidden_layers == 1


@pytest.mark.parametrize("head,features", [("classify", "surprise:base"), ("lm", "")])
def test_a_tiny_reward_model_trains_and_scores_every_kept_step(tmp_path, tiny_base, head, features):
    """Tier 2: PRM and ORM train through prmkit.train (weights move) and score through prmkit.score."""
    from safetensors.torch import load_file

    from prmkit.io import read_solutions, write_records
    from prmkit.lab import generate_pool, label
    from prmkit.lab.rm import lab_rm, step_probabilities, train_and_score

    cfg, base = tiny_base
    sols = generate_pool(cfg, 0, "train", problems=8)
    rm = lab_rm(head=head, features=features, max_steps=3, batch_size=4, warmup_steps=1, progress=False)
    for kind, data in (("prm", label(sols, cfg.labellers, 0)), ("orm", sols)):
        write_records(tmp_path / f"{kind}.jsonl", data)
        write_records(tmp_path / "pool.jsonl", sols[:5])
        out = tmp_path / kind
        train_and_score(out, kind, tmp_path / f"{kind}.jsonl", rm, 0, str(base), {"pool": tmp_path / "pool.jsonl"})
        before, after = load_file(str(base / "model.safetensors")), load_file(str(out / "model" / "model.safetensors"))
        assert any(not torch.equal(before[k], after[k]) for k in after if k in before)
        assert (out / "model" / "feature_adapter.safetensors").exists() == bool(features)
        scored = list(read_solutions(out / "scored-pool.jsonl.gz"))
        if kind == "prm":
            probs = step_probabilities(out / "scored-pool.jsonl.gz")
            assert [len(p) for p in probs] == [len(s.texts) for s in sols[:5]]
            assert all(np.allclose(p.sum(axis=1), 1.0) for p in probs)
            assert all("prm_min" in s.scores for s in scored)
        else:
            assert all(0 <= s.scores["orm"] <= 1 for s in scored)


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


def _pretrain_in(cache: str, queue) -> None:
    import os

    from prmkit.lab.base import ensure_base

    os.environ["PRMKIT_CACHE"] = cache
    said = []
    cfg = preset("quick").replace({"pretrain_problems": 8, "ood_pretrain_problems": 2, "base.hidden_size": 32,
                                   "base.intermediate_size": 64, "base.layers": 1, "base.heads": 2, "base.steps": 20,
                                   "base.batch_size": 4, "base.warmup": 1})
    folder = ensure_base(cfg, progress=False, log=said.append)
    queue.put((str(folder), len(said)))


def test_two_clones_sharing_a_cache_pretrain_a_base_once(tmp_path):
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_pretrain_in, args=(str(tmp_path), queue)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results[0][0] == results[1][0]  # one folder, one key
    assert sorted(n for _, n in results) == [0, 1]  # one process pretrained it; the other waited and found it
    assert [p.name for p in (tmp_path / "lab-base").iterdir() if not p.name.startswith(".")] == [Path(results[0][0]).name]
