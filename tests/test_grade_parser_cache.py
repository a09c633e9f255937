"""The parser's prediction-cache snapshot: each process that loads it parses as one that filled its own cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "data" / "grading_cases.jsonl"

PROBE = r'''
import json, sys
from prmkit.grade import fast_path, parser_cache, worker
from antlr4.atn.SemanticContext import SemanticContext
from antlr4.PredictionContext import PredictionContext

status = parser_cache.install()
parser, lexer = parser_cache._classes()
whole = {"dicts": True, "states": True, "singletons": True}
for cls in (parser, lexer):
    for dfa in cls.decisionsToDFA:
        whole["dicts"] &= all(dfa.states.get(s) is s for s in dfa.states)
        for state in dfa.states:
            for c in state.configs:
                whole["states"] &= cls.atn.states[c.state.stateNumber] is c.state
                sem = c.semanticContext
                whole["singletons"] &= sem is SemanticContext.NONE or type(sem) is not type(SemanticContext.NONE)
                whole["singletons"] &= c.context is PredictionContext.EMPTY or not c.context.isEmpty()
whole["dicts"] &= all(parser.sharedContextCache.cache.get(c) is c for c in parser.sharedContextCache.cache)
jobs = [job for given, gold, mode in json.loads(sys.argv[1])
        if isinstance(job := fast_path(given, gold, mode), dict)]
print(json.dumps({"status": status, "sizes": parser_cache.cache_sizes(), "whole": whole,
                  "answers": [worker.answer(job) for job in jobs]}))
'''


def probe(cache: Path, pairs: list, **env) -> dict:
    """In a fresh process with ``cache`` as PRMKIT_CACHE: install the snapshot, check what it loaded, grade ``pairs``."""
    environ = dict(os.environ, PRMKIT_CACHE=str(cache), PYTHONPATH=str(ROOT), **env)
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(pairs)], capture_output=True, text=True, env=environ,
                         check=True)
    return json.loads(out.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def pairs() -> list:
    cases = [json.loads(line) for line in CASES.open()]
    return [(c["given"], c["gold"], c["mode"]) for c in cases if isinstance(c["given"], str) and c["gold"].strip()]


def test_a_loaded_snapshot_is_whole_and_grades_as_a_cold_parser(tmp_path, pairs):
    """The first process builds the snapshot, the next loads it: its DFA states point into this process's ATN, the
    runtime's singletons are this process's own, every dict finds its keys; and every answer, parsed forms included,
    is what a process without the snapshot gives."""
    built = probe(tmp_path, pairs)
    loaded = probe(tmp_path, pairs)
    off = probe(tmp_path, pairs, PRMKIT_GRADE_PARSER_CACHE="0")
    assert (built["status"], loaded["status"], off["status"]) == ("built", "loaded", "off")
    assert loaded["whole"] == {"dicts": True, "states": True, "singletons": True}
    assert loaded["sizes"] == built["sizes"] and loaded["sizes"]["parser"] > 10 * off["sizes"]["parser"]
    assert len(off["answers"]) >= 10
    assert loaded["answers"] == built["answers"] == off["answers"]


def test_a_snapshot_that_does_not_load_or_fit_is_written_again(tmp_path, pairs, monkeypatch):
    """A corrupt file, or DFAs that do not fit the parser's ATN, are ignored and replaced; grading is unchanged."""
    from prmkit.grade import parser_cache

    monkeypatch.setenv("PRMKIT_CACHE", str(tmp_path))
    path = parser_cache.snapshot_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a pickle")
    assert probe(tmp_path, pairs[:3])["status"] == "built"
    assert probe(tmp_path, pairs[:3])["status"] == "loaded"

    with path.open("wb") as f:  # one DFA short of the parser's decisions
        parser_dfas, contexts, lexer_dfas = parser_cache._caches()
        parser_cache._Writer(f).dump((parser_dfas[:-1], contexts, lexer_dfas))
    with pytest.raises(ValueError, match="do not fit"):
        parser_cache._load(path)
    assert probe(tmp_path, pairs[:3])["status"] == "built"


def test_the_snapshot_is_named_by_what_it_holds(monkeypatch, tmp_path):
    from prmkit.grade import parser_cache

    monkeypatch.setenv("PRMKIT_CACHE", str(tmp_path))
    first = parser_cache.snapshot_path()
    assert first.parent == tmp_path / "grade"
    monkeypatch.setattr(parser_cache, "WARM_UP", parser_cache.WARM_UP + ("$1$",))
    second = parser_cache.snapshot_path()
    monkeypatch.setattr(parser_cache, "FORMAT", parser_cache.FORMAT + 1)
    assert len({first, second, parser_cache.snapshot_path()}) == 3


def test_a_grading_worker_starts_from_the_snapshot(tmp_path, monkeypatch):
    """The pool's worker installs the snapshot before it says it is ready: the first one writes it."""
    from prmkit.grade import SymbolicPool, parser_cache

    monkeypatch.setenv("PRMKIT_CACHE", str(tmp_path))
    pool = SymbolicPool(workers=1, timeout=30)
    try:
        assert pool.run({"gold": "$x \\le 2$", "given": "$2 \\geq x$", "mode": "strict"})["equal"]
    finally:
        pool.close()
    assert parser_cache.snapshot_path().exists()
