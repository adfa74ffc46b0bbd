"""``EverySeatGames``: ``B`` batched games in which every seat is a learner, with every seat's observation each step.

The library-independent core of the multi-agent batched env
(``cockroach_env.integrations.torchrl_marl``). A step takes the move of the seat to act
in every game, exactly as ``BatchedGames.step`` does (it drives one ``BatchedGames``, so
the same seed and the same actions give the same games, move for move), and returns what
a multi-agent learner needs besides: the observation of *every* seat, not only the
seat to act's, and every seat's terminal reward in the step where its game ends.

Every seat's observation is the engine's own: the full state written by the backend
(``states``), gathered through ``_Rules.observation_index[seat, has_seen_card]`` (what the
numpy backend does for the seat to act, and what ``SeatedGames`` does for final
observations), then, with a ``history`` window, the engine's move log writes each
seat's window (``_RecallLog.write_observations``). A game that ends is dealt again in
the same step; its final observations (every seat's, of the final state) are those of
the game before its last move, finished without dealing again (``backend.finish``).
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
from cockroach_env.env import IllegalActionError
from cockroach_env.vector.seated import MAX_NUM_ENVS, game_config


@dataclass
class EverySeatStep:
    """What ``reset`` and ``step`` of ``EverySeatGames`` give, batch first (fresh arrays, owned by the caller)."""

    observation: np.ndarray
    """(B, N, O) float32: every seat's observation now, by absolute seat (of the new game where ``done``)."""
    to_act: np.ndarray
    """(B,) int64: the seat to act now (in the new game where ``done``)."""
    action_mask: np.ndarray
    """(B, A) int8: the legal actions of the seat to act."""
    rewards: np.ndarray
    """(B, N) float32: every seat's reward of the game that ended in this step (the engine's), 0 elsewhere."""
    terminated: np.ndarray
    """(B,) bool: the game ended by the rules in this step."""
    truncated: np.ndarray
    """(B,) bool: ``max_steps`` cut the game in this step."""
    final_observation: np.ndarray
    """(B, N, O) float32: where ``done``, every seat's observation of the final state of the game that ended."""
    loser: np.ndarray
    """(B,) int64: the seat that lost the game that ended in this step, -1 elsewhere."""
    loss_reason: np.ndarray
    """(B,) int64: its index into ``engine.LOSS_REASONS``, -1 elsewhere."""

    @property
    def done(self) -> np.ndarray:
        return self.terminated | self.truncated


