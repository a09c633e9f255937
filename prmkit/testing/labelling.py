"""Simulated labellers, a server in a subprocess, and set-up helpers: what the load and crash tests use.

A simulated labeller is a loop over the API (:class:`~prmkit.label.client.LabelClient`): take the next
assignment, rate its current step (Bad with probability ``bad_rate``, else Great or Okay), repeat until
its quota of labels is reached. Every label the server acknowledged (HTTP 200) is recorded with its
latency, so a test can check afterwards that each one is stored exactly once.

>>> sols = synthetic_candidates(2, n_steps=3, seed=1)
>>> [len(s.steps) for s in sols], sols[0].steps[-1].text.startswith("# Answer")
([3, 3], True)
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Self

import httpx

from prmkit.label import auth, projects
from prmkit.label.client import APIError, LabelClient
from prmkit.label.db import normalise_url, open_database
from prmkit.schema import Completion, Problem, Solution, Step


def synthetic_candidates(n: int, n_steps: int = 4, alternatives: int = 1, seed: int = 0,
                         gold: bool = False) -> list[Solution]:
    """``n`` small arithmetic solutions with LaTeX; ``gold=True`` adds gold ratings (for QC/screening)."""
    rng = Random(seed)
    out = []
    for i in range(n):
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        texts = [f"Step {k + 1}: we look at $a_{k} = {a} + {k}$ and \\({b} \\cdot {k}\\)." for k in range(n_steps - 1)]
        texts.append(f"# Answer\n\n{a + b}")
        steps = []
        for k, text in enumerate(texts):
            comps = [Completion(text if j == 0 else f"{text} (alternative {j})") for j in range(alternatives)]
            if gold:
                for j, c in enumerate(comps):
                    c.rating = -1 if (k == n_steps - 2 and j == 0 and i % 3 == 0) else 1
            steps.append(Step(comps))
        out.append(Solution(Problem(f"Compute ${a} + {b}$.", answer=str(a + b), id=f"p{seed}-{i}"),
                            steps, id=f"s{seed}-{i}", answer=str(a + b)))
    return out


def setup_project(db_url: str, project: str, n_labellers: int, candidates: list[Solution], *,
                  phase: int = 2, overlap: int = 1, qc_every: int = 0) -> dict[str, str]:
    """Create an admin and ``n_labellers`` labellers (API tokens), a project and one generation.

    Returns ``{name: token}``; the admin is ``admin``, labellers ``lab00``, ``lab01``, ...
    """
    db = open_database(db_url)
    tokens = {}
    with db.write() as s:
        for name, role in [("admin", "admin")] + [(f"lab{i:02d}", "labeller") for i in range(n_labellers)]:
            tokens[name] = auth.issue_token(s, auth.create_user(s, name, role, password=f"pw-{name}"), "api")
        projects.create_project(s, project, phase=phase, overlap=overlap, qc_every=qc_every)
        projects.push(s, project, candidates, strategy="in_order")
    db.close()
    return tokens


# --- a server in a subprocess --------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """``prmkit label serve`` in a child process on a loopback port; :meth:`kill` is ``kill -9``."""

    def __init__(self, db_url: str, port: int | None = None, log: str | os.PathLike | None = None):
        self.db_url, self.port = db_url, port or free_port()
        self.log = Path(log) if log else None
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> ServerProcess:
        # The child writes to the log; our copy of the handle closes once the child has it.
        with open(self.log or os.devnull, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "prmkit", "label", "serve", "--db", self.db_url,
                                          "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"],
                                         stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with status {self.proc.returncode} (log: {self.log})")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the server did not answer within {timeout}s")

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs, exactly like ``kill -9``."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --- load -----------------------------------------------------------------------------------------

@dataclass
class LoadResult:
    """What a load run acknowledged: ``acks`` are (assignment, step, completion, rating)."""

    acks: list[tuple[int, int, int, int]] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    @property
    def throughput(self) -> float:
        """Acknowledged labels per second of wall time."""
        return len(self.acks) / self.duration_s if self.duration_s else 0.0

    @property
    def p95_ms(self) -> float:
        if len(self.latencies_s) < 2:
            return float("nan")
        return statistics.quantiles(self.latencies_s, n=20)[-1] * 1000

    def summary(self, backend: str) -> str:
        return (f"{backend}: {len(self.acks)} labels acknowledged in {self.duration_s:.1f}s = "
                f"{self.throughput:.0f} labels/s, p95 latency {self.p95_ms:.0f} ms, {len(self.errors)} errors")


def simulated_labeller(client: LabelClient, project: str, quota: int, rng: Random, result: LoadResult,
                       lock: threading.Lock, stop: threading.Event, bad_rate: float = 0.05) -> int:
    """Label up to ``quota`` steps of ``project`` (phase 2) through the API; return how many were acknowledged."""
    done = 0
    try:
        view = client.next(project)
        while view is not None and done < quota and not stop.is_set():
            if view["status"] != "open":
                view = client.next(project)
                continue
            step, aid = view["frontier"], view["assignment"]
            rating = -1 if rng.random() < bad_rate else rng.choice([1, 1, 0])
            t0 = time.perf_counter()
            view = client.rate(aid, step, rating, time_ms=rng.randint(2000, 30000))
            latency = time.perf_counter() - t0
            with lock:
                result.acks.append((aid, step, 0, rating))
                result.latencies_s.append(latency)
            done += 1
    except (httpx.HTTPError, APIError) as e:  # the server went away (crash test) or refused: stop, say why
        with lock:
            result.errors.append(f"{type(e).__name__}: {e}")
    return done


def run_load(base_url: str, tokens: list[str], project: str, total: int, seed: int = 0,
             stop: threading.Event | None = None, bad_rate: float = 0.05,
             result: LoadResult | None = None) -> LoadResult:
    """``len(tokens)`` concurrent simulated labellers submitting ``total`` labels between them.

    Pass ``result`` to watch it fill from another thread (the crash test kills the server mid-way).
    """
    result, lock, stop = result or LoadResult(), threading.Lock(), stop or threading.Event()
    quotas = [total // len(tokens) + (i < total % len(tokens)) for i in range(len(tokens))]
    clients = [LabelClient(base_url, token=t, timeout=60) for t in tokens]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(len(tokens)) as pool:
        futures = [pool.submit(simulated_labeller, c, project, q, Random(seed * 1000 + i), result, lock, stop, bad_rate)
                   for i, (c, q) in enumerate(zip(clients, quotas))]
        for f in futures:
            f.result()
    result.duration_s = time.perf_counter() - t0
    for c in clients:
        c.close()
    return result


@contextlib.contextmanager
def fresh_pg_database(server_url: str) -> Iterator[str]:
    """A new, empty PostgreSQL database on the server of ``server_url``, dropped afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    name = f"prmkit_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(normalise_url(server_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(normalise_url(server_url)).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def verify_acks(db_url: str, acks: list[tuple[int, int, int, int]]) -> dict:
    """Compare acknowledged labels with the database: ``missing``, ``wrong`` (other rating), ``duplicated``.

    ``stored`` counts every label row; ``unacknowledged`` those stored without an acknowledgement (a
    request that committed while the server died before answering: allowed, not lost).
    """
    from sqlalchemy import func, select

    from prmkit.label.models import Label
    db = open_database(db_url)
    with db.read() as s:
        rows = {(a, st, c): r for a, st, c, r in s.execute(select(Label.assignment_id, Label.step, Label.completion,
                                                                  Label.rating))}
        dup = s.execute(select(func.count()).select_from(
            select(Label.assignment_id).group_by(Label.assignment_id, Label.step, Label.completion)
            .having(func.count(Label.id) > 1).subquery())).scalar_one()
    db.close()
    keys = {(a, st, c) for a, st, c, _ in acks}
    return {"acknowledged": len(acks), "distinct_acknowledged": len(keys), "stored": len(rows),
            "missing": sum(k not in rows for k in keys),
            "wrong": sum(1 for a, st, c, r in acks if (a, st, c) in rows and rows[(a, st, c)] != r),
            "duplicated": dup + (len(acks) - len(keys)), "unacknowledged": len(set(rows) - keys)}
