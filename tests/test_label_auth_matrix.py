"""The authorisation matrix: every endpoint x {no login, labeller, other labeller, admin}.

"labeller" owns the assignments the paths name; "other labeller" is a second labeller. Each row runs on
a fresh database, the owner last (their request may change state). A test checks that the matrix lists
every route the app has, so a new endpoint fails here until its row is written.
"""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the labelling app needs the `serve` extra")
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import Mount, Route

from prmkit.label import auth, flow, projects
from prmkit.label.app import create_app, find_katex
from prmkit.label.db import open_database
from prmkit.testing.labelling import synthetic_candidates

ROLES = ("anon", "owner", "other", "admin")
PUBLIC = dict.fromkeys(ROLES, 200)
PAGE = {"anon": 303, "owner": 200, "other": 200, "admin": 200}
USER = {"anon": 401, "owner": 200, "other": 200, "admin": 200}
OWNER_WRITE = {"anon": 401, "owner": 200, "other": 404, "admin": 403}
OWNER_READ = {"anon": 401, "owner": 200, "other": 404, "admin": 200}
ADMIN = {"anon": 401, "owner": 403, "other": 403, "admin": 200}
ADMIN_PAGE = {"anon": 303, "owner": 403, "other": 403, "admin": 200}

RECORD = synthetic_candidates(1, n_steps=2, seed=9)[0].to_dict()
# (method, path, JSON body, expected status per role); {a2} is the owner's phase-2 assignment, {a1} phase 1.
MATRIX = [
    ("GET", "/healthz", None, PUBLIC),
    ("GET", "/login", None, PUBLIC),
    ("GET", "/static/app.js", None, PUBLIC),
    ("GET", "/", None, PAGE),
    ("GET", "/app", None, PAGE),
    ("GET", "/admin", None, ADMIN_PAGE),
    ("POST", "/api/login", {"name": "alice", "password": "pw-alice"}, PUBLIC),
    ("POST", "/api/logout", {}, USER),
    ("GET", "/api/me", None, USER),
    ("GET", "/api/projects", None, USER),
    ("POST", "/api/projects/p2/next", {}, USER),
    ("GET", "/api/assignments", None, USER),
    ("GET", "/api/assignments/{a2}", None, OWNER_READ),
    ("POST", "/api/assignments/{a2}/labels", {"step": 0, "rating": 1}, OWNER_WRITE),
    ("POST", "/api/assignments/{a1}/choose", {"step": 0, "completion": 0}, OWNER_WRITE),
    ("POST", "/api/assignments/{a2}/finish", {"reason": "give_up"}, OWNER_WRITE),
    ("GET", "/api/admin/users", None, ADMIN),
    ("POST", "/api/admin/users", {"name": "dave", "role": "labeller"}, ADMIN),
    ("POST", "/api/admin/users/alice/tokens", {}, ADMIN),
    ("GET", "/api/admin/projects", None, ADMIN),
    ("POST", "/api/admin/projects", {"name": "fresh"}, ADMIN),
    ("PATCH", "/api/admin/projects/p2", {"overlap": 2}, ADMIN),
    ("POST", "/api/admin/projects/p2/push", {"records": [RECORD]}, ADMIN),
    ("GET", "/api/admin/projects/p2/stats", None, ADMIN),
    ("GET", "/api/admin/projects/p2/export", None, ADMIN),
    ("GET", "/api/admin/check", None, ADMIN),
]
if find_katex() is not None:
    MATRIX.append(("GET", "/katex/katex.min.js", None, PUBLIC))


def make_env(tmp_path):
    db = open_database(f"sqlite:///{tmp_path}/m.db")
    tokens = {}
    with db.write() as s:
        for key, name, role in [("owner", "alice", "labeller"), ("other", "bob", "labeller"), ("admin", "root", "admin")]:
            tokens[key] = auth.issue_token(s, auth.create_user(s, name, role, password=f"pw-{name}"))
        projects.create_project(s, "p2", phase=2, qc_every=0)
        projects.push(s, "p2", synthetic_candidates(6, n_steps=3))
        projects.create_project(s, "p1", phase=1, qc_every=0)
        projects.push(s, "p1", synthetic_candidates(6, n_steps=3, alternatives=2))
        alice = auth.get_user(s, "alice")
        ids = {"a2": flow.next_assignment(s, alice, "p2").id}
        a1 = flow.next_assignment(s, alice, "p1").id
        for j in range(2):
            flow.rate(s, alice, a1, 0, 1, completion=j)
        ids["a1"] = a1
    return db, tokens, ids


