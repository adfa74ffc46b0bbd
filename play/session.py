"""One game of ``cockroach-play``, held by the server: the env, who sits where, and
what each human seat may be shown. No web framework here.

A seat is ``"human"`` or an agent spec as the arena reads it (a baseline name,
``module:Class``, or a checkpoint path or shipped name such as ``classic-4p``,
loaded through ``training.load_agent``). Each human seat gets a secret token; a
view is computed for one token's seat (``cockroach_env.view.seat_view``, so it holds
that seat's observation and the public events only) until the game is over, when
the whole game is revealed.
"""

from __future__ import annotations

import glob
import os
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.encoding import apply_action
from cockroach_env.engine import IllegalMove
from cockroach_env.env import MOVE_KINDS, Move, raw_env
from cockroach_env.record import deal_of, game_record
from cockroach_env.view import describe_event, seat_view

HUMAN = "human"
MAX_PACE_MS = 10_000


class MoveError(ValueError):
    """A move the server refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class Seat:
    """One seat of a game: who plays it, and the secret token of a human seat."""

    agent: str
    """The env's agent name (``player_0``...)."""
    label: str
    """``human`` or the agent spec."""
    player: Any = None
    """The agent object (``None`` for a human seat)."""
    token: str | None = None

    @property
    def human(self) -> bool:
        return self.player is None


def build_seats(config: GameConfig, specs: list[str], seed: int) -> list[Seat]:
    """Resolve one spec per seat; ``ValueError`` naming the bad seat and spec."""
    from training.evaluation.lineup import ArenaError, resolve_agent

    if len(specs) != config.num_players:
        raise ValueError(f"seats has {len(specs)} entries for {config.num_players} players; expected one per seat")
    if HUMAN not in specs:
        raise ValueError(f"seats={shown(specs, 300)} has no human seat; expected at least one 'human'")
    for k, spec in enumerate(specs):
        problem = seat_file_problem(spec)
        if problem is not None:  # before any file is read: a pipe or a device would block the reader
            raise ValueError(f"seat player_{k}: {problem}")
    seats = []
    for k, spec in enumerate(specs):
        agent = f"player_{k}"
        if spec == HUMAN:
            seats.append(Seat(agent, HUMAN, None, secrets.token_urlsafe(18)))
            continue
        try:
            player = resolve_agent(spec, config, seed=seed * 1009 + k)
        except ArenaError as error:
            raise ValueError(f"seat {agent}: {error}") from None
        seats.append(Seat(agent, spec, player))
    return seats


def seat_file_problem(spec: str) -> str | None:
    """Why the files an agent spec may name hold something other than regular files (a pipe, a device), or None.

    Looked at by name and ``os.stat`` only, nothing is opened: the spec itself, ``P.json``, ``P.safetensors``,
    ``P.<G>.safetensors`` (a checkpoint ``P``) and, for a folder, the ``.json`` and ``.safetensors`` files in it.
    """
    import baselines

    if spec == HUMAN or spec in baselines.names() or ":" in spec and not os.path.exists(spec):
        return None
    stem = spec[: -len(".json")] if spec.endswith(".json") else spec
    candidates = [spec, f"{stem}.json", f"{stem}.safetensors", *glob.glob(f"{glob.escape(stem)}.*.safetensors")]
    if os.path.isdir(spec):
        with os.scandir(spec) as entries:
            candidates += [e.path for e in entries if e.name.endswith((".json", ".safetensors"))]
    for path in candidates:
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError):
            continue
        if not stat.S_ISREG(mode) and not (path == spec and stat.S_ISDIR(mode)):
            kind = (
                "a pipe"
                if stat.S_ISFIFO(mode)
                else "a device"
                if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "not a regular file"
            )
            return f"agent {shown(spec)}: {shown(path)} is {kind}; expected a checkpoint file (nothing was read)"
    return None


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for an error message, cut to about ``limit`` characters (a request may hold megabytes)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    length = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return f"{text[:limit]}...{length}"


