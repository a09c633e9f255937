"""Load and crash on loopback, against SQLite and PostgreSQL, through real HTTP to `prmkit label serve`.

Load: 50 concurrent simulated labellers submit 5,000 step labels; every acknowledged label is stored
once (none lost, none duplicated); throughput and p95 latency are printed (run with -s to see them;
bench/bench_label_load.py prints the same).
Crash: kill -9 the server in the middle of that load; after a restart every acknowledged label is
there, the database passes its integrity and consistency checks, and labelling goes on.

PostgreSQL runs where $PRMKIT_TEST_PG names a server (`eval "$(bash scripts/services.sh)"`); else those
cases are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

import pytest

pytest.importorskip("fastapi", reason="the labelling app needs the `serve` extra")

from prmkit.label.consistency import check_database
from prmkit.label.db import open_database
from prmkit.testing.labelling import (
    LoadResult,
    ServerProcess,
    fresh_pg_database,
    run_load,
    setup_project,
    synthetic_candidates,
    verify_acks,
)

LABELLERS, LABELS = 50, 5000
PG = os.environ.get("PRMKIT_TEST_PG")
pytestmark = pytest.mark.slow


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request, tmp_path):
    if request.param == "sqlite":
        yield "sqlite", contextlib.nullcontext(f"sqlite:///{tmp_path}/load.db")
        return
    if not PG:
        pytest.skip("PostgreSQL not provided: run `eval \"$(bash scripts/services.sh)\"` to set PRMKIT_TEST_PG")
    yield "postgresql", fresh_pg_database(PG)


def setup(url: str, seed: int) -> list[str]:
    tokens = setup_project(url, "load", LABELLERS, synthetic_candidates(LABELS // 3, n_steps=10, seed=seed))
    return [t for name, t in tokens.items() if name != "admin"]


def test_load_none_lost_none_duplicated(backend, tmp_path):
    name, ctx = backend
    with ctx as url:
        tokens = setup(url, seed=1)
        with ServerProcess(url, log=tmp_path / "server.log") as server:
            result = run_load(server.url, tokens, "load", LABELS, seed=1)
        check = verify_acks(url, result.acks)
        consistency = check_database(open_database(url))
    print(f"\n{result.summary(name)}; {LABELLERS} labellers; {check}")
    assert result.errors == []
    assert len(result.acks) == LABELS == check["distinct_acknowledged"] == check["stored"]
    assert check["missing"] == check["duplicated"] == check["wrong"] == 0
    assert consistency["ok"], consistency


def test_kill_9_mid_load_loses_no_acknowledged_label(backend, tmp_path):
    name, ctx = backend
    with ctx as url:
        tokens = setup(url, seed=2)
        server = ServerProcess(url, log=tmp_path / "server.log").start()
        result = LoadResult()
        load = threading.Thread(target=run_load, args=(server.url, tokens, "load", LABELS),
                                kwargs={"seed": 2, "result": result})
        load.start()
        deadline = time.monotonic() + 120
        while len(result.acks) < LABELS // 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        server.kill()  # SIGKILL while 50 labellers are mid-request
        killed_at = len(result.acks)
        load.join(120)
        assert 0 < killed_at < LABELS and result.errors, "the kill did not land in the middle of the load"
        check = verify_acks(url, result.acks)
        assert check["missing"] == check["wrong"] == check["duplicated"] == 0, check
        consistency = check_database(open_database(url))
        assert consistency["ok"], consistency
        with ServerProcess(url, port=server.port, log=tmp_path / "server.log") as again:
            more = run_load(again.url, tokens[:10], "load", 200, seed=3)
        after = verify_acks(url, result.acks + more.acks)
        final = check_database(open_database(url))
    print(f"\n{name}: killed after {killed_at} acknowledged labels ({len(result.acks)} by the end, "
          f"{len(result.errors)} labellers cut off); after restart: {check['missing']} lost, "
          f"{check['duplicated']} duplicated, {check['unacknowledged']} stored but unacknowledged; "
          f"integrity {consistency['integrity']}; 200 more labels after restart: {after['missing']} lost")
    assert more.errors == [] and len(more.acks) == 200
    assert after["missing"] == after["duplicated"] == 0 and final["ok"], (after, final)
