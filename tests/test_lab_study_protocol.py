"""The studies' protocol: job keys come from what a job reads and from its inputs' keys; one driver runs a
toy study end to end, skips what is done and reruns exactly what a changed setting reaches."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from prmkit.lab.config import preset
from prmkit.lab.study.protocol import Job, Output, Study, keyed, run_study


@dataclass(frozen=True)
class Count(Job):
    """Writes ``n`` lines, ``n`` read from the config."""

    cfg: object = None
    reads = ("bootstrap",)

    def run(self, out: Path) -> dict:
        (out / "lines.txt").write_text("x\n" * self.cfg.bootstrap)
        return {"n": self.cfg.bootstrap}


@dataclass(frozen=True)
class Double(Job):
    """Reads its input's file: its key must change when the input's does."""

    source: Output = None
    factor: int = 2

    def run(self, out: Path) -> dict:
        n = len(self.source.path.read_text().splitlines())
        (out / "n.json").write_text(json.dumps(n * self.factor))
        return {}


@dataclass(frozen=True)
class Careless(Job):
    cfg: object = None


def test_a_key_reads_only_the_fields_a_job_reads():
    cfg = preset("quick")
    job = Count("a", cfg)
    assert Count("a", cfg.replace({"rm.max_steps": 7})).key == job.key  # a setting the job does not read
    assert Count("a", cfg.replace({"bootstrap": 17})).key != job.key
    assert Count("elsewhere", cfg, progress=True).key == job.key  # where and how never enter it


def test_an_input_enters_a_key_as_its_jobs_key_and_its_name_never_its_place():
    cfg = preset("quick")
    up, moved, changed = Count("a", cfg), Count("b", cfg), Count("a", cfg.replace({"bootstrap": 13}))
    down = Double("d", up.output("lines.txt"))
    assert Double("e", moved.output("lines.txt")).key == down.key
    assert Double("d", changed.output("lines.txt")).key != down.key  # a changed input reruns its readers
    assert Double("d", up.output("other.txt")).key != down.key
    assert Double("d", up.output("lines.txt"), factor=3).key != down.key
    assert keyed({"x": up}) == {"x": up.key}


def test_a_job_holding_the_config_must_name_what_it_reads():
    with pytest.raises(TypeError, match="names no field"):
        _ = Careless("c", preset("quick")).key


def toy_stages(cfg, ctx):
    count = Count(str(ctx.root / "count"), cfg)
    yield "count", [count]
    yield "double", [Double(str(ctx.seed_dir(s) / "double"), count.output("lines.txt"), factor=s) for s in ctx.seeds]


def toy_summary(cfg, seeds, root) -> dict:
    return {"study": "toy", "seeds": seeds,
            "doubled": [json.loads((root / f"seed-{s}" / "double" / "n.json").read_text()) for s in seeds]}


def toy_pages(root, cfg, summary, command) -> None:
    (root / "report.html").write_text(f"<p>{summary['doubled']}</p>")


TOY = Study("toy", toy_stages, toy_summary, toy_pages)


def test_the_driver_runs_a_study_skips_what_is_done_and_reruns_what_a_change_reaches(tmp_path):
    cfg = preset("quick").replace({"bootstrap": 11})
    lines = []
    summary = run_study(TOY, cfg, [2, 3], tmp_path, jobs=1, progress=False, command="toy", log=lines.append)
    root = tmp_path / "study-toy"
    assert summary["doubled"] == [22, 33] and json.loads((root / "summary.json").read_text())["doubled"] == [22, 33]
    assert summary["command"] == "toy" and "stack" in summary and (root / "report.html").is_file()
    assert {k: t.get("ran") for k, t in summary["timings"].items()} == {"count": 1, "double": 2, "evaluate": None}
    again = run_study(TOY, cfg.replace({"rm.max_steps": 9}), [2, 3], tmp_path, jobs=1, progress=False, log=lines.append)
    assert [again["rerun"]["timings"][k]["ran"] for k in ("count", "double")] == [0, 0]  # nothing it reads changed
    # a setting no job reads: the very same jobs, so the times of the run that did them stay with them
    assert again["timings"] == summary["timings"] and again["work"]["command"] == "toy"
    changed = run_study(TOY, cfg.replace({"bootstrap": 12}), [2, 3], tmp_path, jobs=1, progress=False, log=lines.append)
    assert [changed["timings"][k]["ran"] for k in ("count", "double")] == [1, 2] and changed["doubled"] == [24, 36]
    # the same config and seeds again: every job done, so the summary keeps the wall times and code of the run that
    # did the work, and says what the rerun itself took and ran
    same = run_study(TOY, cfg.replace({"bootstrap": 12}), [2, 3], tmp_path, jobs=1, progress=False, command="again",
                     log=lines.append)
    assert same["timings"] == changed["timings"] and same["total_wall_seconds"] == changed["total_wall_seconds"]
    assert same["work"]["command"] == changed["command"] and same["rerun"]["command"] == "again"
    assert [same["rerun"]["timings"][k]["ran"] for k in ("count", "double")] == [0, 0]
    assert json.loads((root / "summary.json").read_text())["timings"] == changed["timings"]
    twice = run_study(TOY, cfg.replace({"bootstrap": 12}), [2, 3], tmp_path, jobs=1, progress=False, log=lines.append)
    assert twice["work"] == same["work"]  # a rerun of a rerun still names the run that did the work
    fewer = run_study(TOY, cfg.replace({"bootstrap": 12}), [2], tmp_path, jobs=1, progress=False, log=lines.append)
    assert "rerun" not in fewer  # other seeds: other jobs, so the earlier times do not describe this run
    assert "rerun" not in run_study(TOY, cfg.replace({"bootstrap": 12}), [2], tmp_path, jobs=1, progress=False,
                                    log=lines.append)  # nor does a run that did no work become the work


def test_a_rerun_after_a_crash_keeps_no_times_of_other_jobs(tmp_path):
    # config A runs whole; config B runs its jobs and dies before its summary (A's stays on disk); a rerun of B that
    # runs nothing must not take A's times for B's jobs
    cfg = preset("quick").replace({"bootstrap": 11})
    first = run_study(TOY, cfg, [2, 3], tmp_path, jobs=1, progress=False, command="A", log=lambda *_: None)
    crashing = dataclasses.replace(TOY, write_pages=lambda *a: (_ for _ in ()).throw(RuntimeError("pages")))
    with pytest.raises(RuntimeError, match="pages"):
        run_study(crashing, cfg.replace({"bootstrap": 12}), [2, 3], tmp_path, jobs=1, progress=False, command="B",
                  log=lambda *_: None)
    assert json.loads((tmp_path / "study-toy" / "summary.json").read_text())["command"] == "A"
    again = run_study(TOY, cfg.replace({"bootstrap": 12}), [2, 3], tmp_path, jobs=1, progress=False, command="B",
                      log=lambda *_: None)
    assert "rerun" not in again and "work" not in again and again["timings"] != first["timings"]


def test_compare_summaries_tells_a_changed_number_from_a_changed_wall_time(tmp_path, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("compare_summaries",
                                                  Path(__file__).parents[1] / "scripts" / "compare_summaries.py")
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    before = {"acc": {"ci95": [0.1, 0.2]}, "timings": {"rm": 3.0}, "cost": {"seconds": [1.2]}, "commit": "a"}
    files = {}
    for name, value in (("before", before), ("slower", {**before, "timings": {"rm": 9.0}, "cost": {"seconds": [4.0]},
                                                        "commit": "b"}),
                        ("moved", {**before, "acc": {"ci95": [0.1, 0.25]}})):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(value))
    assert compare.main([str(files["before"]), str(files["slower"])]) == 0
    assert compare.main([str(files["before"]), str(files["moved"])]) == 1
    assert "/acc/ci95[1]: 0.2 != 0.25" in capsys.readouterr().out
