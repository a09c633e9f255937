"""``prmkit lab study``: the command line, and the lab report that shows every study section it finds."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from prmkit.cli import build_parser, main
from prmkit.io import write_records
from prmkit.lab import generate_pool, preset
from prmkit.lab.report import config_from_dict, refresh_lab_report, study_sections, write_lab_report
from prmkit.lab.study.config import study_preset

TINY = ["--set", "budget.n=4", "--set", "budget.budgets=40,80", "--set", "budget.eval_problems=6",
        "--set", "budget.eval_samples=4", "--set", "budget.rm_steps=3"]


def fake_lab_run(run_dir, seeds=(0,)) -> None:
    """A finished ``prmkit lab run`` folder without any model: tiny pools with random scores, evaluated for real."""
    from prmkit.lab.scoring import evaluate_scored

    cfg = preset("quick").replace({"bootstrap": 20})
    columns = ("prm_min", "prm_product", "prm_last", "prm_mean", "orm", "likelihood_mean", "likelihood_min")
    rng = np.random.default_rng(0)
    for s in seeds:
        for pool in ("eval", "ood"):
            sols = generate_pool(cfg, s, pool, problems=4, samples=4)
            for sol in sols:
                for step in sol.steps:
                    step.scores.update(p_correct=float(rng.random()), base_logp_min=-float(rng.random()))
                sol.scores.update({c: float(rng.random()) for c in columns})
            scored = run_dir / f"seed-{s}" / "score" / f"{pool}.jsonl.gz"
            scored.parent.mkdir(parents=True, exist_ok=True)
            write_records(scored, sols)
            out = run_dir / f"seed-{s}" / "evaluate" / f"{pool}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(evaluate_scored(scored, cfg, s)))
    timings = {"data": {"wall_seconds": 1.0, "jobs": 1, "ran": 1, "job_seconds": 1.0}}
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), default=str))
    summary = write_lab_report(run_dir, cfg, list(seeds), timings, "prmkit lab run --preset quick")
    (run_dir / "summary.json").write_text(json.dumps({**summary, "timings": timings}))


def test_config_round_trips_through_config_json():
    for name in ("quick", "default", "full"):
        cfg = study_preset("budget", name).replace({"budget.rm_steps": 7, "domain.steps": "5,9"})
        like = study_preset("budget", "default")
        assert config_from_dict(json.loads(json.dumps(dataclasses.asdict(cfg), default=str)), like) == cfg


def test_study_sections_appear_in_the_rerendered_lab_report(tmp_path):
    assert not refresh_lab_report(tmp_path)  # no lab run here: nothing to re-render
    fake_lab_run(tmp_path)
    assert "Studies" not in (tmp_path / "report.html").read_text() and study_sections(tmp_path) == []
    for name in ("zeta", "alpha"):
        (tmp_path / f"study-{name}").mkdir()
        (tmp_path / f"study-{name}" / "section.html").write_text(f"<h2>Study {name}</h2><p>marker-{name}</p>")
    assert refresh_lab_report(tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Studies</h2>" in page and page.index("marker-alpha") < page.index("marker-zeta")  # sorted by name
    assert page.index("Wall time per stage") < page.index("<h2>Studies</h2>") < page.index("<h2>Configuration</h2>")


def test_study_command_flags_and_examples():
    lab = build_parser()._subparsers._group_actions[0].choices["lab"]
    study = lab._subparsers._group_actions[0].choices["study"]
    assert "examples:" in study.epilog
    for action in study._actions:
        assert action.help, action.dest
    args = build_parser().parse_args(["lab", "study", "budget"])
    assert (args.study, args.preset, args.seeds, args.out, args.workers, args.progress) == \
        ("budget", "default", [0, 1, 2], None, 2, True)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["lab", "study", "nope"])
    assert args.rm_protocol == "study"
    assert build_parser().parse_args(["lab", "study", "budget", "--rm-protocol", "lab"]).rm_protocol == "lab"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["lab", "study", "budget", "--rm-protocol", "best"])


def test_bad_study_override_is_a_user_error(capsys):
    assert main(["lab", "study", "budget", "--set", "budget.budgets=5"]) == 2
    assert "at least two" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(2400)  # pretrains the base model when the session has none: ~2 min quiet, 10+ busy
def test_study_through_the_cli_updates_the_lab_report(tmp_path, lab_cache, capsys):
    fake_lab_run(tmp_path)
    argv = ["lab", "study", "budget", "--preset", "quick", "--seeds", "0", "--rm-protocol", "lab", *TINY,
            "--out-dir", str(tmp_path), "--no-progress"]
    assert main([*argv, "--plan"]) == 0  # nothing run yet: every job to run, and nothing written
    planned = capsys.readouterr().out.splitlines()
    rows = [line for line in planned if line.startswith(("data ", "base ", "rm "))]
    assert len(rows) == 6 and all(" to run " in r for r in rows) and not (tmp_path / "study-budget").exists()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert main([*argv, "--plan"]) == 0  # after the run: every job done, with the seconds it took
    planned = capsys.readouterr().out
    assert planned.count(" done ") == 6 and "measured" in planned and "left: 0 jobs" in planned
    assert f"study report: {tmp_path / 'study-budget' / 'report.html'}" in out and "lab report:" in out
    summary = json.loads((tmp_path / "study-budget" / "summary.json").read_text())
    assert summary["command"].startswith("prmkit lab study budget --preset quick --seeds 0 --rm-protocol lab --set")
    assert summary["budgets"] == [40, 80] and summary["rm_steps"] == 3
    # the lab run's protocol reached every model: three restarts, each validated on held-out labels
    assert summary["rm"]["restarts"] == 3 and summary["rm"]["early_stop_patience"] > 0
    model = tmp_path / "study-budget" / "seed-0" / "rm-prm-80"
    assert len(json.loads((model / "model" / "restarts.json").read_text())["runs"]) == 3
    assert (model / "valid.jsonl.gz").is_file()  # the seed's validation split, shared with the ORM of 80 labels
    assert "Study: the label-budget curve" in (tmp_path / "report.html").read_text()
    assert main(argv) == 0  # a rerun: every job cached
    rerun = capsys.readouterr().out
    assert all(f"stage {name}: 0 of" in rerun for name in ("data", "base", "rm"))


@pytest.mark.parametrize("command", [["lab", "run"], ["lab", "study", "active"]])
def test_seed_sets_by_name_keep_report_seeds_apart_from_development_seeds(command):
    from prmkit.lab.config import DEV_SEEDS, REPORT_SEEDS

    parser = build_parser()
    assert parser.parse_args([*command, "--seeds", "report"]).seeds == list(REPORT_SEEDS)
    assert parser.parse_args([*command, "--seeds", "dev"]).seeds == list(DEV_SEEDS)
    assert parser.parse_args([*command, "--seeds", "3,1"]).seeds == [3, 1]
    assert not set(DEV_SEEDS) & set(REPORT_SEEDS)
    with pytest.raises(SystemExit):
        parser.parse_args([*command, "--seeds", "reports"])


def test_the_pooled_gaps_agree_with_every_seed_s_headline(tmp_path):
    fake_lab_run(tmp_path, seeds=(0, 1))
    summary = json.loads((tmp_path / "summary.json").read_text())
    n = summary["results"]["0"]["eval"]["N"]
    for pool in ("eval", "ood"):
        gaps = summary["pooled"][pool]
        for name, a, b in ((f"PRM@{n} - ORM@{n}", "prm_min", "orm"), (f"ORM@{n} - majority@{n}", "orm", "majority")):
            per_seed = [summary["results"][s][pool][f"{a}@{n}"] - summary["results"][s][pool][f"{b}@{n}"]
                        for s in ("0", "1")]
            assert gaps[name]["per_seed"] == pytest.approx(per_seed, abs=1e-5)
            assert gaps[name]["mean"] == pytest.approx(np.mean(per_seed), abs=1e-5)
            lo, hi = gaps[name]["ci95"]
            assert lo <= gaps[name]["mean"] <= hi and gaps[name]["above_zero"] == (lo > 0)
    assert summary["auroc_spread"]["spread"] >= 0
    assert "pooled over seeds" in (tmp_path / "report.html").read_text()


def test_every_study_size_in_the_recipes_names_a_known_study_and_field():
    from prmkit.config import read_recipe
    from prmkit.lab.study.config import STUDIES, STUDY_RECIPES, study_preset

    for path in STUDY_RECIPES.glob("*.yaml"):
        assert set(read_recipe(path)) <= set(STUDIES), path
        for study in read_recipe(path):
            assert getattr(study_preset(study, path.stem), study) != STUDIES[study][1](), (path, study)


def test_a_plan_tells_done_partial_and_waiting_jobs_apart(tmp_path):
    from prmkit.lab.study.plan import status

    done, partial, waiting = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    done.mkdir()
    (done / "done.json").write_text(json.dumps({"key": "k1", "seconds": 3.0}))
    (tmp_path / ".b.part").mkdir()
    (tmp_path / ".b.part" / ".key").write_text("k2")
    assert [status(done, "k1"), status(partial, "k2"), status(waiting, "k3")] == ["done", "partial", "to run"]
    assert status(done, "another key") == "to run" and status(partial, "another key") == "to run"


def test_a_plan_prices_by_the_published_run_only_at_its_settings(tmp_path):
    """The published run's stage means price a study's jobs only where its settings are the study's: 200 RL steps
    are not priced as the published 40 (a review found the plan did)."""
    import dataclasses

    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.plan import plan_study
    from prmkit.lab.study.search import STUDY

    cfg = study_preset("search", "quick")
    # a made-up published summary of the quick size (the search study's own summary records no preset)
    published = {"preset": "quick", "config": json.loads(json.dumps(dataclasses.asdict(cfg.search))),
                 "timings": {"rm": {"ran": 1, "job_seconds": 42.0}}}
    rm_rows = lambda c: [r for r in plan_study(STUDY, c, [0], tmp_path, published=published)["rows"] if r["stage"] == "rm"]
    assert [r["estimate"] for r in rm_rows(cfg)] == [42.0]
    assert [r["estimate"] for r in rm_rows(cfg.replace({"search.train_problems": 2000}))] == [None]


def test_a_plan_lists_what_later_stages_depend_on_without_failing(tmp_path):
    """The autolabel study trains a PRM only for label sets with enough labels, which its labelling stage writes:
    before that has run, the plan says so instead of failing on the missing file."""
    from prmkit.lab.study.autolabel import STUDY
    from prmkit.lab.study.config import study_preset
    from prmkit.lab.study.plan import LATER, format_plan, plan_study

    plan = plan_study(STUDY, study_preset("autolabel", "quick"), [0], tmp_path)
    assert [r["stage"] for r in plan["rows"]][-2:] == ["label", "later"] and plan["rows"][-1]["kind"] == LATER
    assert "stats.json" in plan["rows"][-1]["folder"]  # the file it waits for is named
    assert "the later stages' jobs" in format_plan(plan, 2)
