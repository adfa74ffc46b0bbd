"""The batched engine: ``B`` games of Cockroach Poker held in arrays and stepped together.

```python
from cockroach_env.batched import BatchedGames, random_legal_actions
games = BatchedGames(config, batch_size=1024, seed=0)
step = games.reset()                       # BatchStep of the first decision of every game
while training:
    actions = policy(step.observation, step.action_mask)   # (B,) ints, one per game
    step = games.step(actions)             # finished games are dealt again automatically
```

Every game is the rules engine's game (``engine.Game``) under the same ``GameConfig``:
observations, masks and action indices are exactly those of the AEC env for the same
state (``tests/test_batched.py`` drives both engines with the same deals and actions and
compares every step). A step takes one action per game, for the seat ``to_act`` there.

``BatchStep`` (numpy arrays, batch first; fresh arrays each call, owned by the caller)

| field          | shape, dtype      | meaning                                                          |
|----------------|-------------------|------------------------------------------------------------------|
| `to_act`       | (B,) int64        | absolute seat to act next                                        |
| `observation`  | (B, O) float32    | that seat's ego-centric observation (C-contiguous)               |
| `action_mask`  | (B, A) int8       | that seat's legal actions                                        |
| `rewards`      | (B, N) float32    | terminal rewards by absolute seat of games that ended now        |
| `done`         | (B,) bool         | the game ended in this step and was dealt again                  |
| `loser`        | (B,) int64        | losing seat, -1 where no one lost now                            |
| `loss_reason`  | (B,) int64        | index into ``engine.LOSS_REASONS``, -1 where no one lost         |
| `truncated`    | (B,) bool         | ended by ``config.max_steps`` (done too; no loser, zero rewards) |

When ``done[b]``, ``to_act``/``observation``/``action_mask`` of game ``b`` already belong
to the first decision of its new game; ``games.last_deals[b]`` is the new ``engine.Deal``.
``reset(deals=[...])`` starts the games from given ``engine.Deal``s (more than ``B``
queues the rest for the next re-deals, e.g. for duplicate-deal evaluation). An
illegal or malformed action raises ``ValueError`` naming the first such game, the
action and its move in words, and changes nothing. ``state()`` gives the full states.

Design
------
Game state is a handful of small-integer arrays (``bytes_per_game`` reports the size):
hand and collection counts ``(B, N, I)`` and history counters (with 8 spare bytes after
the batch, for word-wide reads), the claim each seat made in
the current round, who has seen the card, the Royal penalty deck with a top pointer,
and one int8 row of per-game scalars (phase, seat to act, the card in play, its holder
and latest passer, the claim, the pending replacement, the penalty deck pointers and
the publicly known holders of the joker and blank).

Two interchangeable backends play identically (the tests compare them):

* ``numpy``: each step is vectorized by move kind (offers, peeks, passes, calls,
  places are index sets of the batch). A placement is a loop over the still-active
  subset: place, check the loss, and for a placed royal draw the next penalty card;
  drawn royals stay active (chained draws), drawn specials go to hand and leave the
  loop, so the loop runs at most ``penalty deck + 1`` times, nearly always once. Taking
  a joker or blank either places it (no other card in hand) or opens the PLACE phase,
  whose decisions are ordinary steps. The observation is the full state vector written
  for the batch, then gathered with ``Encoding.observation_index`` per game.
* ``numba`` (default when numba is importable, ``pip install numba``): the same rules
  as compiled per-game code, close to ``engine.py`` line by line. One kernel call per
  step checks every action, then in one pass over the games (chunks of ``CHUNK``,
  spread over numba's threads with ``parallel=True``) applies each move and writes its
  outcome, mask and observation, then deals the finished games again in game order.
  The observation is written by segment, seats rotated from the viewer (no state
  vector is materialized), into a scratch row that stays in cache, then copied out
  whole. The kernels are compiled for each config shape (sizes and layout offsets are
  constants in them) and cached on disk by numba; a shape's first use compiles for a
  few seconds.

Fresh deals follow ``engine.random_deal``'s rules exactly (starter, one permutation of
the deck used front to back: removed cards, penalty deck, opening cards, hands dealt
round-robin from the starter, Royal leftovers); they are drawn ahead in blocks from the
batch's ``numpy.random.Generator`` (``deal_orders``, then ``deals_from_orders``, or its
compiled twin when numba is there), so the stream is not bit-identical to calling
``random_deal`` game by game.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import NamedTuple, Sequence

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.encoding import PHASES, Encoding, encoding_for
from cockroach_env.engine import (
    FALSE_CLAIMS,
    LOSS_REASONS,
    PEEKS,
    RIGHT_CALLS,
    STAT_NAMES,
    TRUTHFUL_CLAIMS,
    WRONG_CALLS,
    Deal,
    Game,
    Phase,
)

try:  # optional: the compiled backend
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

BACKENDS = ("auto", "numba", "numpy")

OFFER, RESPOND, PASS, PLACE = (PHASES.index(p) for p in (Phase.OFFER, Phase.RESPOND, Phase.PASS, Phase.PLACE))
OVER = len(PHASES)
"""Phase codes: the position in ``encoding.PHASES`` (the one-hot order), ``OVER`` after a loss."""

SAME_TYPE, EMPTY_HAND, RAINBOW = (LOSS_REASONS.index(r) for r in ("same_type", "empty_hand", "rainbow"))

# Columns of the per-game scalar row ``info`` (int8). -1 means "none".
(
    PHASE,
    CURRENT,
    CARD,
    OFFERER,
    HOLDER,
    PASSER,
    CLAIM,
    PLACE_CLAIM,
    PLACE_REMAINING,
    PENALTY_TOP,
    PENALTY_END,
    SPECIAL_HOLDER,  # first of two columns: joker, blank (the order of ``CardSet.identities``)
) = range(12)
INFO_COLUMNS = SPECIAL_HOLDER + 2

# Columns of the per-identity table handed to the compiled kernels.
GROUP, ROYAL, SPECIAL, SPECIAL_ROW, TRUTH = range(5)  # TRUTH..TRUTH+C: truth; TRUTH+C..: fits

STATE_SEGMENTS = {
    "hands": ("n", "i"),
    "collections": ("n", "i"),
    "hand_sizes": ("n",),
    "history": ("n", "k"),
    "phase": ("phases",),
    "to_act": ("n",),
    "chain_claim": ("c",),
    "chain_latest_passer": ("n",),
    "chain_holder": ("n",),
    "chain_seen": ("n",),
    "chain_claims": ("n", "c"),
    "chain_card": ("i",),
    "removed": ("i",),
    "penalty_top": ("i",),
    "penalty_size": (1,),
    "special_holder": (2, "n"),
    "place_claim": ("c",),
    "place_remaining": (1,),
    "penalty_hidden": ("i",),
}
"""The state segments this module knows how to fill, with their expected shapes."""
SEGMENT_NAMES = tuple(STATE_SEGMENTS)

OBSERVATION_SEGMENTS = {
    "own_hand": (("i",), None, "own"),
    "collections": (("n", "i"), 0, "public"),
    "hand_sizes": (("n",), 0, "public"),
    "history": (("n", "k"), 0, "public"),
    "phase": (("phases",), None, "public"),
    "to_act": (("n",), 0, "public"),
    "chain_claim": (("c",), None, "public"),
    "chain_latest_passer": (("n",), 0, "public"),
    "chain_holder": (("n",), 0, "public"),
    "chain_seen": (("n",), 0, "public"),
    "chain_claims": (("n", "c"), 0, "public"),
    "chain_card": (("i",), None, "seen"),
    "penalty_top": (("i",), None, "public"),
    "penalty_size": ((1,), None, "public"),
    "special_holder": ((2, "n"), 1, "public"),
    "place_claim": (("c",), None, "public"),
    "place_remaining": ((1,), None, "public"),
}
"""The observation segments the compiled kernels write: shape, seat axis (rotated so the viewer is seat 0), visibility."""

# Rule numbers handed to the compiled kernels at run time, by position (the sizes also for
# ``state()``, whose kernel is shared by every config; the other kernels have them in ``_Dims``).
PARAM_NAMES = ("n", "i", "c", "k", "loss_count", "rainbow", "animal_groups", "max_steps")
P_N, P_I, P_C, P_K, P_LOSS_COUNT, P_RAINBOW, P_ANIMAL_GROUPS, P_MAX_STEPS = range(len(PARAM_NAMES))
(
    S_HANDS, S_COLLECTIONS, S_HAND_SIZES, S_HISTORY, S_PHASE, S_TO_ACT, S_CHAIN_CLAIM, S_CHAIN_LATEST_PASSER,
    S_CHAIN_HOLDER, S_CHAIN_SEEN, S_CHAIN_CLAIMS, S_CHAIN_CARD, S_REMOVED, S_PENALTY_TOP, S_PENALTY_SIZE,
    S_SPECIAL_HOLDER, S_PLACE_CLAIM, S_PLACE_REMAINING, S_PENALTY_HIDDEN,
) = range(len(SEGMENT_NAMES))  # fmt: skip


@dataclass
class BatchStep:
    """The outcome of ``reset`` or ``step`` for every game (see the module docstring)."""

    to_act: np.ndarray
    observation: np.ndarray
    action_mask: np.ndarray
    rewards: np.ndarray
    done: np.ndarray
    loser: np.ndarray
    loss_reason: np.ndarray
    truncated: np.ndarray

    def __repr__(self) -> str:
        b, o = self.observation.shape
        return f"BatchStep(B={b}, O={o}, A={self.action_mask.shape[1]}, done={int(self.done.sum())}, to_act={self.to_act[:8].tolist()}{'...' if b > 8 else ''})"



class _Dims(NamedTuple):
    """Sizes and layout offsets of one config: the compile-time constants of the numba kernels.

    The observation fields are segment starts in ``Encoding.observation`` (-1: absent).
    ``parallel`` selects the threaded kernels (a field, so that numba's disk cache,
    which ignores the ``parallel`` flag, keys the two variants apart).
    """

    n: int
    i: int
    c: int
    k: int
    royal: int
    offer_size: int
    respond_start: int
    pass_start: int
    place_start: int
    num_actions: int
    observation_size: int
    own_hand: int
    collections: int
    hand_sizes: int
    history: int
    phase: int
    to_act: int
    chain_claim: int
    chain_latest_passer: int
    chain_holder: int
    chain_seen: int
    chain_claims: int
    chain_card: int
    penalty_top: int
    penalty_size: int
    special_holder: int
    place_claim: int
    place_remaining: int
    parallel: int = 0


# ---------------------------------------------------------------------------- rules tables
class _Rules:
    """The config's rules as arrays and integers, shared by both backends."""

    def __init__(self, config: GameConfig, encoding: Encoding):
        cards = config.cards
        self.n = n = config.num_players
        self.i = i = len(cards.identities)
        self.c = c = len(cards.claims)
        self.k = len(STAT_NAMES)
        self.g = len(cards.groups)
        self.royal = config.edition == "royal"
        self.loss_count = config.loss_count
        self.rainbow = config.rainbow_loses
        self.animal_groups = cards.animal_groups
        self.max_steps = config.max_steps or 0
        self.truth = np.array(cards.truth, dtype=bool)
        self.fits = self.truth & ~np.array(cards.is_special)[:, None]
        self.group_of = np.array(cards.group_of, dtype=np.int64)
        self.is_royal = np.array(cards.is_royal, dtype=bool)
        self.is_special = np.array(cards.is_special, dtype=bool)
        self.specials = np.flatnonzero(self.is_special)
        if self.specials.size not in (0, 2):
            raise ValueError(f"the {cards.edition} card set has {self.specials.size} special cards; the batched engine expects 0 or 2")
        self.special_row = np.full(i, -1, np.int64)
        self.special_row[self.specials] = np.arange(self.specials.size)
        # members[card, group]: 1 where the card counts toward the group (specials toward none).
        self.members = np.zeros((i, self.g), np.int64)
        for card, group in enumerate(cards.group_of):
            if group >= 0:
                self.members[card, group] = 1
        # Penalty deck capacity: the configured size plus the Royal leftovers (at most n - 2).
        self.penalty_capacity = max(16, config.penalty_deck_size + n) if self.royal else 0
        self.deck = np.repeat(np.arange(i, dtype=np.int8), cards.copies)
        enc = encoding
        self.offer_size, self.respond_start, self.pass_start, self.place_start = enc.offer_size, enc.respond_start, enc.pass_start, enc.place_start
        self.num_actions = enc.num_actions
        self.state_size = enc.state.size
        self.observation_size = enc.observation.size
        self.segments = self._segment_starts(encoding)
        self.observation_index = np.stack(
            [np.stack([encoding.observation_index(v, seen) for seen in (False, True)]) for v in range(n)]
        ).astype(np.intp)
        """``(N, 2, O)``: ``Encoding.observation_index(viewer, has_seen_card)``."""
        self.state_position = np.append(np.arange(self.state_size, dtype=np.int32), -1)
        self.card_table = np.zeros((i, TRUTH + 2 * c), np.int8)
        self.card_table[:, GROUP] = self.group_of
        self.card_table[:, ROYAL] = self.is_royal
        self.card_table[:, SPECIAL] = self.is_special
        self.card_table[:, SPECIAL_ROW] = self.special_row
        self.card_table[:, TRUTH : TRUTH + c] = self.truth
        self.card_table[:, TRUTH + c :] = self.fits
        values = dict(
            n=n, i=i, c=c, k=self.k, loss_count=self.loss_count, rainbow=int(self.rainbow), animal_groups=self.animal_groups,
            max_steps=self.max_steps,
        )  # fmt: skip
        self.params = np.array([values[name] for name in PARAM_NAMES], np.int64)
        starts = self._observation_starts(encoding)
        self.dims = _Dims(
            n=n, i=i, c=c, k=self.k, royal=int(self.royal), offer_size=self.offer_size, respond_start=self.respond_start,
            pass_start=self.pass_start, place_start=self.place_start, num_actions=self.num_actions,
            observation_size=self.observation_size, **starts,
        )  # fmt: skip

    def _segment_starts(self, encoding: Encoding) -> np.ndarray:
        """Start of every known segment in the state vector (-1 if absent); refuse unknown layouts."""
        extent = {"n": self.n, "i": self.i, "c": self.c, "k": self.k, "phases": len(PHASES)}
        starts = np.full(len(SEGMENT_NAMES), -1, np.int64)
        for seg in encoding.state.segments.values():
            if seg.name not in STATE_SEGMENTS:
                raise ValueError(f"state segment {seg.name!r} is unknown to the batched engine; expected only {list(SEGMENT_NAMES)} (update cockroach_env/batched.py with the layout)")
            expected = tuple(extent.get(d, d) for d in STATE_SEGMENTS[seg.name])
            if tuple(seg.shape) != expected:
                raise ValueError(f"state segment {seg.name!r} has shape {seg.shape}; the batched engine expects {expected}")
            starts[SEGMENT_NAMES.index(seg.name)] = seg.start
        return starts

    def _observation_starts(self, encoding: Encoding) -> dict[str, int]:
        """Start of every observation segment (-1 if absent); refuse layouts the kernels would not write right."""
        extent = {"n": self.n, "i": self.i, "c": self.c, "k": self.k, "phases": len(PHASES)}
        starts = dict.fromkeys(OBSERVATION_SEGMENTS, -1)
        for seg in encoding.observation.segments.values():
            if seg.name not in OBSERVATION_SEGMENTS:
                raise ValueError(f"observation segment {seg.name!r} is unknown to the batched engine; expected only {list(OBSERVATION_SEGMENTS)} (update cockroach_env/batched.py with the layout)")
            shape, seat_axis, visibility = OBSERVATION_SEGMENTS[seg.name]
            expected = (tuple(extent.get(d, d) for d in shape), seat_axis, visibility)
            if (tuple(seg.shape), seg.seat_axis, seg.visibility) != expected:
                raise ValueError(f"observation segment {seg.name!r} is {(seg.shape, seg.seat_axis, seg.visibility)}; the batched engine writes it as (shape, seat axis, visibility) {expected}")
            starts[seg.name] = seg.start
        counts = {"own_hand": 0, "collections": self.i, "hand_sizes": self.i + self.n * self.i, "history": self.i + self.n * self.i + self.n}
        end = counts["history"] + self.n * self.k
        if any(starts[name] != at for name, at in counts.items()) or any(0 <= at < end for name, at in starts.items() if name not in counts):
            raise ValueError(f"the observation layout does not lead with {list(counts)} at {list(counts.values())}; the batched engine writes them first, eight entries at a time")
        return starts


