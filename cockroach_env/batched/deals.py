"""Deals for the batched engine: random blocks drawn ahead, explicit ``engine.Deal``s checked
and converted, and the queue the games are dealt from, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from cockroach_env.batched.layout import _Rules
from cockroach_env.batched.numba_kernels import _deal_orders_compiled, numba
from cockroach_env.config import GameConfig
from cockroach_env.encoding import check_recall_deal
from cockroach_env.engine import Deal, Game


@dataclass
class _Deals:
    """A block of deals as arrays (``K`` games)."""

    starter: np.ndarray  # (K,) int8
    hands: np.ndarray  # (K, N, I) int8
    collections: np.ndarray  # (K, N, I) int8
    removed: np.ndarray  # (K, I) int8
    penalty: np.ndarray  # (K, P) int8, top card first
    penalty_size: np.ndarray  # (K,) int8

    def __len__(self) -> int:
        return len(self.starter)

    def deal(self, k: int) -> Deal:
        """Deal ``k`` as an ``engine.Deal``."""
        return Deal(
            starter=int(self.starter[k]),
            hands=self.hands[k].tolist(),
            collections=self.collections[k].tolist(),
            removed=self.removed[k].tolist(),
            penalty_deck=self.penalty[k, : self.penalty_size[k]].tolist(),
        )

    @staticmethod
    def concatenate(blocks: Sequence[_Deals]) -> _Deals:
        return _Deals(*(np.concatenate([getattr(b, f.name) for b in blocks]) for f in fields(_Deals)))

    def slice(self, start: int) -> _Deals:
        return _Deals(*(getattr(self, f.name)[start:] for f in fields(_Deals)))


def deal_orders(config: GameConfig, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Starters and shuffled decks of ``count`` games: the random part of ``engine.random_deal``."""
    n = config.num_players
    deck = np.repeat(np.arange(len(config.cards.identities), dtype=np.int8), config.cards.copies)
    starters = np.full(count, config.starter, np.int64) if config.starter is not None else rng.integers(n, size=count)
    orders = rng.permuted(np.broadcast_to(deck, (count, deck.size)), axis=1)
    return starters, orders


