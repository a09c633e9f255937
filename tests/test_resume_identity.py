"""A rerun into an existing output never keeps results made by another model or other settings (issue 29, 2).

Each test is the user's command, as run from the CLI: a mismatch is refused with the way out (rc 2, the
output untouched), or, for another model's scores under another name, the new column is added.
"""

from __future__ import annotations

import json
import shutil

import pytest

from prmkit.cli import main
from prmkit.io import read_solutions, write_records
from prmkit.schema import Problem
from prmkit.testing.toydata import make_solutions
from prmkit.train.config import TrainConfig
from prmkit.train.loop import train


def _train(folder, seed: int, **extra):
    write_records(folder / "train.jsonl", make_solutions(64, seed=1))
    train(TrainConfig(data=str(folder / "train.jsonl"), out=str(folder / "model"), max_steps=4, batch_size=8,
                      eval_fraction=0, save_every=0, progress=False, tensorboard=False, seed=seed, **extra))
    return folder / "model"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {"prm": _train(root / "a", 0), "prm8k": _train(root / "b", 1),
            "orm": _train(root / "c", 0, kind="orm", head="classify")}


@pytest.fixture
def pool(tmp_path):
    path = tmp_path / "in.jsonl"
    write_records(path, make_solutions(12, seed=5))
    return path


def _score(model, inp, out, *flags):
    return main(["score", "--model", str(model), str(inp), str(out), "--no-progress", *flags])


