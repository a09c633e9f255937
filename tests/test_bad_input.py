"""Bad input: every command that reads a file, given each kind of broken file, stops with exit status 2 and
a message that names the file (and the line and field, where there is one), never a traceback, and leaves
nothing behind: no OUT, no ``.OUT.part*``, no ``.OUT.lock``.

Every test is a user's command through ``prmkit.cli.main`` (one through a real subprocess, for SIGTERM);
the files are built here, the models are the tiny local ones of ``conftest.py``.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from prmkit.cli import USER_ERROR, main
from prmkit.generate.backend import Backend, Sample
from prmkit.io import file_lock, write_records
from prmkit.schema import Problem
from prmkit.testing.toydata import make_solutions

# --- the broken files ---------------------------------------------------------------------------------

PAIRS = [{"given": f"\\boxed{{{i}}}", "gold": str(i), "id": f"q{i}"} for i in range(400)]


def good_lines(kind: str, n: int) -> list[str]:
    """``n`` lines of a good file: toy solutions (``make_solutions``) or answer pairs for ``prmkit grade``."""
    if kind == "pairs":
        return [json.dumps(p) for p in PAIRS[:n]]
    return [json.dumps(s.to_dict()) for s in make_solutions(n, seed=1)]


def wrong_type(kind: str, line: str) -> str:
    """``line`` with one field of the wrong type: the steps a string, or the gold answer a number."""
    record = json.loads(line)
    record.update({"gold": 5} if kind == "pairs" else {"steps": "oops"})
    return json.dumps(record)


def write_bad(folder: Path, kind: str, bad: str) -> Path:
    """A file of ``kind`` broken as ``bad`` says (``missing``: a path with no file)."""
    lines = good_lines(kind, 6)
    path = folder / f"{kind}-{bad}.jsonl"
    if bad == "binary":  # a good record, then bytes no text holds (a stray file, a half-written model)
        path.write_bytes((lines[0] + "\n").encode() + bytes(range(256)))
    elif bad == "cut_gzip":  # an interrupted download: half of a gzip file
        path = path.with_suffix(".jsonl.gz")
        data = gzip.compress(("\n".join(good_lines(kind, 400)) + "\n").encode())
        path.write_bytes(data[: len(data) // 2])
    elif bad == "not_gzip":
        path = path.with_suffix(".jsonl.gz")
        path.write_text("\n".join(lines) + "\n")
    elif bad == "empty":
        path.write_text("")
    elif bad == "truncated":  # the last line cut in half, no line end
        path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    elif bad == "wrong_type":
        path.write_text("\n".join([lines[0], wrong_type(kind, lines[1]), *lines[2:]]) + "\n")
    else:
        assert bad == "missing"
    return path


def expected(bad: str, kind: str, path: Path) -> list[str]:
    """What the error must say about ``path`` broken as ``bad``."""
    return {
        "binary": [f"{path}:2: not JSON text: byte 0x00 at column 1", "is it a binary file?"],
        "cut_gzip": [f"{path}:", "the gzip data ends here", "the file was cut short"],
        "not_gzip": [f"{path}: not a gzip file, though its name ends in .gz"],
        "empty": [f"no records in {path}"],
        "truncated": [f"{path}:6: malformed JSON", "the file's last line has no line end: was it cut short?"],
        "wrong_type": [f"{path}:2: field 'gold': expected a string" if kind == "pairs" else
                       f"{path}:2: field 'steps': expected a list, got str"],
        "missing": [f"no such file: {path}"],
    }[bad]


BAD = ("binary", "cut_gzip", "not_gzip", "empty", "truncated", "wrong_type", "missing")

# (name, the kind of file it reads, its argv: IN the input, OUT the output folder, PRM a tiny PRM folder)
COMMANDS = [
    ("data validate", "solutions", "data validate IN"),
    ("data stats", "solutions", "data stats IN"),
    ("data convert --to prmkit", "solutions", "data convert --from prmkit --to prmkit IN OUT/o.jsonl"),
    ("data convert --to trl", "solutions", "data convert --from prmkit --to trl --neutral positive IN OUT/o.jsonl"),
    ("grade", "pairs", "grade IN OUT/o.jsonl --workers 1"),
    ("score", "solutions", "score --model PRM IN OUT/o.jsonl --no-progress"),
    ("eval bon", "solutions", "eval bon IN --out-dir OUT/run --no-vote --answer-key exact"),
    ("eval steps", "solutions", "eval steps IN --out-dir OUT/run"),
    ("train prm", "solutions", "train prm --data IN --out-dir OUT/model --max-steps 1 --no-progress"),
    ("train orm", "solutions", "train orm --data IN --out-dir OUT/model --max-steps 1 --no-progress"),
    ("select", "solutions", "select --score prm_min --count 1 IN OUT/o.jsonl"),
    ("label auto", "solutions", "label auto IN OUT/o.jsonl --method mc --backend lab --model quick --rollouts 2 --no-progress"),
    ("generate", "solutions", "generate IN OUT/o.jsonl --backend lab --model quick --n 1 --no-progress"),
]


def left_behind(*folders: Path) -> list[str]:
    """Every file and folder under ``folders`` (none expected)."""
    return sorted(str(p) for f in folders if f.exists() for p in f.rglob("*"))


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("name,kind,argv", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_bad_input_is_named_and_leaves_nothing(name, kind, argv, bad, tmp_path, tiny_prm, capsys):
    inputs, out = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    path = write_bad(inputs, kind, bad)
    before = left_behind(inputs)
    args = argv.replace("PRM", str(tiny_prm)).replace("OUT", str(out)).replace("IN", str(path)).split()
    assert main(args) == USER_ERROR
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for text in expected(bad, kind, path):
        assert text in err, f"`prmkit {argv}` on a {bad} file: {text!r} not in {err!r}"
    assert "--allow-one-class" not in err and "training examples" not in err  # train: the cause, not a symptom
    assert left_behind(out) == [] and left_behind(inputs) == before


# --- item by item ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,message", [
    ('{"problem": "unterminated\n', "1: malformed JSON (Invalid control character at column 26)"),
    ('{"problem": "unterminated', "1: malformed JSON (Unterminated string starting at column 13); the file's last "
                                 "line has no line end: was it cut short?"),
])
def test_a_json_error_says_its_column_once(text, message, tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_text(text)
    assert main(["data", "validate", str(path)]) == USER_ERROR
    err = capsys.readouterr().err
    assert f"{path}:{message}" in err and "at at" not in err


def test_gzip_data_without_gz_in_its_name_is_named_as_such(tmp_path, capsys):
    path = tmp_path / "data.jsonl"
    path.write_bytes(gzip.compress(b'{"a": 1}\n'))
    assert main(["data", "stats", str(path)]) == USER_ERROR
    assert f"{path}: gzip data, though the name does not end in .gz: add .gz to its name" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["truncated", "wrong_type"])
def test_convert_to_trl_names_line_and_field_as_to_prmkit_does(bad, tmp_path, capsys):
    path = write_bad(tmp_path, "solutions", bad)
    said = {}
    for target in ("prmkit", "trl"):
        assert main(["data", "convert", "--from", "prmkit", "--to", target, "--neutral", "positive", str(path),
                     str(tmp_path / f"{target}.jsonl")]) == USER_ERROR
        said[target] = capsys.readouterr().err.replace(f"{target}.rejects", "OUT.rejects")
    assert said["trl"] == said["prmkit"]
    assert f"{path}:{6 if bad == 'truncated' else 2}:" in said["trl"]


def test_allow_empty_writes_an_empty_output(tmp_path, tiny_prm, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    runs = {"convert.jsonl": ["data", "convert", "--from", "prmkit", "--allow-empty", str(empty)],
            "graded.jsonl": ["grade", str(empty), "--allow-empty", "--workers", "1"],
            "scored.jsonl": ["score", "--model", str(tiny_prm), "--allow-empty", "--no-progress", str(empty)]}
    for out, argv in runs.items():
        assert main([*argv, str(tmp_path / out)]) == 0, argv
        assert (tmp_path / out).read_text() == "", argv
    assert sorted(p.name for p in tmp_path.iterdir()) == ["convert.jsonl", "empty.jsonl", "graded.jsonl",
                                                          "scored.jsonl"]


# --- models named wrong ------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,message", [
    ("train prm --data DATA --out-dir OUT/m --base-model ./my-model", "no such folder: ./my-model"),
    ("train prm --data DATA --out-dir OUT/m --base-model tiny-lama", "unknown model 'tiny-lama' (did you mean tiny-llama?)"),
    ("score --model ./my-model DATA OUT/o.jsonl", "no such folder: ./my-model"),
    ("generate --backend hf --model ./my-model DATA OUT/o.jsonl", "no such folder: ./my-model"),
    ("generate --backend hf --model ../models/my-model DATA OUT/o.jsonl", "no such folder: ../models/my-model"),
])
def test_a_missing_model_folder_or_a_misspelt_preset_is_said_at_once(argv, message, tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    write_records(data, make_solutions(8, seed=1))
    start = time.perf_counter()
    assert main(argv.replace("DATA", str(data)).replace("OUT", str(tmp_path / "out")).split()) == USER_ERROR
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert time.perf_counter() - start < 30  # no Hub retries (about a minute of them)
    assert left_behind(tmp_path / "out") == []


@pytest.fixture(scope="module")
def lm_512(tmp_path_factory) -> Path:
    """A tiny causal LM whose context is 512 positions."""
    from prmkit.model.tiny import build_preset

    folder = tmp_path_factory.mktemp("lm-512")
    texts = [f"{a} + {b} = {a + b}\n# Answer\n\n{a + b}" for a in range(20) for b in range(10)]
    model, tok = build_preset("tiny-llama", texts, "AutoModelForCausalLM", 300, seed=0, max_position_embeddings=512)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("tokens,message", [
    (600, "--max-new-tokens 600 does not fit the model's context of 512 tokens (max_position_embeddings)"),
    (511, "and --max-new-tokens 511 need"),
])
def test_max_new_tokens_past_the_models_context_is_refused(tokens, message, lm_512, tmp_path, capsys):
    problems = tmp_path / "problems.jsonl"
    write_records(problems, [Problem("1 + 2 =", answer="3", id="p1")])
    out = tmp_path / "out"
    assert main(["generate", "--backend", "hf", "--model", str(lm_512), "--max-new-tokens", str(tokens),
                 "--no-progress", str(problems), str(out / "o.jsonl")]) == USER_ERROR
    err = capsys.readouterr().err
    assert message in err and "context of 512" in err and "Traceback" not in err
    assert left_behind(out) == []


# --- nothing left behind: an error mid-run, SIGTERM, a finished run ---------------------------------------------

class Flaky(Backend):
    """A generator backend that samples ``good`` calls' worth of problems, then fails."""

    name = "flaky"

    def __init__(self, good: int):
        self.good = good

    def generate(self, problems, n):
        if self.good <= 0:
            raise RuntimeError("the backend broke")
        self.good -= 1
        return [[Sample("1 + 2 = 3\n# Answer\n\n3", 8, "stop") for _ in range(n)] for _ in problems]


