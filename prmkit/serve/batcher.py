"""Dynamic batching: concurrent requests' items gathered into one model call.

A :class:`Batcher` owns one worker thread (so a model is only ever called from one thread). Items
submitted while it works wait in a queue; it takes up to ``max_batch`` of them, waiting at most
``max_wait`` seconds for more once the first arrives, calls ``run(items) -> results`` once, and resolves
each item's future with its result (or the call's exception: a failed batch fails its requests, never
the server).

>>> b = Batcher(lambda xs: [x * 2 for x in xs], max_batch=8)
>>> [f.result() for f in [b.submit(1), b.submit(2)]]
[2, 4]
>>> b.close()
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future


class Batcher:
    """Runs ``run`` on batches of submitted items in a worker thread; ``calls`` and ``items`` count them."""

    def __init__(self, run: Callable[[list], list], max_batch: int = 32, max_wait: float = 0.005):
        self.run, self.max_batch, self.max_wait = run, max_batch, max_wait
        self.queue: queue.Queue = queue.Queue()
        self.calls = self.items = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="prmkit-batcher", daemon=True)
        self.thread.start()

    def submit(self, item) -> Future:
        if self._stop.is_set():
            raise RuntimeError("the batcher is closed")
        future: Future = Future()
        self.queue.put((item, future))
        return future

    def _take(self) -> list:
        try:
            batch = [self.queue.get(timeout=0.1)]
        except queue.Empty:
            return []
        deadline = time.monotonic() + self.max_wait
        while len(batch) < self.max_batch:
            left = deadline - time.monotonic()
            try:
                batch.append(self.queue.get(timeout=max(left, 0)) if left > 0 else self.queue.get_nowait())
            except queue.Empty:
                break
        return batch

    def _loop(self) -> None:
        while not self._stop.is_set():
            # a request cancelled while it waited (its client went away) is dropped, not computed
            batch = [(item, f) for item, f in self._take() if f.set_running_or_notify_cancel()]
            if not batch:
                continue
            try:
                results = self.run([item for item, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"batch function returned {len(results)} results for {len(batch)} items")
            except Exception as e:  # noqa: BLE001  (handed to every waiting request, which reports it)
                for _, future in batch:
                    future.set_exception(e)
                continue
            self.calls += 1
            self.items += len(batch)
            for (_, future), result in zip(batch, results):
                future.set_result(result)

    def close(self) -> None:
        """Stop the worker; requests still queued fail with an error rather than wait for ever."""
        self._stop.set()
        self.thread.join(timeout=5)
        while True:
            try:
                _, future = self.queue.get_nowait()
            except queue.Empty:
                return
            if future.set_running_or_notify_cancel():
                future.set_exception(RuntimeError("the server is shutting down"))