# ---------------------------------------------------------------------------- deals
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
    def concatenate(blocks: Sequence["_Deals"]) -> "_Deals":
        return _Deals(*(np.concatenate([getattr(b, f.name) for b in blocks]) for f in fields(_Deals)))

    def slice(self, start: int) -> "_Deals":
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
    (round-robin from the starter); the Royal leftovers after them go under the penalty deck."""
    n = config.num_players
    opening = config.opening_cards * n
    rest = deck_size - config.discard - config.penalty_deck_size - opening
    dealt = rest if config.edition == "classic" else (rest // n) * n + (1 if rest % n else 0)
    return config.discard, config.penalty_deck_size, opening, dealt


def deals_from_orders(config: GameConfig, starters: np.ndarray, orders: np.ndarray, penalty_capacity: int | None = None) -> _Deals:
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
    removed = np.bincount((rows * i + orders[:, :position]).ravel(), minlength=count * i).reshape(count, i).astype(np.int8)
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


def _random_deals(config: GameConfig, rules: "_Rules", rng: np.random.Generator, count: int) -> _Deals:
    """``count`` random deals: ``deals_from_orders(deal_orders(...))``, dealt by compiled code when numba is there."""
    starters, orders = deal_orders(config, rng, count)
    if numba is None:
        return deals_from_orders(config, starters, orders, rules.penalty_capacity)
    n, i = rules.n, rules.i
    block = _Deals(
        np.zeros(count, np.int8), np.zeros((count, n, i), np.int8), np.zeros((count, n, i), np.int8),
        np.zeros((count, i), np.int8), np.zeros((count, rules.penalty_capacity), np.int8), np.zeros(count, np.int8),
    )  # fmt: skip
    _deal_orders_compiled(starters, orders, *_deck_positions(config, orders.shape[1]), *(getattr(block, f.name) for f in fields(_Deals)))
    return block


def _deals_from_engine(config: GameConfig, rules: _Rules, deals: Sequence[Deal]) -> _Deals:
    """Explicit ``engine.Deal``s as arrays, refusing deals the batched engine cannot start."""
    n, i, p = rules.n, rules.i, rules.penalty_capacity
    count = len(deals)
    block = _Deals(
        np.zeros(count, np.int8), np.zeros((count, n, i), np.int8), np.zeros((count, n, i), np.int8),
        np.zeros((count, i), np.int8), np.zeros((count, p), np.int8), np.zeros(count, np.int8),
    )  # fmt: skip
    for k, deal in enumerate(deals):
        where = f"deals[{k}]"
        if not isinstance(deal, Deal):
            raise ValueError(f"{where}={deal!r} is not allowed; expected an engine.Deal")
        try:
            hands, collections = np.array(deal.hands, np.int64), np.array(deal.collections, np.int64)
            removed, penalty = np.array(deal.removed, np.int64), np.array(deal.penalty_deck, np.int64).reshape(-1)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{where} has ragged or non-integer card counts ({error})") from None
        if hands.shape != (n, i) or collections.shape != (n, i) or removed.shape != (i,):
            raise ValueError(f"{where} has hands {hands.shape}, collections {collections.shape}, removed {removed.shape}; expected ({n}, {i}), ({n}, {i}), ({i},)")
        if min(hands.min(), collections.min(), removed.min()) < 0:
            raise ValueError(f"{where} has a negative card count; expected counts >= 0")
        if penalty.size > p or (penalty.size and not (0 <= penalty.min() and penalty.max() < i)):
            raise ValueError(f"{where} has a penalty deck {deal.penalty_deck!r}; expected at most {p} card indices in [0, {i})")
        used = hands.sum(0) + collections.sum(0) + removed + np.bincount(penalty, minlength=i)
        copies = np.array(config.cards.copies)
        if (used > copies).any():
            card = int(np.argmax(used > copies))
            raise ValueError(f"{where} uses {used[card]} cards of {config.cards.identities[card]!r}; the deck holds {copies[card]}")
        if not (isinstance(deal.starter, (int, np.integer)) and 0 <= deal.starter < n):
            raise ValueError(f"{where}.starter={deal.starter!r} is not allowed; expected a seat from 0 to {n - 1}")
        if Game(config, deal).over:  # raises ValueError for a collection that already loses
            raise ValueError(f"{where} makes seat {deal.starter} start with an empty hand; expected a game that is not over at the start")
        block.starter[k], block.hands[k], block.collections[k], block.removed[k] = deal.starter, hands, collections, removed
        block.penalty[k, : penalty.size], block.penalty_size[k] = penalty, penalty.size
    return block


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


# ---------------------------------------------------------------------------- state
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

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (self.hands, self.collections, self.stats, self.seat_claim, self.seen, self.removed, self.penalty, self.info, self.steps)

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


def _write_states(rules: _Rules, state: _State, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` (B, S+1), last column zero, with the ``Encoding.state`` vector of every game."""
    seg = dict(zip(SEGMENT_NAMES, rules.segments.tolist()))
    b, n, i, c = len(out), rules.n, rules.i, rules.c
    rows = np.arange(b)
    info = state.info.astype(np.int64)
    phase, current, card = info[:, PHASE], info[:, CURRENT], info[:, CARD]
    out[:] = 0.0

    def block(name: str, values: np.ndarray) -> None:
        out[:, seg[name] : seg[name] + values.shape[1]] = values

    def one_hot(name: str, where: np.ndarray, index: np.ndarray) -> None:
        out[rows[where], seg[name] + index[where]] = 1.0

    block("hands", state.hands.reshape(b, -1))
    block("collections", state.collections.reshape(b, -1))
    block("hand_sizes", state.hands.sum(-1, dtype=np.int64))
    block("history", state.stats.reshape(b, -1))
    block("removed", state.removed)
    live = phase != OVER
    one_hot("phase", live, phase)
    one_hot("to_act", live, current)
    chain = card >= 0
    one_hot("chain_claim", chain, info[:, CLAIM])
    one_hot("chain_latest_passer", chain, info[:, PASSER])
    one_hot("chain_holder", chain, info[:, HOLDER])
    block("chain_seen", state.seen)
    one_hot("chain_card", chain, card)
    for seat in range(n):
        claimed = state.seat_claim[:, seat].astype(np.int64)
        one_hot("chain_claims", claimed >= 0, seat * c + claimed)
    if rules.royal:
        top, end = info[:, PENALTY_TOP], info[:, PENALTY_END]
        left = top < end
        one_hot("penalty_top", left, state.penalty[rows, np.minimum(top, rules.penalty_capacity - 1)].astype(np.int64))
        out[:, seg["penalty_size"]] = end - top
        depth = np.arange(rules.penalty_capacity)
        hidden = (depth > top[:, None]) & (depth < end[:, None])
        counts = np.bincount((rows[:, None] * i + state.penalty)[hidden], minlength=b * i).reshape(b, i)
        block("penalty_hidden", counts)
        for row in range(2):
            seat = info[:, SPECIAL_HOLDER + row]
            known = (seat >= 0) & ((card < 0) | (seat != info[:, OFFERER]))
            one_hot("special_holder", known, row * n + seat)
        placing = phase == PLACE
        one_hot("place_claim", placing & (info[:, PLACE_CLAIM] >= 0), info[:, PLACE_CLAIM])
        out[:, seg["place_remaining"]] = np.where(placing, info[:, PLACE_REMAINING], 0)
    return out


