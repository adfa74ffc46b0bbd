"""``GameConfig.recall`` and ``GameConfig.history`` for the batched engine: a move log per
game and the recall tail of the state and observation vectors, written in numpy after the
kernels (``_RecallLog``).

The kernels know nothing of recall: they write every segment before ``dealt_hands``
(``_Rules.state_size`` / ``observation_size``). This log keeps, per game, what the recall
segments are made of, and writes them after each ``reset``, ``step`` and ``state()``:

* from the deal (``start``, when a game is dealt or dealt again): the hands as dealt,
  the starter and the opening collections (the queued deal's arrays);
* one slot per decision (``record``, after a step the backend accepted): the actor and
  ``Encoding.public_move(action)`` (from the state before the step), the card a call
  revealed (the card in play before it) and, Royal, the face-up penalty card after the
  move (the penalty deck after it). A game that ended in the step gets no slot: its row
  already belongs to its new game, whose log starts empty.

This is what ``encoding.recall_moves`` reads from ``Game.events`` for the AEC env, entry
for entry (``tests/test_recall_batched.py`` compares them step by step). The log always
holds every decision of the game (``max_decisions`` of them); with a ``history`` window
the vectors get only its last ``K`` entries, newest first.
"""

from __future__ import annotations

import copy

import numpy as np

from cockroach_env.batched.deals import _Deals
from cockroach_env.batched.layout import CARD, CURRENT, PENALTY_END, PENALTY_TOP, _Rules
from cockroach_env.batched.state import _State
from cockroach_env.batched.window_kernels import write_move_slots
from cockroach_env.encoding import Encoding
from cockroach_env.window import EMPTY, WINDOW_DTYPE, window_layout

_GAME_ROWS = ("dealt_hands", "starter", "opening_collections", "count", "actor", "public", "revealed", "top")
"""The log's arrays with one row per game."""