def call(client, method, path, body, token):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    kwargs = {"json": body} if body is not None else {}
    return client.request(method, path, headers=headers, follow_redirects=False, **kwargs)


@pytest.mark.parametrize("method,path,body,expected", MATRIX, ids=[f"{m} {p}" for m, p, _, _ in MATRIX])
def test_matrix_row(tmp_path, method, path, body, expected):
    db, tokens, ids = make_env(tmp_path)
    client = TestClient(create_app(db))
    got = {}
    for role in ("anon", "other", "admin", "owner"):
        got[role] = call(client, method, path.format(**ids), body, tokens.get(role)).status_code
    assert got == expected
    db.close()


def test_matrix_covers_every_route(tmp_path):
    db, _, _ = make_env(tmp_path)
    app = create_app(db)
    listed = {(m, p) for m, p, _, _ in MATRIX}
    missing = []
    for route in app.routes:
        if isinstance(route, Mount):
            if not any(p.startswith(route.path + "/") for _, p, _, _ in MATRIX):
                missing.append(f"mount {route.path}")
        elif isinstance(route, (APIRoute, Route)):
            template = route.path.replace("{aid}", "{a2}").replace("{name}", "p2")
            for method in route.methods - {"HEAD"}:
                alt = {(method, template), (method, template.replace("{a2}", "{a1}")),
                       (method, template.replace("p2", "alice"))}
                if not alt & listed:
                    missing.append(f"{method} {route.path}")
    assert not missing, f"endpoints without a row in the authorisation matrix: {missing}"
    db.close()


def test_labellers_see_only_their_own_assignments(tmp_path):
    db, tokens, ids = make_env(tmp_path)
    client = TestClient(create_app(db))
    mine = call(client, "GET", "/api/assignments", None, tokens["owner"]).json()
    theirs = call(client, "GET", "/api/assignments", None, tokens["other"]).json()
    assert {a["assignment"] for a in mine} == {ids["a1"], ids["a2"]} and theirs == []
    db.close()


def test_cookie_session_and_cross_site_requests(tmp_path):
    db, _, ids = make_env(tmp_path)
    client = TestClient(create_app(db))
    assert client.post("/api/login", json={"name": "alice", "password": "pw-alice"}).status_code == 200
    assert client.get("/api/me").json()["name"] == "alice"
    cookie = client.cookies.get("prmkit_session")
    # A form posted from another site: not JSON -> 415; JSON with a foreign Origin -> 403.
    url = f"/api/assignments/{ids['a2']}/finish"
    assert client.post(url, data={"reason": "give_up"}).status_code == 415
    assert client.post(url, json={"reason": "give_up"}, headers={"Origin": "http://evil.example"}).status_code == 403
    assert client.post(url, json={"reason": "give_up"}, headers={"Origin": "http://testserver"}).status_code == 200
    response = client.get("/app")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert client.post("/api/logout", json={}).status_code == 200
    replay = TestClient(client.app)
    replay.cookies.set("prmkit_session", cookie)
    assert replay.get("/api/me").status_code == 401  # the old cookie was revoked
    with db.read() as s:
        assert auth.user_for_token(s, cookie) is None
    db.close()


def test_expired_and_disabled_tokens_are_refused(tmp_path):
    db, tokens, _ = make_env(tmp_path)
    client = TestClient(create_app(db))
    with db.write() as s:
        expired = auth.issue_token(s, auth.get_user(s, "bob"), "api", days=-1)
        auth.get_user(s, "alice").active = False
    assert call(client, "GET", "/api/me", None, expired).status_code == 401
    assert call(client, "GET", "/api/me", None, tokens["owner"]).status_code == 401
    assert call(client, "GET", "/api/me", None, "not-a-token").status_code == 401
    db.close()
