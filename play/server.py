"""The ``cockroach-play`` web server (FastAPI + uvicorn): HTTP for setup and moves,
one WebSocket per page for live updates.

API (every request body is checked against its declared model; unknown fields are
refused):

    GET  /                              the page
    GET  /api/setup                     presets, player counts, seat choices, whether custom agents are taken
    GET  /api/rules?preset=&num_players= the resolved rules and the agents that fit them
    GET  /api/art/{edition}             the card drawings (SVG)
    POST /api/games                     {preset, num_players, seats, seed, pace_ms} -> game id and human tokens
                                        (num_players defaults to the number of seats)
    GET  /api/games/{id}?token=&log_from= the view of the token's seat (its log from event log_from on)
    POST /api/games/{id}/move           {token, kind, card, target, claim, believe, version, log_from} -> the new view
                                        (version, optional: that of the view the move was chosen on; refused
                                        with 409 if a move was played since)
    POST /api/games/{id}/pace           {token, pace_ms}
    GET  /api/games/{id}/record?token=  the game record (JSON), once the game is over
    GET  /api/games/{id}/replay?token=  the replay page (HTML), once the game is over
    DELETE /api/games/{id}?token=       end the game
    WS   /api/games/{id}/ws?token=      the seat's view, sent after every change (the first with the
                                        whole log, later ones with the new events only: see log_from)

A refused request is answered 4xx with ``{"detail": "..."}`` naming the problem
(422: a malformed or illegal move, 409: not your turn, the game is over, or moves
were played since the view a move was chosen on,
403: a wrong token, 404: no such game, 503: the server holds too many games), and
changes nothing. ``create_app(custom_agents=False)`` (``cockroach-play`` on an address other
than this machine's, without ``--allow-custom-agents``) refuses a seat other than ``human``, a
baseline or a shipped checkpoint: a ``module:Class`` seat imports code and a path seat reads a
file on the server. The server holds the game: a view holds one seat's observation and
the public events (``cockroach_env.view.seat_view``), and nothing hidden until the
game is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from importlib import resources
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Query, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from cockroach_env.art import art_sheet
from cockroach_env.cards import CARD_TYPES, ROYAL_IDENTITIES
from cockroach_env.config import PRESETS, GameConfig
from cockroach_env.record import save_record
from play.session import HUMAN, MAX_PACE_MS, GameSession, MoveError
from play.store import GameStore, StoreFull

log = logging.getLogger("cockroach_play")
MAX_LISTENERS = 8
"""Pages (WebSockets) one game serves at once."""


class NewGame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    preset: str = Field("classic", max_length=200, description="preset names joined by '+'")
    num_players: StrictInt | None = Field(None, ge=2, le=6)
    seats: list[str] = Field(..., min_length=2, max_length=6, description="'human' or an agent spec, one per seat")
    seed: StrictInt | None = Field(None, ge=0, le=2**31 - 1)
    pace_ms: StrictInt = Field(800, ge=0, le=MAX_PACE_MS)


class MoveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    token: str = Field(..., max_length=100)
    kind: Literal["offer", "call", "peek", "pass", "place"]
    card: str | None = Field(None, max_length=40)
    target: str | None = Field(None, max_length=40)
    claim: str | None = Field(None, max_length=40)
    believe: StrictBool | None = None
    version: StrictInt | None = Field(
        None,
        ge=0,
        description="the version of the view the move was chosen on: refused (409) if a move was played since",
    )
    log_from: StrictInt = Field(
        0, ge=0, description="the answer's log starts at this event (the page has the earlier ones)"
    )


class PaceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    token: str = Field(..., max_length=100)
    pace_ms: StrictInt = Field(..., ge=0, le=MAX_PACE_MS)


def _config(preset: str, num_players: int | None) -> GameConfig:
    options = {} if num_players is None else {"num_players": num_players}
    try:
        return GameConfig.from_options(preset=preset or None, **options)
    except (ValueError, TypeError) as error:
        raise HTTPException(422, f"rules preset={preset!r}, num_players={num_players!r}: {error}") from None


def _table_config(config: GameConfig, seats: list[str], checkpoints: dict[str, dict[str, Any]]) -> GameConfig:
    """The rules with ``recall=True`` if a seat plays a shipped agent that sees the game's history
    (the other agents then read the observation without it, ``training.load_agent``).
    """
    with_recall = dataclasses.replace(config, recall=True)
    if not config.recall and any(checkpoints.get(spec) == with_recall.to_dict() for spec in seats):
        return with_recall
    return config


def _checkpoints() -> dict[str, dict[str, Any]]:
    """Shipped checkpoints and the rules each was trained for (metadata only, no torch)."""
    from training.checkpoint import read_metadata, shipped_checkpoints

    out = {}
    for name in shipped_checkpoints():
        with contextlib.suppress(Exception):
            out[name] = GameConfig(**read_metadata(name)["game_config"]).to_dict()  # every field, older checkpoints too
    return out


def create_app(store: GameStore | None = None, save_dir: str | None = None, custom_agents: bool = True) -> FastAPI:
    """The app; ``save_dir`` (if given) receives the record of every finished game; ``custom_agents=False``
    refuses seats other than ``human``, the baselines and the shipped checkpoints (the module docstring).
    """
    store = store if store is not None else GameStore()
    if save_dir is not None:
        os.makedirs(save_dir, exist_ok=True)
    checkpoints = _checkpoints()

    async def expire_forever():
        while True:
            await asyncio.sleep(min(60.0, store.idle_seconds / 2))
            store.expire()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(expire_forever())
        yield
        task.cancel()
        for session in store:
            _stop(session)

    app = FastAPI(title="cockroach-play", lifespan=lifespan)
    app.state.store = store
    static = resources.files("play") / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    def _stop(session: GameSession) -> None:
        if session.driver is not None:
            session.driver.cancel()
        for queue in list(session.listeners):
            _tell(queue, None)

    store.on_expire = _stop

    def lookup(game_id: str, token: Any):
        session = store.get(game_id)
        if session is None:
            raise HTTPException(
                404, f"no game {game_id!r} on this server (it may have expired after {store.idle_seconds:.0f} s idle)"
            )
        try:
            seat = session.seat_of_token(token)
        except MoveError as error:
            raise HTTPException(error.status, str(error)) from None
        session.touch()
        return session, seat

    def changed(session: GameSession) -> None:
        if session.over and save_dir is not None and session.saved_path is None:
            path = os.path.join(save_dir, f"{time.strftime('%Y%m%d-%H%M%S')}-{session.game_id}.json")
            try:
                save_record(session.record(), path)
                session.saved_path = path
            except OSError as error:
                log.error("could not save the game record to %s: %s", path, error)
        for queue in list(session.listeners):
            _tell(queue, session.version)

    def start_agents(session: GameSession) -> None:
        if session.driver is None or session.driver.done():
            session.driver = asyncio.create_task(drive(session))

    async def drive(session: GameSession) -> None:
        """Play the agents' moves, paced, until a human is to act or the game ends."""
        while True:
            seat = session.seat_to_act
            if seat is None or seat.human:
                return
            started = time.monotonic()
            while time.monotonic() - started < session.pace_ms / 1000:  # re-read: a pace change applies at once
                await asyncio.sleep(min(0.05, session.pace_ms / 1000 - (time.monotonic() - started)))
            await asyncio.sleep(0)
            if store.get(session.game_id) is not session:
                return
            try:
                session.agent_move()
            except Exception as error:  # noqa: BLE001 - a broken agent must not take the server down
                log.exception("agent %s failed in game %s", seat.label, session.game_id)
                # The exception's text stays in the server's log: an agent's message may hold its own cards.
                session.error = f"the agent {seat.label!r} at {seat.agent} failed ({type(error).__name__}; the server's log has its message); the game cannot go on"
                session.version += 1
                changed(session)
                return
            changed(session)

    @app.get("/", response_class=HTMLResponse)
    async def index():
        return HTMLResponse((static / "index.html").read_text(encoding="utf-8"))

    @app.get("/api/setup")
    async def setup():
        import baselines

        return {
            "presets": sorted(PRESETS),
            "player_counts": [2, 3, 4, 5, 6],
            "baselines": baselines.names(),
            "checkpoints": checkpoints,
            "pace_ms": {"default": 800, "max": MAX_PACE_MS},
            "custom_agents": custom_agents,
        }

    @app.get("/api/rules")
    async def rules(preset: str = Query("classic", max_length=200), num_players: int | None = Query(None, ge=2, le=6)):
        import baselines

        config = _config(preset, num_players)
        with_recall = dataclasses.replace(config, recall=True).to_dict()
        fitting = [name for name, game in checkpoints.items() if game in (config.to_dict(), with_recall)]
        return {"config": config.to_dict(), "agents": [HUMAN, *fitting, *baselines.names()]}

    @app.get("/api/art/{edition}")
    async def art(edition: Literal["classic", "royal"]):
        return art_sheet(CARD_TYPES if edition == "classic" else ROYAL_IDENTITIES)

    @app.post("/api/games")
    async def new_game(request: NewGame):
        if not custom_agents:
            import baselines

            known = {HUMAN, *baselines.names(), *checkpoints}
            for k, spec in enumerate(request.seats):
                if spec not in known:
                    raise HTTPException(
                        422,
                        f"seat player_{k}: agent {spec!r} is refused: this server takes only 'human', a baseline {baselines.names()} "
                        f"or a shipped checkpoint {sorted(checkpoints)} (its owner can allow module:Class and paths with --allow-custom-agents)",
                    )
        players = request.num_players
        if players is None and not any("num_players" in PRESETS.get(name, {}) for name in request.preset.split("+")):
            players = len(request.seats)  # one seat per entry unless the preset fixes the count
        config = _table_config(_config(request.preset, players), request.seats, checkpoints)
        try:
            session = await asyncio.to_thread(GameSession, config, request.seats, request.seed, request.pace_ms)
        except ValueError as error:
            raise HTTPException(422, str(error)) from None
        try:
            game_id = store.add(session)
        except StoreFull as error:
            raise HTTPException(503, str(error)) from None
        start_agents(session)
        tokens = {s.agent: s.token for s in session.seats if s.human}
        return {
            "game_id": game_id,
            "tokens": tokens,
            "seats": [{"agent": s.agent, "label": s.label} for s in session.seats],
        }

    @app.get("/api/games/{game_id}")
    async def view(game_id: str, token: str = Query(..., max_length=100), log_from: int = Query(0, ge=0)):
        session, seat = lookup(game_id, token)
        return JSONResponse(session.view(seat, log_from))  # plain JSON data: skip FastAPI's slow generic encoder

    @app.post("/api/games/{game_id}/move")
    async def move(game_id: str, request: MoveRequest):
        session, seat = lookup(game_id, request.token)
        try:
            session.human_move(seat, request.model_dump(exclude={"token", "log_from", "version"}), request.version)
        except MoveError as error:
            raise HTTPException(error.status, str(error)) from None
        changed(session)
        start_agents(session)
        return JSONResponse(session.view(seat, request.log_from))

    @app.post("/api/games/{game_id}/pace")
    async def pace(game_id: str, request: PaceRequest):
        session, seat = lookup(game_id, request.token)
        session.set_pace(request.pace_ms)
        changed(session)
        return {"pace_ms": session.pace_ms}

    @app.get("/api/games/{game_id}/record")
    async def record(game_id: str, token: str = Query(..., max_length=100)):
        session, _ = lookup(game_id, token)
        if not session.over:
            raise HTTPException(409, "the record is available when the game is over (it holds every hidden card)")
        return JSONResponse(
            session.record(), headers={"Content-Disposition": f'attachment; filename="cockroach-{game_id}.json"'}
        )

    @app.get("/api/games/{game_id}/replay", response_class=HTMLResponse)
    async def replay(game_id: str, token: str = Query(..., max_length=100)):
        from play.replay import replay_html

        session, _ = lookup(game_id, token)
        if not session.over:
            raise HTTPException(409, "the replay is available when the game is over (it holds every hidden card)")
        html = await asyncio.to_thread(replay_html, session.record())
        return HTMLResponse(html, headers={"Content-Disposition": f'attachment; filename="cockroach-{game_id}.html"'})

    @app.delete("/api/games/{game_id}")
    async def close(game_id: str, token: str = Query(..., max_length=100)):
        lookup(game_id, token)
        store.remove(game_id)
        return {"closed": game_id}

    @app.websocket("/api/games/{game_id}/ws")
    async def live(websocket: WebSocket, game_id: str, token: str = ""):
        session = store.get(game_id)
        if session is None:
            await websocket.close(code=4404, reason="no such game")
            return
        try:
            seat = session.seat_of_token(token)
        except MoveError:
            await websocket.close(code=4403, reason="wrong token")
            return
        if len(session.listeners) >= MAX_LISTENERS:
            await websocket.close(code=4429, reason=f"this game already has {MAX_LISTENERS} pages open")
            return
        await websocket.accept()
        queue: asyncio.Queue = asyncio.Queue(maxsize=1)
        session.listeners.add(queue)

        sent = len(session.env.history)  # the first message holds the whole log, later ones the new events

        async def send_views():
            nonlocal sent
            while True:
                if await queue.get() is None:
                    await websocket.close(code=4410, reason="the game has expired")
                    return
                view = session.view(seat, sent)
                sent = view["log_from"] + len(view["log"])
                await websocket.send_json(view)

        sender = asyncio.create_task(send_views())
        try:
            await websocket.send_json(session.view(seat))
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                session.touch()  # a page's keep-alive
        except Exception:  # noqa: BLE001 - a client gone mid-send is an ordinary disconnect
            pass
        finally:
            sender.cancel()
            session.listeners.discard(queue)

    return app


def _tell(queue: asyncio.Queue, value: Any) -> None:
    """Wake a page's sender; the latest view is read when it runs, so one pending wake-up is enough."""
    if value is None:
        with contextlib.suppress(asyncio.QueueEmpty):
            queue.get_nowait()
    with contextlib.suppress(asyncio.QueueFull):
        queue.put_nowait(value)
