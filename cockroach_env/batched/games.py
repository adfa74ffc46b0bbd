"""``BatchedGames``: the public front of the batched engine (see the package docstring)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from cockroach_env.batched.deals import _DealQueue, _deals_from_engine
from cockroach_env.batched.layout import (
    BACKENDS,
    CURRENT,
    OFFER,
    PASS,
    PHASE,
    PLACE,
    RESPOND,
    BatchStep,
    _clear_outcome,
    _Rules,
)
from cockroach_env.batched.numba_backend import _NumbaBackend
from cockroach_env.batched.numba_kernels import numba
from cockroach_env.batched.numpy_backend import _NumpyBackend
from cockroach_env.batched.recall import _RecallLog
from cockroach_env.batched.state import _State
from cockroach_env.config import GameConfig, check_seed
from cockroach_env.encoding import PHASES, encoding_for
from cockroach_env.engine import Deal


class BatchedGames:
    """``batch_size`` games under one ``GameConfig``, stepped together (see the package docstring).

    ``backend``: ``"numba"`` (compiled; needs numba), ``"numpy"`` (vectorized numpy), or
    ``"auto"`` (numba when importable). ``parallel=True`` spreads the compiled kernels
    over numba's threads (``numba.set_num_threads``) for batches of at least
    ``PARALLEL_MIN_GAMES``; both play identically. Threads only pay where cores are
    free. On the 2-core VM this was measured on, with numba's default OpenMP layer:
    about 1.6x at B = 8192 (with ``random_legal_actions(..., parallel=True)``) when
    both cores are idle, but many times slower when other processes hold the cores
    (its threads spin-wait for descheduled ones at every call);
    ``NUMBA_THREADING_LAYER=workqueue`` or ``OMP_WAIT_POLICY=passive`` stay near the
    serial speed there, but gave no speed-up on idle cores either (sleeping threads
    wake too slowly for millisecond kernels).
    """

    def __init__(
        self,
        config: GameConfig,
        batch_size: int,
        seed: int | None = None,
        backend: str = "auto",
        parallel: bool = False,
    ):
        if not isinstance(config, GameConfig):
            raise ValueError(f"config={config!r} is not allowed; expected a GameConfig")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size={batch_size!r} is not allowed; expected a positive integer")
        seed = check_seed("seed", seed)
        if not isinstance(parallel, (bool, np.bool_)):
            raise ValueError(f"parallel={parallel!r} is not allowed; expected True or False")
        if not isinstance(backend, str) or backend not in BACKENDS:
            raise ValueError(f"backend={backend!r} is not allowed; expected one of {list(BACKENDS)}")
        if backend == "auto":
            backend = "numba" if numba is not None else "numpy"
        self.config = config
        self.batch_size = int(batch_size)
        self.encoding = encoding_for(config)
        self.rules = _Rules(config, self.encoding)
        self._state = _State(self.rules, self.batch_size)
        self._rng = np.random.default_rng(seed)
        self._queue = _DealQueue(config, self.rules, self._rng, max(64, self.batch_size))
        self._backend = (
            _NumbaBackend(self.rules, self._state, parallel)
            if backend == "numba"
            else _NumpyBackend(self.rules, self._state)
        )
        self._recall = (
            _RecallLog(self.rules, self.encoding, self.batch_size, compiled=backend == "numba")
            if self.encoding.recall
            else None
        )
        """``GameConfig.recall`` or ``history``: the move logs behind the recall segments (``recall.py``); None
        without them.
        """
        self._started = False
        self._dealt_games = np.zeros(0, np.int64)
        self._dealt_slots = np.zeros(0, np.int64)
        self._dealt_from = self._queue.deals

    # ------------------------------------------------------------ properties
    @property
    def backend(self) -> str:
        return self._backend.name

    @property
    def num_actions(self) -> int:
        return self.encoding.num_actions

    @property
    def observation_size(self) -> int:
        return self.encoding.observation.size

    @property
    def bytes_per_game(self) -> int:
        """Bytes of game state per game in the batch arrays, the recall log included (outputs and queued deals
        excluded).
        """
        return self._state.bytes_per_game + (self._recall.bytes_per_game if self._recall is not None else 0)

    @property
    def last_deals(self) -> dict[int, Deal]:
        """``{game: engine.Deal}`` of the games dealt by the latest ``reset`` or ``step``."""
        return {int(g): self._dealt_from.deal(int(k)) for g, k in zip(self._dealt_games, self._dealt_slots)}

    # ------------------------------------------------------------ reset and step
    def reset(self, seed: int | None = None, deals: Sequence[Deal] | None = None) -> BatchStep:
        """Deal every game afresh and return the first decision of each.

        ``seed`` reseeds the batch's generator. ``deals`` (``engine.Deal``s, at least
        ``batch_size``) starts game ``b`` from ``deals[b]``; further deals are queued and
        used, in order, by the next games to be dealt automatically.
        """
        # Everything is checked before anything changes: a refused reset keeps the games, the queue and the seed stream.
        seed = check_seed("seed", seed)
        block = None
        if deals is not None:
            if isinstance(deals, (str, bytes, Deal)) or not hasattr(deals, "__iter__"):
                raise ValueError(
                    f"deals={deals!r} is not allowed; expected a sequence of engine.Deal, at least "
                    f"batch_size={self.batch_size}"
                )
            deals = list(deals)
            if len(deals) < self.batch_size:
                raise ValueError(
                    f"reset got {len(deals)} deals; expected at least batch_size={self.batch_size} (one per game, "
                    "extra ones are queued)"
                )
            block = _deals_from_engine(self.config, self.rules, deals)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._queue = _DealQueue(self.config, self.rules, self._rng, max(64, self.batch_size))
        if block is not None:
            self._queue.push(block)
        self._queue.ensure(self.batch_size)
        games = np.arange(self.batch_size)
        slot_of = self._queue.take(self.batch_size)
        out = self._new_step()
        _clear_outcome(out)
        written = self._backend_outputs(out)
        self._backend.deal(written, self._queue, slot_of.astype(np.int64))
        self._remember_deals(games, slot_of)
        if self._recall is not None:
            self._recall.start(games, self._queue.deals, slot_of)
            self._write_recall(out, written)
        self._started = True
        return out

    def step(self, actions: np.ndarray) -> BatchStep:
        """Apply one action per game; finished games are dealt again (see ``BatchStep``).

        Raises ``ValueError`` naming the first game whose action is malformed or illegal,
        the action and the move it decodes to; the state is then unchanged.
        """
        if not self._started:
            raise ValueError("step() called before reset(); call reset() first")
        actions = self._check_actions(actions)
        # A deal for every game that may end now. Deals are drawn in blocks of a fixed
        # size, so drawing before the step (even one that is refused) leaves the stream of deals unchanged.
        self._queue.ensure(self.batch_size)
        out = self._new_step()
        recall = self._recall
        if recall is None:  # the hot path: nothing more than before recall existed
            written = out
        else:
            before, written = recall.before(self._state), self._backend_outputs(out)
        bad, dealt = self._backend.step(actions, written, self._queue)
        if bad >= 0:
            raise ValueError(self._illegal_message(bad, int(actions[bad])))
        games = np.flatnonzero(out.done) if dealt else _NO_GAMES
        self._remember_deals(games, self._queue.take(dealt))
        if recall is not None:
            recall.record(actions, before, out.done, self._state)
            recall.start(games, self._queue.deals, self._dealt_slots)
            self._write_recall(out, written)
        return out

    def state(self) -> np.ndarray:
        """(B, S) float32 full states in the ``Encoding.state`` layout (for centralized critics)."""
        if not self._started:
            raise ValueError("state() called before reset(); call reset() first")
        out = np.empty((self.batch_size, self.encoding.state.size + 1), np.float32)
        self._backend.states(out)  # zeros everywhere, then the segments before the recall ones
        if self._recall is not None:
            self._recall.write_states(out)
        return np.ascontiguousarray(out[:, :-1])

    # ------------------------------------------------------------ internals
    def _new_step(self) -> BatchStep:
        """Fresh output arrays, uninitialized (``apply`` writes every entry of the outcome fields).

        With recall the observations start as zeros: the backends write the part before
        the recall segments, the recall log sets the one-hot entries after it.
        """
        b, r = self.batch_size, self.rules
        return BatchStep(
            to_act=np.empty(b, np.int64),
            observation=np.empty((b, r.observation_size), np.float32)
            if self._recall is None
            else np.zeros((b, self.encoding.observation.size), np.float32),
            action_mask=np.empty((b, r.num_actions), np.int8),
            rewards=np.empty((b, r.n), np.float32),
            done=np.empty(b, bool),
            loser=np.empty(b, np.int64),
            loss_reason=np.empty(b, np.int64),
            truncated=np.empty(b, bool),
        )

    def _backend_outputs(self, out: BatchStep) -> BatchStep:
        """What the backends write into: ``out`` itself, or with recall ``out`` with observations of their size only.

        Their observations are then C-contiguous rows of the same size as without recall,
        so the compiled kernels are those of the config without recall (no new variant).
        """
        if self._recall is None:
            return out
        return replace(out, observation=np.empty((self.batch_size, self.rules.observation_size), np.float32))

    def _write_recall(self, out: BatchStep, written: BatchStep) -> None:
        """``out.observation``: the backends' part, then the recall segments by the seat to act."""
        out.observation[:, : self.rules.observation_size] = written.observation
        out.window = self._recall.write_observations(out.observation, out.to_act)

    def _remember_deals(self, games: np.ndarray, slots: np.ndarray) -> None:
        self._dealt_games, self._dealt_slots, self._dealt_from = games, slots, self._queue.deals

    def _check_actions(self, actions) -> np.ndarray:
        """Shape and dtype; the range is checked with the legality of each action."""
        array = np.asarray(actions)
        if array.shape != (self.batch_size,):
            raise ValueError(
                f"actions of shape {array.shape} are not allowed; expected ({self.batch_size},), one action per game"
            )
        if array.dtype.kind not in "iu":
            raise ValueError(f"actions of dtype {array.dtype} are not allowed; expected integers")
        if array.dtype == np.uint64 and array.max(initial=0) > np.iinfo(np.int64).max:
            b = int(np.argmax(array > np.iinfo(np.int64).max))
            raise ValueError(
                f"game {b}: action {int(array[b])} is out of range; expected an integer in [0, {self.num_actions})"
            )
        return np.ascontiguousarray(array, dtype=np.int64)

    def _first_illegal(self, actions: np.ndarray) -> int:
        """The first game whose action is illegal now, or -1 (the check ``step`` makes first)."""
        return self._backend.first_illegal(self._check_actions(actions))

    def describe_action(self, game: int, action: int) -> str:
        """The move ``action`` means for the seat to act in ``game``, in words."""
        if (
            isinstance(game, (bool, np.bool_))
            or not isinstance(game, (int, np.integer))
            or not 0 <= game < self.batch_size
        ):
            raise ValueError(f"game={game!r} is not allowed; expected a game from 0 to {self.batch_size - 1}")
        if (
            isinstance(action, (bool, np.bool_))
            or not isinstance(action, (int, np.integer))
            or not 0 <= action < self.num_actions
        ):
            raise ValueError(f"action={action!r} is not allowed; expected an integer in [0, {self.num_actions})")
        enc, cards, n = self.encoding, self.config.cards, self.rules.n
        seat = int(self._state.info[game, CURRENT])
        decoded = enc.decode_action(action)
        kind = decoded[0]
        if kind == "offer":
            return (
                f"offer(card={cards.identities[decoded[1]]}, target=seat {(seat + decoded[2]) % n}, "
                f"claim={cards.claims[decoded[3]]})"
            )
        if kind == "call":
            return f"call(believe={decoded[1]})"
        if kind == "peek":
            return "peek()"
        if kind == "pass":
            return f"pass(target=seat {(seat + decoded[1]) % n}, claim={cards.claims[decoded[2]]})"
        return f"place(card={cards.identities[decoded[1]]})"

    def _illegal_message(self, game: int, action: int) -> str:
        if not 0 <= action < self.num_actions:
            return f"game {game}: action {action} is out of range; expected an integer in [0, {self.num_actions})"
        info = self._state.info[game]
        seat, phase = int(info[CURRENT]), int(info[PHASE])
        kind = self.encoding.decode_action(action)[0]
        expected = {"offer": OFFER, "call": RESPOND, "peek": RESPOND, "pass": PASS, "place": PLACE}[kind]
        if phase != expected:
            why = f"it is the {PHASES[phase].value} phase, not the {PHASES[expected].value} phase"
        elif kind == "offer":
            why = f"seat {seat} has no such card in hand"
        elif kind == "peek":
            why = "no eligible recipient is left (everyone else has seen the card): the holder must call"
        elif kind == "pass":
            why = "that seat has already seen the card or holds it"
        else:
            why = "that card is not in hand or does not fit the claim"
        return f"game {game}: action {action} = {self.describe_action(game, action)} by seat {seat} is illegal: {why}"

    def __repr__(self) -> str:
        return (
            f"BatchedGames({self.config.edition}, {self.rules.n}p, B={self.batch_size}, backend={self.backend}, "
            f"{self.bytes_per_game} bytes/game)"
        )


_NO_GAMES = np.zeros(0, np.int64)
