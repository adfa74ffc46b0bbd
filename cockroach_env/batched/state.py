"""The arrays of ``B`` games: small-integer counts and per-game scalars (``_State``)."""

from __future__ import annotations

import numpy as np

from cockroach_env.batched.deals import _Deals
from cockroach_env.batched.layout import (
    CURRENT,
    INFO_COLUMNS,
    OFFER,
    PENALTY_END,
    PENALTY_TOP,
    PHASE,
    PLACE,
    PLACE_REMAINING,
    _Rules,
)


def _padded(shape: tuple[int, ...], dtype) -> np.ndarray:
    """Zeros of ``shape`` with 8 spare bytes after them: compiled code reads rows 8 entries at a time."""
    size = int(np.prod(shape))
    return np.zeros(size + 8, dtype)[:size].reshape(shape)


class _State:
    """The arrays of ``B`` games (small integer dtypes; the count arrays ``_padded``)."""

    def __init__(self, rules: _Rules, batch_size: int):
        b, n, i = batch_size, rules.n, rules.i
        self.hands = _padded((b, n, i), np.int8)
        self.collections = _padded((b, n, i), np.int8)
        self.stats = _padded((b, n, rules.k), np.uint8)
        self.seat_claim = np.full((b, n), -1, np.int8)
        """The claim each seat made in the current round (a seat claims at most once per round)."""
        self.seen = np.zeros((b, n), np.bool_)
        self.removed = np.zeros((b, i), np.int8)
        self.penalty = np.zeros((b, rules.penalty_capacity), np.int8)
        self.info = np.full((b, INFO_COLUMNS), -1, np.int8)
        self.steps = np.zeros(b, np.int16)

    def private_view(self) -> np.ndarray:
        """(B, N) bool: ``Encoding.observation_index``'s ``has_seen_card`` flag of every seat (``has_private_view``):
        it offered or peeked the card in play, or places a Royal replacement (the seat to act in the place phase).
        """
        info = self.info
        placer = (info[:, PHASE] == PLACE)[:, None] & (np.arange(self.seen.shape[1]) == info[:, CURRENT, None])
        return self.seen | placer

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (
            self.hands,
            self.collections,
            self.stats,
            self.seat_claim,
            self.seen,
            self.removed,
            self.penalty,
            self.info,
            self.steps,
        )

    @property
    def bytes_per_game(self) -> int:
        return sum(a.nbytes // a.shape[0] for a in self.arrays())

    def install(self, games: np.ndarray, deals: _Deals, slots: np.ndarray) -> None:
        """Start games ``games`` from the queued deals at ``slots``."""
        self.hands[games] = deals.hands[slots]
        self.collections[games] = deals.collections[slots]
        self.removed[games] = deals.removed[slots]
        self.penalty[games] = deals.penalty[slots]
        self.stats[games] = 0
        self.seat_claim[games] = -1
        self.seen[games] = False
        self.steps[games] = 0
        info = np.full((len(games), INFO_COLUMNS), -1, np.int8)
        info[:, PHASE] = OFFER
        info[:, CURRENT] = deals.starter[slots]
        info[:, PLACE_REMAINING] = 0
        info[:, PENALTY_TOP] = 0
        info[:, PENALTY_END] = deals.penalty_size[slots]
        self.info[games] = info
