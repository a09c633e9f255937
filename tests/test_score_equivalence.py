"""Scoring: batched == one at a time, one pass == per prefix, plain transformers == prmkit, files resume."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from prmkit.cli import main
from prmkit.io import read_solutions, write_records
from prmkit.score import ScoreConfig, Scorer, score_file
from prmkit.testing.toydata import make_solutions
from prmkit.train.config import TrainConfig
from prmkit.train.loop import train

torch.set_num_threads(1)


@pytest.fixture(scope="module", params=["lm", "classify3"])
def model_dir(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    write_records(folder / "train.jsonl", make_solutions(64, seed=1))
    extra = {"head": "classify", "classes": 3, "neutral": "class"} if request.param == "classify3" else {}
    train(TrainConfig(data=str(folder / "train.jsonl"), out=str(folder / "model"), max_steps=4, batch_size=8,
                      eval_fraction=0, save_every=0, progress=False, tensorboard=False, **extra))
    return folder / "model"


@pytest.fixture(scope="module")
def sols():
    return make_solutions(24, seed=5, n_steps=(1, 10))


def test_batched_equals_one_at_a_time(model_dir, sols):
    scorer = Scorer(model_dir, device="cpu")
    problems, steps = [s.problem.problem for s in sols], [s.texts for s in sols]
    batched = scorer.probabilities(problems, steps, batch_size=8)
    unsorted = scorer.probabilities(problems, steps, batch_size=8, sort_by_length=False)
    single = [scorer.probabilities([p], [s], batch_size=1)[0] for p, s in zip(problems, steps)]
    for a, b, c in zip(batched, single, unsorted):
        assert a.shape == (len(b), scorer.head.n_outputs)
        np.testing.assert_allclose(a, b, atol=1e-5)
        np.testing.assert_allclose(c, b, atol=1e-5)


def test_packed_equals_padded(model_dir, sols):
    packed, padded = Scorer(model_dir, device="cpu"), Scorer(model_dir, device="cpu", packing="off")
    assert packed.packed and not padded.packed  # tiny-llama can be packed, so auto packs
    problems, steps = [s.problem.problem for s in sols], [s.texts for s in sols]
    for a, b in zip(packed.probabilities(problems, steps, batch_size=8), padded.probabilities(problems, steps, batch_size=8)):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_one_pass_equals_per_prefix(model_dir, sols):
    scorer = Scorer(model_dir, device="cpu")
    for sol in sols[:8]:
        one = scorer.probabilities([sol.problem.problem], [sol.texts])[0]
        np.testing.assert_allclose(one, scorer.per_prefix_probabilities(sol.problem.problem, sol.texts), atol=1e-5)


def test_plain_transformers_gives_the_same_scores(model_dir, sols):
    # Exactly the snippet of docs/training.md ("Reading scores with plain transformers").
    import transformers
    from transformers import AutoTokenizer

    card = json.loads((model_dir / "prmkit_config.json").read_text())
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = getattr(transformers, card["auto_class"]).from_pretrained(model_dir).eval()
    fmt = card["format"]
    sol = sols[0]
    text = sol.problem.problem + fmt["problem_suffix"] + "".join(s + fmt["separator"] + fmt["marker"] for s in sol.texts)
    ids = tok(text, return_tensors="pt").input_ids
    with torch.no_grad():
        logits = model(ids).logits[0]
    ends = (ids[0] == tok.convert_tokens_to_ids(fmt["marker"])).nonzero()[:, 0]
    if card["head"]["kind"] == "lm":
        logits = logits[:, card["head"]["label_token_ids"]]
    probs = torch.softmax(logits[ends], -1).numpy()  # columns: positive, negative[, neutral]
    ours = Scorer(model_dir, device="cpu").probabilities([sol.problem.problem], [sol.texts])[0]
    np.testing.assert_allclose(probs, ours, atol=1e-5)


def test_score_file_writes_named_scores_and_resumes(model_dir, sols, tmp_path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_records(inp, sols[:10])
    cfg = ScoreConfig(progress=False, chunk=4, batch_size=3)
    assert score_file(model_dir, inp, out, cfg)["scored"] == 10
    first = list(read_solutions(out))
    assert [s.id for s in first] == [s.id for s in sols[:10]]
    s0 = first[0]
    assert {"prm_product", "prm_min", "prm_last", "prm_mean"} <= set(s0.scores)
    p = [st.scores["p_correct"] for st in s0.steps]
    assert s0.scores["prm_min"] == pytest.approx(min(p)) and s0.scores["prm_product"] == pytest.approx(np.prod(p))
    write_records(inp, sols[:14])  # four new records: only they are scored
    summary = score_file(model_dir, inp, out, cfg)
    assert summary["scored"] == 4 and summary["skipped_already_scored"] == 10
    again = list(read_solutions(out))
    assert [s.id for s in again] == [s.id for s in sols[:14]] and again[0].to_dict() == s0.to_dict()


def test_interrupted_partial_file_is_resumed(model_dir, sols, tmp_path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_records(inp, sols[:8])
    reference = tmp_path / "ref.jsonl"
    score_file(model_dir, inp, reference, ScoreConfig(progress=False))
    lines = reference.read_text().splitlines(keepends=True)
    (tmp_path / ".out.jsonl.part0of1").write_text("".join(lines[:3]) + lines[3][:20])  # killed mid-line
    assert score_file(model_dir, inp, out, ScoreConfig(progress=False))["scored"] == 5
    assert out.read_text() == reference.read_text()


def test_truncated_steps_are_reported(model_dir, sols, tmp_path):
    scorer = Scorer(model_dir, device="cpu")
    scorer.fmt = type(scorer.fmt)(**{**scorer.fmt.to_dict(), "max_length": 40})
    long = make_solutions(2, seed=9, n_steps=(10, 10))
    probs = scorer.probabilities([s.problem.problem for s in long], [s.texts for s in long])
    scorer.annotate(long[0], probs[0], ["min"])
    assert len(probs[0]) < 10 and long[0].scores["prm_steps_lost"] == 10 - len(probs[0])
    assert scorer.truncation.steps_lost > 0


def test_neutral_policy_when_scoring(model_dir, sols, tmp_path):
    scorer = Scorer(model_dir, device="cpu")
    if scorer.head.n_outputs == 3:
        neg = Scorer(model_dir, device="cpu", neutral="negative")
        row = scorer.probabilities([sols[0].problem.problem], [sols[0].texts])[0][0]
        s_pos, s_neg = (make_solutions(1, seed=5, n_steps=(1, 10))[0] for _ in range(2))
        scorer.annotate(s_pos, row[None], ["min"])
        neg.annotate(s_neg, row[None], ["min"])
        assert s_pos.steps[0].scores["p_correct"] == pytest.approx(row[0] + row[2])
        assert s_neg.steps[0].scores["p_correct"] == pytest.approx(row[0])
    else:
        with pytest.raises(ValueError, match="no neutral class"):
            Scorer(model_dir, device="cpu", neutral="negative")


def test_cli_score(model_dir, sols, tmp_path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_records(inp, sols[:5])
    assert main(["score", "--model", str(model_dir), str(inp), str(out), "--aggregations", "min,last",
                 "--name", "v1", "--no-progress"]) == 0
    got = list(read_solutions(out))
    assert set(got[0].scores) == {"v1_min", "v1_last"} and "v1_p_correct" in got[0].steps[0].scores


@pytest.mark.gpu
def test_gpu_scores_match_cpu(model_dir, sols):
    cpu = Scorer(model_dir, device="cpu", dtype=torch.float32)
    gpu = Scorer(model_dir, device="cuda", dtype=torch.float32)
    args = ([s.problem.problem for s in sols], [s.texts for s in sols])
    for a, b in zip(cpu.probabilities(*args), gpu.probabilities(*args)):
        np.testing.assert_allclose(a, b, atol=1e-3)


def test_a_gzip_output_is_replaced_without_resume_and_resumed_with_it(model_dir, sols, tmp_path):
    from prmkit.io import write_records
    from prmkit.score import ScoreConfig, score_file

    write_records(tmp_path / "in.jsonl", sols)
    out = tmp_path / "out.jsonl.gz"
    for _ in range(2):
        score_file(model_dir, tmp_path / "in.jsonl", out, ScoreConfig(progress=False, resume=False))
    assert [s.id for s in read_solutions(out)] == [s.id for s in sols]  # replaced, not appended to
    summary = score_file(model_dir, tmp_path / "in.jsonl", out, ScoreConfig(progress=False))
    assert summary["scored"] == 0 and len(list(read_solutions(out))) == len(sols)