class EverySeatGames:
    """``num_envs`` games, every seat a learner: ``step(actions)`` takes the move of the seat to act in each game.

    ``actions`` is (B,), one per game, for the seat ``to_act`` there. An action its
    action mask does not allow raises ``IllegalActionError`` naming the game, the seat,
    the action and its move, and changes nothing.
    """

    def __init__(self, num_envs: int, *, seed: int | None = None, config: GameConfig | None = None, **game_options):
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
        if self.config.recall:  # every decision of the game in every seat's observation: too large for batches
            raise ValueError(
                "recall=True is not supported by the multi-agent batched env; expected a rule set without recall, "
                "or a window of the last K decisions with history=K (or use cockroach_env.env)"
            )
        self.num_envs = int(num_envs)
        self.games = BatchedGames(self.config, self.num_envs, seed=self.seed)
        self.encoding = self.games.encoding
        self.rules = self.games.rules
        self.num_seats = self.config.num_players
        self._to_act = np.zeros(self.num_envs, np.int64)
        self._mask = np.zeros((self.num_envs, self.rules.num_actions), np.int8)
        self._observation = np.zeros((self.num_envs, self.num_seats, self.encoding.observation.size), np.float32)
        self._started = False
        self._closed = False

    # ------------------------------------------------------------------ public
    @property
    def observation(self) -> np.ndarray:
        """(B, N, O) float32: every seat's current observation (a copy)."""
        return self._observation.copy()

    @property
    def action_mask(self) -> np.ndarray:
        """(B, A) int8: the current legal actions of the seat to act (a copy)."""
        return self._mask.copy()

    @property
    def to_act(self) -> np.ndarray:
        """(B,) int64: the seat to act in each game (a copy)."""
        return self._to_act.copy()

    @property
    def started(self) -> bool:
        return self._started

    @property
    def last_deals(self) -> dict[int, Deal]:
        """``{game: engine.Deal}`` of the games dealt by the latest ``reset`` or ``step``."""
        return self.games.last_deals

    def reset(self, seed: int | None = None) -> EverySeatStep:
        """Deal every game afresh (``BatchedGames.reset(seed=seed)``: the same deals for the same seed)."""
        self.check_open("reset")
        first = self.games.reset(seed=check_seed("seed", seed))
        self._started = True
        self._take(first)
        b, n = self.num_envs, self.num_seats
        return EverySeatStep(
            observation=self._observation.copy(),
            to_act=self._to_act.copy(),
            action_mask=self._mask.copy(),
            rewards=np.zeros((b, n), np.float32),
            terminated=np.zeros(b, bool),
            truncated=np.zeros(b, bool),
            final_observation=np.zeros_like(self._observation),
            loser=np.full(b, -1, np.int64),
            loss_reason=np.full(b, -1, np.int64),
        )

    def step(self, actions: Any) -> EverySeatStep:
        """The move of the seat to act in every game; a game that ends is dealt again (its final view is kept)."""
        self.check_open("step")
        if not self._started:
            raise ValueError("step() called before reset(); call reset() first")
        actions = self._check_actions(actions)
        before = [array.copy() for array in self.games._state.arrays()]
        log = self.games._recall.taken(np.arange(self.num_envs)) if self.games._recall is not None else None
        step = self.games.step(actions)
        final = np.zeros_like(self._observation)
        ended = np.flatnonzero(step.done)
        if ended.size:
            final[ended] = self._final_observations(ended, [array[ended] for array in before], actions[ended], log)
        self._take(step)
        return EverySeatStep(
            observation=self._observation.copy(),
            to_act=self._to_act.copy(),
            action_mask=self._mask.copy(),
            rewards=np.where(step.done[:, None], step.rewards, 0.0).astype(np.float32),
            terminated=step.done & ~step.truncated,
            truncated=step.truncated.copy(),
            final_observation=final,
            loser=step.loser.copy(),
            loss_reason=step.loss_reason.copy(),
        )

    def close(self) -> None:
        """Refuse every later ``reset`` and ``step``."""
        self._closed = True

    def check_open(self, call: str) -> None:
        """``RuntimeError`` naming ``call`` if ``close()`` was called."""
        if self._closed:
            raise RuntimeError(f"{call}() called after close(); the env is closed, expected a new env")

    def describe_action(self, env: int, action: int) -> str:
        """The move ``action`` means for the seat to act in game ``env`` now, in words."""
        return self.games.describe_action(env, action)

    # ------------------------------------------------------------------ internals
    def _check_actions(self, actions: Any) -> np.ndarray:
        """(B,) int64 actions, each legal for the seat to act; ``ValueError``/``IllegalActionError`` otherwise."""
        array = np.asarray(actions)
        b, a = self.num_envs, self.rules.num_actions
        if array.shape != (b,):
            raise ValueError(
                f"actions of shape {array.shape} are not allowed; expected ({b},), the action of the seat to act in "
                "each game"
            )
        if array.dtype.kind not in "iu":
            raise ValueError(f"actions of dtype {array.dtype} are not allowed; expected integers")
        inside = (array >= 0) & (array < a)
        legal = inside.copy()
        legal[inside] = self._mask[np.flatnonzero(inside), array[inside].astype(np.int64)] > 0
        if not legal.all():
            env = int(np.argmin(legal))
            action, seat = int(array[env]), int(self._to_act[env])
            agent = f"sub-environment {env} (seat {seat}, the seat to act)"
            if not inside[env]:
                raise IllegalActionError(agent, action, None, f"out of range; expected an integer in [0, {a})")
            why = self.games._illegal_message(env, action).partition(" is illegal: ")[2]  # the engine's reason
            raise IllegalActionError(agent, action, self.describe_action(env, action), why)
        return array.astype(np.int64)

    def _take(self, step: BatchStep) -> None:
        """Keep the decision ``step`` leads to and write every seat's observation of the current state."""
        self._to_act[:] = step.to_act
        self._mask[:] = step.action_mask
        games = self.games
        states = games._backend.states(np.zeros((self.num_envs, self.rules.state_size + 1), np.float32))
        self._observation[:] = self._every_seat(states, games._state.private_view(), games._recall)

    def _every_seat(self, states: np.ndarray, private: np.ndarray, log: _RecallLog | None) -> np.ndarray:
        """(M, N, O): every seat's observation of ``states`` (M, S + 1), through the engine's observation index;
        ``private`` (M, N) is ``_State.private_view()``: the seat saw the card in play or places a replacement.
        """
        m, n, width = len(states), self.num_seats, self.rules.observation_size
        out = np.zeros((m, n, self.encoding.observation.size), np.float32)
        for seat in range(n):  # one column gather per seat, one more for the games where its view is private
            unseen, seen_index = self.rules.observation_index[seat]
            out[:, seat, :width] = np.take(states, unseen, axis=1)
            rows = np.flatnonzero(private[:, seat])
            if rows.size:
                out[rows, seat, :width] = np.take(states[rows], seen_index, axis=1)
            if log is not None:
                view = np.ascontiguousarray(out[:, seat])
                log.write_observations(view, np.full(m, seat, np.int64))
                out[:, seat] = view
        return out

    def _final_observations(
        self, ended: np.ndarray, before: list[np.ndarray], actions: np.ndarray, log: _RecallLog | None
    ) -> np.ndarray:
        """Every seat's observation of the final state of the games ``ended``: their state ``before`` the last move,
        finished without dealing again; with a window, their move logs before it plus that move.
        """
        m = ended.size
        state = _State(self.rules, m)
        for whole, piece in zip(state.arrays(), before):
            whole[:] = piece
        backend = self._final_backend(state)
        last = None
        if log is not None:
            log = log.taken(ended)
            last = log.before(state)
        backend.finish(actions, _final_step(self.rules, m))
        if log is not None:  # the window ends with the game's last decision (the AEC env's final view)
            log.record(actions, last, np.zeros(m, bool), state)
        states = backend.states(np.zeros((m, self.rules.state_size + 1), np.float32))
        return self._every_seat(states, state.private_view(), log)

    def _final_backend(self, state: _State):
        """The engine's backend over ``state`` (the games that ended, before their last move), run serially."""
        engine = self.games._backend
        if engine.name == "numba":
            return type(engine)(self.rules, state, False)
        return _NumpyBackend(self.rules, state)


def _final_step(rules, m: int) -> BatchStep:
    return BatchStep(
        to_act=np.empty(m, np.int64),
        observation=np.empty((m, rules.observation_size), np.float32),
        action_mask=np.empty((m, rules.num_actions), np.int8),
        rewards=np.empty((m, rules.n), np.float32),
        done=np.zeros(m, bool),
        loser=np.empty(m, np.int64),
        loss_reason=np.empty(m, np.int64),
        truncated=np.zeros(m, bool),
    )
