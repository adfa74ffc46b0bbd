"""A cockroach-play server on 127.0.0.1 in a background thread, for the web tests."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_server(store=None, save_dir=None):
    """Yield ``(base_url, app)`` of a live uvicorn server; stop it afterwards."""
    import uvicorn

    from play.server import create_app

    app = create_app(store, save_dir=save_dir)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the cockroach-play test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=10)
