"""The numba backend: the compiled kernels driven over the batch arrays."""

from __future__ import annotations

import numpy as np

from cockroach_env.batched.deals import _DealQueue
from cockroach_env.batched.layout import BatchStep, _Rules
from cockroach_env.batched.numba_kernels import CHUNK, PARALLEL_MIN_GAMES, _kernels_for, _write_states_compiled, numba
from cockroach_env.batched.state import _State


class _NumbaBackend:
    """Compiled per-game code; see the package docstring."""

    name = "numba"

    def __init__(self, rules: _Rules, state: _State, parallel: bool):
        if numba is None:
            raise ValueError("backend='numba' needs numba; install it with pip install numba, or use backend='numpy'")
        self.rules, self.state = rules, state
        self.kernels = _kernels_for(rules.dims)
        self.threaded = (
            _kernels_for(rules.dims._replace(parallel=1))
            if parallel and len(state.info) >= PARALLEL_MIN_GAMES
            else self.kernels
        )
        self.scratch = np.zeros((-(-state.info.shape[0] // CHUNK), rules.observation_size + 8), np.float32)
        """One observation row per chunk of games (and room for ``_nb_widen8`` to spill), written in cache before it
        is copied out.
        """

    def first_illegal(self, actions: np.ndarray) -> int:
        s = self.state
        return int(self.kernels["first_illegal"](actions, s.hands, s.seen, s.info, self.rules.card_table))

    def step(self, actions: np.ndarray, out: BatchStep, queue: _DealQueue) -> tuple[int, int]:
        s, r, d = self.state, self.rules, queue.deals
        dealt = self.threaded["step"](
            actions, s.hands, s.collections, s.stats, s.seat_claim, s.seen, s.removed, s.penalty, s.info, s.steps,
            r.card_table, r.params,
            queue.next, d.starter, d.hands, d.collections, d.removed, d.penalty, d.penalty_size,
            out.to_act, out.observation, out.action_mask, out.rewards, out.done, out.loser, out.loss_reason,
            out.truncated, self.scratch,
        )  # fmt: skip
        return (-1 - dealt, 0) if dealt < 0 else (-1, dealt)

    def deal(self, out: BatchStep, queue: _DealQueue, slot_of: np.ndarray) -> None:
        s, r, d = self.state, self.rules, queue.deals
        self.threaded["deal"](
            slot_of, s.hands, s.collections, s.stats, s.seat_claim, s.seen, s.removed, s.penalty, s.info, s.steps,
            r.card_table,
            d.starter, d.hands, d.collections, d.removed, d.penalty, d.penalty_size,
            out.to_act, out.observation, out.action_mask, self.scratch,
        )  # fmt: skip

    def finish(self, actions: np.ndarray, out: BatchStep) -> None:
        """Apply legal ``actions`` without dealing the games that end again (their final state stays)."""
        s, r = self.state, self.rules
        self.kernels["finish"](
            actions, s.hands, s.collections, s.stats, s.seat_claim, s.seen, s.penalty, s.info, s.steps,
            r.card_table, r.params, out.loser, out.loss_reason, out.rewards, out.done, out.truncated,
        )  # fmt: skip

    def states(self, out: np.ndarray) -> np.ndarray:
        s, r = self.state, self.rules
        _write_states_compiled(
            s.hands,
            s.collections,
            s.stats,
            s.seat_claim,
            s.seen,
            s.removed,
            s.penalty,
            s.info,
            r.segments,
            r.params,
            r.state_position,
            out,
        )
        return out
