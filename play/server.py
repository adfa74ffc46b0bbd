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
403: a wrong token, or a page of another site, 404: no such game, 413: a body over
``MAX_BODY_BYTES``, 503: the server holds too many games or loads too many agents),
and changes nothing; a value quoted in a message is cut short. A WebSocket that is
refused is accepted, then closed with a code the page does not retry: 4400 a Host
that is not the server's, 4403 a wrong token or a page of another site, 4404 no such
game, 4410 the game expired, 4429 the game has ``MAX_LISTENERS`` pages open.

``create_app(allowed_hosts=...)`` answers only requests whose ``Host`` is one of those
names (``cockroach-play`` passes the address it serves, the loopback names and
``--allow-host``): a web page can point a name of its own at 127.0.0.1 (DNS
rebinding), but its requests then carry that name. A request that changes something
(any method but GET and HEAD, and every WebSocket) from a page of another origin (its
``Origin`` header) is refused whatever the host.

``create_app(custom_agents=False)`` (``cockroach-play`` on an address other than this
machine's, without ``--allow-custom-agents``) refuses a seat other than ``human``, a
baseline or a shipped checkpoint: a ``module:Class`` seat imports code and a path seat
reads a file on the server. A seat path that names a pipe or a device is refused before
anything is read, and agents load in threads of their own, bounded in number and time.
The server holds the game: a view holds one seat's observation and the public events
(``cockroach_env.view.seat_view``), and nothing hidden until the game is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from importlib import resources
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from cockroach_env.art import art_sheet
from cockroach_env.cards import CARD_TYPES, ROYAL_IDENTITIES
from cockroach_env.config import PRESETS, GameConfig
from cockroach_env.encoding import keeps_moves, observation_option, without_moves
from cockroach_env.record import save_record
from play.session import HUMAN, MAX_PACE_MS, GameSession, MoveError, shown
from play.store import GameStore, StoreFull

log = logging.getLogger("cockroach_play")
MAX_LISTENERS = 8
"""Pages (WebSockets) one game serves at once."""
MAX_BODY_BYTES = 64 * 1024
"""The largest request body taken (a new game or a move is well under 1 KiB)."""
MAX_AGENT_LOADS = 4
"""Games whose agents load at once; more are refused (503) while they load."""
AGENT_LOAD_SECONDS = 60.0
"""A game whose agents take longer to load is refused (503); the load goes on in the background, still counted."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
TERMINAL_CLOSE_CODES = {4400, 4403, 4404, 4410, 4429}
"""WebSocket close codes after which the page does not reconnect (``app.js``)."""
SeatSpec = Annotated[str, Field(min_length=1, max_length=500)]


class NewGame(BaseModel):
    """The body of ``POST /api/games``."""

    model_config = ConfigDict(extra="forbid")
    preset: str = Field("classic", max_length=200, description="preset names joined by '+'")
    num_players: StrictInt | None = Field(None, ge=2, le=6)
    seats: list[SeatSpec] = Field(..., min_length=2, max_length=6, description="'human' or an agent spec, one per seat")
    seed: StrictInt | None = Field(None, ge=0, le=2**31 - 1)
    pace_ms: StrictInt = Field(800, ge=0, le=MAX_PACE_MS)


class MoveRequest(BaseModel):
    """The body of ``POST /api/games/{id}/move``."""

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
    """The body of ``POST /api/games/{id}/pace``."""

    model_config = ConfigDict(extra="forbid")
    token: str = Field(..., max_length=100)
    pace_ms: StrictInt = Field(..., ge=0, le=MAX_PACE_MS)


def _config(preset: str, num_players: int | None) -> GameConfig:
    options = {} if num_players is None else {"num_players": num_players}
    try:
        return GameConfig.from_options(preset=preset or None, **options)
    except (ValueError, TypeError) as error:
        raise HTTPException(422, f"rules preset={shown(preset)}, num_players={num_players!r}: {error}") from None


def _table_config(config: GameConfig, seats: list[str], checkpoints: dict[str, dict[str, Any]]) -> GameConfig:
    """The rules with ``recall=True`` or ``history=K`` if a seat plays a shipped agent that sees the game's history
    that way (the other agents then read the observation without it, ``training.load_agent``). Two seats that need
    different observation options cannot share a table: ``HTTPException`` 422 naming them.
    """
    needs: dict[str, GameConfig] = {}
    for spec in seats:
        game = checkpoints.get(spec)
        trained = GameConfig(**game) if game is not None else None
        if trained is not None and keeps_moves(trained) and without_moves(trained) == without_moves(config):
            needs[spec] = trained
    options = sorted({observation_option(trained) for trained in needs.values()})
    if len(options) > 1:
        named = ", ".join(f"{spec!r} needs {observation_option(trained)}" for spec, trained in needs.items())
        raise HTTPException(
            422,
            f"seats need different observations ({named}); expected agents that need at most one of {options} at "
            "one table",
        )
    if needs and not keeps_moves(config):
        return next(iter(needs.values()))
    return config


def _checkpoints() -> dict[str, dict[str, Any]]:
    """Shipped checkpoints and the rules each was trained for (metadata only, no torch)."""
    from training.core.checkpoint import read_metadata, shipped_checkpoints

    out = {}
    for name in shipped_checkpoints():
        with contextlib.suppress(Exception):
            out[name] = GameConfig(**read_metadata(name)["game_config"]).to_dict()  # every field, older checkpoints too
    return out


class PlayServer:
    """What the routes share: the games, where finished games are saved, which seats are taken, and the agents'
    driver (plays their moves, paced by the store's clock).
    """

    def __init__(self, store: GameStore, save_dir: str | None, custom_agents: bool):
        self.store = store
        self.save_dir = save_dir
        self.custom_agents = custom_agents
        self.checkpoints = _checkpoints()
        self.loading = threading.BoundedSemaphore(MAX_AGENT_LOADS)
        store.on_expire = self.stop

    @contextlib.asynccontextmanager
    async def lifespan(self, app: FastAPI):
        """Expire idle games while the app runs; stop every game's tasks and pages when it stops."""

        async def expire_forever():
            while True:
                await asyncio.sleep(min(60.0, self.store.idle_seconds / 2))
                self.store.expire()

        task = asyncio.create_task(expire_forever())
        yield
        task.cancel()
        for session in self.store:
            self.stop(session)

    def stop(self, session: GameSession) -> None:
        """A game is dropped: its driver stops and its pages are closed (4410)."""
        if session.driver is not None:
            session.driver.cancel()
        for queue in list(session.listeners):
            _tell(queue, None)

    def lookup(self, game_id: str, token: Any) -> tuple[GameSession, Any]:
        """The game and the token's seat; 404 or 403 naming the problem."""
        session = self.store.get(game_id)
        if session is None:
            raise HTTPException(
                404,
                f"no game {shown(game_id)} on this server "
                f"(it may have expired after {self.store.idle_seconds:.0f} s idle)",
            )
        try:
            seat = session.seat_of_token(token)
        except MoveError as error:
            raise HTTPException(error.status, str(error)) from None
        session.touch()
        return session, seat

    def check_seats(self, seats: list[str]) -> None:
        """422 for a seat this server does not take (``custom_agents=False``: only human, baselines, shipped)."""
        if self.custom_agents:
            return
        import baselines

        known = {HUMAN, *baselines.names(), *self.checkpoints}
        for k, spec in enumerate(seats):
            if spec not in known:
                raise HTTPException(
                    422,
                    f"seat player_{k}: agent {shown(spec)} is refused: this server takes only 'human', "
                    f"a baseline {baselines.names()} or a shipped checkpoint {sorted(self.checkpoints)} "
                    "(its owner can allow module:Class and paths with --allow-custom-agents)",
                )

    async def new_session(self, config: GameConfig, request: NewGame) -> GameSession:
        """Build the game and load its agents in a thread of its own: at most ``MAX_AGENT_LOADS`` at once, each
        awaited at most ``AGENT_LOAD_SECONDS`` (503 otherwise), so that slow loads never hold up the server.
        """
        if not self.loading.acquire(blocking=False):
            raise HTTPException(
                503, f"the server is loading the agents of {MAX_AGENT_LOADS} games already; try again in a moment"
            )
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future = loop.create_future()
        outcome.add_done_callback(lambda done: done.cancelled() or done.exception())  # a late failure is not logged

        def settle(result: Any, error: BaseException | None) -> None:
            if not outcome.done():
                outcome.set_exception(error) if error is not None else outcome.set_result(result)

        def load() -> None:
            result, failure = None, None
            try:
                result = GameSession(config, request.seats, request.seed, request.pace_ms, clock=self.store.clock)
            except BaseException as error:  # noqa: BLE001 - handed to the request that waits for it
                failure = error
            finally:
                self.loading.release()
            with contextlib.suppress(RuntimeError):  # the loop has closed: the server stopped meanwhile
                loop.call_soon_threadsafe(settle, result, failure)

        # a daemon thread: one stuck on a file that never ends does not keep the process from stopping
        threading.Thread(target=load, name="cockroach-play agent load", daemon=True).start()
        try:
            return await asyncio.wait_for(asyncio.shield(outcome), AGENT_LOAD_SECONDS)
        except ValueError as error:
            raise HTTPException(422, str(error)) from None
        except TimeoutError:
            raise HTTPException(
                503,
                f"loading the agents {shown(request.seats)} took more than {AGENT_LOAD_SECONDS:.0f} s; game refused",
            ) from None

    def changed(self, session: GameSession) -> None:
        """Save a game that just ended, and wake its pages."""
        if session.over and self.save_dir is not None and session.saved_path is None:
            path = os.path.join(self.save_dir, f"{time.strftime('%Y%m%d-%H%M%S')}-{session.game_id}.json")
            try:
                save_record(session.record(), path)
                session.saved_path = path
            except OSError as error:
                log.error("could not save the game record to %s: %s", path, error)
        for queue in list(session.listeners):
            _tell(queue, session.version)

    def start_agents(self, session: GameSession) -> None:
        """Play the agents' moves in the background, if no driver runs already."""
        if session.driver is None or session.driver.done():
            session.driver = asyncio.create_task(self.drive(session))

    async def drive(self, session: GameSession) -> None:
        """Play the agents' moves, paced, until a human is to act or the game ends."""
        clock = self.store.clock
        while True:
            seat = session.seat_to_act
            if seat is None or seat.human:
                return
            started = clock()
            while clock() - started < session.pace_ms / 1000:  # re-read: a pace change applies at once
                await asyncio.sleep(max(0.0, min(0.05, session.pace_ms / 1000 - (clock() - started))))
            await asyncio.sleep(0)
            if self.store.get(session.game_id) is not session:
                return
            try:
                session.agent_move()
            except Exception as error:  # noqa: BLE001 - a broken agent must not take the server down
                log.exception("agent %s failed in game %s", seat.label, session.game_id)
                # The exception's text stays in the server's log: an agent's message may hold its own cards.
                session.error = (
                    f"the agent {shown(seat.label)} at {seat.agent} failed ({type(error).__name__}; "
                    "the server's log has its message); the game cannot go on"
                )
                session.version += 1
                self.changed(session)
                return
            self.changed(session)


def create_app(
    store: GameStore | None = None,
    save_dir: str | None = None,
    custom_agents: bool = True,
    allowed_hosts: Iterable[str] | None = None,
) -> FastAPI:
    """The app; ``save_dir`` (if given) receives the record of every finished game; ``custom_agents=False``
    refuses seats other than ``human``, the baselines and the shipped checkpoints; ``allowed_hosts`` (if given)
    are the names a request's ``Host`` may give (the module docstring). Time is the store's clock.
    """
    store = store if store is not None else GameStore()
    if save_dir is not None:
        os.makedirs(save_dir, exist_ok=True)
    server = PlayServer(store, save_dir, custom_agents)
    app = FastAPI(title="cockroach-play", lifespan=server.lifespan)
    app.state.store = store
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_middleware(
        RequestGuard, allowed_hosts=None if allowed_hosts is None else {_host_name(h) for h in allowed_hosts}
    )
    static = resources.files("play") / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")
    app.include_router(_page_routes(server, static))
    app.include_router(_game_routes(server))
    app.include_router(_live_route(server))
    return app


def _page_routes(server: PlayServer, static: Any) -> APIRouter:
    """The page, the setup choices, the rules and the card drawings: nothing changes."""
    router = APIRouter()

    @router.get("/", response_class=HTMLResponse)
    async def index():
        return HTMLResponse((static / "index.html").read_text(encoding="utf-8"))

    @router.get("/api/setup")
    async def setup():
        import baselines

        return {
            "presets": sorted(PRESETS),
            "player_counts": [2, 3, 4, 5, 6],
            "baselines": baselines.names(),
            "checkpoints": server.checkpoints,
            "pace_ms": {"default": 800, "max": MAX_PACE_MS},
            "custom_agents": server.custom_agents,
        }

    @router.get("/api/rules")
    async def rules(preset: str = Query("classic", max_length=200), num_players: int | None = Query(None, ge=2, le=6)):
        import baselines

        config = _config(preset, num_players)
        fitting = [name for name, game in server.checkpoints.items() if without_moves(GameConfig(**game)) == config]
        return {"config": config.to_dict(), "agents": [HUMAN, *fitting, *baselines.names()]}

    @router.get("/api/art/{edition}")
    async def art(edition: Literal["classic", "royal"]):
        return art_sheet(CARD_TYPES if edition == "classic" else ROYAL_IDENTITIES)

    return router


def _game_routes(server: PlayServer) -> APIRouter:
    """Start a game, read a seat's view, play a move, change the pace, fetch the record or replay, end it."""
    router = APIRouter()
    store = server.store

    @router.post("/api/games")
    async def new_game(request: NewGame):
        server.check_seats(request.seats)
        players = request.num_players
        if players is None and not any("num_players" in PRESETS.get(name, {}) for name in request.preset.split("+")):
            players = len(request.seats)  # one seat per entry unless the preset fixes the count
        config = _table_config(_config(request.preset, players), request.seats, server.checkpoints)
        session = await server.new_session(config, request)
        try:
            game_id = store.add(session)
        except StoreFull as error:
            raise HTTPException(503, str(error)) from None
        server.start_agents(session)
        return {
            "game_id": game_id,
            "tokens": {s.agent: s.token for s in session.seats if s.human},
            "seats": [{"agent": s.agent, "label": s.label} for s in session.seats],
        }

    @router.get("/api/games/{game_id}")
    async def view(game_id: str, token: str = Query(..., max_length=100), log_from: int = Query(0, ge=0)):
        session, seat = server.lookup(game_id, token)
        return JSONResponse(session.view(seat, log_from))  # plain JSON data: skip FastAPI's slow generic encoder

    @router.post("/api/games/{game_id}/move")
    async def move(game_id: str, request: MoveRequest):
        session, seat = server.lookup(game_id, request.token)
        try:
            session.human_move(seat, request.model_dump(exclude={"token", "log_from", "version"}), request.version)
        except MoveError as error:
            raise HTTPException(error.status, str(error)) from None
        server.changed(session)
        server.start_agents(session)
        return JSONResponse(session.view(seat, request.log_from))

    @router.post("/api/games/{game_id}/pace")
    async def pace(game_id: str, request: PaceRequest):
        session, _ = server.lookup(game_id, request.token)
        session.set_pace(request.pace_ms)
        server.changed(session)
        return {"pace_ms": session.pace_ms}

    @router.get("/api/games/{game_id}/record")
    async def record(game_id: str, token: str = Query(..., max_length=100)):
        session, _ = server.lookup(game_id, token)
        if not session.over:
            raise HTTPException(409, "the record is available when the game is over (it holds every hidden card)")
        return JSONResponse(
            session.record(), headers={"Content-Disposition": f'attachment; filename="cockroach-{game_id}.json"'}
        )

    @router.get("/api/games/{game_id}/replay", response_class=HTMLResponse)
    async def replay(game_id: str, token: str = Query(..., max_length=100)):
        from play.replay import replay_html

        session, _ = server.lookup(game_id, token)
        if not session.over:
            raise HTTPException(409, "the replay is available when the game is over (it holds every hidden card)")
        html = await asyncio.to_thread(replay_html, session.record())
        return HTMLResponse(html, headers={"Content-Disposition": f'attachment; filename="cockroach-{game_id}.html"'})

    @router.delete("/api/games/{game_id}")
    async def close(game_id: str, token: str = Query(..., max_length=100)):
        server.lookup(game_id, token)
        store.remove(game_id)
        return {"closed": game_id}

    return router


def _live_route(server: PlayServer) -> APIRouter:
    """The WebSocket of one seat's page: a view after every change; any message from the page keeps the game alive.

    A refused socket is accepted, then closed with its code (a refusal before the handshake reaches the page as
    1006 on every server, indistinguishable from a network failure, so the page would keep reconnecting).
    """
    router = APIRouter()

    @router.websocket("/api/games/{game_id}/ws")
    async def live(websocket: WebSocket, game_id: str, token: str = ""):
        await websocket.accept()
        session = server.store.get(game_id)
        if session is None:
            await websocket.close(code=4404, reason="no such game (it may have expired)")
            return
        try:
            seat = session.seat_of_token(token)
        except MoveError:
            await websocket.close(code=4403, reason="wrong token")
            return
        if len(session.listeners) >= MAX_LISTENERS:
            await websocket.close(code=4429, reason=f"this game already has {MAX_LISTENERS} pages open")
            return
        session.touch()
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

    return router


async def _validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
    """422 naming each refused field, with the value given cut short (never a megabyte echoed, never a NaN)."""
    problems = []
    for item in error.errors()[:10]:
        where = ".".join(str(part) for part in item.get("loc", ()) if part != "body") or "body"
        given = f" (got {shown(item['input'])})" if "input" in item and item.get("type") != "missing" else ""
        problems.append(f"{where}: {item.get('msg', 'refused')}{given}")
    return JSONResponse({"detail": "; ".join(problems)}, status_code=422)


def _host_name(host: str) -> str:
    """The host part of a ``Host`` header or an address, lower case, without port or IPv6 brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        return host.partition(":")[0]
    return host


class RequestGuard:
    """ASGI middleware: a request must name an allowed ``Host``, a page of another origin may not change anything,
    and a body may not exceed ``MAX_BODY_BYTES`` (module docstring). A refused request reaches no route.
    """

    def __init__(self, app: Callable, allowed_hosts: set[str] | None):
        self.app = app
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        refusal = None
        if self.allowed_hosts is not None and _host_name(host) not in self.allowed_hosts:
            refusal = (
                400,
                4400,
                f"Host {shown(host)} is not this server's address; expected one of {sorted(self.allowed_hosts)} "
                "(the server's owner can add a name with cockroach-play --allow-host)",
            )
        elif "origin" in headers and (scope["type"] == "websocket" or scope["method"] not in ("GET", "HEAD")):
            origin = urlsplit(headers["origin"])
            if origin.scheme not in ("http", "https") or origin.netloc.lower() != host.lower():
                refusal = (403, 4403, f"a page of {shown(headers['origin'])} may not change games on this server")
        if refusal is not None:
            return await _refuse(scope, receive, send, *refusal)
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD"):
            return await self._bounded(scope, receive, send, headers)
        return await self.app(scope, receive, send)

    async def _bounded(self, scope, receive, send, headers):
        """Read the whole body (at most ``MAX_BODY_BYTES``), then hand it on; 413 past the limit."""
        too_large = (
            413,
            4413,
            f"the request body is over {MAX_BODY_BYTES} bytes; a request of this API is far smaller",
        )
        declared = headers.get("content-length", "0")
        if not declared.isdigit() or int(declared) > MAX_BODY_BYTES:
            return await _refuse(scope, receive, send, *too_large)
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                return await _refuse(scope, receive, send, *too_large)
            if not message.get("more_body", False):
                break
        delivered = False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


async def _refuse(scope, receive, send, status: int, close_code: int, message: str) -> None:
    """Answer ``status`` with ``{"detail": message}``; a WebSocket is accepted, then closed with ``close_code``."""
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        reason = message.encode("utf-8")[:120].decode("utf-8", errors="ignore")  # a close reason holds 123 bytes
        await send({"type": "websocket.close", "code": close_code, "reason": reason})
        return
    response = JSONResponse({"detail": message}, status_code=status)
    await response(scope, receive, send)


def _tell(queue: asyncio.Queue, value: Any) -> None:
    """Wake a page's sender; the latest view is read when it runs, so one pending wake-up is enough."""
    if value is None:
        with contextlib.suppress(asyncio.QueueEmpty):
            queue.get_nowait()
    with contextlib.suppress(asyncio.QueueFull):
        queue.put_nowait(value)
