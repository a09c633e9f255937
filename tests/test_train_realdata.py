"""Training on the real files as a user does: defaults that cannot silently ruin a model.

Each test is the user's command through ``prmkit.cli.main``: ProcessBench MATH (long solutions) and
PRM800K phase 1 (rated alternatives off the chosen path) from ``../shared/data``."""

from __future__ import annotations

import json

import pytest

from prmkit.cli import main

pytestmark = pytest.mark.shared_data
TINY = ["--base-model", "tiny-llama", "--max-steps", "1", "--batch-size", "2", "--eval-fraction", "0",
        "--save-every", "0", "--no-progress", "--no-tensorboard"]


@pytest.fixture(scope="module")
def pb_math(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("pb") / "pb_math.jsonl"
    assert main(["data", "convert", "--from", "processbench", "--to", "prmkit",
                 str(shared_data / "processbench" / "math.json"), str(out)]) == 0
    lines = out.read_text().splitlines()[:120]
    out.write_text("\n".join(lines) + "\n")  # 120 solutions: the long ones are there, training stays quick
    return out


def test_truncation_past_the_limit_is_refused_with_the_length_that_fits(pb_math, tmp_path, capsys):
    code = main(["train", "prm", "--data", str(pb_math), "--out-dir", str(tmp_path / "m"), "--max-length", "512", *TINY])
    err = capsys.readouterr().err
    assert code == 2 and "truncation would drop" in err and "at --max-length 512" in err
    longest = int(err.split("the longest solution is ")[1].split()[0])
    assert 1000 < longest < 4096 and f"Train with --max-length {longest}" in err and "--allow-truncation" in err
    assert not (tmp_path / "m").exists()


def test_the_default_length_fits_and_the_override_trains_anyway(pb_math, tmp_path, capsys):
    assert main(["train", "prm", "--data", str(pb_math), "--out-dir", str(tmp_path / "m"), *TINY]) == 0
    out = capsys.readouterr().out
    assert "truncation: 0 of" in out  # max_length 0: the preset is built with 4096 positions
    card = json.loads((tmp_path / "m" / "prmkit_config.json").read_text())
    assert card["format"]["max_length"] == 4096
    assert main(["train", "prm", "--data", str(pb_math), "--out-dir", str(tmp_path / "m2"), "--max-length", "512",
                 "--allow-truncation", *TINY]) == 0


@pytest.fixture(scope="module")
def phase1(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("p1") / "phase1.jsonl"
    assert main(["data", "convert", "--from", "stepwise-critic", "--to", "prmkit",
                 str(shared_data / "prm800k" / "phase1_test.stepwise-critic.jsonl.gz"), str(out)]) == 0
    return out


def test_prm800k_phase1_trains_on_its_rated_alternatives(phase1, tmp_path, capsys):
    assert main(["train", "prm", "--data", str(phase1), "--out-dir", str(tmp_path / "m"), *TINY]) == 0
    out = capsys.readouterr().out
    train_line = next(line for line in out.splitlines() if line.startswith("train:"))
    counts = dict(part.rsplit(" ", 1) for part in train_line.split("targets (")[1].split(")")[0].split(", "))
    assert int(counts["negative"]) >= 1900 and int(counts["positive"]) > 2000  # the 1,970 -1 alternatives are examples
    assert "rated alternatives of a step" in train_line


def test_a_one_class_prm_is_refused_naming_the_cause(phase1, tmp_path, capsys):
    code = main(["train", "prm", "--data", str(phase1), "--out-dir", str(tmp_path / "m"), "--no-alternatives", *TINY])
    err = capsys.readouterr().err
    assert code == 2 and "supervised PRM targets is 'positive'" in err and "drop --no-alternatives" in err


def test_phase1_and_phase2_together(phase1, shared_data, tmp_path, capsys):
    phase2 = tmp_path / "phase2.jsonl"
    assert main(["data", "convert", "--from", "prm800k", "--to", "prmkit",
                 str(shared_data / "prm800k" / "openr_samples_prm800k.jsonl"), str(phase2)]) == 0
    assert main(["train", "prm", "--data", f"{phase1},{phase2}", "--out-dir", str(tmp_path / "m"), *TINY]) == 0
    out = capsys.readouterr().out
    n1 = sum(1 for _ in open(phase1))
    assert f"from {n1 + 6} solutions" in out


@pytest.mark.slow
def test_prm800k_to_a_scored_candidate_pool_with_no_glue(phase1, shared_data, tmp_path, capsys):
    """The practitioner's path end to end on the real files: PRM800K rows -> a tiny PRM with the defaults ->
    a converted candidate pool scored -> best-of-N."""
    model, cands = tmp_path / "prm", tmp_path / "cands.jsonl"
    assert main(["train", "prm", "--data", str(phase1), "--out-dir", str(model), "--base-model", "tiny-llama",
                 "--max-steps", "3", "--eval-fraction", "0", "--no-progress", "--no-tensorboard"]) == 0
    rows = (shared_data / "candidates" / "qwen25math_math_cot_100.jsonl").read_text().splitlines(True)
    cands.write_text("".join(rows[:6]))
    pool, scored = tmp_path / "pool.jsonl", tmp_path / "scored.jsonl"
    assert main(["data", "convert", "--from", "qwen-candidates", "--to", "prmkit", str(cands), str(pool)]) == 0
    assert main(["score", "--model", str(model), str(pool), str(scored), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["eval", "bon", str(scored), "--score", "prm_min,pred_score", "--no-vote", "--bootstrap", "50"]) == 0
    out = capsys.readouterr()
    assert "bon_acc[prm_min]" in out.out and "warning" not in out.err  # every sample scored, none truncated