class GameSession:
    """A game in progress on the server; ``clock`` (seconds) times its idleness (``GameStore.clock``)."""

    def __init__(
        self,
        config: GameConfig,
        specs: list[str],
        seed: int | None = None,
        pace_ms: int = 800,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.clock = clock
        self.seed = int(secrets.randbits(31)) if seed is None else seed
        self.seats = build_seats(config, specs, self.seed)
        self.config = config
        self.env = raw_env(config=config)
        self.env.reset(seed=self.seed)
        self.deal = deal_of(self.env)
        self.actions: list[int] = []
        self.pace_ms = check_pace(pace_ms)
        self.version = 0
        """Goes up with every change a page shows (a move, a pace change, an agent's failure)."""
        self.moved_at = 0
        """The version right after the latest move: a move chosen on an older view is refused."""
        self.created = self.touched = clock()
        self.saved_path: str | None = None
        self._reveal: dict[str, Any] | None = None
        self.game_id: str | None = None
        self.listeners: set = set()
        """One queue per connected page, told when the game changes (bounded by the server)."""
        self.error: str | None = None
        """Set when an agent seat failed: the game cannot go on."""
        self.driver: Any = None
        """The task that plays the agents' moves, while one runs."""

    # ------------------------------------------------------------------ seats
    def seat_of_token(self, token: Any) -> Seat:
        """The human seat whose token is ``token``; ``MoveError`` (403) for any other value."""
        if isinstance(token, str):
            for seat in self.seats:
                if seat.token is not None and secrets.compare_digest(seat.token, token):
                    return seat
        raise MoveError(403, "the token does not belong to a human seat of this game")

    @property
    def over(self) -> bool:
        return self.env.game.over or any(self.env.truncations.values())

    @property
    def seat_to_act(self) -> Seat | None:
        return None if self.over else self.seats[self.env.game.current]

    def touch(self) -> None:
        self.touched = self.clock()

    # ------------------------------------------------------------------ moves
    def agent_move(self) -> bool:
        """Play one agent move if an agent is to act; ``True`` if a move was played."""
        seat = self.seat_to_act
        if seat is None or seat.human:
            return False
        observation = self.env.observe(seat.agent)
        action = seat.player.act(observation)
        if not (0 <= int(action) < len(observation["action_mask"]) and observation["action_mask"][int(action)]):
            raise RuntimeError(f"agent {seat.label!r} at {seat.agent} chose illegal action {action!r}")
        self._step(int(action))
        return True

    def human_move(self, seat: Seat, move: dict[str, Any], version: int | None = None) -> None:
        """Apply ``move`` (a dict with ``kind`` and its fields) for ``seat``; ``MoveError`` changes nothing.

        ``version``, if given, is the version of the view the move was chosen on: if a move
        has been played since, the seat has not seen the table it would act on (a second
        click or key press could otherwise answer a card passed on meanwhile), so it is refused.
        """
        if self.over:
            raise MoveError(409, "the game is over; start a new game")
        if version is not None and version > self.version:
            raise MoveError(
                422,
                f"version={version} is ahead of the game (now at version {self.version}); "
                "expected the version of a view the server sent",
            )
        if version is not None and version < self.moved_at:
            raise MoveError(
                409,
                f"the move was chosen on version {version} of the game, but moves have been played since "
                f"(now at version {self.version}); look at the table again",
            )
        if self.seat_to_act is not seat:
            raise MoveError(409, f"it is not {seat.agent}'s turn; {self.seat_to_act.agent} is to act")
        action = self._action_of(seat, move)
        self._step(action)

    def _action_of(self, seat: Seat, move: dict[str, Any]) -> int:
        kind = move.get("kind")
        if kind not in MOVE_KINDS:
            raise MoveError(422, f"kind={kind!r} is not a move; expected one of {list(MOVE_KINDS)}")
        given = {k: v for k, v in move.items() if k != "kind" and v is not None}
        needed = {
            "offer": {"card", "target", "claim"},
            "call": {"believe"},
            "peek": set(),
            "pass": {"target", "claim"},
            "place": {"card"},
        }[kind]
        if set(given) != needed:
            raise MoveError(422, f"a {kind} move takes the field(s) {sorted(needed)}; got {sorted(given)}")
        try:
            action = self.env.encode(Move(kind, **given), actor=seat.agent)
        except (ValueError, TypeError) as error:
            raise MoveError(422, f"{kind} move {given}: {error}") from None
        if not self.env.observe(seat.agent)["action_mask"][action]:
            reason = "the rules do not allow it now"
            try:  # on a copy, to name the engine's reason; the game itself is untouched
                apply_action(self.env.game.copy(), self.env.encoding, action)
            except IllegalMove as refusal:
                reason = str(refusal)
            raise MoveError(422, f"illegal move {self.env.decode(action, actor=seat.agent)}: {reason}")
        return action

    def _step(self, action: int) -> None:
        self.env.step(action)
        self.actions.append(action)
        self.version += 1
        self.moved_at = self.version
        self.touch()

    def set_pace(self, pace_ms: Any) -> None:
        self.pace_ms = check_pace(pace_ms)
        self.version += 1

    # ------------------------------------------------------------------ views
    def legal(self, seat: Seat) -> dict[str, Any] | None:
        """The moves ``seat`` may make now, grouped for the page; ``None`` when it is not their turn."""
        if self.seat_to_act is not seat:
            return None
        env = self.env
        moves = env.legal_moves()
        offer = [m for m in moves if m.kind == "offer"]
        passes = [m for m in moves if m.kind == "pass"]
        return {
            "offer": {
                "cards": sorted({m.card for m in offer}, key=env.cards.index),
                "targets": sorted({m.target for m in offer}),
            }
            if offer
            else None,
            "call": any(m.kind == "call" for m in moves),
            "peek": any(m.kind == "peek" for m in moves),
            "pass": {"targets": sorted({m.target for m in passes})} if passes else None,
            "place": {"cards": [m.card for m in moves if m.kind == "place"]}
            if any(m.kind == "place" for m in moves)
            else None,
            "claims": list(env.cards.claims),
        }

    def view(self, seat: Seat, log_from: int = 0) -> dict[str, Any]:
        """Everything the page of ``seat`` shows: only that seat's observation and public events until the game is over.

        ``log`` holds the public events from index ``log_from`` on (a page that has the
        earlier ones asks only for the new ones; ``log_from`` is echoed back).
        """
        history = self.env.history
        log_from = min(max(0, log_from), len(history))
        view = {
            "version": self.version,
            "seat": seat.agent,
            "seats": [{"agent": s.agent, "label": s.label, "human": s.human} for s in self.seats],
            "config": self.config.to_dict(),
            "identities": list(self.env.cards.identities),
            "claims": list(self.env.cards.claims),
            "pace_ms": self.pace_ms,
            "table": seat_view(self.env, seat.agent),
            "legal": self.legal(seat),
            "log_from": log_from,
            "log": [
                {"index": k, "type": e["type"], "text": describe_event(e), "event": e}
                for k, e in enumerate(history[log_from:], start=log_from)
            ],
            "over": self.over,
            "reveal": self.reveal() if self.over else None,
            "saved": None if self.saved_path is None else os.path.basename(self.saved_path),
            "error": self.error,
        }
        return view

    def record(self) -> dict[str, Any]:
        players = {s.agent: s.label for s in self.seats}
        return game_record(self.env, self.deal, self.actions, players, {"source": "cockroach-play", "seed": self.seed})

    def reveal(self) -> dict[str, Any]:
        """After the game: every hand as dealt and at the end, every claim with its card, and each player's summary."""
        from play.narrative import claims, summary

        if self._reveal is not None:
            return self._reveal
        record = self.record()
        env = self.env
        self._reveal = {
            "loser": None if env.game.loser is None else env.possible_agents[env.game.loser],
            "loss_reason": env.game.loss_reason,
            "deal": record["deal"],
            "final": seat_view(env, None, full_information=True),
            "claims": claims(record, check=False),  # built here from the game itself
            "summary": summary(record, final_env=env),
        }
        return self._reveal


def check_pace(pace_ms: Any) -> int:
    """``pace_ms`` if it is an allowed pace; ``MoveError`` (422) naming it otherwise."""
    if isinstance(pace_ms, bool) or not isinstance(pace_ms, int) or not 0 <= pace_ms <= MAX_PACE_MS:
        raise MoveError(
            422, f"pace_ms={shown(pace_ms)} is not allowed; expected an integer from 0 (instant) to {MAX_PACE_MS}"
        )
    return pace_ms


def random_move(legal: dict, rng: np.random.Generator) -> dict:
    """A uniformly chosen request body for one of the moves in ``legal`` (a view's ``legal`` entry): what a load
    generator or a test client sends.
    """
    if legal["offer"]:
        o = legal["offer"]
        return {
            "kind": "offer",
            "card": str(rng.choice(o["cards"])),
            "target": str(rng.choice(o["targets"])),
            "claim": str(rng.choice(legal["claims"])),
        }
    if legal["call"]:
        options = [{"kind": "call", "believe": True}, {"kind": "call", "believe": False}] + (
            [{"kind": "peek"}] if legal["peek"] else []
        )
        return options[int(rng.integers(len(options)))]
    if legal["pass"]:
        return {
            "kind": "pass",
            "target": str(rng.choice(legal["pass"]["targets"])),
            "claim": str(rng.choice(legal["claims"])),
        }
    return {"kind": "place", "card": str(rng.choice(legal["place"]["cards"]))}
