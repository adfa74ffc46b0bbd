"""``SeatedGames``: one learner seat in each of ``B`` batched games; the other seats moved inside, in batches.

The library-independent core of every vector env. ``BatchedGames`` steps every game at
once; here the learner's games wait while the opponents move in the others, so a step
moves a subset of the games: their rows are gathered into a scratch batch, stepped by
the engine's own backend, and scattered back. Games that end are dealt again from the
engine's deal queue, in the order they end (with one game, exactly ``BatchedGames``
driven directly).

With a ``history`` window the engine's move log (``batched.recall._RecallLog``) is kept
here too: the decision of every stepped row is logged, a game's log starts when it is
dealt or dealt again, and the window is written into the observation of the seat to act,
learner or opponent, as ``BatchedGames`` and the AEC env write it. ``recall=True`` (every
decision of the game) is refused: its observation is too large for batches of games.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cockroach_env.batched import BatchedGames
from cockroach_env.batched.layout import BatchStep
from cockroach_env.batched.numpy_backend import _NumpyBackend
from cockroach_env.batched.recall import _RecallLog
from cockroach_env.batched.state import _State
from cockroach_env.config import GameConfig, check_seed
from cockroach_env.engine import Deal
from cockroach_env.env import ILLEGAL_ACTION_MODES, IllegalActionError, raw_env
from cockroach_env.vector.opponents import Opponents
from cockroach_env.vector.rows import byte_rows, gather, scatter

REDEALS = 100
"""How many games in a row one slot may deal that end before the learner's first decision before a step refuses."""

MAX_NUM_ENVS = 2**20
"""The most games one vector env plays at once; a larger count is refused before anything is allocated."""

INFO_KEYS = ("learner_seat", "loser", "loss_reason", "illegal_move", "offender", "truncated_at_step")
"""The per-env info of every step: the env's ``INFO_DEFAULTS`` keys (numbers, -1 while unset) and the learner's seat."""


@dataclass
class SeatStep:
    """What one step of ``SeatedGames`` gives, batch first (fresh arrays, owned by the caller)."""

    observation: np.ndarray
    """(B, O) float32: the learner's observation at its next decision (in a new game where ``done``)."""
    action_mask: np.ndarray
    """(B, A) int8: the learner's legal actions there."""
    reward: np.ndarray
    """(B,) float32: the learner's reward of the game that ended in this step, 0 elsewhere."""
    terminated: np.ndarray
    """(B,) bool: the learner's game ended by the rules (or by its penalized illegal action)."""
    truncated: np.ndarray
    """(B,) bool: ``max_steps`` cut the learner's game."""
    final_observation: np.ndarray
    """(B, O) float32: where ``done``, the learner's observation of the final state of the game that ended."""
    info: dict[str, np.ndarray]
    """``INFO_KEYS``, each (B,) int64 (``illegal_move`` bool): where ``done``, of the game that ended."""
    learner_seat: np.ndarray
    """(B,) int64: the learner's seat in the game it now plays (the new one where ``done``)."""

    @property
    def done(self) -> np.ndarray:
        return self.terminated | self.truncated


def game_config(config: GameConfig | None, options: dict[str, Any]) -> GameConfig:
    """The rules that ``config`` and the game options (``preset``, ``num_players``, ...) name, as the env reads them."""
    return raw_env(config=config, **options).config


