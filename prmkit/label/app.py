"""The web app: three pages (login, labelling, admin) and the JSON API they and programs use.

Every endpoint but ``/login``, ``/healthz``, ``POST /api/login`` and the static code (``/static``,
``/katex``: scripts and styles, no data) needs a login: a session cookie (set by ``POST /api/login``)
or an ``Authorization: Bearer <token>`` header. ``/api/admin/...`` and ``/admin`` refuse labellers
(403). A labeller reaches only their own assignments (anyone else's is 404, an admin may read but not
label). Unsafe methods must send JSON and, when the browser says where it comes from (``Origin``),
come from this site: a form on another site cannot post here. Pages get a strict
Content-Security-Policy (scripts only from this site), so even a rendering bug cannot run a script
smuggled in a problem's text. Each API call runs in one transaction and answers only after it
commits, so an acknowledged label is a stored label.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field, StrictInt
from sqlalchemy import select

from prmkit.io import dumps
from prmkit.label import auth, flow, projects
from prmkit.label.db import Database
from prmkit.label.export import as_format, export
from prmkit.label.models import Project, User
from prmkit.label.projects import LabelError
from prmkit.label.stats import project_stats
from prmkit.schema import SchemaError, Solution

STATIC = Path(__file__).parent / "static"
COOKIE = "prmkit_session"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def find_katex() -> Path | None:
    """KaTeX's ``dist`` folder: ``$PRMKIT_KATEX_DIR``, else ``node_modules`` beside this package (``npm ci``)."""
    for candidate in (os.environ.get("PRMKIT_KATEX_DIR"), Path(__file__).parent / "node_modules" / "katex" / "dist"):
        if candidate and (Path(candidate) / "katex.min.js").is_file():
            return Path(candidate)
    return None


@dataclass
class AppConfig:
    """Settings of the web app (the database is passed apart)."""

    secure_cookie: bool = field(default=False, metadata={"help": "mark the session cookie Secure (behind HTTPS)"})
    katex_dir: Path | None = field(default=None, metadata={"help": "KaTeX dist folder (default: find_katex())"})


class Unauthorized(LabelError):
    status = 401


# --- request bodies -------------------------------------------------------------------------------

class LoginBody(BaseModel):
    name: str = Field(max_length=200)
    password: str = Field(max_length=1000)


class RateBody(BaseModel):
    step: StrictInt
    rating: StrictInt
    completion: StrictInt = 0
    flagged: bool = False
    time_ms: StrictInt = 0


class ChooseBody(BaseModel):
    step: StrictInt
    completion: StrictInt | None = None
    text: str | None = Field(default=None, max_length=20000)
    rating: StrictInt | None = None
    time_ms: StrictInt = 0


class FinishBody(BaseModel):
    reason: str
    time_ms: StrictInt = 0


class UserBody(BaseModel):
    name: str
    role: str = "labeller"
    password: str | None = None


class TokenBody(BaseModel):
    name: str | None = None
    days: float | None = None


class ProjectBody(BaseModel):
    name: str
    phase: StrictInt = 2
    overlap: StrictInt = 1
    qc_every: StrictInt = 10
    screening_min: float = 0.8


class SettingsBody(BaseModel):
    phase: StrictInt | None = None
    overlap: StrictInt | None = None
    qc_every: StrictInt | None = None
    screening_min: float | None = None


class PushBody(BaseModel):
    records: list[dict]
    kind: str = "real"
    strategy: str = "random"
    count: StrictInt | None = None
    seed: StrictInt = 0
    generation: StrictInt | None = None


# --- middleware -----------------------------------------------------------------------------------