def test_another_model_into_the_same_column_is_refused(models, pool, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert _score(models["prm"], pool, out) == 0
    before = out.read_bytes()
    capsys.readouterr()
    assert _score(models["prm8k"], pool, out) == 2
    err = capsys.readouterr().err
    assert "holds 'prm' scores from another model or settings" in err and "--no-resume" in err
    assert str(models["prm8k"].resolve()) in err and out.read_bytes() == before
    assert _score(models["prm8k"], pool, out, "--no-resume") == 0
    stamps = {json.dumps(s.meta["scored_by"]["prm"]) for s in read_solutions(out)}
    assert len(stamps) == 1 and str(models["prm8k"].resolve()) in stamps.pop()


def test_a_model_retrained_in_place_is_refused(models, pool, tmp_path, capsys):
    folder = tmp_path / "prm"
    shutil.copytree(models["prm"], folder)
    out = tmp_path / "out.jsonl"
    assert _score(folder, pool, out) == 0
    shutil.copy(models["prm8k"] / "model.safetensors", folder / "model.safetensors")  # the same path, other weights
    capsys.readouterr()
    assert _score(folder, pool, out) == 2
    assert "weights:" in capsys.readouterr().err


def test_other_settings_are_refused(models, pool, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert _score(models["prm"], pool, out, "--aggregations", "min") == 0
    capsys.readouterr()
    assert _score(models["prm"], pool, out, "--aggregations", "min,product") == 2
    assert "aggregations: ['min'] there, ['min', 'product'] now" in capsys.readouterr().err


def test_the_same_model_resumes(models, pool, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert _score(models["prm"], pool, out) == 0
    before = out.read_bytes()
    capsys.readouterr()
    assert _score(models["prm"], pool, out) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scored"] == 0 and summary["skipped_already_scored"] == 12 and out.read_bytes() == before


def test_an_orm_into_a_prm_scored_file_adds_its_column(models, pool, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert _score(models["prm"], pool, out) == 0
    prm = {s.id: s.scores["prm_min"] for s in read_solutions(out)}
    capsys.readouterr()
    assert _score(models["orm"], pool, out) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scored"] == 12 and summary["added_to_existing"] == 12
    both = list(read_solutions(out))
    assert all("orm" in s.scores and s.scores["prm_min"] == prm[s.id] for s in both)
    assert all(set(s.meta["scored_by"]) == {"prm", "orm"} for s in both)


def test_scores_of_unknown_origin_are_refused(models, pool, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    sols = list(read_solutions(pool))
    for s in sols:
        s.scores["prm_min"] = 0.5  # a file scored before prmkit recorded who scored it
    write_records(out, sols)
    assert _score(models["prm"], pool, out) == 2
    assert "of unknown origin" in capsys.readouterr().err


def test_a_rescored_input_keeps_no_stale_column(models, pool, tmp_path):
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    assert _score(models["prm"], pool, first, "--aggregations", "min,product") == 0
    assert _score(models["prm8k"], first, second, "--aggregations", "min") == 0
    for s in read_solutions(second):
        assert "prm_product" not in s.scores and s.meta["scored_by"]["prm"]["aggregations"] == ["min"]


# --- generate ---------------------------------------------------------------------------------------

@pytest.fixture
def problems(tmp_path):
    path = tmp_path / "problems.jsonl"
    write_records(path, [Problem(f"{a} + {b} =", answer=str(a + b), id=f"p{a}") for a, b in [(1, 2), (3, 4)]])
    return path


def _generate(model, problems, out, *flags):
    return main(["generate", "--backend", "hf", "--model", str(model), "--n", "2", "--max-new-tokens", "6",
                 "--no-progress", str(problems), str(out), *flags])


@pytest.mark.parametrize("change", [["--temperature", "0.5"], ["--steps", "blank"], "model"])
def test_generate_into_a_complete_file_with_other_settings_is_refused(tiny_lm, other_tiny_lm, problems, tmp_path,
                                                                      capsys, change):
    out = tmp_path / "out.jsonl"
    assert _generate(tiny_lm, problems, out) == 0
    before = out.read_bytes()
    capsys.readouterr()
    model, flags = (other_tiny_lm, []) if change == "model" else (tiny_lm, change)
    assert _generate(model, problems, out, *flags) == 2
    err = capsys.readouterr().err
    assert "--no-resume" in err and out.read_bytes() == before
    assert _generate(model, problems, out, *flags, "--no-resume") == 0


def test_generate_with_weights_changed_in_place_is_refused(tiny_lm, other_tiny_lm, problems, tmp_path, capsys):
    folder = tmp_path / "lm"
    shutil.copytree(tiny_lm, folder)
    out = tmp_path / "out.jsonl"
    assert _generate(folder, problems, out) == 0
    shutil.copy(other_tiny_lm / "model.safetensors", folder / "model.safetensors")
    capsys.readouterr()
    assert _generate(folder, problems, out) == 2
    assert "weights:" in capsys.readouterr().err


def test_a_partial_file_of_another_name_is_refused(models, pool, tmp_path, capsys):
    """A PRM run killed into OUT, then an ORM into the same OUT: the PRM's partial records are no ORM's."""
    ref, out = tmp_path / "ref.jsonl", tmp_path / "out.jsonl"
    assert _score(models["prm"], pool, ref) == 0
    (tmp_path / ".out.jsonl.part0of1").write_text("".join(ref.read_text().splitlines(keepends=True)[:4]))
    capsys.readouterr()
    assert _score(models["orm"], pool, out) == 2
    assert "is the partial file of another run (its records carry no 'orm' scores)" in capsys.readouterr().err
    assert not out.exists()


def test_another_name_with_a_common_prefix_is_another_column(models, pool, tmp_path):
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    assert _score(models["prm"], pool, first, "--name", "prm_v2") == 0
    assert _score(models["prm"], first, second) == 0  # "prm" must not clear or refuse prm_v2's columns
    for s in read_solutions(second):
        assert "prm_v2_min" in s.scores and "prm_min" in s.scores and set(s.meta["scored_by"]) == {"prm", "prm_v2"}


def test_a_complete_output_is_checked_without_loading_the_model(tiny_lm, problems, tmp_path, monkeypatch):
    """The settings alone say who wrote an hf file: a rerun with nothing to do loads nothing, and the
    generator it checks against is the one the records hold."""
    from prmkit.generate import run

    out = tmp_path / "out.jsonl"
    assert _generate(tiny_lm, problems, out) == 0
    record = json.loads(out.read_text().splitlines()[0])["generator"]

    def no_loading(cfg):
        raise AssertionError("the model was loaded for a complete output")

    monkeypatch.setattr(run, "make_backend", no_loading)
    assert _generate(tiny_lm, problems, out) == 0
    from prmkit.generate import GenerateConfig

    cfg = GenerateConfig(model=str(tiny_lm), n=2, max_new_tokens=6)
    assert run.generator_by_name(cfg).to_dict() == record
    assert _generate(tiny_lm, problems, out, "--temperature", "0.5") == 2


def test_an_output_of_another_input_is_refused_before_scoring(models, pool, tmp_path, capsys):
    out, other = tmp_path / "out.jsonl", tmp_path / "other.jsonl"
    write_records(other, make_solutions(5, seed=9))
    assert _score(models["prm"], other, out) == 0
    capsys.readouterr()
    assert _score(models["prm"], pool, out) == 2
    err = capsys.readouterr().err
    assert "it is not a scored copy of this input" in err and not (tmp_path / ".out.jsonl.part0of1").exists()


def test_label_auto_with_weights_changed_in_place_is_refused(tiny_lm, other_tiny_lm, problems, tmp_path, capsys):
    """The rollouts' generator is keyed by its weights too (its cache and the settings OUT records)."""
    folder = tmp_path / "lm"
    shutil.copytree(tiny_lm, folder)
    sols, out = tmp_path / "sols.jsonl", tmp_path / "mc.jsonl"
    assert _generate(folder, problems, sols) == 0
    label = ["label", "auto", str(sols), str(out), "--backend", "hf", "--model", str(folder), "--rollouts", "1",
             "--max-new-tokens", "6", "--no-progress"]
    assert main(label) == 0
    shutil.copy(other_tiny_lm / "model.safetensors", folder / "model.safetensors")
    capsys.readouterr()
    assert main(label) == 2
    assert "holds labels made with" in capsys.readouterr().err
