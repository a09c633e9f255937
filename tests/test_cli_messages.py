"""What the user reads: warnings and errors that name the cause, and help that is right about itself.

Every test is a user's command through ``prmkit.cli.main``; the files are built here.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from prmkit.cli import build_parser, main, parse_args, walk_commands
from prmkit.io import write_records
from prmkit.schema import Problem, Solution

FIX = "--max-length N"  # the fix every truncation message names


# --- eval bon: samples without a score --------------------------------------------------------------

def bon_pool(path, unscored=(0, 4, 9)):
    """4 problems x 4 samples, half correct; the samples ``unscored`` lost their ORM score to truncation."""
    sols = []
    for p in range(4):
        for i in range(4):
            ok = i % 2 == 0
            sol = Solution.from_steps(Problem(f"q{p}", answer="1", id=f"p{p}"), ["a", "b"], answer="1" if ok else "2",
                                      grade="correct" if ok else "incorrect", scores={"orm": 0.8 if ok else 0.3})
            if 4 * p + i in unscored:
                sol.scores = {"orm_steps_lost": 2}
            sols.append(sol)
    write_records(path, sols)
    return path


def test_eval_bon_says_how_many_samples_had_no_score_and_what_became_of_them(tmp_path, capsys):
    path = bon_pool(tmp_path / "scored.jsonl")
    assert main(["eval", "bon", str(path), "--score", "orm", "--ns", "1,2,4", "--answer-key", "exact",
                 "--bootstrap", "50", "--target-se", "0.05", "--out-dir", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    warning = next(line for line in out.splitlines() if line.startswith("warning:"))
    assert "3 of 16 samples (in 3 of 4 problems) have no score 'orm'" in warning
    assert "bon_acc[orm] never picks them" in warning and "take their slot among the N drawn" in warning
    assert "no vote in weighted_acc[orm]" in warning and "pass@N, maj_acc and first_acc count every sample" in warning
    assert "All of them lost steps to truncation (orm_steps_lost)" in out and "prmkit train orm" in out and FIX in out
    summary = json.loads((tmp_path / "run" / "bon.json").read_text())["pool"]["score_columns"]["orm"]
    assert summary == {"missing": 3, "missing_problems": 3, "truncated": {"orm_steps_lost": 3}}


def test_eval_bon_is_silent_when_every_sample_is_scored_and_ranks_on_no_truncation_count(tmp_path, capsys):
    path = bon_pool(tmp_path / "scored.jsonl", unscored=())
    assert main(["eval", "bon", str(path), "--ns", "1,2", "--answer-key", "exact", "--bootstrap", "20",
                 "--no-vote"]) == 0
    assert "warning" not in capsys.readouterr().out
    bon_pool(path)  # now some records carry orm_steps_lost: it is a count, not a score to rank on
    assert main(["eval", "bon", str(path), "--ns", "1,2", "--answer-key", "exact", "--bootstrap", "20",
                 "--no-vote"]) == 0
    out = capsys.readouterr().out
    assert "bon_acc[orm]" in out and "steps_lost]" not in out and "have no score 'orm'" in out


def test_eval_bon_column_missing_everywhere_names_truncation(tmp_path, capsys):
    path = bon_pool(tmp_path / "scored.jsonl", unscored=range(16))
    assert main(["eval", "bon", str(path), "--score", "orm", "--answer-key", "exact", "--no-vote"]) == 2
    err = capsys.readouterr().err
    assert "score column 'orm' is missing from every sample" in err and "orm_steps_lost" in err and FIX in err


# --- eval steps: missing step scores ----------------------------------------------------------------

def step_file(path, lost=(1,), key="p_correct"):
    """Three rated solutions of three steps; those in ``lost`` kept only their first step at scoring."""
    sols = []
    for k in range(3):
        sol = Solution.from_steps(Problem(f"q{k}", id=f"p{k}"), ["a", "b", "c"], ratings=[1, 1, -1], id=f"s{k}")
        kept = 1 if k in lost else 3
        for step in sol.steps[:kept]:
            step.scores[key] = 0.5
        if kept < 3:
            sol.scores["prm_steps_lost"] = 3 - kept
        sols.append(sol)
    write_records(path, sols)
    return path


def test_eval_steps_names_truncation_when_scores_are_missing_on_some_records(tmp_path, capsys):
    path = step_file(tmp_path / "steps.jsonl")
    assert main(["eval", "steps", str(path), "--score", "p_correct"]) == 2
    err = capsys.readouterr().err
    assert "steps.jsonl:2: field 'steps[1].scores': no step score 'p_correct' on 2 of its 3 steps" in err
    assert "1 of 3 records lacks it on some steps, this is the first" in err
    assert "It lost steps to truncation (prm_steps_lost)" in err and "prmkit train prm" in err and FIX in err


def test_eval_steps_tells_a_key_no_record_has_from_truncation(tmp_path, capsys):
    path = step_file(tmp_path / "steps.jsonl", lost=())
    assert main(["eval", "steps", str(path), "--score", "p_corect"]) == 2
    err = capsys.readouterr().err
    assert "none of the 3 records has the step score 'p_corect' (step scores they have: p_correct)" in err
    assert "pick the key with --score" in err and "truncation" not in err
    step_file(path, lost=(0, 1, 2))
    assert main(["eval", "steps", str(path), "--score", "p_correct"]) == 2
    err = capsys.readouterr().err
    assert "every record lacks it on some steps" in err and "All of them lost steps to truncation" in err


# --- select: missing scores, the flag's name -------------------------------------------------------------

def candidates(path, lost=(1,), scores=None):
    sols = []
    for k in range(3):
        sol = Solution.from_steps(Problem("q", id="p1"), ["a"], id=f"s{k}", grade="correct",
                                  scores=dict(scores or {"prm_min": 0.1 * k}))
        if k in lost:
            sol.scores = {"prm_steps_lost": 1}
        sols.append(sol)
    write_records(path, sols)
    return path


def test_select_names_truncation_and_how_many_candidates_lack_the_score(tmp_path, capsys):
    path = candidates(tmp_path / "c.jsonl")
    argv = ["select", "--strategy", "top_k", "--score", "prm_min", "--count", "1", str(path), str(tmp_path / "o.jsonl")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "1 of 3 candidates has no score 'prm_min' (--score prm_min), the first candidate 1 (id s1" in err
    assert "It lost steps to truncation (prm_steps_lost)" in err and "prmkit train prm" in err and FIX in err
    candidates(path, lost=(0, 1, 2))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no candidate has the score 'prm_min' (--score prm_min); columns seen: prm_steps_lost" in err
    assert "All of them lost steps to truncation" in err


def test_select_errors_name_the_flag_the_user_types(tmp_path, capsys):
    path = candidates(tmp_path / "c.jsonl", lost=(), scores={"orm": 0.5})
    assert main(["select", "--strategy", "top_k", "--count", "1", str(path), str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "name one with --score" in err and "score=" not in err
    assert main(["select", "--strategy", "top_k", "--count", "1", "--score", "prm", str(path),
                 str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "no candidate has the score 'prm' (--score prm); columns seen: orm" in err and "truncation" not in err


def test_label_push_without_a_default_score_points_to_prmkit_select(tmp_path, capsys):
    path = candidates(tmp_path / "c.jsonl", lost=(), scores={"orm": 0.5})
    assert main(["label", "push", "--db", f"sqlite:///{tmp_path}/l.db", "--project", "x", "--strategy", "top_k",
                 "--count", "1", str(path)]) == 2
    err = capsys.readouterr().err
    assert "prmkit select --score COL" in err and "--strategy in_order" in err and "name one with" not in err


# --- help ---------------------------------------------------------------------------------------------

def example_commands():
    """Every ``prmkit ...`` line of every epilog, as argv lists (comments, ``&&`` and ``< file`` cut off)."""
    seen = {}
    for name, parser in walk_commands(build_parser()):
        for line in (parser.epilog or "").splitlines():
            line = re.split(r"\s{2,}[#(]", line.strip())[0]
            for part in line.split(" && "):
                if part.startswith("prmkit ") and part not in seen:
                    seen[part] = (name, shlex.split(part.split(" < ")[0])[1:])
    return list(seen.items())


@pytest.mark.parametrize("line,example", example_commands())
def test_every_help_example_parses(line, example):
    where, argv = example
    try:
        parse_args(argv)
    except SystemExit as e:
        pytest.fail(f"the example {line!r} in `{where} --help` does not parse (exit {e.code})")


def test_the_top_level_audit_example_runs(tmp_path, capsys):
    pytest.importorskip("math_verify")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"given": "\\boxed{\\frac{1}{2}}", "gold": "0.5"}) + "\n")
    [line] = [ln.strip() for ln in build_parser().epilog.splitlines() if "grade pairs.jsonl --audit" in ln]
    assert main([str(pairs) if a == "pairs.jsonl" else a for a in shlex.split(line)[1:]]) == 0
    assert "audit: prmkit vs math-verify" in capsys.readouterr().out


def help_of(argv, capsys) -> str:
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


PRM_ONLY = ("--supervise", "--neutral", "--score-neutral", "--label-source", "--aggregations",
            "--default-aggregation")


def test_train_orm_help_shows_only_what_an_orm_reads(capsys):
    orm, prm = help_of(["train", "orm"], capsys), help_of(["train", "prm"], capsys)
    orm = orm.split("examples:")[0]  # the group's examples include PRM ones
    for flag in PRM_ONLY:
        assert f"  {flag} " in prm and f"{flag} " not in orm, flag
    assert "--outcome-source" in orm and "--outcome-source" not in prm
    assert "--max-length" in orm and "--head" in orm  # the shared settings stay


def test_train_orm_refuses_prm_only_settings_by_flag_and_by_recipe(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["train", "orm", "--data", "d.jsonl", "--out-dir", str(tmp_path / "o"), "--supervise", "all"])
    assert e.value.code == 2 and "unrecognized arguments: --supervise all" in capsys.readouterr().err
    recipe = tmp_path / "orm.toml"
    recipe.write_text('max_steps = 2\nsupervise = "all"\nneutral = "negative"\n')
    assert main(["train", "orm", "--recipe", str(recipe), "--data", "d.jsonl", "--out-dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert (f"recipe {recipe} sets supervise (PRM only), neutral (PRM only), which `prmkit train orm` does not "
            "use: remove them from the recipe") in err
    assert not (tmp_path / "o").exists()


def all_help() -> dict[str, str]:
    return {name: parser.format_help() for name, parser in walk_commands(build_parser())}


def flag_blocks(text: str) -> list[str]:
    """The help of every flag in a ``--help`` text, joined onto one line."""
    options = text.split("\noptions:\n", 1)[-1].split("\n\n")[0]
    return [" ".join(b.split()) for b in re.split(r"\n  (?=-)", options)]


def test_no_flag_shows_its_default_twice(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    for name, text in all_help().items():
        for block in flag_blocks(text):
            assert len(re.findall(r"\(default", block)) <= 1, (name, block)
            if re.search(r"\(default: (None|''|unset)\)", block):
                assert len(re.findall(r"\bdefault\b", block)) == 1, (name, block)


def test_help_has_no_internal_wording():
    for name, text in all_help().items():
        assert not re.search(r"\bissues?\b", text, re.IGNORECASE), (name, re.findall(r".*issue.*", text))


# --- the labelling app: phase 1 -------------------------------------------------------------------

def test_phase1_unrated_error_counts_as_the_page_does(tmp_path, capsys):
    pytest.importorskip("fastapi", reason="the labelling app needs the `serve` extra")
    from fastapi.testclient import TestClient

    from prmkit.label.app import create_app
    from prmkit.label.client import APIError, LabelClient
    from prmkit.label.db import open_database
    from prmkit.testing.labelling import synthetic_candidates

    url, cands = f"sqlite:///{tmp_path}/l.db", tmp_path / "c.jsonl"
    write_records(cands, synthetic_candidates(1, n_steps=3, alternatives=3))
    assert main(["label", "push", "--db", url, "--project", "p1", "--phase", "1", "--qc-every", "0",
                 "--strategy", "in_order", str(cands)]) == 0
    assert main(["label", "user", "token", "alice", "--create", "--db", url]) == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    db = open_database(url)
    alice = LabelClient("http://testserver", token, http=TestClient(create_app(db)))
    aid = alice.next("p1")["assignment"]
    alice.rate(aid, 0, 1, completion=1)  # the page's second alternative of "Step 1"
    with pytest.raises(APIError) as e:
        alice.choose(aid, 0, completion=1)
    assert e.value.status == 409
    assert "rate every alternative of step 1 first (unrated: alternatives 1, 3, counting from the top)" in e.value.message
    db.close()