class _RecallLog:
    """The recall record of ``B`` games: their deals' hands, starters, opening collections and move logs."""

    def __init__(self, rules: _Rules, encoding: Encoding, batch_size: int, compiled: bool = False):
        """``compiled``: write the observations' move slots in one compiled pass (``window_kernels``; the numba
        backend's choice), else with numpy index arrays.
        """
        b, n, i, length = batch_size, rules.n, rules.i, rules.recall_length
        self.compiled = compiled and write_move_slots is not None
        self.rules = rules
        self.length = length
        self.opening = "opening_collections" in rules.recall_state
        self.dealt_hands = np.zeros((b, n, i), np.int8)
        self.starter = np.zeros(b, np.int64)
        self.opening_collections = np.zeros((b, n, i), np.int8) if self.opening else None
        self.count = np.zeros(b, np.int64)
        """Decisions logged so far in the current game of each row."""
        self.actor = np.zeros((b, length), np.int8)
        self.public = np.zeros((b, length), np.int16)
        self.revealed = np.full((b, length), -1, np.int8)
        self.top = np.full((b, length), -1, np.int8)
        self.public_move = np.array([encoding.public_move(a) for a in range(encoding.num_actions)], np.int16)
        """``Encoding.public_move`` of every action index."""
        layout = window_layout(encoding.config)
        self.window_shape = layout.shape if layout is not None else (0, 0)
        """(slots, fields) of ``window``'s rows."""
        self.calls = np.zeros(encoding.num_actions, bool)
        self.calls[encoding.respond_start : encoding.respond_start + 2] = True
        """The actions that reveal the card in play (believe, disbelieve)."""

    def arrays(self) -> tuple[np.ndarray, ...]:
        arrays = (
            self.dealt_hands,
            self.starter,
            self.opening_collections,
            self.count,
            self.actor,
            self.public,
            self.revealed,
            self.top,
        )
        return tuple(a for a in arrays if a is not None)

    def taken(self, games: np.ndarray) -> _RecallLog:
        """A log of the games ``games`` only, in that order (their rows copied; the tables shared)."""
        log = copy.copy(self)
        for name in _GAME_ROWS:
            rows = getattr(self, name)
            if rows is not None:
                setattr(log, name, rows[games])
        return log

    @staticmethod
    def joined(logs: list[_RecallLog]) -> _RecallLog:
        """One log of the games of ``logs`` (logs of the same rules), in order."""
        log = copy.copy(logs[0])
        for name in _GAME_ROWS:
            if getattr(log, name) is not None:
                setattr(log, name, np.concatenate([getattr(part, name) for part in logs]))
        return log

    @property
    def bytes_per_game(self) -> int:
        return sum(a.nbytes // a.shape[0] for a in self.arrays())

    # ------------------------------------------------------------ the record
    def start(self, games: np.ndarray, deals: _Deals, slots: np.ndarray) -> None:
        """Games ``games`` were dealt the queued deals at ``slots``: their logs start empty."""
        self.dealt_hands[games] = deals.hands[slots]
        self.starter[games] = deals.starter[slots]
        if self.opening:
            self.opening_collections[games] = deals.collections[slots]
        self.count[games] = 0

    def before(self, state: _State) -> tuple[np.ndarray, np.ndarray]:
        """What a step's slot needs from the state before it: the seat to act and the card in play."""
        return state.info[:, CURRENT].astype(np.int64), state.info[:, CARD].copy()

    def record(
        self,
        actions: np.ndarray,
        before: tuple[np.ndarray, np.ndarray],
        done: np.ndarray,
        state: _State,
        rows: np.ndarray | None = None,
    ) -> None:
        """Log the step's decision of every game that did not end in it (``actions`` were all legal).

        ``rows``: the step moved only these games of the log (``actions``, ``before``, ``done``
        and ``state`` have one row per entry of ``rows``); None: every game.
        """
        actor, card = before
        stepped = np.flatnonzero(~done)
        games = stepped if rows is None else rows[stepped]
        slot = self.count[games]
        if slot.size and slot.max() >= self.length:  # encoding.max_decisions bounds a game's decisions
            raise RuntimeError(
                f"game {int(games[np.argmax(slot)])} made more than max_decisions={self.length} decisions; the bound "
                "in cockroach_env.encoding is wrong"
            )
        act = actions[stepped]
        self.actor[games, slot] = actor[stepped]
        self.public[games, slot] = self.public_move[act]
        self.revealed[games, slot] = np.where(self.calls[act], card[stepped], -1)
        if self.rules.royal:
            top, end = state.info[stepped, PENALTY_TOP].astype(np.int64), state.info[stepped, PENALTY_END]
            face_up = state.penalty[stepped, np.minimum(top, self.rules.penalty_capacity - 1)]
            self.top[games, slot] = np.where(top < end, face_up, -1)
        self.count[games] = slot + 1

    # ------------------------------------------------------------ the vectors
    def write_observations(self, out: np.ndarray, viewer: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """The recall segments of every game's observation by seat ``viewer[b]`` into ``out`` (B, O), zeros there
        already. ``rows``: ``out`` holds only these games of the log, one row each; None: every game.

        Returns the observations' move slots as ``cockroach_env.window`` indices (B, slots, fields).
        """
        viewer = viewer.astype(np.int64)
        if not self.compiled:
            self._write(out, self.rules.recall_observation, viewer, own=True, rows=rows)
            return self._window(viewer, rows)
        self._write(out, self.rules.recall_observation, viewer, own=True, rows=rows, moves=False)
        r, at = self.rules, self.rules.recall_observation
        starts = np.array([at["move_actor"], at["move_public"], at["move_revealed"], at.get("move_top", -1)])
        window = np.empty((len(out), *self.window_shape), WINDOW_DTYPE)
        logged = np.arange(len(out)) if rows is None else rows.astype(np.int64)
        write_move_slots(
            self.count, self.actor, self.public, self.revealed, self.top, logged, viewer, r.history, r.n,
            r.recall_moves, r.i, starts, out, window,
        )  # fmt: skip
        return window

    def write_states(self, out: np.ndarray) -> None:
        """The recall segments of every game's full state into ``out`` (B, S or more), zeros there already."""
        self._write(out, self.rules.recall_state, np.zeros(len(out), np.int64), own=False)

    def _write(
        self,
        out: np.ndarray,
        at: dict[str, int],
        viewer: np.ndarray,
        own: bool,
        rows: np.ndarray | None = None,
        moves: bool = True,
    ) -> None:
        """Seats counted from ``viewer`` (zero: absolute); ``own``: only the viewer's dealt hand; ``rows``: the log's
        game of each row of ``out`` (None: row b is game b); ``moves``: the move slots too.
        """
        if not out.flags.c_contiguous:
            raise ValueError("the recall segments are written through flat indices; expected a C-contiguous array")
        r, b, width = self.rules, len(out), out.shape[1]
        n, i = r.n, r.i
        logged = np.arange(b) if rows is None else rows
        seats = (viewer[:, None] + np.arange(n)) % n  # seats[b, rel]: the absolute seat at ego-centric position rel
        if own:
            out[:, at["dealt_hand"] : at["dealt_hand"] + i] = self.dealt_hands[logged, viewer]
        else:
            out[:, at["dealt_hands"] : at["dealt_hands"] + n * i] = self.dealt_hands[logged].reshape(b, -1)
        out[np.arange(b), at["starter"] + (self.starter[logged] - viewer) % n] = 1.0
        if self.opening:
            out[:, at["opening_collections"] : at["opening_collections"] + n * i] = self.opening_collections[
                logged[:, None], seats
            ].reshape(b, -1)
        if not moves:
            return
        game, slot, entry = self._filled(self.count[logged])
        flat = out.reshape(-1)  # a view: out is C-contiguous (checked above)
        base = game * width
        source = logged[game]  # the log's game behind each written slot
        flat[base + at["move_actor"] + slot * n + (self.actor[source, entry] - viewer[game]) % n] = 1.0
        flat[base + at["move_public"] + slot * r.recall_moves + self.public[source, entry]] = 1.0
        revealed = self.revealed[source, entry].astype(np.int64)
        shown = revealed >= 0
        flat[(base + at["move_revealed"] + slot * i + revealed)[shown]] = 1.0
        if "move_top" in at:
            top = self.top[source, entry].astype(np.int64)
            shown = top >= 0
            flat[(base + at["move_top"] + slot * i + top)[shown]] = 1.0

    def _filled(self, count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(game, slot, entry)`` of every filled move slot of games with ``count`` logged decisions: the row, the
        slot and the log entry behind it.
        """
        if self.rules.history:  # slot k: the k-th most recent decision, as far as the game has made that many
            game, slot = np.nonzero(np.arange(self.rules.history) < count[:, None])
            return game, slot, count[game] - 1 - slot
        # slot k: decision k, for every logged decision of every game
        game, slot = np.nonzero(np.arange(self.length) < count[:, None])
        return game, slot, slot

    def _window(self, viewer: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        """(B, slots, fields) ``cockroach_env.window`` indices of the move slots that ``_write`` writes one-hot: actor
        offset, public move, revealed card, Royal face-up penalty card; -1 where empty.
        """
        r = self.rules
        logged = np.arange(len(viewer)) if rows is None else rows
        out = np.full((len(viewer), *self.window_shape), EMPTY, WINDOW_DTYPE)
        game, slot, entry = self._filled(self.count[logged])
        source = logged[game]
        out[game, slot, 0] = (self.actor[source, entry] - viewer[game]) % r.n
        out[game, slot, 1] = self.public[source, entry]
        out[game, slot, 2] = self.revealed[source, entry]
        if r.royal:
            out[game, slot, 3] = self.top[source, entry]
        return out
