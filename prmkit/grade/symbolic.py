"""A small pool of killable worker processes for the symbolic step, with a hard deadline per pair.

Why processes: sympy can run for ever (``10^{10^{10^{10}}}``, a huge factorial) inside C code that no
Python-level timeout interrupts, and Math-Verify's ``signal.alarm`` timeout only works on the main
thread of the main interpreter. A worker that misses its deadline is killed and replaced; the
caller gets ``{"timeout": True}``. This works from any thread, from a daemonic
``multiprocessing`` worker (workers are started with :mod:`subprocess`, which daemonic processes may
use), and after a ``fork`` (a child process builds its own pool; the parent's is left alone).

>>> pool = SymbolicPool(workers=1, timeout=30)
>>> pool.run({"gold": "$\\\\frac{1}{2}$", "given": "$0.5$", "mode": "strict"})["equal"]
True
>>> pool.close()
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

DEFAULT_TIMEOUT = 5.0
"""Seconds one pair may spend in the symbolic step (Math-Verify's own default is 5 too)."""

STARTUP_TIMEOUT = 120.0
"""Seconds a fresh worker may take to import sympy and Math-Verify (not counted against a pair)."""


class GradeError(RuntimeError):
    """The grader failed on a pair: a bug or an error in a dependency. Never a verdict."""


class GradeTimeout(GradeError):
    """The symbolic step of a pair ran past its deadline (raised only with ``on_timeout="raise"``)."""


class _Worker:
    """One worker process and a reader thread that turns its stdout into a queue of lines."""

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
        self.proc = subprocess.Popen([sys.executable, "-m", "prmkit.grade.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                     env=env)
        self.lines: queue.Queue = queue.Queue()
        self.stderr: collections.deque = collections.deque(maxlen=20)
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr.append), daemon=True).start()
        self._receive(STARTUP_TIMEOUT, what="start")

    @staticmethod
    def _pump(stream, sink) -> None:
        for line in stream:
            sink(line)
        sink(None)

    def request(self, job: dict, timeout: float) -> dict | None:
        """The worker's answer to ``job``, or None when the deadline passed."""
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise GradeError(f"grading worker is gone ({e}); stderr: {self._stderr_tail()}") from e
        return self._receive(timeout, what="answer")

    def _receive(self, timeout: float, what: str) -> dict | None:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            if what == "start":
                self.kill()
                raise GradeError(f"grading worker did not start within {timeout:.0f}s") from None
            return None
        if line is None:
            code = self.proc.wait()
            raise GradeError(f"grading worker exited with code {code} before its {what}; "
                             f"stderr: {self._stderr_tail()}")
        return json.loads(line)

    def _stderr_tail(self) -> str:
        return "".join(line for line in list(self.stderr) if line).strip()[-1000:] or "(empty)"

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:  # a pipe already broken by the kill; nothing left to release
                pass


class SymbolicPool:
    """Up to ``workers`` worker processes, started on demand; thread-safe.

    :meth:`run` sends one job to an idle worker and waits at most ``timeout`` seconds; a worker that
    misses the deadline is killed (its slot is refilled by a fresh process on the next call).
    """

    def __init__(self, workers: int = 2, timeout: float = DEFAULT_TIMEOUT):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.workers, self.timeout, self.pid = workers, timeout, os.getpid()
        self._slots = threading.BoundedSemaphore(workers)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._started = self._closed = False
        self.timeouts = 0

    def run(self, job: dict, timeout: float | None = None) -> dict:
        """The worker's answer to ``job``, or ``{"timeout": True}`` when it took too long."""
        worker = self._checkout()
        try:
            result = worker.request(job, timeout or self.timeout)
        except BaseException:
            worker.kill()  # a worker in an unknown state is not reused
            self._checkin(None)
            raise
        if result is None:
            worker.kill()  # the only way to stop sympy mid-computation
            self._checkin(None)
            with self._lock:
                self.timeouts += 1
            return {"timeout": True}
        self._checkin(worker)
        return result

    def prestart(self) -> None:
        """Start the pool's first worker in the background, so that a caller about to read a large file has it
        ready (a worker takes a few tenths of a second to import sympy) when the first pair needs it; nothing
        once the pool has started one."""
        with self._lock:
            if self._started:
                return
            self._started = True
        if not self._slots.acquire(blocking=False):
            return

        def start() -> None:
            try:
                worker = _Worker()
            except BaseException:  # noqa: BLE001 - the first run() starts one again and reports why
                self._slots.release()
                return
            if self._closed:  # closed while it started: nothing would stop it
                worker.kill()
                self._slots.release()
                return
            self._checkin(worker)

        threading.Thread(target=start, daemon=True).start()

    def _checkout(self) -> _Worker:
        self._slots.acquire()
        with self._lock:
            if self._idle:
                return self._idle.pop()
        self._started = True
        try:
            return _Worker()
        except BaseException:
            self._slots.release()
            raise

    def _checkin(self, worker: _Worker | None) -> None:
        if worker is not None:
            with self._lock:
                self._idle.append(worker)
        self._slots.release()

    def close(self) -> None:
        """Stop every idle worker (busy ones stop when their caller returns them)."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._closed = True
        for worker in idle:
            worker.kill()


class InProcess:
    """The symbolic step in this process, with :class:`SymbolicPool`'s interface: no worker to start and no
    deadline, so a pair that makes sympy run for ever stops this process with it. For trusted answers and for
    measuring (``bench/bench_grade.py``'s single-threaded row); :func:`prmkit.grade.grade_many` with
    ``pool=InProcess()`` grades on one thread. Importing the worker's module quiets Math-Verify's logger in
    this process, as in a worker (it warns once that its own timeouts are off).

    >>> InProcess().run({"gold": "$\\\\frac{1}{2}$", "given": "$0.5$", "mode": "strict"})["equal"]
    True
    """

    workers = 1
    timeouts = 0

    def run(self, job: dict, timeout: float | None = None) -> dict:
        from prmkit.grade.worker import answer

        return answer(job)

    def close(self) -> None:
        pass


_default: SymbolicPool | None = None
_default_lock = threading.Lock()


def default_pool() -> SymbolicPool:
    """The process-wide pool (built on first use, rebuilt in a forked child)."""
    global _default
    with _default_lock:
        if _default is None or _default.pid != os.getpid():
            workers = int(os.environ.get("PRMKIT_GRADE_WORKERS", min(4, os.cpu_count() or 1)))
            _default = SymbolicPool(workers=workers)
        return _default


@atexit.register
def _close_default() -> None:
    if _default is not None and _default.pid == os.getpid():
        _default.close()