@pytest.mark.parametrize("good", [0, 1])
def test_generate_stopped_by_an_error_keeps_finished_samples_only(good, tmp_path):
    from prmkit.generate import GenerateConfig, generate_file

    problems = tmp_path / "problems.jsonl"
    write_records(problems, [Problem(f"{i} + 2 =", answer=str(i + 2), id=f"p{i}") for i in range(3)])
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="the backend broke"):
        generate_file(problems, out / "o.jsonl", GenerateConfig(n=1, flush_every=1, progress=False), backend=Flaky(good),
                      log=lambda *a: None)
    left = [p.name for p in out.iterdir()] if out.exists() else []
    assert left == ([".o.jsonl.part"] if good else [])  # finished samples stay for a rerun; nothing else
    if good:
        assert len((out / ".o.jsonl.part").read_text().splitlines()) == 1


def test_label_auto_stopped_by_an_error_leaves_nothing(tmp_path):
    from prmkit.generate import GenerateConfig
    from prmkit.label.auto.config import AutoLabelConfig
    from prmkit.label.auto.run import label_file

    class Broken(Flaky):
        def complete_many(self, requests):
            raise RuntimeError("the backend broke")

    data = tmp_path / "in.jsonl"
    write_records(data, make_solutions(4, seed=1))
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="the backend broke"):
        label_file(data, out / "o.jsonl", AutoLabelConfig(k=2, progress=False), GenerateConfig(), backend=Broken(0),
                   log=lambda *a: None)
    assert left_behind(out) == []