class SeatedGames:
    """``num_envs`` games; in each the learner holds one seat and ``opponents`` play the others.

    ``learner_seat``: a seat (0 to N-1) for every game, or None to draw it per game.
    ``illegal_action``: ``"raise"`` refuses a masked-out learner action with
    ``IllegalActionError`` naming the sub-environment, the action and its move, and
    changes nothing; ``"penalize"`` ends that game instead (-1 for the learner).
    """

    def __init__(
        self,
        num_envs: int,
        opponents: Any,
        *,
        seed: int | None = None,
        learner_seat: int | None = None,
        illegal_action: str = "raise",
        config: GameConfig | None = None,
        **game_options: Any,
    ):
        if (
            isinstance(num_envs, (bool, np.bool_))
            or not isinstance(num_envs, (int, np.integer))
            or not 1 <= num_envs <= MAX_NUM_ENVS
        ):
            raise ValueError(
                f"num_envs={num_envs!r} is not allowed; expected a positive integer (games played at once) "
                f"of at most {MAX_NUM_ENVS:,} (MAX_NUM_ENVS)"
            )
        self.seed = check_seed("seed", seed)
        self.config = game_config(config, game_options)
        n = self.config.num_players
        if self.config.recall:  # every decision of the game in every observation: too large for batches
            raise ValueError(
                "recall=True is not supported by the vector envs; expected a rule set without recall, or a window of "
                "the last K decisions with history=K (or use cockroach_env.env or cockroach_env.batched.BatchedGames)"
            )
        if learner_seat is not None and (
            isinstance(learner_seat, (bool, np.bool_))
            or not isinstance(learner_seat, (int, np.integer))
            or not 0 <= learner_seat < n
        ):
            raise ValueError(f"learner_seat={learner_seat!r} is not allowed; expected None or a seat from 0 to {n - 1}")
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(
                f"illegal_action={illegal_action!r} is not allowed; expected one of {ILLEGAL_ACTION_MODES}"
            )
        self.num_envs = int(num_envs)
        self.learner_seat = learner_seat
        self.illegal_action = illegal_action
        self.opponents = Opponents(opponents, self.config)
        self.games = BatchedGames(self.config, self.num_envs, seed=self.seed)
        self.encoding = self.games.encoding
        self.rules = self.games.rules
        self._recall: _RecallLog | None = self.games._recall
        """``history``: the engine's move log, kept for the rows stepped here; None without a window."""
        scratch = _State(self.rules, self.num_envs)
        engine = self.games._backend
        self._backend = (
            type(engine)(self.rules, scratch, False) if engine.name == "numba" else _NumpyBackend(self.rules, scratch)
        )
        self._scratch = scratch
        self._whole_bytes, self._scratch_bytes = byte_rows(self.games._state), byte_rows(scratch)
        """The engine's state arrays and the scratch batch's as byte rows (``rows.py``): gathered and scattered."""
        self._parts: dict[int, _State] = {}
        self._outputs: dict[int, BatchStep] = {}
        b, o, a = self.num_envs, self.encoding.observation.size, self.rules.num_actions
        self._to_act = np.zeros(b, np.int64)
        self._observation = np.zeros((b, o), np.float32)
        self._mask = np.zeros((b, a), np.int8)
        self._learner = np.zeros(b, np.int64)
        self._entrant = np.zeros((b, n), np.int64)
        self._member = np.full((b, n), -1, np.int64)
        self._rng = np.random.default_rng(self.seed)
        self._started = False
        self._closed = False
        self._dealt: list[tuple[np.ndarray, np.ndarray, Any]] = []
        self._endings: list[tuple[np.ndarray, list[np.ndarray], np.ndarray, np.ndarray, _RecallLog | None]] = []
        """Games that ended in the current step, as they were before their last move, with their move logs (for
        ``_final_observations``).
        """

    # ------------------------------------------------------------------ public
    @property
    def observation(self) -> np.ndarray:
        """(B, O) float32: the learner's current observation in every game (a copy)."""
        return self._observation.copy()

    @property
    def action_mask(self) -> np.ndarray:
        """(B, A) int8: the learner's current legal actions in every game (a copy)."""
        return self._mask.copy()

    @property
    def learner(self) -> np.ndarray:
        """(B,) int64: the learner's seat in each game."""
        return self._learner.copy()

    @property
    def last_deals(self) -> dict[int, Deal]:
        """``{game: engine.Deal}`` of the games dealt by the latest ``reset`` or ``step`` (the last deal of each)."""
        out: dict[int, Deal] = {}
        for games, slots, deals in self._dealt:
            out.update({int(g): deals.deal(int(k)) for g, k in zip(games, slots)})
        return out

    def reset(self, seed: int | None = None) -> SeatStep:
        """Deal every game afresh; opponents move until the learner is to act in each. ``seed`` reseeds everything."""
        self.check_open("reset")
        seed = check_seed("seed", seed)
        if seed is not None:
            self._rng = np.random.default_rng([seed, 1])
            self.opponents.reseed(seed)
        first = self.games.reset(seed=seed)
        self._dealt = [(np.arange(self.num_envs), self.games._dealt_slots, self.games._dealt_from)]
        self._to_act[:] = first.to_act
        self._observation[:] = first.observation
        self._mask[:] = first.action_mask
        everything = np.arange(self.num_envs)
        self._new_games(everything)
        self._started = True
        out = self._empty_step()
        self._endings = []
        self._play_opponents(out, reported=np.ones(self.num_envs, bool))
        return self._finish(out)

    def step(self, actions: Any, waiting: np.ndarray | None = None) -> SeatStep:
        """The learner's action in every game, then the opponents' until the learner is to act again everywhere.

        ``waiting``: (B,) bool, the games that stay as they are in this step (their action is ignored, whatever it
        is): Gymnasium's ``NEXT_STEP`` autoreset, where the step after a game ended only shows the new game.
        """
        self.check_open("step")
        if not self._started:
            raise ValueError("step() called before reset(); call reset() first")
        actions, given = self._check_actions(actions)
        b = self.num_envs
        out = self._empty_step()
        self._endings, self._dealt = [], []
        legal = self._mask[np.arange(b), np.clip(actions, 0, self.rules.num_actions - 1)] > 0
        legal &= (actions >= 0) & (actions < self.rules.num_actions)
        moving = legal if waiting is None else legal & ~waiting
        refused = ~legal if waiting is None else ~legal & ~waiting
        if refused.any():
            bad = np.flatnonzero(refused)
            if self.illegal_action == "raise":
                raise self._refusal(int(bad[0]), given[bad[0]])
            self._penalize(bad, out)
        rows = np.flatnonzero(moving)
        reported = ~moving
        if rows.size:
            try:
                self._step_rows(rows, actions[rows], out, reported)
            except _Refused as refused:  # the learner's actions were checked: this is an internal error
                g = int(rows[refused.row])
                raise ValueError(self.games._illegal_message(g, int(actions[g]))) from None
        self._play_opponents(out, reported)
        return self._finish(out)

    def set_opponents(self, opponents: Any) -> None:
        """Seat ``opponents`` (anything the constructor takes) from the next step on; validated first, and a refusal
        changes nothing. Every opponent seat of every game in progress draws its agent again from the new table.
        """
        self.check_open("set_opponents")
        table = Opponents(opponents, self.config)
        self.opponents = table
        if self._started:
            self._draw_opponents(np.arange(self.num_envs))

    def close(self) -> None:
        """Refuse every later ``reset`` and ``step`` (the vector envs' ``close()``)."""
        self._closed = True

    def check_open(self, call: str) -> None:
        """``RuntimeError`` naming ``call`` if ``close()`` was called."""
        if self._closed:
            raise RuntimeError(f"{call}() called after close(); the env is closed, expected a new env")

    def describe_action(self, env: int, action: int) -> str:
        """The move ``action`` means for the learner of game ``env`` now, in words."""
        return self.games.describe_action(env, action)

    # ------------------------------------------------------------------ internals
    def _check_actions(self, actions: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(actions as int64, the actions as given)``: a value int64 cannot hold (a uint64 or float action of 2**63
        or more) becomes -1, an illegal action that is reported by its given value.
        """
        array = np.asarray(actions)
        if array.shape == (self.num_envs, 1):
            array = array.reshape(self.num_envs)
        if array.shape != (self.num_envs,):
            raise ValueError(
                f"actions of shape {array.shape} are not allowed; "
                f"expected ({self.num_envs},), one action per sub-environment"
            )
        if array.dtype.kind == "i":
            return array.astype(np.int64, copy=False), array
        if array.dtype.kind not in "uf" or (
            array.dtype.kind == "f" and not (np.all(np.isfinite(array)) and np.all(array == np.round(array)))
        ):
            raise ValueError(f"actions of dtype {array.dtype} are not allowed; expected integers")
        fits = (array >= 0) & (array < self.rules.num_actions)  # the legal range; anything else is refused anyway
        return np.where(fits, array, -1).astype(np.int64), array

    def _refusal(self, env: int, given: Any) -> IllegalActionError:
        action = int(given)  # the value as given: a uint64 or an integral float, exactly
        seat = int(self._learner[env])
        agent = f"sub-environment {env} (the learner, seat {seat})"
        if not 0 <= action < self.rules.num_actions:
            return IllegalActionError(
                agent, action, None, f"out of range; expected an integer in [0, {self.rules.num_actions})"
            )
        why = self.games._illegal_message(env, action).partition(" is illegal: ")[2]  # the engine's reason
        return IllegalActionError(agent, action, self.describe_action(env, action), why)

    def _empty_step(self) -> SeatStep:
        b = self.num_envs
        info = {key: np.full(b, -1, np.int64) for key in INFO_KEYS}
        info["illegal_move"] = np.zeros(b, bool)
        return SeatStep(
            observation=np.empty(0, np.float32),
            action_mask=np.empty(0, np.int8),
            reward=np.zeros(b, np.float32),
            terminated=np.zeros(b, bool),
            truncated=np.zeros(b, bool),
            final_observation=np.zeros((b, self.encoding.observation.size), np.float32),
            info=info,
            learner_seat=np.empty(0, np.int64),
        )

    def _finish(self, out: SeatStep) -> SeatStep:
        self._final_observations(out)
        out.observation = self._observation.copy()
        out.action_mask = self._mask.copy()
        out.learner_seat = self._learner.copy()
        done = out.done
        out.info["learner_seat"][~done] = out.learner_seat[~done]
        return out

    def _new_games(self, rows: np.ndarray) -> None:
        """Seat the learner and draw the opponents of the games just dealt in ``rows``."""
        n = self.config.num_players
        self._learner[rows] = (
            self.learner_seat if self.learner_seat is not None else self._rng.integers(n, size=rows.size)
        )
        self._draw_opponents(rows)

    def _draw_opponents(self, rows: np.ndarray) -> None:
        """Draw the agent of every seat but the learner's in the games ``rows``."""
        self._entrant[rows], self._member[rows] = self.opponents.draw(self._rng, rows.size, self.config.num_players)
        self._entrant[rows, self._learner[rows]] = -1
        self._member[rows, self._learner[rows]] = -1

    def _play_opponents(self, out: SeatStep, reported: np.ndarray) -> None:
        """Opponents move, in batches, in every game where the learner is not to act, until it is everywhere."""
        endings = np.zeros(self.num_envs, np.int64)
        while True:
            rows = np.flatnonzero(self._to_act != self._learner)
            if rows.size == 0:
                return
            seats = self._to_act[rows]
            if self.opponents.single:  # one agent at every seat: no (agent, member) groups to read
                entrant = member = None
                actions = self.opponents.act_single(self._observation[rows], self._mask[rows])
            else:
                entrant, member = self._entrant[rows, seats], self._member[rows, seats]
                actions = self.opponents.act(entrant, member, self._observation[rows], self._mask[rows])
            try:  # the engine checks every action before it changes anything
                ended = self._step_rows(rows, actions, out, reported)
            except _Refused as refused:
                bad = refused.row
                if entrant is None:
                    entrant, member = self._entrant[rows, seats], self._member[rows, seats]
                g, action = int(rows[bad]), int(actions[bad])
                move = f" = {self.describe_action(g, action)}" if 0 <= action < self.rules.num_actions else ""
                raise ValueError(
                    f"opponent {self.opponents.name_of(int(entrant[bad]), int(member[bad]))} (sub-environment {g}, "
                    f"seat {int(seats[bad])}) returned action {action}{move}, which its action mask does not allow; "
                    "an agent must return one of the actions its action_mask allows"
                ) from None
            if ended.size == 0:
                continue
            endings[ended] += 1
            if endings[ended].max() > REDEALS:
                g = int(np.argmax(endings))
                raise ValueError(
                    f"sub-environment {g}: the learner had no decision in {REDEALS} games in a row (max_steps="
                    f"{self.config.max_steps}, starter={self.config.starter}); "
                    "expected a table where every seat gets to decide"
                )

    def _step_rows(self, rows: np.ndarray, actions: np.ndarray, out: SeatStep, reported: np.ndarray) -> np.ndarray:
        """Step the games ``rows`` with ``actions``; settle the learner's result of games that end; return them."""
        k = rows.size
        part = self._part(k)
        gather(rows, self._whole_bytes, self._scratch_bytes)
        step = self._outputs.get(k)
        if step is None:  # the backend writes every entry of its outputs, which are copied out below
            step = self._outputs[k] = _batch_step(self.rules, k)
        queue = self.games._queue
        queue.ensure(self.num_envs)
        recall = self._recall
        before = recall.before(part) if recall is not None else None
        bad, dealt = self._backend_step(part, actions, step)
        if bad >= 0:  # nothing changed: the whole state still holds these games as they were
            raise _Refused(bad)
        if dealt:
            done = np.flatnonzero(step.done)
            ended = rows[done]
            first = ~reported[ended]
            if first.any():  # the whole state still holds these games before the move, for the final observation
                whole = self.games._state.arrays()
                settle, j = ended[first], done[first]
                seat = self._learner[settle]
                out.reward[settle] = step.rewards[j, seat]
                out.info["learner_seat"][settle] = seat
                out.truncated[settle] = step.truncated[j]
                out.terminated[settle] = ~step.truncated[j]
                out.info["loser"][settle] = step.loser[j]
                out.info["loss_reason"][settle] = step.loss_reason[j]
                out.info["truncated_at_step"][settle] = np.where(step.truncated[j], self.config.max_steps or -1, -1)
                log = recall.taken(settle) if recall is not None else None
                self._endings.append((settle, [full[settle] for full in whole], actions[j], seat, log))
                reported[settle] = True
        else:
            ended = _NO_GAMES
        scatter(rows, self._scratch_bytes, self._whole_bytes)
        slots = queue.take(dealt)
        self.games._remember_deals(ended, slots)
        if dealt:
            self._dealt.append((ended, slots, queue.deals))
        self._to_act[rows] = step.to_act
        if recall is None:  # the hot path: the backend's observations are the whole observations
            self._observation[rows] = step.observation
        else:
            recall.record(actions, before, step.done, part, rows)
            recall.start(ended, queue.deals, slots)
            self._observation[rows] = self._with_window(rows, step)
        self._mask[rows] = step.action_mask
        if dealt:
            self._new_games(ended)
        return ended

    def _with_window(self, rows: np.ndarray, step: BatchStep) -> np.ndarray:
        """``history``: the observations of the games ``rows`` by their seat to act, the window after the backend's
        part.
        """
        view = np.zeros((rows.size, self.encoding.observation.size), np.float32)
        view[:, : self.rules.observation_size] = step.observation
        self._recall.write_observations(view, step.to_act, rows)
        return view

    def _part(self, k: int) -> _State:
        """The first ``k`` rows of the scratch batch, as a ``_State`` the backends step."""
        part = self._parts.get(k)
        if part is None:
            part = self._parts[k] = object.__new__(_State)
            for name, array in vars(self._scratch).items():
                setattr(part, name, array[:k])
        return part

    def _backend_step(self, part: _State, actions: np.ndarray, step: BatchStep) -> tuple[int, int]:
        self._backend.state = part
        return self._backend.step(np.ascontiguousarray(actions, np.int64), step, self.games._queue)

    def _final_observations(self, out: SeatStep) -> None:
        """The learner's observation of the final state of the games that ended (their last move, not dealt again)."""
        if not self._endings:
            return
        rows = np.concatenate([e[0] for e in self._endings])
        before = [np.concatenate(parts) for parts in zip(*(e[1] for e in self._endings))]
        actions = np.concatenate([e[2] for e in self._endings])
        seats = np.concatenate([e[3] for e in self._endings])
        logs = [e[4] for e in self._endings]
        self._endings = []
        m = len(actions)
        state = _State(self.rules, m)
        for whole, piece in zip(state.arrays(), before):
            whole[:] = piece
        log = _RecallLog.joined(logs) if self._recall is not None else None
        last = log.before(state) if log is not None else None
        backend = self._final_backend(state)
        backend.finish(np.ascontiguousarray(actions, np.int64), _batch_step(self.rules, m))
        states = backend.states(np.zeros((m, self.rules.state_size + 1), np.float32))
        private = state.private_view()[np.arange(m), seats].astype(np.intp)
        prefix = np.take_along_axis(states, self.rules.observation_index[seats, private], axis=1)
        if log is None:
            out.final_observation[rows] = prefix
            return
        # The window of the final observation ends with the game's last decision (the AEC env's final view).
        log.record(actions, last, np.zeros(m, bool), state)
        final = np.zeros((m, self.encoding.observation.size), np.float32)
        final[:, : self.rules.observation_size] = prefix
        log.write_observations(final, seats)
        out.final_observation[rows] = final

    def _final_backend(self, state: _State):
        """The engine's backend over ``state`` (the games that ended, before their last move), run serially."""
        if self._backend.name == "numba":
            return type(self._backend)(self.rules, state, False)
        return _NumpyBackend(self.rules, state)

    def _penalize(self, rows: np.ndarray, out: SeatStep) -> None:
        """``illegal_action="penalize"``: those games end, -1 for the learner, and are dealt again."""
        seat = self._learner[rows]
        out.reward[rows] = -1.0
        out.terminated[rows] = True
        out.info["illegal_move"][rows] = True
        out.info["offender"][rows] = seat
        out.info["learner_seat"][rows] = seat
        out.final_observation[rows] = self._observation[rows]
        k = rows.size
        part = self._part(k)
        queue = self.games._queue
        queue.ensure(self.num_envs)
        slots = queue.take(k)
        step = _batch_step(self.rules, k)
        self._backend.state = part
        self._backend.deal(step, queue, slots.astype(np.int64))
        scatter(rows, self._scratch_bytes, self._whole_bytes)
        self.games._remember_deals(rows, slots)
        self._dealt.append((rows, slots, queue.deals))
        self._to_act[rows] = step.to_act
        if self._recall is None:
            self._observation[rows] = step.observation
        else:
            self._recall.start(rows, queue.deals, slots)
            self._observation[rows] = self._with_window(rows, step)
        self._mask[rows] = step.action_mask
        self._new_games(rows)


_NO_GAMES = np.zeros(0, np.int64)


class _Refused(Exception):
    """The engine refused the action of row ``row`` of a step of some games, and changed nothing."""

    def __init__(self, row: int):
        super().__init__(row)
        self.row = row


def _batch_step(rules, k: int) -> BatchStep:
    return BatchStep(
        to_act=np.empty(k, np.int64),
        observation=np.empty((k, rules.observation_size), np.float32),
        action_mask=np.empty((k, rules.num_actions), np.int8),
        rewards=np.empty((k, rules.n), np.float32),
        done=np.zeros(k, bool),
        loser=np.empty(k, np.int64),
        loss_reason=np.empty(k, np.int64),
        truncated=np.zeros(k, bool),
    )