class Guard:
    """Security headers on every response; JSON-only, same-origin unsafe requests to the API."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        refusal = _refuse(scope)
        if refusal is not None:
            return await refusal(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
                            (b"x-frame-options", b"DENY"), (b"content-security-policy", CSP.encode()),
                            (b"cache-control", b"no-store")]
                message = {**message, "headers": headers}
            await send(message)
        await self.app(scope, receive, send_with_headers)


def _refuse(scope) -> Response | None:
    if scope["method"] in ("GET", "HEAD", "OPTIONS") or not scope["path"].startswith("/api/"):
        return None
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    if headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return JSONResponse({"error": "send JSON (Content-Type: application/json)"}, status_code=415)
    origin, host = headers.get("origin"), headers.get("host", "")
    if origin and origin.split("://", 1)[-1] != host:
        return JSONResponse({"error": "cross-site request refused"}, status_code=403)
    return None


# --- the app --------------------------------------------------------------------------------------

def _token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get(COOKIE)


def current_user(s, request: Request, admin: bool = False) -> User:
    """The logged-in user, or :class:`Unauthorized` (401); with ``admin``, a labeller is Forbidden (403)."""
    token = _token(request)
    user = auth.user_for_token(s, token) if token else None
    if user is None:
        raise Unauthorized("log in first (session cookie or Authorization: Bearer token)")
    if admin and user.role != "admin":
        raise projects.Forbidden("admins only")
    return user


def create_app(db: Database, config: AppConfig | None = None) -> FastAPI:
    """The FastAPI app over ``db``; serve it with uvicorn (``prmkit label serve`` does)."""
    config = config or AppConfig()
    # No public OpenAPI page: nothing but the login page is readable without logging in.
    app = FastAPI(title="prmkit label", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.db, app.state.config = db, config

    @app.exception_handler(LabelError)
    async def _label_error(_request, exc: LabelError):
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    _pages(app, config)
    _session_routes(app, db, config)
    _labeller_routes(app, db)
    _admin_routes(app, db)
    app.add_middleware(Guard)
    return app


def _pages(app: FastAPI, config: AppConfig) -> None:
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    katex = config.katex_dir or find_katex()
    if katex is not None:
        app.mount("/katex", StaticFiles(directory=katex), name="katex")
    db = app.state.db

    def page(request: Request, name: str, admin: bool = False) -> Response:
        with db.read() as s:
            try:
                current_user(s, request, admin=admin)
            except Unauthorized:  # back to this very page (and its ?project=) after logging in
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
            except projects.Forbidden:
                return HTMLResponse("<!doctype html><title>403</title><p>Admins only.</p>", status_code=403)
        return FileResponse(STATIC / name, media_type="text/html")

    @app.get("/", include_in_schema=False)
    @app.get("/app", include_in_schema=False)
    def labelling_page(request: Request):
        return page(request, "app.html")

    @app.get("/admin", include_in_schema=False)
    def admin_page(request: Request):
        return page(request, "admin.html", admin=True)

    app.get("/login", include_in_schema=False)(lambda: FileResponse(STATIC / "login.html", media_type="text/html"))
    app.get("/healthz")(lambda: {"ok": True})


def _session_routes(app: FastAPI, db: Database, config: AppConfig) -> None:
    @app.post("/api/login")
    def login(body: LoginBody):
        with db.write() as s:
            try:
                user, token = auth.login(s, body.name, body.password)
            except auth.AuthError as e:
                raise Unauthorized(str(e)) from None
            out = {"name": user.name, "role": user.role}
        response = JSONResponse(out)
        response.set_cookie(COOKIE, token, max_age=auth.SESSION_DAYS * 86400, httponly=True, samesite="strict",
                            secure=config.secure_cookie, path="/")
        return response

    @app.post("/api/logout")
    def logout(request: Request):
        with db.write() as s:
            current_user(s, request)
            token = request.cookies.get(COOKIE)
            if token:
                auth.revoke(s, token)
        response = JSONResponse({"ok": True})
        response.delete_cookie(COOKIE, path="/")
        return response

    @app.get("/api/me")
    def me(request: Request):
        with db.read() as s:
            user = current_user(s, request)
            return {"name": user.name, "role": user.role}


def _labeller_routes(app: FastAPI, db: Database) -> None:
    @app.get("/api/projects")
    def list_projects(request: Request):
        with db.read() as s:
            user = current_user(s, request)
            rows = s.scalars(select(Project).order_by(Project.name)).all()
            return [{"name": p.name, "phase": p.phase, "screening": flow.screening_status(s, user, p)} for p in rows]

    @app.post("/api/projects/{name}/next")
    def next_assignment(name: str, request: Request):
        with db.write() as s:
            user = current_user(s, request)
            a = flow.next_assignment(s, user, name)
            return {"assignment": flow.view(s, a) if a is not None else None}

    @app.get("/api/assignments")
    def my_assignments(request: Request, project: str | None = None):
        with db.read() as s:
            return flow.list_assignments(s, current_user(s, request), project)

    @app.get("/api/assignments/{aid}")
    def get_assignment(aid: int, request: Request):
        with db.read() as s:
            return flow.view(s, flow.get_assignment(s, current_user(s, request), aid))

    @app.post("/api/assignments/{aid}/labels")
    def rate(aid: int, body: RateBody, request: Request):
        with db.write() as s:
            return flow.rate(s, current_user(s, request), aid, body.step, body.rating, completion=body.completion,
                             flagged=body.flagged, time_ms=body.time_ms)

    @app.post("/api/assignments/{aid}/choose")
    def choose(aid: int, body: ChooseBody, request: Request):
        with db.write() as s:
            return flow.choose(s, current_user(s, request), aid, body.step, completion=body.completion,
                               text=body.text, rating=body.rating, time_ms=body.time_ms)

    @app.post("/api/assignments/{aid}/finish")
    def finish(aid: int, body: FinishBody, request: Request):
        with db.write() as s:
            return flow.finish(s, current_user(s, request), aid, body.reason, body.time_ms)


def _admin_routes(app: FastAPI, db: Database) -> None:
    @app.get("/api/admin/users")
    def users(request: Request):
        with db.read() as s:
            current_user(s, request, admin=True)
            return [{"name": u.name, "role": u.role, "active": u.active}
                    for u in s.scalars(select(User).order_by(User.name))]

    @app.post("/api/admin/users")
    def add_user(body: UserBody, request: Request):
        with db.write() as s:
            current_user(s, request, admin=True)
            try:
                user = auth.create_user(s, body.name, body.role, body.password)
            except auth.AuthError as e:
                raise projects.Conflict(str(e)) if "exists" in str(e) else LabelError(str(e)) from None
            return {"name": user.name, "role": user.role}

    @app.post("/api/admin/users/{name}/tokens")
    def add_token(name: str, body: TokenBody, request: Request):
        with db.write() as s:
            current_user(s, request, admin=True)
            try:
                user = auth.get_user(s, name)
            except auth.AuthError as e:
                raise projects.NotFound(str(e)) from None
            return {"name": user.name, "token": auth.issue_token(s, user, "api", body.name, body.days)}

    @app.get("/api/admin/projects")
    def all_projects(request: Request):
        with db.read() as s:
            current_user(s, request, admin=True)
            return [p.settings() for p in s.scalars(select(Project).order_by(Project.name))]

    @app.post("/api/admin/projects")
    def add_project(body: ProjectBody, request: Request):
        with db.write() as s:
            current_user(s, request, admin=True)
            return projects.create_project(s, **body.model_dump()).settings()

    @app.patch("/api/admin/projects/{name}")
    def settings(name: str, body: SettingsBody, request: Request):
        with db.write() as s:
            current_user(s, request, admin=True)
            return projects.update_project(s, name, **body.model_dump()).settings()

    @app.post("/api/admin/projects/{name}/push")
    def push(name: str, body: PushBody, request: Request):
        try:
            records = [Solution.from_dict(r, f"records[{i}]") for i, r in enumerate(body.records)]
        except SchemaError as e:
            raise LabelError(str(e)) from None
        with db.write() as s:
            current_user(s, request, admin=True)
            gen, n = projects.push(s, name, records, kind=body.kind, strategy=body.strategy, count=body.count,
                                   seed=body.seed, generation=body.generation)
            return {"generation": gen, "items": n}

    @app.get("/api/admin/projects/{name}/stats")
    def stats(name: str, request: Request):
        with db.read() as s:
            current_user(s, request, admin=True)
            return project_stats(s, name)

    @app.get("/api/admin/projects/{name}/export")
    def export_records(name: str, request: Request, format: str = "prmkit", kinds: str = "real,qc,screening",
                       include_open: bool = False):
        with db.read() as s:
            current_user(s, request, admin=True)
            records = as_format(export(s, name, kinds.split(","), include_open), format)
            body = "".join(dumps(r) + "\n" for r in records)
        return Response(body, media_type="application/x-ndjson")

    @app.get("/api/admin/check")
    def check(request: Request):
        from prmkit.label.consistency import check_database
        with db.read() as s:
            current_user(s, request, admin=True)
        return check_database(db)
