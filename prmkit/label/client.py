"""A client for the labelling API, for programs: simulated labellers, scripts, notebooks.

>>> c = LabelClient("http://127.0.0.1:8000", token="...")   # an API token from `prmkit label user token`
>>> c.base_url
'http://127.0.0.1:8000'

Typical use (against a running server)::

    a = c.next("demo")                        # the next assignment, or None
    while a is not None and a["status"] == "open":
        a = c.rate(a["assignment"], a["frontier"], +1)
    records = c.export("demo")                # admins: the labelled prmkit records

Every method returns the decoded JSON of the answer, or raises :class:`APIError` with its status.
"""

from __future__ import annotations

import json
from typing import Any, Self
from urllib.parse import quote

import httpx

from prmkit.schema import Solution


class APIError(RuntimeError):
    """The server refused a request: ``status`` is the HTTP status, ``message`` its reason."""

    def __init__(self, status: int, message: str):
        self.status, self.message = status, message
        super().__init__(f"{status}: {message}")


class LabelClient:
    """Talks to ``prmkit label serve`` with a bearer token, or a session from :meth:`login`."""

    def __init__(self, base_url: str, token: str | None = None, timeout: float = 30.0,
                 http: httpx.Client | None = None):
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        # `http` lets tests pass an in-process client (starlette's TestClient) instead of a socket.
        self.http = http if http is not None else httpx.Client(base_url=self.base_url, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def request(self, method: str, path: str, body: Any = None, **params) -> Any:
        kwargs: dict = {"params": {k: v for k, v in params.items() if v is not None}, "headers": dict(self.headers)}
        if method != "GET":
            kwargs["content"] = json.dumps(body if body is not None else {})
            kwargs["headers"]["Content-Type"] = "application/json"
        response = self.http.request(method, path, **kwargs)
        if response.status_code >= 400:
            try:
                message = response.json().get("error") or response.json().get("detail")
            except ValueError:
                message = response.text
            raise APIError(response.status_code, str(message))
        if response.headers.get("content-type", "").startswith("application/x-ndjson"):
            return [json.loads(line) for line in response.text.splitlines() if line.strip()]
        return response.json()

    # --- labellers ------------------------------------------------------------------------------
    def login(self, name: str, password: str) -> dict:
        """Log in with a password; the session cookie is kept for later calls."""
        return self.request("POST", "/api/login", {"name": name, "password": password})

    def me(self) -> dict:
        return self.request("GET", "/api/me")

    def projects(self) -> list[dict]:
        return self.request("GET", "/api/projects")

    def next(self, project: str) -> dict | None:
        """The next assignment of ``project`` (an open one first), or None when nothing is left."""
        return self.request("POST", f"/api/projects/{quote(project, safe='')}/next")["assignment"]

    def assignment(self, assignment: int) -> dict:
        return self.request("GET", f"/api/assignments/{assignment}")

    def assignments(self, project: str | None = None) -> list[dict]:
        return self.request("GET", "/api/assignments", project=project)

    def rate(self, assignment: int, step: int, rating: int, completion: int = 0, flagged: bool = False,
             time_ms: int = 0) -> dict:
        """Rate one completion of the current step (+1 great, 0 okay, -1 bad); returns the new view."""
        return self.request("POST", f"/api/assignments/{assignment}/labels",
                            {"step": step, "rating": rating, "completion": completion, "flagged": flagged,
                             "time_ms": time_ms})

    def choose(self, assignment: int, step: int, completion: int | None = None, text: str | None = None,
               time_ms: int = 0) -> dict:
        """Phase 1: continue with an alternative, or with your own step ``text``."""
        return self.request("POST", f"/api/assignments/{assignment}/choose",
                            {"step": step, "completion": completion, "text": text, "time_ms": time_ms})

    def finish(self, assignment: int, reason: str, time_ms: int = 0) -> dict:
        """Stop early: ``give_up`` or ``bad_problem``."""
        return self.request("POST", f"/api/assignments/{assignment}/finish", {"reason": reason, "time_ms": time_ms})

    # --- admins ---------------------------------------------------------------------------------
    def create_user(self, name: str, role: str = "labeller", password: str | None = None) -> dict:
        return self.request("POST", "/api/admin/users", {"name": name, "role": role, "password": password})

    def create_token(self, name: str, label: str | None = None) -> str:
        return self.request("POST", f"/api/admin/users/{quote(name, safe='')}/tokens", {"name": label})["token"]

    def create_project(self, name: str, **settings) -> dict:
        return self.request("POST", "/api/admin/projects", {"name": name, **settings})

    def update_project(self, name: str, **settings) -> dict:
        return self.request("PATCH", f"/api/admin/projects/{quote(name, safe='')}", settings)

    def push(self, project: str, solutions: list[Solution], kind: str = "real", strategy: str = "random",
             count: int | None = None, seed: int = 0, generation: int | None = None) -> dict:
        return self.request("POST", f"/api/admin/projects/{quote(project, safe='')}/push",
                            {"records": [s.to_dict() for s in solutions], "kind": kind, "strategy": strategy,
                             "count": count, "seed": seed, "generation": generation})

    def stats(self, project: str) -> dict:
        return self.request("GET", f"/api/admin/projects/{quote(project, safe='')}/stats")

    def export(self, project: str, kinds: str = "real,qc,screening", include_open: bool = False) -> list[Solution]:
        rows = self.request("GET", f"/api/admin/projects/{quote(project, safe='')}/export", kinds=kinds,
                            include_open=str(include_open).lower())
        return [Solution.from_dict(r) for r in rows]

    def check(self) -> dict:
        return self.request("GET", "/api/admin/check")