def test_score_stopped_by_an_error_leaves_nothing(tmp_path, tiny_prm):
    from prmkit.score import ScoreConfig, Scorer, score_file

    class Broken(Scorer):
        def probabilities(self, *args, **kwargs):
            raise RuntimeError("the model broke")

    data = tmp_path / "in.jsonl"
    write_records(data, make_solutions(4, seed=1))
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="the model broke"):
        score_file(tiny_prm, data, out / "o.jsonl", ScoreConfig(progress=False), scorer=Broken(tiny_prm, "cpu"))
    assert left_behind(out) == []


def test_finished_runs_leave_no_lock_file(tmp_path, capsys):
    from prmkit.lab import generate, make_problems, preset

    lab = preset("quick")
    data = tmp_path / "in.jsonl"
    write_records(data, generate(make_problems(lab.domain, 2, seed=0), lab.generator, 2, seed=0))
    out = tmp_path / "out"
    assert main(["generate", str(data), str(out / "g.jsonl"), "--backend", "lab", "--model", "quick", "--n", "1",
                 "--no-progress"]) == 0
    assert main(["label", "auto", str(data), str(out / "l.jsonl"), "--method", "mc", "--backend", "lab", "--model",
                 "quick", "--rollouts", "2", "--no-progress"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["g.jsonl", "l.jsonl", "l.jsonl.rollouts.jsonl"]


def test_sigterm_mid_run_keeps_finished_samples_and_removes_the_rest(tmp_path, tiny_lm):
    problems = tmp_path / "problems.jsonl"
    write_records(problems, [Problem(f"{i} + 2 =", answer=str(i + 2), id=f"p{i}") for i in range(200)])
    out = tmp_path / "out"
    part = out / ".o.jsonl.part"
    proc = subprocess.Popen([sys.executable, "-m", "prmkit", "generate", "--backend", "hf", "--model", str(tiny_lm),
                             "--n", "1", "--max-new-tokens", "48", "--flush-every", "1", "--no-progress",
                             str(problems), str(out / "o.jsonl")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 120
        while not (part.exists() and part.stat().st_size) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "generate ended before any sample was written: " + proc.communicate()[1]
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in stderr
    assert "finished samples are kept in" in stdout
    assert [p.name for p in out.iterdir()] == [".o.jsonl.part"]  # no OUT, no lock, no temporary file
    kept = part.read_text()
    assert kept.endswith("\n") and all(json.loads(line)["id"] for line in kept.splitlines())


def test_a_lock_file_goes_when_released_and_a_waiter_takes_a_fresh_one(tmp_path):
    lock = tmp_path / ".o.jsonl.lock"
    inside, overlaps = [], []

    def hold(i):
        with file_lock(lock):
            if inside:
                overlaps.append(i)
            inside.append(i)
            time.sleep(0.05)
            inside.remove(i)

    threads = [threading.Thread(target=hold, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == [] and not lock.exists()
    with pytest.raises(KeyError), file_lock(lock):
        raise KeyError("an error inside")
    assert not lock.exists()
