"""cockroach-play's HTTP/WebSocket API: whole games played through it, every payload
checked against the hidden state; bad requests named and harmless; many games, idle
expiry, disconnecting clients.
"""

from __future__ import annotations

import json
import os
import select
import socket
import stat
import subprocess
import sys
import threading
import time

import httpx
import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402
from starlette.websockets import WebSocketDisconnect  # noqa: E402

from cockroach_env.config import GameConfig  # noqa: E402
from cockroach_env.record import env_from_deal, load_record, save_record  # noqa: E402
from cockroach_env.view import seat_view  # noqa: E402
from play.server import create_app  # noqa: E402
from play.session import random_move  # noqa: E402
from play.store import GameStore  # noqa: E402

from .play_server import ManualClock, free_port  # noqa: E402
from .test_no_leak import resampled_replay  # noqa: E402
from .test_records import random_record  # noqa: E402

VIEW_KEYS = {
    "version",
    "seat",
    "seats",
    "config",
    "identities",
    "claims",
    "pace_ms",
    "table",
    "legal",
    "log_from",
    "log",
    "over",
    "reveal",
    "saved",
    "error",
}
TABLE_KEYS = {
    "edition",
    "phase",
    "to_act",
    "collections",
    "hand_sizes",
    "chain",
    "history",
    "loser",
    "loss_reason",
    "num_players",
    "players",
    "viewer",
    "full_information",
    "hand",
    "last_event",
}
ROYAL_KEYS = {"penalty_top", "penalty_size", "special_holders", "replacement"}


def new_game(client, seats, preset="classic", num_players=None, seed=0, pace_ms=0):
    response = client.post(
        "/api/games",
        json={"preset": preset, "num_players": num_players, "seats": seats, "seed": seed, "pace_ms": pace_ms},
    )
    assert response.status_code == 200, response.text
    return response.json()


