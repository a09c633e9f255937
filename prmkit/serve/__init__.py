"""``prmkit serve``: a local model over HTTP (loopback by default). See :mod:`prmkit.serve.app`.

:func:`serve` runs until stopped (the command); :func:`background` runs a server in a thread of this
process for as long as a ``with`` block lasts (tests, benchmarks, notebooks) and yields its base URL.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def serve(cfg) -> None:
    """Load the models of ``cfg`` (a :class:`~prmkit.serve.app.ServeConfig`) and serve them until stopped."""
    import uvicorn

    from prmkit.serve.app import Service, build_app

    service = Service(cfg)
    port = cfg.port or free_port(cfg.host)
    print(f"prmkit serve: {service.name} on http://{cfg.host}:{port}/v1 "
          f"(generator: {cfg.generator or 'none'}, scorer: {cfg.scorer or 'none'}, critic: {cfg.critic or 'none'})",
          flush=True)
    try:
        uvicorn.run(build_app(service), host=cfg.host, port=port, log_level="warning")
    finally:
        service.close()


@contextlib.contextmanager
def background(app, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve ``app`` (a :class:`~prmkit.serve.app.Service`, or any ASGI app) from a thread; yields
    ``http://host:port/v1``."""
    import uvicorn

    from prmkit.serve.app import Service, build_app

    if isinstance(app, Service):
        app = build_app(app)
    port = port or free_port(host)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="prmkit-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"prmkit serve did not start on {host}:{port}")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