def _deck_positions(config: GameConfig, deck_size: int) -> tuple[int, int, int, int]:
    """How ``engine.random_deal`` uses a shuffled deck, front to back: cards removed,
    penalty deck, opening cards (round-robin from the starter), cards dealt to hands
    (round-robin from the starter); the Royal leftovers after them go under the penalty deck.
    """
    n = config.num_players
    opening = config.opening_cards * n
    rest = deck_size - config.discard - config.penalty_deck_size - opening
    dealt = rest if config.edition == "classic" else (rest // n) * n + (1 if rest % n else 0)
    return config.discard, config.penalty_deck_size, opening, dealt


def deals_from_orders(
    config: GameConfig, starters: np.ndarray, orders: np.ndarray, penalty_capacity: int | None = None
) -> _Deals:
    """Deal shuffled decks as ``engine.random_deal`` does (same positions, same seats)."""
    n, i = config.num_players, len(config.cards.identities)
    count, size = orders.shape
    rows = np.arange(count)[:, None]
    starters = np.asarray(starters, np.int64)

    def per_seat(cards: np.ndarray, seats: np.ndarray) -> np.ndarray:
        flat = ((rows * n + seats) * i + cards).ravel()
        return np.bincount(flat, minlength=count * n * i).reshape(count, n, i).astype(np.int8)

    discard, penalty_size, opening, dealt = _deck_positions(config, size)
    position = discard
    removed = (
        np.bincount((rows * i + orders[:, :position]).ravel(), minlength=count * i).reshape(count, i).astype(np.int8)
    )
    penalty = orders[:, position : position + penalty_size]
    position += penalty_size
    seats = (starters[:, None] + np.arange(opening)) % n
    collections = per_seat(orders[:, position : position + opening], seats)
    position += opening
    rest = orders[:, position:]
    hands = per_seat(rest[:, :dealt], (starters[:, None] + np.arange(dealt)) % n)
    penalty = np.concatenate([penalty, rest[:, dealt:]], axis=1)
    capacity = penalty.shape[1] if penalty_capacity is None else penalty_capacity
    padded = np.zeros((count, capacity), np.int8)
    padded[:, : penalty.shape[1]] = penalty
    return _Deals(
        starters.astype(np.int8), hands, collections, removed, padded, np.full(count, penalty.shape[1], np.int8)
    )


def _random_deals(config: GameConfig, rules: _Rules, rng: np.random.Generator, count: int) -> _Deals:
    """``count`` random deals: ``deals_from_orders(deal_orders(...))``, dealt by compiled code when numba is there."""
    starters, orders = deal_orders(config, rng, count)
    if numba is None:
        return deals_from_orders(config, starters, orders, rules.penalty_capacity)
    n, i = rules.n, rules.i
    block = _Deals(
        np.zeros(count, np.int8), np.zeros((count, n, i), np.int8), np.zeros((count, n, i), np.int8),
        np.zeros((count, i), np.int8), np.zeros((count, rules.penalty_capacity), np.int8), np.zeros(count, np.int8),
    )  # fmt: skip
    _deal_orders_compiled(
        starters, orders, *_deck_positions(config, orders.shape[1]), *(getattr(block, f.name) for f in fields(_Deals))
    )
    return block


def _deals_from_engine(config: GameConfig, rules: _Rules, deals: Sequence[Deal]) -> _Deals:
    """Explicit ``engine.Deal``s as arrays, refusing deals the batched engine cannot start."""
    n, i, p = rules.n, rules.i, rules.penalty_capacity
    count = len(deals)
    block = _Deals(
        np.zeros(count, np.int8), np.zeros((count, n, i), np.int8), np.zeros((count, n, i), np.int8),
        np.zeros((count, i), np.int8), np.zeros((count, p), np.int8), np.zeros(count, np.int8),
    )  # fmt: skip
    copies = np.array(config.cards.copies)
    for k, deal in enumerate(deals):
        where = f"deals[{k}]"
        if not isinstance(deal, Deal):
            raise ValueError(f"{where}={deal!r} is not allowed; expected an engine.Deal")
        hands, collections = _counts(where, "hands", deal.hands), _counts(where, "collections", deal.collections)
        removed, penalty = (
            _counts(where, "removed", deal.removed),
            _counts(where, "penalty_deck", deal.penalty_deck).reshape(-1),
        )
        if hands.shape != (n, i) or collections.shape != (n, i) or removed.shape != (i,):
            raise ValueError(
                f"{where} has hands {hands.shape}, collections {collections.shape}, removed {removed.shape}; expected "
                f"({n}, {i}), ({n}, {i}), ({i},)"
            )
        if min(hands.min(), collections.min(), removed.min()) < 0:
            raise ValueError(f"{where} has a negative card count; expected counts >= 0")
        if penalty.size > p or (penalty.size and not (0 <= penalty.min() and penalty.max() < i)):
            raise ValueError(
                f"{where} has a penalty deck {deal.penalty_deck!r}; expected at most {p} card indices in [0, {i})"
            )
        used = hands.sum(0) + collections.sum(0) + removed + np.bincount(penalty, minlength=i)
        if (used > copies).any():
            card = int(np.argmax(used > copies))
            raise ValueError(
                f"{where} uses {used[card]} cards of {config.cards.identities[card]!r}; the deck holds {copies[card]}"
            )
        if (used != copies).any():
            card = int(np.argmax(used != copies))
            raise ValueError(
                f"{where} places {int(used.sum())} of the {int(copies.sum())} cards ({used[card]} of the "
                f"{copies[card]} {config.cards.identities[card]!r}); expected every card in a hand, a collection, the "
                "penalty deck or removed (as engine.explicit_deal deals)"
            )
        if isinstance(deal.starter, (bool, np.bool_)) or not (
            isinstance(deal.starter, (int, np.integer)) and 0 <= deal.starter < n
        ):
            raise ValueError(f"{where}.starter={deal.starter!r} is not allowed; expected a seat from 0 to {n - 1}")
        check_recall_deal(config, int(hands.sum()), where)
        if Game(config, deal).over:  # raises ValueError for a collection that already loses
            raise ValueError(
                f"{where} makes seat {deal.starter} start with an empty hand; expected a game that is not over at the "
                "start"
            )
        block.starter[k], block.hands[k], block.collections[k], block.removed[k] = (
            deal.starter,
            hands,
            collections,
            removed,
        )
        block.penalty[k, : penalty.size], block.penalty_size[k] = penalty, penalty.size
    return block


def _counts(where: str, field: str, value) -> np.ndarray:
    """A deal field as int64 card counts (or indices), refusing what is not integers (floats, bools, strings, ragged
    lists).
    """
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:  # ragged nesting
        raise ValueError(f"{where}.{field} is not a regular array of integers ({error})") from None
    if array.size and array.dtype.kind not in "iu":
        raise ValueError(f"{where}.{field} holds {array.dtype} values; expected integer card counts")
    return array.astype(np.int64)


class _DealQueue:
    """Deals waiting to be used, in order: explicit ones first, then random blocks."""

    def __init__(self, config: GameConfig, rules: _Rules, rng: np.random.Generator, block_size: int):
        self.config, self.rules, self.rng, self.block_size = config, rules, rng, block_size
        self.deals = _random_deals(config, rules, rng, 0)
        self.next = 0

    def push(self, block: _Deals) -> None:
        self.deals = _Deals.concatenate([self.deals.slice(self.next), block])
        self.next = 0

    def ensure(self, count: int) -> None:
        """At least ``count`` deals available (drawing new random blocks as needed)."""
        missing = count - (len(self.deals) - self.next)
        if missing > 0:
            size = max(missing, self.block_size)
            self.push(_random_deals(self.config, self.rules, self.rng, size))

    def take(self, count: int) -> np.ndarray:
        """Queue positions of the next ``count`` deals (``ensure`` first)."""
        slots = np.arange(self.next, self.next + count)
        self.next += count
        return slots