# ---------------------------------------------------------------------------- numpy backend
class _NumpyBackend:
    """Vectorized by move kind; see the module docstring."""

    name = "numpy"

    def __init__(self, rules: _Rules, state: _State):
        self.rules, self.state = rules, state
        self.non_special = ~rules.is_special

    # ------------------------------------------------------------ legality
    def legal(self, actions: np.ndarray) -> np.ndarray:
        """(B,) bool: is each game's action legal now (the mask entry, computed from the state)."""
        r, s = self.rules, self.state
        rows = np.arange(len(actions))
        info = s.info.astype(np.int64)
        phase, current = info[:, PHASE], info[:, CURRENT]
        legal = np.zeros(len(actions), bool)
        a = np.where((actions >= 0) & (actions < r.num_actions), actions, r.num_actions)  # out of range: matches no kind below
        offer = a < r.offer_size
        card = np.where(offer, a // ((r.n - 1) * r.c), 0)
        legal |= offer & (phase == OFFER) & (s.hands[rows, current, card] > 0)
        respond = (a >= r.respond_start) & (a < r.pass_start)
        can_peek = self._eligible().any(1)
        legal |= respond & (phase == RESPOND) & ((a < r.respond_start + 2) | can_peek)
        passing = (a >= r.pass_start) & (a < r.place_start)
        offset = np.where(passing, (a - r.pass_start) // r.c + 1, 1)
        target = (current + offset) % r.n
        legal |= passing & (phase == PASS) & self._eligible()[rows, target]
        placing = (a >= r.place_start) & (a < r.num_actions)
        legal |= placing & (phase == PLACE) & self._placeable()[rows, np.where(placing, a - r.place_start, 0)]
        return legal

    def _eligible(self) -> np.ndarray:
        """(B, N): seats that may receive the card in play (not seen it, not the holder)."""
        s = self.state
        holder = s.info[:, HOLDER].astype(np.int64)
        eligible = ~s.seen & (s.info[:, CARD] >= 0)[:, None]
        eligible[np.arange(len(holder)), holder] = False  # holder is -1 without a chain: row already all False
        return eligible

    def _placeable(self) -> np.ndarray:
        """(B, I): cards the placing player may put into their collection now."""
        r, s = self.rules, self.state
        rows = np.arange(len(s.info))
        current = s.info[:, CURRENT].astype(np.int64)
        claim = s.info[:, PLACE_CLAIM].astype(np.int64)
        fits = np.where((claim >= 0)[:, None], r.fits[:, np.maximum(claim, 0)].T, True)
        return (s.hands[rows, current] > 0) & self.non_special & fits & (s.info[:, PHASE] == PLACE)[:, None]

    # ------------------------------------------------------------ moves
    def first_illegal(self, actions: np.ndarray) -> int:
        illegal = np.flatnonzero(~self.legal(actions))
        return int(illegal[0]) if illegal.size else -1

    def apply(self, actions: np.ndarray, out: BatchStep) -> int:
        """Check every action, then apply them all; returns the first illegal game (nothing changed) or -1."""
        bad = self.first_illegal(actions)
        if bad >= 0:
            return bad
        _clear_outcome(out)
        r, s = self.rules, self.state
        n, c = r.n, r.c
        info = s.info
        a = actions
        s.steps += 1
        respond = a - r.respond_start

        games = np.flatnonzero(a < r.offer_size)
        if games.size:
            act, current = a[games], info[games, CURRENT].astype(np.int64)
            card, offset, claim = act // ((n - 1) * c), (act // c) % (n - 1) + 1, act % c
            target = (current + offset) % n
            s.hands[games, current, card] -= 1
            info[games, CARD], info[games, OFFERER], info[games, PASSER], info[games, CLAIM] = card, current, current, claim
            info[games, HOLDER], info[games, CURRENT], info[games, PHASE] = target, target, RESPOND
            s.seen[games] = False
            s.seen[games, current] = True
            s.seat_claim[games] = -1
            s.seat_claim[games, current] = claim

        games = np.flatnonzero(respond == 2)
        if games.size:
            holder = info[games, HOLDER].astype(np.int64)
            s.seen[games, holder] = True
            s.stats[games, holder, PEEKS] += 1
            info[games, PHASE] = PASS

        games = np.flatnonzero((a >= r.pass_start) & (a < r.place_start))
        if games.size:
            act, holder = a[games] - r.pass_start, info[games, HOLDER].astype(np.int64)
            target, claim = (holder + act // c + 1) % n, act % c
            info[games, PASSER], info[games, CLAIM], info[games, HOLDER], info[games, CURRENT] = holder, claim, target, target
            info[games, PHASE] = RESPOND
            s.seat_claim[games, holder] = claim

        games = np.flatnonzero((respond == 0) | (respond == 1))
        if games.size:
            self._call(games, respond[games] == 0, out)

        games = np.flatnonzero(a >= r.place_start)
        if games.size:
            self._replace(games, a[games] - r.place_start, out)

        if r.max_steps:
            cut = (s.steps >= r.max_steps) & (info[:, PHASE] != OVER)
            out.truncated[cut] = out.done[cut] = True
        ended = out.loser >= 0
        out.rewards[ended] = 1.0 / (n - 1)
        out.rewards[np.flatnonzero(ended), out.loser[ended]] = -1.0
        return -1

    def _call(self, games: np.ndarray, believe: np.ndarray, out: BatchStep) -> None:
        """Reveal, count the history, hand the card to the taker (section 1.2; Royal section 4)."""
        r, s = self.rules, self.state
        info = s.info
        card, claim = info[games, CARD].astype(np.int64), info[games, CLAIM].astype(np.int64)
        holder, passer = info[games, HOLDER].astype(np.int64), info[games, PASSER].astype(np.int64)
        right = believe == r.truth[card, claim]
        taker = np.where(right, passer, holder)
        claims = s.seat_claim[games].astype(np.int64)
        made = claims >= 0
        truthful = r.truth[card[:, None], np.maximum(claims, 0)]
        s.stats[games, :, TRUTHFUL_CLAIMS] += made & truthful
        s.stats[games, :, FALSE_CLAIMS] += made & ~truthful
        s.stats[games, holder, np.where(right, RIGHT_CALLS, WRONG_CALLS)] += 1
        info[games, CARD : CLAIM + 1] = -1
        s.seen[games] = False
        s.seat_claim[games] = -1

        special = r.is_special[card]
        hand = s.hands[games, taker].astype(np.int64)
        others = hand[:, self.non_special].sum(1)
        # Normal cards, and a special card when nothing else is in hand (ruling), go face up.
        face_up = ~special | (others == 0)
        if face_up.any():
            g, t = games[face_up], taker[face_up]
            placed_special = special[face_up]  # no longer in any hand
            info[g[placed_special], SPECIAL_HOLDER + r.special_row[card[face_up][placed_special]]] = -1
            lost = self._place(g, t, card[face_up], out)
            self._start_round(g[~lost], t[~lost], out)
        into_hand = ~face_up
        if into_hand.any():
            g, t, cd, cl = games[into_hand], taker[into_hand], card[into_hand], claim[into_hand]
            s.hands[g, t, cd] += 1
            info[g, SPECIAL_HOLDER + r.special_row[cd]] = t
            fitting = ((s.hands[g, t] > 0) & r.fits[:, cl].T).any(1)
            info[g, PLACE_CLAIM] = np.where(fitting, cl, -1)
            info[g, PLACE_REMAINING] = np.where(fitting, 1, np.minimum(2, others[into_hand]))
            info[g, PHASE], info[g, CURRENT] = PLACE, t

    def _replace(self, games: np.ndarray, card: np.ndarray, out: BatchStep) -> None:
        """Royal PLACE phase: one replacement card from hand to collection."""
        s = self.state
        info = s.info
        player = info[games, CURRENT].astype(np.int64)
        s.hands[games, player, card] -= 1
        info[games, PLACE_REMAINING] -= 1
        lost = self._place(games, player, card, out)
        games, player = games[~lost], player[~lost]
        finished = (info[games, PLACE_REMAINING] == 0) | ~self._placeable()[games].any(1)
        games, player = games[finished], player[finished]
        info[games, PLACE_CLAIM], info[games, PLACE_REMAINING] = -1, 0
        self._start_round(games, player, out)

    def _place(self, games: np.ndarray, player: np.ndarray, card: np.ndarray, out: BatchStep) -> np.ndarray:
        """Put cards face up, check losses, draw penalty cards for royals (chained); returns lost."""
        r, s = self.rules, self.state
        info = s.info
        lost = np.zeros(games.size, bool)
        active = np.arange(games.size)
        card = card.copy()
        while active.size:
            g, p, cd = games[active], player[active], card[active]
            s.collections[g, p, cd] += 1
            group = r.group_of[cd]
            counts = s.collections[g, p].astype(np.int64) @ r.members
            same = (group >= 0) & (counts[np.arange(g.size), np.maximum(group, 0)] >= r.loss_count)
            rainbow = (group >= 0) & ~same & r.rainbow & (counts[:, : r.animal_groups] > 0).all(1)
            losing = same | rainbow
            self._lose(g[losing], p[losing], np.where(same, SAME_TYPE, RAINBOW)[losing], out)
            lost[active[losing]] = True
            top = info[g, PENALTY_TOP].astype(np.int64)
            draws = ~losing & r.is_royal[cd] & (top < info[g, PENALTY_END])
            g, p, top, active = g[draws], p[draws], top[draws], active[draws]
            drawn = s.penalty[g, top].astype(np.int64)
            info[g, PENALTY_TOP] = top + 1
            special = r.is_special[drawn]
            s.hands[g[special], p[special], drawn[special]] += 1
            info[g[special], SPECIAL_HOLDER + r.special_row[drawn[special]]] = p[special]
            active = active[~special]
            card[active] = drawn[~special]
        return lost

    def _start_round(self, games: np.ndarray, starter: np.ndarray, out: BatchStep) -> None:
        s = self.state
        empty = s.hands[games, starter].sum(1) == 0
        self._lose(games[empty], starter[empty], EMPTY_HAND, out)
        s.info[games[~empty], PHASE] = OFFER
        s.info[games[~empty], CURRENT] = starter[~empty]

    def _lose(self, games: np.ndarray, seat: np.ndarray, reason, out: BatchStep) -> None:
        self.state.info[games, PHASE] = OVER
        out.done[games] = True
        out.loser[games] = seat
        out.loss_reason[games] = reason

    # ------------------------------------------------------------ outputs
    def states(self, out: np.ndarray) -> np.ndarray:
        return _write_states(self.rules, self.state, out)

    def step(self, actions: np.ndarray, out: BatchStep, queue: _DealQueue) -> tuple[int, int]:
        """Check, apply, deal finished games from the queue in game order, emit; (first illegal game or -1, games dealt)."""
        bad = self.apply(actions, out)
        if bad >= 0:
            return bad, 0
        games = np.flatnonzero(out.done)
        slot_of = np.full(len(actions), -1, np.int64)
        slot_of[games] = np.arange(queue.next, queue.next + games.size)
        self.deal(out, queue, slot_of)
        return -1, games.size

    def deal(self, out: BatchStep, queue: _DealQueue, slot_of: np.ndarray) -> None:
        """Deal game ``b`` from the queued deal at ``slot_of[b]`` (where >= 0), then write to_act, masks and observations of every game."""
        r, s = self.rules, self.state
        games = np.flatnonzero(slot_of >= 0)
        if games.size:
            s.install(games, queue.deals, slot_of[games])
        b = len(s.info)
        states = _write_states(r, s, np.empty((b, r.state_size + 1), np.float32))
        current = s.info[:, CURRENT].astype(np.int64)
        rows = np.arange(b)
        seen = s.seen[rows, current]
        out.observation[:] = np.take_along_axis(states, r.observation_index[current, seen.astype(np.intp)], axis=1)
        out.to_act[:] = current
        self._write_masks(out.action_mask)

    def _write_masks(self, mask: np.ndarray) -> None:
        r, s = self.rules, self.state
        b = len(mask)
        rows = np.arange(b)
        phase = s.info[:, PHASE]
        current = s.info[:, CURRENT].astype(np.int64)
        mask[:] = 0
        offers = mask[:, : r.offer_size].reshape(b, r.i, -1)
        offers[:] = ((s.hands[rows, current] > 0) & (phase == OFFER)[:, None])[:, :, None]
        eligible = self._eligible()
        responding = phase == RESPOND
        mask[:, r.respond_start] = mask[:, r.respond_start + 1] = responding
        mask[:, r.respond_start + 2] = responding & eligible.any(1)
        targets = eligible[rows[:, None], (current[:, None] + np.arange(1, r.n)) % r.n] & (phase == PASS)[:, None]
        mask[:, r.pass_start : r.place_start].reshape(b, r.n - 1, r.c)[:] = targets[:, :, None]
        if r.royal:
            mask[:, r.place_start :] = self._placeable()


# ---------------------------------------------------------------------------- numba backend
# Per-game code mirroring engine.py. ``d`` is the config's ``_Dims`` (sizes and layout
# offsets): a constant of every compiled kernel, so the fixed-size loops unroll and the
# divisions by N and C become multiplications. The rule numbers (``P_*`` positions in
# ``params``) and the card table (``_Rules.card_table``) are runtime arguments.
# The kernels allocate nothing and are compiled without numba's reference counting
# (``_nrt=False``): with it, the arrays handed through the inlined helpers cost a few
# atomic reference-count calls per game, more than the game step itself. Where the
# outcome of a branch is a coin flip (whether a seat claimed, the phase of a random
# game), the code computes both sides instead: mispredicted branches cost more.
def _jit(function):
    return numba.njit(cache=True, inline="always")(function) if numba is not None else function


if numba is not None:
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.core.extending import intrinsic

    @intrinsic
    def _nb_popcount(typingctx, word):
        """The number of set bits of a uint64 (one instruction)."""
        if word != types.uint64:
            return None
        return types.uint64(types.uint64), lambda context, builder, signature, args: builder.ctpop(args[0])

    @intrinsic
    def _nb_lowest_bit(typingctx, word):
        """The position of the lowest set bit of a nonzero uint64 (one instruction)."""
        if word != types.uint64:
            return None
        return types.uint64(types.uint64), lambda context, builder, signature, args: builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    @intrinsic
    def _nb_nonzero_bits(typingctx, array, row, start):
        """Bit ``j`` set where ``array[row, start + j] != 0``, for j < 64, from one 64-byte load.

        ``array``: 2-D, C-contiguous, one byte per entry. The load reads 64 bytes from
        ``array[row, start]`` on: the caller keeps them inside the array's buffer and
        drops the bits past the row's end.
        """
        if not (isinstance(array, types.Array) and array.ndim == 2 and array.layout == "C" and array.dtype in (types.int8, types.uint8)):
            return None

        def codegen(context, builder, signature, args):
            array_type = signature.args[0]
            pointer = cgutils.get_item_pointer(context, builder, array_type, context.make_array(array_type)(context, builder, args[0]), args[1:], wraparound=False)
            bytes64 = ir.VectorType(ir.IntType(8), 64)
            loaded = builder.load(builder.bitcast(pointer, bytes64.as_pointer()), align=1)
            return builder.bitcast(builder.icmp_unsigned("!=", loaded, ir.Constant(bytes64, None)), ir.IntType(64))

        return types.uint64(array, types.intp, types.intp), codegen

    @intrinsic
    def _nb_widen8(typingctx, source, game, seat, column, out, row, at):
        """``out[row, at:at + 8] = source[game, seat, column:column + 8]``, as float32, in one load and one store.

        Eight entries even past the end of ``source``'s row or ``out``'s segment: the
        caller keeps them inside the buffers (``_padded``, a scratch row with room to
        spare) and overwrites what spills into the next segment.
        """
        if not (isinstance(source, types.Array) and source.ndim == 3 and source.dtype in (types.int8, types.uint8)):
            return None
        if not (isinstance(out, types.Array) and out.ndim == 2 and out.dtype == types.float32):
            return None

        def codegen(context, builder, signature, args):
            source_type, out_type = signature.args[0], signature.args[4]
            source_array = context.make_array(source_type)(context, builder, args[0])
            out_array = context.make_array(out_type)(context, builder, args[4])
            source_at = cgutils.get_item_pointer(context, builder, source_type, source_array, args[1:4], wraparound=False)
            out_at = cgutils.get_item_pointer(context, builder, out_type, out_array, args[5:7], wraparound=False)
            counts = builder.load(builder.bitcast(source_at, ir.VectorType(ir.IntType(8), 8).as_pointer()), align=1)
            floats = ir.VectorType(ir.FloatType(), 8)
            widened = builder.sitofp(counts, floats) if source_type.dtype.signed else builder.uitofp(counts, floats)
            builder.store(widened, builder.bitcast(out_at, floats.as_pointer()), align=4)
            return context.get_dummy_value()

        return types.none(source, types.intp, types.intp, types.intp, out, types.intp, types.intp), codegen

    @intrinsic
    def _nb_word8(typingctx, source, game, seat, column):
        """The 8 bytes ``source[game, seat, column:column + 8]`` as one little-endian uint64 (one load; see ``_nb_widen8``)."""
        if not (isinstance(source, types.Array) and source.ndim == 3 and source.dtype in (types.int8, types.uint8)):
            return None

        def codegen(context, builder, signature, args):
            source_type = signature.args[0]
            source_array = context.make_array(source_type)(context, builder, args[0])
            source_at = cgutils.get_item_pointer(context, builder, source_type, source_array, args[1:4], wraparound=False)
            return builder.load(builder.bitcast(source_at, ir.IntType(64).as_pointer()), align=1)

        return types.uint64(source, types.intp, types.intp, types.intp), codegen


@_jit
def _nb_hand_size(d, hands, b, p):
    total = 0
    for card in range(d.i):
        total += hands[b, p, card]
    return total


@_jit
def _nb_can_peek(d, seen, info, b):
    """Someone other than the holder has not seen the card."""
    holder = info[b, HOLDER]
    can = False
    for seat in range(d.n):
        can |= (seat != holder) & (seen[b, seat] == 0)
    return can


@_jit
def _nb_placeable(d, hands, info, card_table, b, card):
    """Royal PLACE phase: may the player put ``card`` from hand into their collection?"""
    claim = info[b, PLACE_CLAIM]  # -1 reads a truth column below: ignored by ``claim < 0``
    fits = (claim < 0) | (card_table[card, TRUTH + d.c + claim] != 0)
    return (hands[b, info[b, CURRENT], card] > 0) & (card_table[card, SPECIAL] == 0) & fits


@_jit
def _nb_any_placeable(d, hands, info, card_table, b):
    any_card = False
    for card in range(d.i):
        any_card |= _nb_placeable(d, hands, info, card_table, b, card)
    return any_card


@_jit
def _nb_legal(d, hands, seen, info, card_table, b, a):
    if a < 0 or a >= d.num_actions:
        return False
    phase, current = info[b, PHASE], info[b, CURRENT]
    if a < d.offer_size:
        return (phase == OFFER) & (hands[b, current, a // ((d.n - 1) * d.c)] > 0)
    if a < d.pass_start:
        return (phase == RESPOND) & ((a - d.respond_start < 2) | _nb_can_peek(d, seen, info, b))
    if a < d.place_start:
        target = (current + (a - d.pass_start) // d.c + 1) % d.n
        return (phase == PASS) & (seen[b, target] == 0) & (target != info[b, HOLDER])
    return (phase == PLACE) & _nb_placeable(d, hands, info, card_table, b, a - d.place_start)


@_jit
def _nb_lose(info, loser, loss_reason, b, seat, reason):
    info[b, PHASE] = OVER
    loser[b] = seat
    loss_reason[b] = reason


@_jit
def _nb_group_count(d, collections, card_table, b, player, group):
    count = 0
    for card in range(d.i):
        count += collections[b, player, card] * (card_table[card, GROUP] == group)
    return count


@_jit
def _nb_place(d, hands, collections, penalty, info, card_table, params, loser, loss_reason, b, player, card):
    """Face up, loss check, penalty draws for placed royals (chained); True if the player lost."""
    while True:
        collections[b, player, card] += 1
        group = card_table[card, GROUP]
        if group >= 0:  # before this card no group was at the loss count, so only its group can be now
            if _nb_group_count(d, collections, card_table, b, player, group) >= params[P_LOSS_COUNT]:
                _nb_lose(info, loser, loss_reason, b, player, SAME_TYPE)
                return True
            if params[P_RAINBOW]:
                every = True
                for wanted in range(params[P_ANIMAL_GROUPS]):
                    if _nb_group_count(d, collections, card_table, b, player, wanted) == 0:
                        every = False
                        break
                if every:
                    _nb_lose(info, loser, loss_reason, b, player, RAINBOW)
                    return True
        top = info[b, PENALTY_TOP]
        if not card_table[card, ROYAL] or top >= info[b, PENALTY_END]:
            return False
        drawn = penalty[b, top]
        info[b, PENALTY_TOP] = top + 1
        if card_table[drawn, SPECIAL]:  # ruling: a drawn joker or blank goes to hand, nothing more is drawn
            hands[b, player, drawn] += 1
            info[b, SPECIAL_HOLDER + card_table[drawn, SPECIAL_ROW]] = player
            return False
        card = drawn  # a drawn royal draws again


@_jit
def _nb_start_round(d, hands, info, loser, loss_reason, b, starter):
    if _nb_hand_size(d, hands, b, starter) == 0:
        _nb_lose(info, loser, loss_reason, b, starter, EMPTY_HAND)
    else:
        info[b, PHASE] = OFFER
        info[b, CURRENT] = starter


@_jit
def _nb_apply_one(d, hands, collections, stats, seat_claim, seen, penalty, info, steps, card_table, params, loser, loss_reason, b, a):
    n, c = d.n, d.c
    steps[b] += 1
    loser[b] = -1
    loss_reason[b] = -1
    current = info[b, CURRENT]
    if a < d.offer_size:
        card, offset, claim = a // ((n - 1) * c), (a // c) % (n - 1) + 1, a % c
        target = (current + offset) % n
        hands[b, current, card] -= 1
        info[b, CARD], info[b, OFFERER], info[b, PASSER], info[b, CLAIM] = card, current, current, claim
        info[b, HOLDER], info[b, CURRENT], info[b, PHASE] = target, target, RESPOND
        for seat in range(n):
            seen[b, seat] = seat == current
            seat_claim[b, seat] = claim if seat == current else -1
        return
    if a >= d.pass_start and a < d.place_start:
        target, claim = (current + (a - d.pass_start) // c + 1) % n, (a - d.pass_start) % c
        info[b, PASSER], info[b, CLAIM], info[b, HOLDER], info[b, CURRENT], info[b, PHASE] = current, claim, target, target, RESPOND
        seat_claim[b, current] = claim
        return
    if a == d.respond_start + 2:  # peek
        seen[b, current] = True
        stats[b, current, PEEKS] += 1
        info[b, PHASE] = PASS
        return
    if a >= d.place_start:  # Royal replacement
        card = a - d.place_start
        hands[b, current, card] -= 1
        info[b, PLACE_REMAINING] -= 1
        if _nb_place(d, hands, collections, penalty, info, card_table, params, loser, loss_reason, b, current, card):
            return
        if info[b, PLACE_REMAINING] == 0 or not _nb_any_placeable(d, hands, info, card_table, b):
            info[b, PLACE_CLAIM] = -1
            info[b, PLACE_REMAINING] = 0
            _nb_start_round(d, hands, info, loser, loss_reason, b, current)
        return
    # call: reveal, count the history, hand the card to the taker
    believe = a == d.respond_start
    card, claim, holder = info[b, CARD], info[b, CLAIM], info[b, HOLDER]
    right = believe == (card_table[card, TRUTH + claim] != 0)
    taker = info[b, PASSER] if right else holder
    for seat in range(n):  # branch-free: whether a seat claimed is a coin flip for the branch predictor
        made = seat_claim[b, seat]  # -1 (no claim) reads a column left of the truth table: counted as nothing
        stats[b, seat, TRUTHFUL_CLAIMS if card_table[card, TRUTH + made] else FALSE_CLAIMS] += made >= 0
        seat_claim[b, seat] = -1
        seen[b, seat] = False
    stats[b, holder, RIGHT_CALLS if right else WRONG_CALLS] += 1
    for column in range(CARD, CLAIM + 1):
        info[b, column] = -1
    others = 0
    for other in range(d.i):
        others += hands[b, taker, other] * (card_table[other, SPECIAL] == 0)
    if not card_table[card, SPECIAL] or others == 0:  # ruling: a special card with nothing else in hand goes face up
        if card_table[card, SPECIAL]:
            info[b, SPECIAL_HOLDER + card_table[card, SPECIAL_ROW]] = -1
        if not _nb_place(d, hands, collections, penalty, info, card_table, params, loser, loss_reason, b, taker, card):
            _nb_start_round(d, hands, info, loser, loss_reason, b, taker)
        return
    hands[b, taker, card] += 1
    info[b, SPECIAL_HOLDER + card_table[card, SPECIAL_ROW]] = taker
    fitting = False
    for other in range(d.i):
        fitting |= (hands[b, taker, other] > 0) & (card_table[other, TRUTH + c + claim] != 0)
    info[b, PLACE_CLAIM] = claim if fitting else -1
    info[b, PLACE_REMAINING] = 1 if fitting else min(2, others)
    info[b, PHASE] = PLACE
    info[b, CURRENT] = taker


@_jit
def _nb_outcome(d, params, info, steps, loser, b, rewards, done, truncated):
    """Done, truncated and rewards of game ``b`` after its move (``loser`` is set by the move)."""
    ended = info[b, PHASE] == OVER
    cut = (not ended) & (params[P_MAX_STEPS] > 0) & (steps[b] >= params[P_MAX_STEPS])
    done[b] = ended | cut
    truncated[b] = cut
    win = np.float32(1.0 / (d.n - 1)) if ended else np.float32(0.0)
    lose = np.float32(-1.0) if ended else np.float32(0.0)
    for seat in range(d.n):
        rewards[b, seat] = lose if seat == loser[b] else win


@_jit
def _nb_write_mask(d, hands, seen, info, card_table, b, mask):
    """Row ``b`` of ``mask``: the legal actions of the seat to act, every entry written once."""
    phase, current, holder = info[b, PHASE], info[b, CURRENT], info[b, HOLDER]
    width = (d.n - 1) * d.c
    offering = phase == OFFER
    for card in range(d.i):
        legal = offering & (hands[b, current, card] > 0)
        for entry in range(width):
            mask[b, card * width + entry] = legal
    responding = phase == RESPOND
    mask[b, d.respond_start] = responding
    mask[b, d.respond_start + 1] = responding
    mask[b, d.respond_start + 2] = responding & _nb_can_peek(d, seen, info, b)
    passing = phase == PASS
    for offset in range(1, d.n):
        target = (current + offset) % d.n
        legal = passing & (seen[b, target] == 0) & (target != holder)
        for claim in range(d.c):
            mask[b, d.pass_start + (offset - 1) * d.c + claim] = legal
    if d.royal:
        placing = phase == PLACE  # rare: a predictable branch
        for card in range(d.i):
            mask[b, d.place_start + card] = _nb_placeable(d, hands, info, card_table, b, card) if placing else False


@_jit
def _nb_write_observation(d, hands, collections, stats, seat_claim, seen, penalty, info, b, out, row):
    """Row ``row`` of ``out``: game ``b``'s observation by the seat to act (``viewer``), seats counted from it.

    The count segments lead the layout (checked in ``_Rules``): they are widened eight
    entries at a time in layout order, so that what spills past a segment is written
    over next, and everything after them is zeroed. The one-hot entries are written
    unconditionally (the value is the condition, the position clamped into the segment):
    nothing else writes there, and branch-free code is about twice as fast on random states.
    """
    n, i, c, k = d.n, d.i, d.c, d.k
    viewer = np.intp(np.uint8(info[b, CURRENT]))  # unsigned: LLVM then drops the negative-index checks
    for column in range(0, i, 8):
        _nb_widen8(hands, b, viewer, column, out, row, d.own_hand + column)
    for rel in range(n):
        for column in range(0, i, 8):
            _nb_widen8(collections, b, (viewer + rel) % n, column, out, row, d.collections + rel * i + column)
    for rel in range(n):
        for column in range(0, k, 8):
            _nb_widen8(stats, b, (viewer + rel) % n, column, out, row, d.history + rel * k + column)
    for entry in range(d.history + n * k, d.observation_size):
        out[row, entry] = 0.0
    for rel in range(n):
        seat = (viewer + rel) % n
        size = np.uint64(0)
        for column in range(0, i, 8):  # the byte sum of a word: counts are small and not negative
            word = _nb_word8(hands, b, seat, column)
            if i - column < 8:
                word &= (np.uint64(1) << np.uint64(8 * (i - column))) - np.uint64(1)
            size += (word * np.uint64(0x0101010101010101)) >> np.uint64(56)
        out[row, d.hand_sizes + rel] = size
        out[row, d.chain_seen + rel] = seen[b, seat]
        claim = seat_claim[b, seat]
        out[row, d.chain_claims + rel * c + max(claim, 0)] = claim >= 0
    phase, card = info[b, PHASE], info[b, CARD]
    live = phase != OVER
    out[row, d.phase + min(phase, OVER - 1)] = live
    out[row, d.to_act] = live  # the viewer is the seat to act
    chain = card >= 0
    out[row, d.chain_claim + max(info[b, CLAIM], 0)] = chain
    out[row, d.chain_latest_passer + (info[b, PASSER] - viewer + n) % n] = chain
    out[row, d.chain_holder + (info[b, HOLDER] - viewer + n) % n] = chain
    out[row, d.chain_card + max(card, 0)] = chain & seen[b, viewer]  # only who offered or peeked saw it
    if d.royal:
        top, end = info[b, PENALTY_TOP], info[b, PENALTY_END]
        if top < end:
            out[row, d.penalty_top + penalty[b, top]] = 1.0
            out[row, d.penalty_size] = end - top
        for special in range(2):  # known holders, hidden while the holder's offered card is in play
            seat = info[b, SPECIAL_HOLDER + special]
            known = (seat >= 0) & ((card < 0) | (seat != info[b, OFFERER]))
            out[row, d.special_holder + special * n + (seat - viewer + n) % n] = known
        if phase == PLACE:
            if info[b, PLACE_CLAIM] >= 0:
                out[row, d.place_claim + info[b, PLACE_CLAIM]] = 1.0
            out[row, d.place_remaining] = info[b, PLACE_REMAINING]


@_jit
def _nb_emit_one(d, hands, collections, stats, seat_claim, seen, penalty, info, card_table, b, to_act, observation, action_mask, scratch, row):
    to_act[b] = info[b, CURRENT]
    _nb_write_mask(d, hands, seen, info, card_table, b, action_mask)
    _nb_write_observation(d, hands, collections, stats, seat_claim, seen, penalty, info, b, scratch, row)
    for entry in range(d.observation_size):
        observation[b, entry] = scratch[row, entry]


# Called, not inlined, where it runs for few games (re-deals, reset): one compiled copy
# serves every config (``d`` is then an argument), and the kernels compile faster.
_nb_emit_called = numba.njit(cache=True, _nrt=False)(_nb_emit_one.py_func) if numba is not None else _nb_emit_one


def _nb_deal_orders(starters, orders, discard, penalty_size, opening, dealt, starter, hands, collections, removed, penalty, sizes):
    """``deals_from_orders`` as a loop, into zeroed arrays (``_Deals`` fields, in order); see ``_deck_positions``."""
    n = hands.shape[1]
    for k in range(orders.shape[0]):
        first = starters[k]
        starter[k] = first
        for position in range(discard):
            removed[k, orders[k, position]] += 1
        position = discard
        depth = 0
        for _ in range(penalty_size):
            penalty[k, depth] = orders[k, position]
            depth += 1
            position += 1
        seat = first
        for _ in range(opening):
            collections[k, seat, orders[k, position]] += 1
            position += 1
            seat = seat + 1 if seat + 1 < n else 0
        seat = first
        for _ in range(dealt):
            hands[k, seat, orders[k, position]] += 1
            position += 1
            seat = seat + 1 if seat + 1 < n else 0
        while position < orders.shape[1]:  # Royal leftovers go under the penalty deck
            penalty[k, depth] = orders[k, position]
            depth += 1
            position += 1
        sizes[k] = depth


_deal_orders_compiled = numba.njit(cache=True, _nrt=False)(_nb_deal_orders) if numba is not None else None


@_jit
def _nb_redeal(hands, collections, stats, seat_claim, seen, removed, penalty, info, steps, b,
               slot, deal_starter, deal_hands, deal_collections, deal_removed, deal_penalty, deal_penalty_size):  # fmt: skip
    """Start game ``b`` afresh from the queued deal at ``slot``."""
    for p in range(hands.shape[1]):
        for card in range(hands.shape[2]):
            hands[b, p, card] = deal_hands[slot, p, card]
            collections[b, p, card] = deal_collections[slot, p, card]
        for stat in range(stats.shape[2]):
            stats[b, p, stat] = 0
        seat_claim[b, p] = -1
        seen[b, p] = False
    for card in range(removed.shape[1]):
        removed[b, card] = deal_removed[slot, card]
    for depth in range(penalty.shape[1]):
        penalty[b, depth] = deal_penalty[slot, depth]
    for column in range(info.shape[1]):
        info[b, column] = -1
    info[b, PHASE] = OFFER
    info[b, CURRENT] = deal_starter[slot]
    info[b, PLACE_REMAINING] = 0
    info[b, PENALTY_TOP] = 0
    info[b, PENALTY_END] = deal_penalty_size[slot]
    steps[b] = 0


@_jit
def _nb_put(out, position, index, value):
    """Add ``value`` at the output position of state entry ``index`` (skipped where not visible)."""
    at = position[index]
    if at >= 0:
        out[at] += value


@_jit
def _nb_write_view(hands, collections, stats, seat_claim, seen, removed, penalty, info, segments, params, b, position, out):
    """Game ``b``'s state vector, or the part of it a viewer sees, into ``out``.

    ``position`` maps every state entry to its place in ``out`` (-1: not visible); the
    rows of the per-seat count segments are contiguous runs in it. ``state()`` uses it
    with the identity (not a hot path).
    """
    n, i, c, k = params[P_N], params[P_I], params[P_C], params[P_K]
    out[:] = 0.0
    for p in range(n):
        size = 0
        for card in range(i):
            size += hands[b, p, card]
        at = position[segments[S_HANDS] + p * i]
        if at >= 0:
            for card in range(i):
                out[at + card] = hands[b, p, card]
        at = position[segments[S_COLLECTIONS] + p * i]
        for card in range(i):
            out[at + card] = collections[b, p, card]
        at = position[segments[S_HISTORY] + p * k]
        for stat in range(k):
            out[at + stat] = stats[b, p, stat]
        _nb_put(out, position, segments[S_HAND_SIZES] + p, size)
        if seen[b, p]:
            _nb_put(out, position, segments[S_CHAIN_SEEN] + p, 1.0)
        if seat_claim[b, p] >= 0:
            _nb_put(out, position, segments[S_CHAIN_CLAIMS] + p * c + seat_claim[b, p], 1.0)
    at = position[segments[S_REMOVED]]
    if at >= 0:
        for card in range(i):
            out[at + card] = removed[b, card]
    phase, card = info[b, PHASE], info[b, CARD]
    if phase != OVER:
        _nb_put(out, position, segments[S_PHASE] + phase, 1.0)
        _nb_put(out, position, segments[S_TO_ACT] + info[b, CURRENT], 1.0)
    if card >= 0:
        _nb_put(out, position, segments[S_CHAIN_CLAIM] + info[b, CLAIM], 1.0)
        _nb_put(out, position, segments[S_CHAIN_LATEST_PASSER] + info[b, PASSER], 1.0)
        _nb_put(out, position, segments[S_CHAIN_HOLDER] + info[b, HOLDER], 1.0)
        _nb_put(out, position, segments[S_CHAIN_CARD] + card, 1.0)
    if segments[S_PENALTY_TOP] >= 0:  # Royal
        top, end = info[b, PENALTY_TOP], info[b, PENALTY_END]
        if top < end:
            _nb_put(out, position, segments[S_PENALTY_TOP] + penalty[b, top], 1.0)
            _nb_put(out, position, segments[S_PENALTY_SIZE], end - top)
            if position[segments[S_PENALTY_HIDDEN]] >= 0:
                for depth in range(top + 1, end):
                    _nb_put(out, position, segments[S_PENALTY_HIDDEN] + penalty[b, depth], 1.0)
        for row in range(2):  # known holders, hidden while the holder's offered card is in play
            seat = info[b, SPECIAL_HOLDER + row]
            if seat >= 0 and (card < 0 or seat != info[b, OFFERER]):
                _nb_put(out, position, segments[S_SPECIAL_HOLDER] + row * n + seat, 1.0)
        if phase == PLACE:
            if info[b, PLACE_CLAIM] >= 0:
                _nb_put(out, position, segments[S_PLACE_CLAIM] + info[b, PLACE_CLAIM], 1.0)
            _nb_put(out, position, segments[S_PLACE_REMAINING], info[b, PLACE_REMAINING])


CHUNK = 256
"""Games per chunk of the compiled loops (the unit handed to a thread)."""
PARALLEL_MIN_GAMES = 4 * CHUNK
"""Smaller batches run the serial kernels even with ``parallel=True``: starting threads costs more than they save."""


def _compile(d: _Dims) -> dict:
    """The kernels of one ``_Dims`` (``d.parallel`` included), compiled on first use.

    They are closures over ``d``; numba's disk cache keys closures by their constants,
    so every config shape and the threaded variant get cache entries of their own.
    """
    jit = numba.njit(cache=True, parallel=bool(d.parallel), _nrt=False)

    @jit
    def first_illegal(actions, hands, seen, info, card_table):
        for b in range(actions.shape[0]):
            if not _nb_legal(d, hands, seen, info, card_table, b, actions[b]):
                return b
        return -1

    @jit
    def step(actions, hands, collections, stats, seat_claim, seen, removed, penalty, info, steps, card_table, params,
             first_slot, deal_starter, deal_hands, deal_collections, deal_removed, deal_penalty, deal_penalty_size,
             to_act, observation, action_mask, rewards, done, loser, loss_reason, truncated, scratch):  # fmt: skip
        """Check every action, apply, re-deal, emit; returns the number of games dealt again.

        If an action is illegal nothing changes and it returns ``-1 - game`` of the first such game.
        """
        games = actions.shape[0]
        for b in range(games):
            if not _nb_legal(d, hands, seen, info, card_table, b, actions[b]):
                return -1 - b
        for chunk in numba.prange(scratch.shape[0]):
            for b in range(chunk * CHUNK, min(games, (chunk + 1) * CHUNK)):
                _nb_apply_one(d, hands, collections, stats, seat_claim, seen, penalty, info, steps, card_table, params, loser, loss_reason, b, actions[b])
                _nb_outcome(d, params, info, steps, loser, b, rewards, done, truncated)
                if not done[b]:
                    _nb_emit_one(d, hands, collections, stats, seat_claim, seen, penalty, info, card_table, b, to_act, observation, action_mask, scratch, chunk)
        slot = first_slot  # finished games take the queued deals in game order
        for b in range(games):
            if done[b]:
                _nb_redeal(hands, collections, stats, seat_claim, seen, removed, penalty, info, steps, b,
                           slot, deal_starter, deal_hands, deal_collections, deal_removed, deal_penalty, deal_penalty_size)  # fmt: skip
                _nb_emit_called(d, hands, collections, stats, seat_claim, seen, penalty, info, card_table, b, to_act, observation, action_mask, scratch, 0)
                slot += 1
        return slot - first_slot

    @jit
    def deal(slot_of, hands, collections, stats, seat_claim, seen, removed, penalty, info, steps, card_table,
             deal_starter, deal_hands, deal_collections, deal_removed, deal_penalty, deal_penalty_size,
             to_act, observation, action_mask, scratch):  # fmt: skip
        """Deal game ``b`` from the queued deal at ``slot_of[b]`` (where >= 0), then emit every game."""
        games = info.shape[0]
        for chunk in numba.prange(scratch.shape[0]):
            for b in range(chunk * CHUNK, min(games, (chunk + 1) * CHUNK)):
                if slot_of[b] >= 0:
                    _nb_redeal(hands, collections, stats, seat_claim, seen, removed, penalty, info, steps, b,
                               slot_of[b], deal_starter, deal_hands, deal_collections, deal_removed, deal_penalty, deal_penalty_size)  # fmt: skip
                _nb_emit_called(d, hands, collections, stats, seat_claim, seen, penalty, info, card_table, b, to_act, observation, action_mask, scratch, chunk)

    return {"first_illegal": first_illegal, "step": step, "deal": deal}


def _nb_write_states(hands, collections, stats, seat_claim, seen, removed, penalty, info, segments, params, position, out):
    for b in range(info.shape[0]):
        _nb_write_view(hands, collections, stats, seat_claim, seen, removed, penalty, info, segments, params, b, position, out[b])


_write_states_compiled = numba.njit(cache=True, _nrt=False)(_nb_write_states) if numba is not None else None
"""``state()``: not a hot path, one serial kernel for every config."""

_compiled: dict[_Dims, dict] = {}


def _kernels_for(d: _Dims) -> dict:
    if d not in _compiled:
        _compiled[d] = _compile(d)
    return _compiled[d]


@_jit
def _nb_splitmix(state):
    """One step of the SplitMix64 generator (``state`` and the result are uint64)."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


@_jit
def _nb_below(bits, bound):
    """A number in ``[0, bound)`` from the high 32 bits of ``bits`` (bias below ``bound / 2**32``)."""
    return np.int64(((bits >> np.uint64(32)) * np.uint64(bound)) >> np.uint64(32))


@_jit
def _nb_random_legal_row(mask, seeds, words, chunk, b, out):
    """Row ``b``: a uniformly random legal entry (-1 if none), from the 64-bit seed ``seeds[b]``.

    Two tries of a uniform entry first, kept if legal (likely for the many-legal offer
    masks); then a uniform rank among the legal entries, found through the row packed
    into 64-bit words of legal bits (``words[chunk]``: scratch, one per 64 entries).
    Either way the choice is uniform over the legal entries.
    """
    rows, width = mask.shape
    state = seeds[b]
    choice = -1
    for _ in range(2 if width > 0 else 0):
        state, bits = _nb_splitmix(state)
        entry = _nb_below(bits, width)
        if mask[b, entry] != 0:
            choice = entry
            break
    if choice < 0:
        count = 0
        for w in range(words.shape[1]):
            base = w * 64
            left = width - base
            if left >= 64 or b + 1 < rows:  # the 64 bytes from here stay inside the array
                word = _nb_nonzero_bits(mask, b, base)
                if left < 64:
                    word &= (np.uint64(1) << np.uint64(left)) - np.uint64(1)
            else:
                word = np.uint64(0)
                for j in range(left):
                    word |= np.uint64(mask[b, base + j] != 0) << np.uint64(j)
            words[chunk, w] = word
            count += np.int64(_nb_popcount(word))
        if count > 0:
            state, bits = _nb_splitmix(state)
            pick = _nb_below(bits, count)
            for w in range(words.shape[1]):
                word = words[chunk, w]
                inside = np.int64(_nb_popcount(word))
                if pick < inside:
                    for _ in range(pick):
                        word &= word - np.uint64(1)  # drop the lowest legal entries
                    choice = w * 64 + np.int64(_nb_lowest_bit(word))
                    break
                pick -= inside
    out[b] = choice


def _random_legal_kernel(parallel: bool):
    """``random_legal_actions``'s kernel: chunks of ``CHUNK`` rows, spread over numba's threads if ``parallel``."""

    @numba.njit(cache=True, parallel=parallel, _nrt=False)
    def random_legal(mask, seeds, words, out):
        rows = mask.shape[0]
        size = CHUNK if parallel else rows  # a closure constant: keys the two variants apart in numba's cache
        for chunk in numba.prange(words.shape[0]):
            for b in range(chunk * size, min(rows, (chunk + 1) * size)):
                _nb_random_legal_row(mask, seeds, words, chunk, b, out)

    return random_legal


_random_legal = {parallel: _random_legal_kernel(parallel) for parallel in (False, True)} if numba is not None else None


class _NumbaBackend:
    """Compiled per-game code; see the module docstring."""

    name = "numba"

    def __init__(self, rules: _Rules, state: _State, parallel: bool):
        if numba is None:
            raise ValueError("backend='numba' needs numba; install it with pip install numba, or use backend='numpy'")
        self.rules, self.state = rules, state
        self.kernels = _kernels_for(rules.dims)
        self.threaded = _kernels_for(rules.dims._replace(parallel=1)) if parallel and len(state.info) >= PARALLEL_MIN_GAMES else self.kernels
        self.scratch = np.zeros((-(-state.info.shape[0] // CHUNK), rules.observation_size + 8), np.float32)
        """One observation row per chunk of games (and room for ``_nb_widen8`` to spill), written in cache before it is copied out."""

    def first_illegal(self, actions: np.ndarray) -> int:
        s = self.state
        return int(self.kernels["first_illegal"](actions, s.hands, s.seen, s.info, self.rules.card_table))

    def step(self, actions: np.ndarray, out: BatchStep, queue: _DealQueue) -> tuple[int, int]:
        s, r, d = self.state, self.rules, queue.deals
        dealt = self.threaded["step"](
            actions, s.hands, s.collections, s.stats, s.seat_claim, s.seen, s.removed, s.penalty, s.info, s.steps, r.card_table, r.params,
            queue.next, d.starter, d.hands, d.collections, d.removed, d.penalty, d.penalty_size,
            out.to_act, out.observation, out.action_mask, out.rewards, out.done, out.loser, out.loss_reason, out.truncated, self.scratch,
        )  # fmt: skip
        return (-1 - dealt, 0) if dealt < 0 else (-1, dealt)

    def deal(self, out: BatchStep, queue: _DealQueue, slot_of: np.ndarray) -> None:
        s, r, d = self.state, self.rules, queue.deals
        self.threaded["deal"](
            slot_of, s.hands, s.collections, s.stats, s.seat_claim, s.seen, s.removed, s.penalty, s.info, s.steps, r.card_table,
            d.starter, d.hands, d.collections, d.removed, d.penalty, d.penalty_size, out.to_act, out.observation, out.action_mask, self.scratch,
        )  # fmt: skip

    def states(self, out: np.ndarray) -> np.ndarray:
        s, r = self.state, self.rules
        _write_states_compiled(
            s.hands, s.collections, s.stats, s.seat_claim, s.seen, s.removed, s.penalty, s.info, r.segments, r.params, r.state_position, out
        )
        return out


# ---------------------------------------------------------------------------- public API
class BatchedGames:
    """``batch_size`` games under one ``GameConfig``, stepped together (see the module docstring).

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

    def __init__(self, config: GameConfig, batch_size: int, seed: int | None = None, backend: str = "auto", parallel: bool = False):
        if not isinstance(config, GameConfig):
            raise ValueError(f"config={config!r} is not allowed; expected a GameConfig")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size={batch_size!r} is not allowed; expected a positive integer")
        if backend not in BACKENDS:
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
        self._backend = _NumbaBackend(self.rules, self._state, parallel) if backend == "numba" else _NumpyBackend(self.rules, self._state)
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
        """Bytes of game state per game in the batch arrays (outputs and queued deals excluded)."""
        return self._state.bytes_per_game

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
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._queue = _DealQueue(self.config, self.rules, self._rng, max(64, self.batch_size))
        if deals is not None:
            deals = list(deals)
            if len(deals) < self.batch_size:
                raise ValueError(f"reset got {len(deals)} deals; expected at least batch_size={self.batch_size} (one per game, extra ones are queued)")
            self._queue.push(_deals_from_engine(self.config, self.rules, deals))
        self._queue.ensure(self.batch_size)
        games = np.arange(self.batch_size)
        slot_of = self._queue.take(self.batch_size)
        out = self._new_step()
        _clear_outcome(out)
        self._backend.deal(out, self._queue, slot_of.astype(np.int64))
        self._remember_deals(games, slot_of)
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
        bad, dealt = self._backend.step(actions, out, self._queue)
        if bad >= 0:
            raise ValueError(self._illegal_message(bad, int(actions[bad])))
        games = np.flatnonzero(out.done) if dealt else _NO_GAMES
        self._remember_deals(games, self._queue.take(dealt))
        return out

    def state(self) -> np.ndarray:
        """(B, S) float32 full states in the ``Encoding.state`` layout (for centralized critics)."""
        out = np.empty((self.batch_size, self.encoding.state.size + 1), np.float32)
        return np.ascontiguousarray(self._backend.states(out)[:, :-1])

    # ------------------------------------------------------------ internals
    def _new_step(self) -> BatchStep:
        """Fresh output arrays, uninitialized (``apply`` writes every entry of the outcome fields)."""
        b, r = self.batch_size, self.rules
        return BatchStep(
            to_act=np.empty(b, np.int64),
            observation=np.empty((b, r.observation_size), np.float32),
            action_mask=np.empty((b, r.num_actions), np.int8),
            rewards=np.empty((b, r.n), np.float32),
            done=np.empty(b, bool),
            loser=np.empty(b, np.int64),
            loss_reason=np.empty(b, np.int64),
            truncated=np.empty(b, bool),
        )

    def _remember_deals(self, games: np.ndarray, slots: np.ndarray) -> None:
        self._dealt_games, self._dealt_slots, self._dealt_from = games, slots, self._queue.deals

    def _check_actions(self, actions) -> np.ndarray:
        """Shape and dtype; the range is checked with the legality of each action."""
        array = np.asarray(actions)
        if array.shape != (self.batch_size,):
            raise ValueError(f"actions of shape {array.shape} are not allowed; expected ({self.batch_size},), one action per game")
        if array.dtype.kind not in "iu":
            raise ValueError(f"actions of dtype {array.dtype} are not allowed; expected integers")
        if array.dtype == np.uint64 and array.max(initial=0) > np.iinfo(np.int64).max:
            b = int(np.argmax(array > np.iinfo(np.int64).max))
            raise ValueError(f"game {b}: action {int(array[b])} is out of range; expected an integer in [0, {self.num_actions})")
        return np.ascontiguousarray(array, dtype=np.int64)

    def _first_illegal(self, actions: np.ndarray) -> int:
        """The first game whose action is illegal now, or -1 (the check ``step`` makes first)."""
        return self._backend.first_illegal(self._check_actions(actions))

    def describe_action(self, game: int, action: int) -> str:
        """The move ``action`` means for the seat to act in ``game``, in words."""
        enc, cards, n = self.encoding, self.config.cards, self.rules.n
        seat = int(self._state.info[game, CURRENT])
        decoded = enc.decode_action(action)
        kind = decoded[0]
        if kind == "offer":
            return f"offer(card={cards.identities[decoded[1]]}, target=seat {(seat + decoded[2]) % n}, claim={cards.claims[decoded[3]]})"
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
        info, r = self._state.info[game], self.rules
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
        return f"BatchedGames({self.config.edition}, {self.rules.n}p, B={self.batch_size}, backend={self.backend}, {self.bytes_per_game} bytes/game)"


_NO_GAMES = np.zeros(0, np.int64)


def _clear_outcome(out: BatchStep) -> None:
    """Nothing ended: zero rewards, no loser."""
    out.rewards.fill(0.0)
    out.done.fill(False)
    out.truncated.fill(False)
    out.loser.fill(-1)
    out.loss_reason.fill(-1)


def random_legal_actions(mask: np.ndarray, rng: np.random.Generator, parallel: bool = False) -> np.ndarray:
    """One uniformly random legal action per row of ``mask`` (B, A), vectorized.

    Compiled when numba is importable (one 64-bit seed per row drawn from ``rng``; see
    ``_nb_random_legal_row``), otherwise ``argmax(mask * uniform noise)``. Rows without a
    legal action give -1 (compiled) or 0. ``parallel=True`` spreads rows over numba's
    threads from ``PARALLEL_MIN_GAMES`` rows on (the same choices).
    """
    mask = np.ascontiguousarray(mask)
    if numba is None:
        return np.argmax(mask * rng.random(mask.shape, dtype=np.float32), axis=1)
    mask = mask.view(np.int8) if mask.dtype.itemsize == 1 else (mask != 0).view(np.int8)
    threads = parallel and len(mask) >= PARALLEL_MIN_GAMES
    out = np.empty(len(mask), np.int64)
    words = np.empty((-(-len(mask) // CHUNK) if threads else 1, (mask.shape[1] + 63) // 64), np.uint64)
    _random_legal[threads](mask, rng.bit_generator.random_raw(len(mask)), words, out)
    return out


__all__ = ["BatchStep", "BatchedGames", "random_legal_actions", "deal_orders", "deals_from_orders", "BACKENDS"]
