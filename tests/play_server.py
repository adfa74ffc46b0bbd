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


class ManualClock:
    """A clock (seconds) that moves only when told: a store given one expires games and paces agents by it."""

    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@contextmanager
def running_server(store=None, save_dir=None):
    """Yield ``(base_url, app)`` of a live uvicorn server on 127.0.0.1 taking the Host names cockroach-play takes
    there; stop it afterwards.
    """
    import uvicorn

    from play.cli import LOCAL_HOSTS
    from play.server import create_app

    app = create_app(store, save_dir=save_dir, allowed_hosts=LOCAL_HOSTS)
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