def wait_for(client, game_id, token, ready, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        view = client.get(f"/api/games/{game_id}", params={"token": token}).json()
        if ready(view) or time.monotonic() > deadline:
            return view
        time.sleep(0.005)


def play_through_the_api(client, seats, preset="classic", num_players=None, seed=0):
    """Play a whole game with random human moves; return every payload the human seats got and the session."""
    created = new_game(client, seats, preset, num_players, seed)
    game_id, tokens = created["game_id"], created["tokens"]
    rng = np.random.default_rng(seed)
    payloads = []
    while True:
        first = next(iter(tokens))
        wait_for(
            client, game_id, tokens[first], lambda v: v["over"] or v["table"]["to_act"] in tokens
        )  # a human's turn
        views = {
            agent: client.get(f"/api/games/{game_id}", params={"token": token}).json()
            for agent, token in tokens.items()
        }
        payloads += [(agent, v) for agent, v in views.items()]
        mover = next((a for a, v in views.items() if v["legal"] is not None), None)
        if any(v["over"] for v in views.values()):
            break
        if mover is None:
            continue
        log_from = int(rng.integers(len(views[mover]["log"]) + 1))  # the page may have any prefix of the log
        response = client.post(
            f"/api/games/{game_id}/move",
            json={"token": tokens[mover], "log_from": log_from, **random_move(views[mover]["legal"], rng)},
        )
        assert response.status_code == 200, response.text
        payloads.append((mover, response.json()))
    session = client.app.state.store.get(game_id)
    return game_id, tokens, payloads, session


def check_payload(agent: str, view: dict, session) -> None:
    """The payload holds exactly ``agent``'s view of the game at its version, and nothing hidden."""
    assert set(view) == VIEW_KEYS
    env = env_from_deal(session.config, session.deal)
    for action in session.actions[: view["version"]]:
        env.step(action)
    table = view["table"]
    royal = ROYAL_KEYS & set(table)
    assert set(table) - royal == TABLE_KEYS, set(table) ^ TABLE_KEYS
    assert table == json.loads(json.dumps(seat_view(env, agent)))
    seat = env.possible_agents.index(agent)
    assert table["hand"] == {env.cards.identities[c]: n for c, n in enumerate(env.game.hands[seat]) if n}
    chain = env.game.chain
    if chain is not None:
        assert table["chain"]["card"] == (env.cards.identities[chain.card] if seat in chain.seen else None)
    assert [entry["event"] for entry in view["log"]] == json.loads(json.dumps(env.history))[view["log_from"] :]
    assert [entry["index"] for entry in view["log"]] == list(range(view["log_from"], len(env.history)))
    over = env.game.over
    assert view["over"] == over and (view["reveal"] is not None) == over
    assert (view["legal"] is not None) == (not over and env.agent_selection == agent)


@pytest.fixture()
def client(tmp_path):
    app = create_app(GameStore(max_games=8, idle_seconds=600), save_dir=str(tmp_path))
    with TestClient(app) as c:
        yield c


@pytest.mark.parametrize(
    "seats, preset, num_players, seed",
    [
        (["human", "heuristic", "random", "honest"], "classic", 4, 1),
        (["bluffer", "human", "human"], "royal", 3, 2),
        (["human", "heuristic"], "duel", None, 3),
        (["random", "human", "heuristic", "classic-4p"], "classic", 4, 4),
        (["mini-recall", "human"], "mini", None, 5),  # an agent that sees the history: the table gets recall=True
    ],
)
def test_whole_games_through_the_api_show_each_seat_only_its_own_view(
    client, seats, preset, num_players, seed, tmp_path
):
    game_id, tokens, payloads, session = play_through_the_api(client, seats, preset, num_players, seed)
    assert session.over and len(payloads) > (2 if preset == "mini" else 10)  # a mini game has at most 9 decisions
    for agent, view in payloads:
        check_payload(agent, view, session)
    # after the end, every seat sees the reveal; the record was saved and replays
    final = payloads[-1][1]
    assert final["reveal"]["loser"] == final["table"]["loser"]
    assert final["reveal"]["deal"] == session.deal
    saved = list(tmp_path.glob("*.json"))
    assert len(saved) == 1 and load_record(str(saved[0]))["actions"] == session.actions
    token = next(iter(tokens.values()))
    assert client.get(f"/api/games/{game_id}/record", params={"token": token}).json()["actions"] == session.actions
    html = client.get(f"/api/games/{game_id}/replay", params={"token": token})
    assert html.status_code == 200 and html.text.startswith("<!doctype html>") and 'id="replay-data"' in html.text


def test_a_shipped_agent_seat_is_named_by_its_shipped_name_in_every_payload_record_and_replay(client):
    from training.core.checkpoint import read_metadata

    run_name = read_metadata("classic-4p")["name"]  # the run that trained it: shown nowhere
    seats = ["human", "classic-4p", "heuristic", "random"]
    game_id, tokens, payloads, session = play_through_the_api(client, seats, "classic", 4, seed=6)
    assert session.seats[1].label == "classic-4p" and session.seats[1].player.name == "classic-4p"
    for _, view in payloads:
        assert [s["label"] for s in view["seats"]] == seats
        assert run_name not in json.dumps(view)
    token = tokens["player_0"]
    record = client.get(f"/api/games/{game_id}/record", params={"token": token}).json()
    assert record["players"]["player_1"] == "classic-4p" and run_name not in json.dumps(record)
    html = client.get(f"/api/games/{game_id}/replay", params={"token": token}).text
    assert '"player_1":"classic-4p"' in html and run_name not in html


def test_a_seat_view_is_unchanged_when_every_card_it_cannot_see_is_reshuffled(client):
    created = new_game(client, ["human", "heuristic", "heuristic", "heuristic"], pace_ms=10_000)
    session = client.app.state.store.get(created["game_id"])
    seat = session.seats[0]
    rng = np.random.default_rng(0)
    compared = 0
    for _ in range(40):  # drive the game by hand (the agents wait 10 s each)
        if session.over:
            break
        env = session.env
        replay = resampled_replay(env, list(session.actions), 0, rng) if session.actions else None
        if replay is not None:
            original = session.view(seat)
            session.env = replay
            try:
                assert session.view(seat) == original
            finally:
                session.env = env
            compared += 1
        legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
        session._step(int(rng.choice(legal)))
    assert compared >= 10


def test_bad_requests_are_named_and_change_nothing(client):
    created = new_game(client, ["human", "heuristic", "heuristic", "heuristic"], seed=5, pace_ms=10_000)
    game_id, token = created["game_id"], created["tokens"]["player_0"]
    session = client.app.state.store.get(game_id)
    human = session.seats[0]
    rng = np.random.default_rng(5)
    env = session.env
    while not (
        session.seat_to_act is human and env.game.phase.value == "offer" and 0 in env.game.hands[0]
    ):  # player_0 must offer, lacking a type
        session._step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
    view = client.get(f"/api/games/{game_id}", params={"token": token}).json()
    hand = view["table"]["hand"]
    missing = next(c for c in view["identities"] if c not in hand)
    held = next(iter(hand))
    bad = [
        ("post", f"/api/games/{game_id}/move", {"token": token, "kind": "dance"}, 422, "kind"),
        (
            "post",
            f"/api/games/{game_id}/move",
            {"token": token, "kind": "offer", "card": held},
            422,
            "takes the field(s)",
        ),
        (
            "post",
            f"/api/games/{game_id}/move",
            {"token": token, "kind": "offer", "card": missing, "target": "player_1", "claim": "bat"},
            422,
            f"no {missing} in hand",
        ),
        (
            "post",
            f"/api/games/{game_id}/move",
            {"token": token, "kind": "offer", "card": "unicorn", "target": "player_1", "claim": "bat"},
            422,
            "unknown card 'unicorn'",
        ),
        (
            "post",
            f"/api/games/{game_id}/move",
            {"token": token, "kind": "offer", "card": held, "target": "player_0", "claim": "bat"},
            422,
            "the actor itself",
        ),
        (
            "post",
            f"/api/games/{game_id}/move",
            {"token": token, "kind": "offer", "card": held, "target": "player_1", "claim": "dragon"},
            422,
            "unknown claim 'dragon'",
        ),
        (
            "post",
            f"/api/games/{game_id}/move",
            {"token": token, "kind": "call", "believe": True},
            422,
            "cannot call during the offer phase",
        ),
        ("post", f"/api/games/{game_id}/move", {"token": token, "kind": "call", "believe": "yes"}, 422, "believe"),
        ("post", f"/api/games/{game_id}/move", {"token": token, "kind": "peek", "extra": 1}, 422, "extra"),
        ("post", f"/api/games/{game_id}/move", {"token": token, "kind": "peek", "log_from": -1}, 422, "log_from"),
        ("post", f"/api/games/{game_id}/move", {"token": "wrong", "kind": "peek"}, 403, "token"),
        ("post", "/api/games/nope/move", {"token": token, "kind": "peek"}, 404, "no game 'nope'"),
        ("post", f"/api/games/{game_id}/pace", {"token": token, "pace_ms": -5}, 422, "pace_ms"),
        ("post", f"/api/games/{game_id}/pace", {"token": token, "pace_ms": 1.5}, 422, "pace_ms"),
        ("get", f"/api/games/{game_id}/record?token={token}", None, 409, "when the game is over"),
        (
            "post",
            "/api/games",
            {"preset": "classic", "seats": ["human", "heuristic"], "num_players": 4},
            422,
            "seats has 2 entries for 4 players",
        ),
        ("post", "/api/games", {"preset": "classic", "seats": ["heuristic"] * 4}, 422, "no human seat"),
        (
            "post",
            "/api/games",
            {"preset": "classic", "seats": ["human", "nobody", "random", "random"]},
            422,
            "seat player_1: unknown agent 'nobody'",
        ),
        (
            "post",
            "/api/games",
            {"preset": "classic", "seats": ["human", "classic-2p", "random", "random"]},
            422,
            "seat player_1",
        ),
        ("post", "/api/games", {"preset": "classic", "num_players": 7, "seats": ["human"] * 6}, 422, "num_players"),
        (
            "post",
            "/api/games",
            {"preset": "mystery", "seats": ["human", "random", "random", "random"]},
            422,
            "preset='mystery'",
        ),
        ("post", "/api/games", {"preset": "classic", "seats": ["human"] * 4, "seed": -1}, 422, "seed"),
    ]
    state, version = session.env.state(), session.version
    for method, url, body, status, fragment in bad:
        response = client.post(url, json=body) if method == "post" else client.get(url)
        assert response.status_code == status, (url, body, response.text)
        assert fragment in response.text, (body, response.text)
        np.testing.assert_array_equal(session.env.state(), state)
        assert session.version == version and session.pace_ms == 10_000
    not_json = client.post(
        f"/api/games/{game_id}/move", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert not_json.status_code == 422 and "json" in not_json.text.lower()
    assert len(client.app.state.store) == 1, "no refused game was created"


def test_a_move_chosen_on_a_view_that_moves_have_overtaken_is_refused(client):
    """A second click or key press (True twice) must not answer the next card, which the seat has not seen yet: in the
    duel an honest agent's claim is true, so the right call gives it the card and it offers the next one at once.
    """
    created = new_game(client, ["human", "honest"], preset="duel", seed=0, pace_ms=0)
    game_id, token = created["game_id"], created["tokens"]["player_0"]
    session = client.app.state.store.get(game_id)
    rng = np.random.default_rng(0)
    responds = lambda v: v["legal"] is not None and v["legal"]["call"]  # noqa: E731
    view = wait_for(client, game_id, token, lambda v: v["legal"] is not None)
    while not responds(view):  # the human offers until the agent offers back
        client.post(
            f"/api/games/{game_id}/move",
            json={"token": token, "version": view["version"], **random_move(view["legal"], rng)},
        )
        view = wait_for(client, game_id, token, lambda v: v["legal"] is not None)
    seen = view["version"]
    first = client.post(
        f"/api/games/{game_id}/move", json={"token": token, "version": seen, "kind": "call", "believe": True}
    )
    assert first.status_code == 200, first.text
    assert responds(wait_for(client, game_id, token, responds)), (
        "the agent took the card and offered the next one to the human"
    )
    state, version = session.env.state(), session.version
    again = client.post(
        f"/api/games/{game_id}/move", json={"token": token, "version": seen, "kind": "call", "believe": True}
    )
    assert again.status_code == 409 and f"chosen on version {seen}" in again.text, again.text
    np.testing.assert_array_equal(session.env.state(), state)
    assert session.version == version
    ahead = client.post(
        f"/api/games/{game_id}/move", json={"token": token, "version": version + 5, "kind": "call", "believe": True}
    )
    assert ahead.status_code == 422 and f"version={version + 5}" in ahead.text, ahead.text
    answer = client.post(
        f"/api/games/{game_id}/move", json={"token": token, "version": version, "kind": "call", "believe": True}
    )
    assert answer.status_code == 200, "a move on the latest view is played"


def test_the_pace_of_the_agents_can_be_changed_mid_game(tmp_path):
    """The agents wait their pace on the store's clock, which moves here only when the test moves it."""
    clock = ManualClock()
    with TestClient(
        create_app(GameStore(max_games=8, idle_seconds=600, clock=clock), save_dir=str(tmp_path))
    ) as client:
        created = new_game(client, ["human", "heuristic", "heuristic", "heuristic"], seed=8, pace_ms=3000)
        game_id, token = created["game_id"], created["tokens"]["player_0"]
        session = client.app.state.store.get(game_id)
        assert session.env.game.starter == 2, "an agent starts: it waits 3 s"
        clock.advance(2.9)
        time.sleep(0.2)
        assert session.version == 0, "the agent waits until 3 s have passed on the clock"
        response = client.post(f"/api/games/{game_id}/pace", json={"token": token, "pace_ms": 0})
        assert response.status_code == 200 and response.json() == {"pace_ms": 0}
        view = wait_for(client, game_id, token, lambda v: v["legal"] is not None)
        assert view["pace_ms"] == 0 and view["legal"] is not None, "the agents moved at once after the change"


def test_an_agent_moves_when_its_pace_has_passed_on_the_clock(tmp_path):
    clock = ManualClock()
    with TestClient(create_app(GameStore(max_games=8, idle_seconds=600, clock=clock))) as client:
        created = new_game(client, ["human", "heuristic", "heuristic", "heuristic"], seed=8, pace_ms=3000)
        game_id, token = created["game_id"], created["tokens"]["player_0"]
        session = client.app.state.store.get(game_id)
        time.sleep(0.2)
        assert session.version == 0
        clock.advance(3.01)
        view = wait_for(client, game_id, token, lambda v: v["version"] > 0)
        assert view["version"] > 0, "the agent moved once its 3 s had passed"


def test_two_human_seats_each_see_their_own_hand_and_move_only_in_turn(client):
    created = new_game(client, ["human", "human", "heuristic"], seed=7, pace_ms=10_000)
    game_id, tokens = created["game_id"], created["tokens"]
    session = client.app.state.store.get(game_id)
    for agent, token in tokens.items():
        view = client.get(f"/api/games/{game_id}", params={"token": token}).json()
        assert view["seat"] == agent
        check_payload(agent, view, session)
    to_act = session.seat_to_act.agent
    if to_act in tokens:
        other = next(a for a in tokens if a != to_act)
        response = client.post(f"/api/games/{game_id}/move", json={"token": tokens[other], "kind": "peek"})
        assert response.status_code == 409 and f"it is not {other}'s turn" in response.text


def test_websocket_pushes_each_change_and_a_client_may_vanish_mid_game(client):
    created = new_game(client, ["human", "heuristic", "heuristic", "heuristic"], seed=9, pace_ms=0)
    game_id, token = created["game_id"], created["tokens"]["player_0"]
    session = client.app.state.store.get(game_id)
    rng = np.random.default_rng(9)
    with client.websocket_connect(f"/api/games/{game_id}/ws?token={token}") as ws:
        view = ws.receive_json()
        check_payload("player_0", view, session)
        seen = 0
        while seen < 6 and not view["over"]:
            if view["legal"] is not None:
                client.post(f"/api/games/{game_id}/move", json={"token": token, **random_move(view["legal"], rng)})
            view = ws.receive_json()
            check_payload("player_0", view, session)
            seen += 1
    # the page is gone mid-game: the server keeps the game and serves a fresh page
    deadline = time.monotonic() + 10
    while session.listeners and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not session.listeners, "the server forgets a page that disconnected"
    assert client.app.state.store.get(game_id) is session
    view = wait_for(client, game_id, token, lambda v: v["over"] or v["legal"] is not None)
    check_payload("player_0", view, session)
    with client.websocket_connect(f"/api/games/{game_id}/ws?token={token}") as ws:
        check_payload("player_0", ws.receive_json(), session)
    for url in (f"/api/games/{game_id}/ws?token=wrong", f"/api/games/unknown/ws?token={token}"):
        with pytest.raises(WebSocketDisconnect) as closed:
            with client.websocket_connect(url) as ws:
                ws.receive_json()
        assert closed.value.code in (4403, 4404)


def test_many_games_at_once_are_bounded_and_idle_games_expire(tmp_path):
    clock = ManualClock()
    app = create_app(GameStore(max_games=3, idle_seconds=600, clock=clock))
    with TestClient(app) as client:
        games = [new_game(client, ["human", "random", "random", "random"], seed=k, pace_ms=10_000) for k in range(3)]
        full = client.post("/api/games", json={"seats": ["human", "random", "random", "random"]})
        assert full.status_code == 503 and "3 games" in full.text
        clock.advance(599)
        kept = client.get(f"/api/games/{games[0]['game_id']}", params={"token": games[0]["tokens"]["player_0"]})
        assert kept.status_code == 200, "a game touched 599 s ago is kept"
        clock.advance(2)
        gone = client.get(f"/api/games/{games[1]['game_id']}", params={"token": games[1]["tokens"]["player_0"]})
        assert gone.status_code == 404 and "expired" in gone.text
        assert new_game(client, ["human", "random", "random", "random"], seed=5, pace_ms=10_000)["game_id"]
        assert len(app.state.store) == 2, "the game touched 2 s ago is kept, the others expired"


def test_a_page_keeps_its_game_alive_by_sending_anything(tmp_path):
    """A human who only watches (the agents play on a slow pace) keeps the game: the page's keep-alive touches it."""
    clock = ManualClock()
    app = create_app(GameStore(max_games=3, idle_seconds=600, clock=clock))
    with TestClient(app) as client:
        created = new_game(client, ["human", "random", "random", "random"], seed=1, pace_ms=10_000)
        game_id, token = created["game_id"], created["tokens"]["player_0"]
        with client.websocket_connect(f"/api/games/{game_id}/ws?token={token}") as ws:
            ws.receive_json()
            for _ in range(4):
                clock.advance(500)
                ws.send_text("keep-alive")
                deadline = time.monotonic() + 10
                while app.state.store.get(game_id).touched != clock.now and time.monotonic() < deadline:
                    time.sleep(0.01)
            assert app.state.store.get(game_id) is not None, "2000 s after its start, the watched game is kept"
            clock.advance(601)
            gone = client.get(f"/api/games/{game_id}", params={"token": token})
            assert gone.status_code == 404
            with pytest.raises(WebSocketDisconnect) as closed:
                while True:
                    ws.receive_json()
            assert closed.value.code == 4410


def test_setup_lists_rules_and_the_agents_that_fit_them(client):
    setup = client.get("/api/setup").json()
    assert {"classic", "royal", "duel"} <= set(setup["presets"]) and "heuristic" in setup["baselines"]
    rules = client.get("/api/rules", params={"preset": "classic", "num_players": 4}).json()
    assert rules["config"] == GameConfig(num_players=4).to_dict()
    assert "classic-4p" in rules["agents"] and "classic-2p" not in rules["agents"] and rules["agents"][0] == "human"
    assert "royal-4p" in client.get("/api/rules", params={"preset": "royal", "num_players": 4}).json()["agents"]
    assert {"mini", "mini-recall"} <= set(client.get("/api/rules", params={"preset": "mini"}).json()["agents"])
    art = client.get("/api/art/royal").json()
    assert set(art) == set(GameConfig(edition="royal").cards.identities) | {"back"}
    assert all(svg.startswith("<svg") for svg in art.values())
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text


class BrokenAgent:
    """An agent that fails on its first move (a user's module:Class with a bug), printing its hand in the message."""

    def __init__(self, config, seed=None):
        self.config = config

    def act(self, observation):
        raise RuntimeError(f"bug in the agent, holding {observation['observation'][:8].tolist()}")


def test_a_failing_agent_stops_its_game_with_a_named_error_and_the_server_goes_on(client, caplog):
    created = new_game(client, ["human", "tests.test_play_api:BrokenAgent", "random", "random"], seed=2, pace_ms=0)
    game_id, token = created["game_id"], created["tokens"]["player_0"]
    session = client.app.state.store.get(game_id)
    rng = np.random.default_rng(2)
    for _ in range(20):
        view = wait_for(client, game_id, token, lambda v: v["error"] or v["legal"] is not None)
        if view["error"]:
            break
        client.post(f"/api/games/{game_id}/move", json={"token": token, **random_move(view["legal"], rng)})
    assert "tests.test_play_api:BrokenAgent" in view["error"] and "RuntimeError" in view["error"]
    assert "holding" not in view["error"], "the agent's message (its hand) reaches the human"
    assert not session.over
    assert "holding" in caplog.text, "the server's log keeps the agent's message"
    assert new_game(client, ["human", "random", "random", "random"], seed=3)["game_id"], "other games still start"


def test_a_server_without_custom_agents_refuses_code_and_path_seats_by_name_and_starts_nothing(tmp_path):
    """A module:Class seat imports code and a path seat reads a file on the server: a server reachable from other
    machines (cockroach-play --host, without --allow-custom-agents) takes only human, baselines and shipped agents.
    """
    store = GameStore(max_games=8, idle_seconds=600)
    with TestClient(create_app(store, custom_agents=False)) as closed:
        assert closed.get("/api/setup").json()["custom_agents"] is False
        for spec in ["tests.test_play_api:BrokenAgent", str(tmp_path / "agent"), "/etc/passwd", "agent.zip"]:
            answer = closed.post(
                "/api/games", json={"preset": "classic", "num_players": 4, "seats": ["human", "random", spec, "random"]}
            )
            assert (
                answer.status_code == 422 and f"seat player_2: agent {spec!r} is refused" in answer.json()["detail"]
            ), answer.text
            assert "--allow-custom-agents" in answer.json()["detail"]
        assert len(list(store)) == 0
        started = closed.post(
            "/api/games",
            json={"preset": "classic", "num_players": 4, "seats": ["human", "heuristic", "classic-4p", "random"]},
        )
        assert started.status_code == 200, started.text
    with TestClient(create_app(GameStore(max_games=8, idle_seconds=600))) as open_:
        assert open_.get("/api/setup").json()["custom_agents"] is True


def test_cockroach_play_refuses_bad_options_by_name(capsys):
    from play import cli

    assert cli.main(["--port", "70000", "--no-browser"]) == 2
    assert "--port 70000" in capsys.readouterr().err
    assert cli.main(["--max-games", "0", "--no-browser", "--no-save"]) == 2
    assert "--max-games 0 is not allowed" in capsys.readouterr().err
    for minutes in ["1e-7", "0", "-5", "nan", "inf", "1e9"]:
        assert cli.main(["--idle-minutes", minutes, "--no-browser", "--no-save"]) == 2
        err = capsys.readouterr().err
        assert "--idle-minutes" in err and "expected 1 to 10080 minutes" in err and "idle_seconds" not in err, err


def test_cockroach_play_names_an_address_it_cannot_listen_on_and_announces_nothing(capsys):
    """A busy port or an unknown host is refused by name before the page's address is printed or opened (the browser
    would open whatever else serves that port).
    """
    from play import cli

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert cli.main(["--port", str(port), "--no-browser", "--no-save"]) == 2
    out, err = capsys.readouterr()
    assert f"--port {port}" in err and "serving on" not in out, (out, err)
    assert cli.main(["--host", "no-such-host.invalid", "--no-browser", "--no-save"]) == 2
    out, err = capsys.readouterr()
    assert "--host 'no-such-host.invalid'" in err and "serving on" not in out, (out, err)


@pytest.mark.parametrize("host", ["::1", "::"])
def test_cockroach_play_on_an_ipv6_host_prints_an_address_that_serves_the_page(host):
    with socket.socket(socket.AF_INET6) as probe:
        try:
            probe.bind(("::1", 0))
        except OSError:
            pytest.skip("no IPv6 loopback here")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "play.cli", "--host", host, "--port", str(port), "--no-browser", "--no-save"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        line = server.stdout.readline()
        assert line.startswith("cockroach-play: serving on "), line
        url = line.split("serving on ")[1].split(";")[0].strip()
        deadline = time.monotonic() + 20
        while True:
            try:
                response = httpx.get(url + "api/setup", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, f"nothing answers at {url}"
                time.sleep(0.1)
        assert response.status_code == 200 and "presets" in response.json()
        assert response.json()["custom_agents"] is (host == "::1"), "module:Class and path seats only from this machine"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_cockroach_replay_names_an_output_it_cannot_write_and_writes_into_a_pipe_without_replacing_it(tmp_path, capsys):
    """-o in a folder that takes no new file is an error naming -o, not a traceback (it named a temporary file);
    -o naming a device or a pipe (such as /dev/null) is written into, never replaced by a new file (as root, it replaced
    /dev/null itself).
    """
    from play import replay

    record, _ = random_record("royal", 3, seed=1)
    path = tmp_path / "game.json"
    save_record(record, str(path))
    if os.path.isdir("/proc"):
        assert replay.main([str(path), "-o", "/proc/cockroach-replay.html"]) == 2
        err = capsys.readouterr().err
        assert "-o '/proc/cockroach-replay.html'" in err and "cannot create a file" in err and "Traceback" not in err
    pipe = tmp_path / "pipe.html"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    chunks, done = [], threading.Event()

    def drain():  # until the writer is done and nothing is left to read
        while True:
            chunk = os.read(reader, 1 << 16) if select.select([reader], [], [], 0.05)[0] else b""
            chunks.append(chunk)
            if not chunk and done.is_set():
                return
            if not chunk:
                time.sleep(0.01)

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    try:
        assert replay.main([str(path), "-o", str(pipe)]) == 0
    finally:
        done.set()
        thread.join(timeout=10)
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(pipe).st_mode), "the pipe was replaced by a file"
    assert b"".join(chunks).startswith(b"<!doctype html>")
