"""The games a server holds: bounded in number, each expiring after an idle time.

A game is one env (its history is bounded by the game's length, which the rules make
finite) plus a few listeners. When the store is full, idle games are dropped first;
if none is idle the new game is refused (the server answers 503), never an old game
silently lost mid-play.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator

from play.session import GameSession


class StoreFull(RuntimeError):
    """The store holds ``max_games`` games, none of them idle: a new game is refused."""


class GameStore:
    """The games of one server, by id; ``clock`` (seconds, ``time.monotonic`` by default) measures idle time and the
    agents' pace, so that a test can drive time by hand.
    """

    def __init__(
        self,
        max_games: int = 64,
        idle_seconds: float = 1800.0,
        on_expire: Callable[[GameSession], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        if isinstance(max_games, bool) or not isinstance(max_games, int) or max_games < 1:
            raise ValueError(f"max_games={max_games!r} is not allowed; expected a positive integer")
        if isinstance(idle_seconds, bool) or not isinstance(idle_seconds, (int, float)) or not 0 < idle_seconds < 1e9:
            raise ValueError(f"idle_seconds={idle_seconds!r} is not allowed; expected a positive number of seconds")
        self.max_games = max_games
        self.idle_seconds = float(idle_seconds)
        self.clock = clock
        self._games: dict[str, GameSession] = {}
        self.on_expire = on_expire
        """Called with each game dropped (expired or closed), e.g. to stop its tasks."""

    def __len__(self) -> int:
        return len(self._games)

    def __iter__(self) -> Iterator[GameSession]:
        return iter(list(self._games.values()))

    def add(self, session: GameSession) -> str:
        self.expire()
        if len(self._games) >= self.max_games:
            raise StoreFull(
                f"the server already holds {self.max_games} games (the --max-games limit); finish or close one, "
                "or wait for idle games to expire"
            )
        game_id = secrets.token_urlsafe(9)
        self._games[game_id] = session
        session.game_id = game_id
        return game_id

    def get(self, game_id: str) -> GameSession | None:
        session = self._games.get(game_id)
        if session is not None and self._idle(session):
            self.remove(game_id)
            return None
        return session

    def remove(self, game_id: str) -> None:
        session = self._games.pop(game_id, None)
        if session is not None and self.on_expire is not None:
            self.on_expire(session)

    def expire(self) -> int:
        """Drop every game idle for longer than ``idle_seconds``; returns how many."""
        stale = [gid for gid, s in self._games.items() if self._idle(s)]
        for gid in stale:
            self.remove(gid)
        return len(stale)

    def _idle(self, session: GameSession) -> bool:
        return self.clock() - session.touched > self.idle_seconds
