"""The labelling flows through the API (in process): phase 2, phase 1, stops, QC mixing, screening,
overlap, gold never shown, export round trip, the CLI."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="the labelling app needs the `serve` extra")
from fastapi.testclient import TestClient

from prmkit.cli import main
from prmkit.io import read_solutions, write_records
from prmkit.label import auth, projects
from prmkit.label.app import create_app
from prmkit.label.client import APIError, LabelClient
from prmkit.label.consistency import check_database
from prmkit.label.db import open_database
from prmkit.schema import Completion, Problem, Solution, Step
from prmkit.testing.labelling import synthetic_candidates


class Env:
    def __init__(self, path):
        self.url = f"sqlite:///{path}/labels.db"
        self.db = open_database(self.url)
        self.app = create_app(self.db)
        self.tokens = {}
        with self.db.write() as s:
            for name, role in [("admin", "admin"), ("alice", "labeller"), ("bob", "labeller"), ("carol", "labeller")]:
                self.tokens[name] = auth.issue_token(s, auth.create_user(s, name, role, password=f"pw-{name}"))

    def client(self, name) -> LabelClient:
        return LabelClient("http://testserver", self.tokens[name], http=TestClient(self.app))

    def project(self, name, candidates, kind="real", **settings):
        with self.db.write() as s:
            try:
                projects.get_project(s, name)
            except projects.NotFound:
                projects.create_project(s, name, **settings)
            return projects.push(s, name, candidates, kind=kind, strategy="in_order")


@pytest.fixture
def env(tmp_path):
    e = Env(tmp_path)
    yield e
    assert check_database(e.db)["ok"], check_database(e.db)
    e.db.close()


def label_all(c, project, rating=1):
    view = c.next(project)
    while view["status"] == "open":
        view = c.rate(view["assignment"], view["frontier"], rating, time_ms=1000)
    return view


def test_phase2_reveals_step_by_step_and_stops_at_first_bad(env):
    env.project("p2", synthetic_candidates(2, n_steps=4), qc_every=0)
    alice = env.client("alice")
    v = alice.next("p2")
    assert [s["index"] for s in v["steps"]] == [0] and v["frontier"] == 0 and v["more_steps"]
    assert v["current_guess"] is not None and v["steps"][0]["completions"][0]["rating"] is None
    v = alice.rate(v["assignment"], 0, 1, flagged=True, time_ms=1500)
    assert len(v["steps"]) == 2 and v["frontier"] == 1 and v["steps"][0]["completions"][0]["flagged"]
    v = alice.rate(v["assignment"], 1, -1, time_ms=500)
    assert (v["status"], v["finish_reason"], len(v["steps"])) == ("done", "found_error", 2)
    v = label_all(alice, "p2")
    assert (v["status"], v["finish_reason"], len(v["steps"])) == ("done", "solution", 4)
    assert alice.next("p2") is None
    records = env.client("admin").export("p2")
    assert [r.finish_reason for r in records] == ["found_error", "solution"]
    assert [s.completions[0].rating for s in records[0].steps] == [1, -1]
    assert records[0].steps[0].completions[0].flagged is True
    assert records[0].total_time_ms == 2000 and records[0].labeller == "alice" and records[0].generation == 1
    assert records[0].steps[1].chosen is None and len(records[0].prelabel.steps) == 4


def test_only_the_frontier_step_can_be_rated_and_retries_are_idempotent(env):
    env.project("p2", synthetic_candidates(1, n_steps=3), qc_every=0)
    alice = env.client("alice")
    v = alice.next("p2")
    aid = v["assignment"]
    with pytest.raises(APIError) as e:
        alice.rate(aid, 2, 1)
    assert e.value.status == 409
    alice.rate(aid, 0, 1)
    again = alice.rate(aid, 0, 1)  # the same label again: a client retry, answered, not stored twice
    assert again["frontier"] == 1
    with pytest.raises(APIError) as e:
        alice.rate(aid, 0, -1)  # changing a finished step
    assert e.value.status == 409
    with pytest.raises(APIError) as e:
        alice.rate(aid, 1, 5)
    assert e.value.status == 422
    with pytest.raises(APIError) as e:
        alice.rate(aid, 1, 1, completion=3)
    assert e.value.status == 422


def test_give_up_and_bad_problem(env):
    env.project("p2", synthetic_candidates(2, n_steps=3), qc_every=0)
    alice = env.client("alice")
    v = alice.next("p2")
    alice.rate(v["assignment"], 0, 0)
    v = alice.finish(v["assignment"], "give_up", time_ms=700)
    assert (v["status"], v["finish_reason"]) == ("done", "give_up")
    with pytest.raises(APIError):
        alice.rate(v["assignment"], 1, 1)
    v = alice.next("p2")
    assert alice.finish(v["assignment"], "bad_problem")["finish_reason"] == "bad_problem"
    with pytest.raises(APIError) as e:
        alice.finish(v["assignment"], "solution")
    assert e.value.status == 422
    assert sorted(r.finish_reason for r in env.client("admin").export("p2")) == ["bad_problem", "give_up"]


def test_phase1_alternatives_choice_and_own_step(env):
    env.project("p1", synthetic_candidates(1, n_steps=3, alternatives=3), phase=1, qc_every=0)
    alice = env.client("alice")
    v = alice.next("p1")
    aid = v["assignment"]
    assert len(v["steps"][0]["completions"]) == 3
    alice.rate(aid, 0, 1)
    with pytest.raises(APIError) as e:
        alice.choose(aid, 0, completion=0)  # every alternative must be rated first
    assert e.value.status == 409
    alice.rate(aid, 0, -1, completion=1)
    alice.rate(aid, 0, 0, completion=2)
    with pytest.raises(APIError) as e:
        alice.choose(aid, 0, completion=1)  # a Bad step cannot be continued with
    assert e.value.status == 409
    v = alice.choose(aid, 0, completion=2)
    assert v["frontier"] == 1 and v["steps"][0]["completions"][2]["chosen"]
    for j in range(3):
        alice.rate(aid, 1, -1, completion=j)
    v = alice.choose(aid, 1, text="My own step: $1+1=2$.")
    assert v["steps"][1]["human"]["text"].startswith("My own")
    for j in range(3):
        alice.rate(aid, 2, 1, completion=j)
    v = alice.choose(aid, 2, completion=0)
    assert (v["status"], v["finish_reason"]) == ("done", "solution")
    [rec] = env.client("admin").export("p1")
    assert [s.chosen for s in rec.steps] == [2, None, 0]
    assert rec.steps[1].human.text == "My own step: $1+1=2$." and rec.steps[0].completions[1].rating == -1
    assert [c.rating for c in rec.steps[2].completions] == [1, 1, 1]


def test_choose_is_phase1_only(env):
    env.project("p2", synthetic_candidates(1, n_steps=2), qc_every=0)
    alice = env.client("alice")
    v = alice.next("p2")
    with pytest.raises(APIError) as e:
        alice.choose(v["assignment"], 0, completion=0)
    assert e.value.status == 422


def gold_solution(i: int) -> Solution:
    steps = [Step([Completion(f"gold step {k} of {i}", rating=r)]) for k, r in enumerate([1, 1, -1])]
    return Solution(Problem(f"QC problem {i}", answer="GOLD-ANSWER-7", solution="REFERENCE-SOLUTION-TEXT"),
                    steps, answer="generator-guess")


def test_gold_is_never_shown_to_labellers(env):
    env.project("p2", [gold_solution(0)], kind="qc", qc_every=1)
    alice = env.client("alice")
    seen = []
    v = alice.next("p2")
    seen.append(json.dumps(v))
    while v["status"] == "open":
        assert all(c["rating"] is None for c in v["steps"][-1]["completions"])
        v = alice.rate(v["assignment"], v["frontier"], 1)
        seen.append(json.dumps(v))
    seen.append(json.dumps(alice.assignments()))
    seen.append(json.dumps(alice.projects()))
    text = "".join(seen)
    assert "GOLD-ANSWER-7" not in text and "REFERENCE-SOLUTION-TEXT" not in text
    assert '"screening": false' in seen[0] and "qc" not in json.loads(seen[0])  # QC items look like real ones
    assert v["current_guess"] == "generator-guess"


def test_qc_items_are_mixed_into_every_queue(env):
    env.project("p2", synthetic_candidates(10, n_steps=2), overlap=3, qc_every=3)
    env.project("p2", [gold_solution(0), gold_solution(1)], kind="qc")
    for name in ("alice", "bob"):
        c = env.client(name)
        for _ in range(6):
            label_all(c, "p2")
    records = env.client("admin").export("p2")
    for name in ("alice", "bob"):
        mine = [r for r in records if r.labeller == name]
        assert [bool(r.quality_control) for r in mine] == [False, False, True, False, False, True]
    stats = env.client("admin").stats("p2")
    gold = {row["name"]: row["gold"] for row in stats["labellers"]}
    # Everyone rated every step +1; gold is [1, 1, -1]: two steps of three agree, on two QC items.
    assert gold["alice"]["compared"] == 6 and gold["alice"]["accuracy"] == round(4 / 6, 4)
    assert stats["agreement"]["units"] > 0 and stats["agreement"]["fleiss_kappa"] is None  # all +1: undefined


def test_screening_must_be_passed_before_real_work(env):
    env.project("p2", synthetic_candidates(3, n_steps=2), qc_every=0, screening_min=0.9)
    env.project("p2", [gold_solution(0), gold_solution(1)], kind="screening")
    alice, bob = env.client("alice"), env.client("bob")
    assert alice.projects()[0]["screening"]["status"] == "pending"
    for _ in range(2):  # alice follows gold: +1, +1, -1
        v = alice.next("p2")
        assert v["screening"]
        for r in (1, 1, -1):
            v = alice.rate(v["assignment"], v["frontier"], r)
    for _ in range(2):  # bob rates everything Bad at once: 1 of 1 compared step disagrees
        v = bob.next("p2")
        bob.rate(v["assignment"], 0, -1)
    assert alice.projects()[0]["screening"]["status"] == "passed"
    assert not alice.next("p2")["screening"]
    with pytest.raises(APIError) as e:
        bob.next("p2")
    assert e.value.status == 403 and "screening" in e.value.message
    records = env.client("admin").export("p2", kinds="screening")
    assert {r.generation for r in records} == {-1} and all(r.screening for r in records)


def test_overlap_limits_labellers_per_item(env):
    env.project("p2", synthetic_candidates(1, n_steps=2), overlap=2, qc_every=0)
    assert env.client("alice").next("p2") is not None
    assert env.client("bob").next("p2") is not None
    assert env.client("carol").next("p2") is None
    env.client("admin").update_project("p2", overlap=3)
    assert env.client("carol").next("p2") is not None


def test_generations_and_strategy(env):
    admin = env.client("admin")
    admin.create_project("g", overlap=1, qc_every=0)
    assert admin.push("g", synthetic_candidates(5, seed=1), count=2, seed=3)["generation"] == 1
    assert admin.push("g", synthetic_candidates(5, seed=2), count=2)["generation"] == 2
    with pytest.raises(APIError) as e:
        admin.push("g", synthetic_candidates(1), strategy="nope")
    assert e.value.status == 422 and "random" in e.value.message
    alice = env.client("alice")
    gens = []
    for _ in range(4):
        label_all(alice, "g")
    gens = [r.generation for r in admin.export("g")]
    assert gens == [1, 1, 2, 2]  # oldest generation first


def test_export_round_trip_cli_and_prm800k(env, tmp_path, capsys):
    env.project("p2", synthetic_candidates(3, n_steps=3), overlap=1, qc_every=0)
    alice = env.client("alice")
    for _ in range(3):
        label_all(alice, "p2", rating=0)
    api_records = env.client("admin").export("p2")
    out = tmp_path / "labels.jsonl"
    assert main(["label", "export", "--db", env.url, "--project", "p2", str(out)]) == 0
    file_records = list(read_solutions(out))
    assert [r.to_dict() for r in file_records] == [r.to_dict() for r in api_records]
    assert all(r.ratings == [0, 0, 0] and r.label_source == "human" for r in file_records)
    raw = tmp_path / "prm800k.jsonl"
    assert main(["label", "export", "--db", env.url, "--project", "p2", "--to", "prm800k", str(raw)]) == 0
    rows = [json.loads(line) for line in raw.read_text().splitlines()]
    assert rows[0]["labeler"] == "alice" and rows[0]["label"]["finish_reason"] == "solution"
    assert [s["completions"][0]["rating"] for s in rows[0]["label"]["steps"]] == [0, 0, 0]


def test_cli_push_users_and_tokens(tmp_path, capsys, monkeypatch):
    url = f"sqlite:///{tmp_path}/cli.db"
    cands = tmp_path / "c.jsonl"
    write_records(cands, synthetic_candidates(6, n_steps=2))
    monkeypatch.setenv("PW", "secret-pw")
    assert main(["label", "user", "add", "root", "--role", "admin", "--password-env", "PW"]
                + ["--db", url]) == 0
    assert main(["label", "user", "token", "sim", "--create", "--db", url]) == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    assert main(["label", "push", "--db", url, "--project", "x", "--overlap", "2", "--count", "4", str(cands)]) == 0
    assert "4 real items of 6 candidates pushed as generation 1" in capsys.readouterr().out
    db = open_database(url)
    with db.read() as s:
        assert auth.user_for_token(s, token).name == "sim"
        assert projects.get_project(s, "x").overlap == 2
        assert auth.login(s, "root", "secret-pw")[0].role == "admin"
    assert main(["label", "user", "add", "root", "--no-password", "--db", url]) == 2  # exists: a clean error
    assert main(["label", "check", "--db", url]) == 0
    assert main(["label", "migrate", "--db", url]) == 0 and "up to date" in capsys.readouterr().out


def test_password_login_session_and_logout(env):
    c = LabelClient("http://testserver", http=TestClient(env.app))
    with pytest.raises(APIError) as e:
        c.login("alice", "wrong")
    assert e.value.status == 401
    assert c.login("alice", "pw-alice") == {"name": "alice", "role": "labeller"}
    assert c.me()["name"] == "alice"
    c.request("POST", "/api/logout")
    with pytest.raises(APIError) as e:
        c.me()
    assert e.value.status == 401


def test_default_db_matches_cli():
    from prmkit.cli.label import DEFAULT_DB as cli_default
    from prmkit.label.db import DEFAULT_DB
    assert cli_default == DEFAULT_DB
