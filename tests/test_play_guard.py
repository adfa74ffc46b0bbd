"""cockroach-play on a real uvicorn server, against hostile pages and requests: a foreign Host (DNS rebinding) or
Origin, oversized or NaN bodies, pipes as agent files, slow agents, and WebSockets refused with the codes the page
does not retry.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
websockets_client = pytest.importorskip("websockets.sync.client")
from websockets.exceptions import ConnectionClosed  # noqa: E402

from play import server as play_server  # noqa: E402
from play.server import MAX_LISTENERS, TERMINAL_CLOSE_CODES  # noqa: E402
from play.session import random_move  # noqa: E402
from play.store import GameStore  # noqa: E402

from .play_server import ManualClock, free_port, running_server  # noqa: E402

SEATS = ["human", "random", "random", "random"]


@pytest.fixture()
def served(tmp_path):
    """``(url, app, clock)`` of a live server whose store runs on a manual clock."""
    clock = ManualClock()
    with running_server(GameStore(max_games=16, idle_seconds=600, clock=clock), save_dir=str(tmp_path)) as (url, app):
        yield url, app, clock


def new_game(url, seats=SEATS, **extra):
    response = httpx.post(f"{url}/api/games", json={"seats": seats, "pace_ms": 10_000, **extra}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def ws_url(url, game_id, token):
    return url.replace("http://", "ws://") + f"/api/games/{game_id}/ws?token={token}"


def close_code(url, headers=None, host=None) -> tuple[int, str]:
    """Connect (naming ``host`` in the Host header, if given), read until the server closes; the close code and
    reason.
    """
    options = {}
    if host is not None:
        port = int(url.split("/")[2].rsplit(":", 1)[1])
        options["sock"] = socket.create_connection(("127.0.0.1", port), timeout=10)
        url = url.replace(url.split("/")[2], f"{host}:{port}", 1)
    with websockets_client.connect(url, additional_headers=headers or {}, open_timeout=10, **options) as ws:
        try:
            while True:
                ws.recv(timeout=10)
        except ConnectionClosed as closed:
            return closed.rcvd.code, closed.rcvd.reason
    raise AssertionError("the server never closed the socket")


def test_a_foreign_host_is_refused_before_any_module_is_imported(served):
    """DNS rebinding: a page of attacker.example that resolves to 127.0.0.1 sends Host: attacker.example."""
    url, app, _ = served
    assert "this" not in sys.modules
    answer = httpx.post(
        f"{url}/api/games", json={"seats": ["human", "this:s"]}, headers={"Host": "attacker.example"}, timeout=30
    )
    assert answer.status_code == 400 and "Host 'attacker.example' is not this server's address" in answer.text
    assert "this" not in sys.modules, "the seat's module was imported"
    assert len(app.state.store) == 0
    for host in ["attacker.example:8000", "127.0.0.1.attacker.example", "", "[::2]"]:
        assert httpx.get(f"{url}/api/setup", headers={"Host": host}, timeout=30).status_code == 400, host
    port = url.rsplit(":", 1)[1]
    for host in [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "LOCALHOST"]:
        assert httpx.get(f"{url}/api/setup", headers={"Host": host}, timeout=30).status_code == 200, host


def test_a_page_of_another_origin_changes_nothing(served):
    url, app, _ = served
    for origin in ["http://attacker.example", "null", url.replace("127.0.0.1", "localhost"), "file://"]:
        answer = httpx.post(f"{url}/api/games", json={"seats": SEATS}, headers={"Origin": origin}, timeout=30)
        assert answer.status_code == 403 and "may not change games" in answer.text, (origin, answer.text)
    assert len(app.state.store) == 0
    assert httpx.get(f"{url}/api/setup", headers={"Origin": "http://attacker.example"}, timeout=30).status_code == 200
    created = httpx.post(f"{url}/api/games", json={"seats": SEATS}, headers={"Origin": url}, timeout=30)
    assert created.status_code == 200, "the server's own page starts games"
    game_id, token = created.json()["game_id"], created.json()["tokens"]["player_0"]
    code, _ = close_code(ws_url(url, game_id, token), {"Origin": "http://attacker.example"})
    assert code == 4403
    code, _ = close_code(ws_url(url, game_id, token), host="attacker.example")
    assert code == 4400


def test_websocket_refusals_close_with_codes_the_page_does_not_retry(served):
    url, app, clock = served
    created = new_game(url)
    game_id, token = created["game_id"], created["tokens"]["player_0"]
    assert close_code(ws_url(url, game_id, "wrong"))[0] == 4403
    assert close_code(ws_url(url, "unknown", token))[0] == 4404
    with contextlib.ExitStack() as stack:
        pages = [
            stack.enter_context(websockets_client.connect(ws_url(url, game_id, token), open_timeout=10))
            for _ in range(MAX_LISTENERS)
        ]
        for page in pages:
            assert json.loads(page.recv(timeout=10))["seat"] == "player_0"
        code, reason = close_code(ws_url(url, game_id, token))
        assert code == 4429 and f"{MAX_LISTENERS} pages" in reason
        clock.advance(601)
        assert httpx.get(f"{url}/api/games/{game_id}", params={"token": token}, timeout=30).status_code == 404
        for page in pages:
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    page.recv(timeout=10)
            assert closed.value.rcvd.code == 4410
    assert {4403, 4404, 4410, 4429, 4400} <= TERMINAL_CLOSE_CODES
    script = (play_server.resources.files("play") / "static" / "app.js").read_text(encoding="utf-8")
    assert "event.code >= 4400 && event.code < 4500" in script, "the page stops retrying on every refusal code"


def test_bodies_and_values_are_bounded_and_never_echoed_whole(served):
    url, app, _ = served
    cases = [
        ({"seats": ["human", "x" * 5_000_000]}, 413, "over 65536 bytes"),
        ({"seats": SEATS, "preset": "p" * 30_000_000}, 413, "over 65536 bytes"),
        ({"seats": ["human", "x" * 60_000]}, 422, "(60000 characters)"),
        ({"seats": SEATS, "preset": "p" * 60_000}, 422, "(60000 characters)"),
        ({"seats": SEATS, "seed": float("nan")}, 422, "seed"),
        ({"seats": SEATS, "seed": float("inf")}, 422, "seed"),
        ({"seats": SEATS, "pace_ms": float("nan")}, 422, "pace_ms"),
    ]
    for body, status, fragment in cases:
        answer = httpx.post(
            f"{url}/api/games",
            content=json.dumps(body),  # allow_nan: Python writes NaN as a browser's JSON.parse would not
            headers={"Content-Type": "application/json"},
            timeout=60,
        )
        assert answer.status_code == status and fragment in answer.text, (status, answer.text[:300])
        assert len(answer.content) < 2000, f"a {len(answer.content)}-byte reply"
    chunked = httpx.post(
        f"{url}/api/games",
        content=iter([b'{"seats": ["human", "', b"y" * 70_000, b'"]}']),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert chunked.status_code == 413
    assert len(app.state.store) == 0
    assert new_game(url)["game_id"], "the server goes on"


def test_a_pipe_as_a_seat_file_is_refused_before_anything_is_read(served, tmp_path):
    url, app, _ = served
    fifo = tmp_path / "agent.json"
    os.mkfifo(fifo)
    for spec in [str(fifo), str(tmp_path / "agent"), "/dev/zero"]:
        for _ in range(MAX_LISTENERS):  # more than the server's threads: none is taken
            started = time.monotonic()
            answer = httpx.post(f"{url}/api/games", json={"seats": ["human", spec]}, timeout=30)
            assert answer.status_code == 422 and "expected a checkpoint file (nothing was read)" in answer.text, (
                answer.text
            )
            assert time.monotonic() - started < 10
    assert len(app.state.store) == 0
    assert new_game(url)["game_id"], "later games start"


RELEASE = threading.Event()


class SlowAgent:
    """An agent whose construction waits for ``RELEASE`` (a checkpoint read from a slow disk)."""

    def __init__(self, config, seed=None):
        RELEASE.wait(60)

    def act(self, observation):
        raise AssertionError("never asked")


def test_slow_agent_loads_are_bounded_in_number_and_time(served, monkeypatch):
    url, app, _ = served
    monkeypatch.setattr(play_server, "AGENT_LOAD_SECONDS", 0.5)
    RELEASE.clear()
    slow = ["human", "tests.test_play_guard:SlowAgent"]
    try:
        for _ in range(play_server.MAX_AGENT_LOADS):
            answer = httpx.post(f"{url}/api/games", json={"seats": slow}, timeout=30)
            assert answer.status_code == 503 and "took more than" in answer.text, answer.text
        busy = httpx.post(f"{url}/api/games", json={"seats": SEATS}, timeout=30)
        assert busy.status_code == 503 and "loading the agents of" in busy.text, busy.text
        assert httpx.get(f"{url}/api/setup", timeout=30).status_code == 200, "the server still answers"
    finally:
        RELEASE.set()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = httpx.post(f"{url}/api/games", json={"seats": SEATS, "pace_ms": 10_000}, timeout=30)
        if answer.status_code == 200:
            break
        time.sleep(0.05)
    assert answer.status_code == 200, answer.text
    assert len(app.state.store) == 1, "the loads that timed out left no game"


def test_a_finished_game_tells_each_seat_the_record_file_name_only(served, tmp_path):
    url, app, _ = served
    created = new_game(url, ["human", "random"], preset="duel")
    game_id, token = created["game_id"], created["tokens"]["player_0"]
    session = app.state.store.get(game_id)
    rng = np.random.default_rng(0)
    httpx.post(f"{url}/api/games/{game_id}/pace", json={"token": token, "pace_ms": 0}, timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        view = httpx.get(f"{url}/api/games/{game_id}", params={"token": token}, timeout=30).json()
        if view["over"]:
            break
        if view["legal"] is not None:
            move = random_move(view["legal"], rng)
            httpx.post(f"{url}/api/games/{game_id}/move", json={"token": token, **move}, timeout=30)
    view = httpx.get(f"{url}/api/games/{game_id}", params={"token": token}, timeout=30).json()
    assert view["over"] and session.saved_path and os.path.isfile(session.saved_path)
    assert view["saved"] == os.path.basename(session.saved_path) and str(tmp_path) not in json.dumps(view)


def test_cockroach_play_takes_the_names_of_its_own_address_and_refuses_a_run_directory_as_save_dir(tmp_path, capsys):
    from play import cli

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        hosts = cli.served_hosts("127.0.0.1", [sock], ["games.example"])
    assert set(hosts) == {"127.0.0.1", "localhost", "::1", "games.example"}
    run = tmp_path / "runs" / "mini1"
    run.mkdir(parents=True)
    (run / "checkpoint.json").write_text("{}")
    (run / "checkpoint.1.safetensors").write_bytes(b"")
    for save_dir in [run, run / "games"]:
        assert cli.main(["--save-dir", str(save_dir), "--no-browser", "--port", "1"]) == 2
        err = capsys.readouterr().err
        assert "--save-dir" in err and "checkpoint" in err, err
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint.1.safetensors", "checkpoint.json"]


def test_sigterm_stops_cockroach_play_while_an_agent_loads(tmp_path):
    """A load that never ends (a checkpoint on a stalled disk) neither keeps the process alive nor delays its stop."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "play.cli", "--port", str(port), "--no-browser", "--no-save"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert server.stdout.readline().startswith("cockroach-play: serving on ")
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"{url}/api/setup", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.1)

        def start_slow_game():
            with contextlib.suppress(httpx.HTTPError):  # the stopping server drops the request
                httpx.post(f"{url}/api/games", json={"seats": ["human", "tests.test_play_guard:SlowAgent"]}, timeout=90)

        waiting = threading.Thread(target=start_slow_game, daemon=True)
        waiting.start()
        time.sleep(1.0)  # the agent is loading
        started = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        assert time.monotonic() - started < 15, "the stop waited for the load"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
