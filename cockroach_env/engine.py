"""The rules engine: one game of Cockroach Poker, in the game's own words.

No RL concepts live here: seats are integers ``0..N-1``, cards and claims are indices
into the edition's ``CardSet`` (see ``cards.py``), and a game advances through the
methods ``offer``, ``call``, ``peek``, ``pass_card`` and ``place``. Each method checks
that the move is legal now and raises ``IllegalMove`` (leaving the game unchanged)
otherwise. Public events are appended to ``events`` as JSON-ready dicts.

Phases of a round::

    OFFER   the round's starter gives a card from hand to another player with a claim
    RESPOND the holder calls the claim true or false, or peeks
    PASS    the holder, having peeked, passes the card to an eligible player with a claim
    PLACE   Royal only: a player who took the joker or blank places replacement cards
    OVER    one player has lost
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from cockroach_env.cards import CardSet
from cockroach_env.config import GameConfig

STAT_NAMES = ("truthful_claims", "false_claims", "right_calls", "wrong_calls", "peeks")
"""Per-player public history counters (claims are judged when their card is revealed)."""
TRUTHFUL_CLAIMS, FALSE_CLAIMS, RIGHT_CALLS, WRONG_CALLS, PEEKS = range(len(STAT_NAMES))

LOSS_REASONS = ("same_type", "empty_hand", "rainbow")


class Phase(str, Enum):
    """Whose decision the game waits for: an offer, a response to a card, a pass, a Royal placement, or none."""

    OFFER = "offer"
    RESPOND = "respond"
    PASS = "pass"
    PLACE = "place"
    OVER = "over"


class IllegalMove(Exception):
    """A move the rules do not allow in the current state; the game is unchanged."""


@dataclass
class Chain:
    """The card in play during one round."""

    card: int
    offerer: int
    holder: int
    latest_passer: int
    claim: int
    seen: list[int]
    """Seats that have seen the card: the offerer and every peeker, in order."""
    claims: list[tuple[int, int]]
    """Public ``(seat, claim)`` pairs of this round, in order."""


@dataclass
class Replacement:
    """Royal: a player who took the joker or blank owes cards from hand to the collection."""

    player: int
    claim: int | None
    """Placed cards must fit this claim; ``None`` when no card fitted and any may be placed (private to ``player``
    until a card is placed: it tells whether their hand holds a card that fits ``called``).
    """
    remaining: int
    """Cards still to place (private to ``player`` until a card is placed, like ``claim``)."""
    called: int
    """The claim of the revealed joker or blank: public."""
    placed: int = 0
    """Cards placed so far: public. Once one is placed, ``claim`` and ``remaining`` are public too (the placed card
    fitted ``called`` or not, and only a card that did not fit leaves a second one to place).
    """


@dataclass
class Deal:
    """Where every card starts. Card counts are indexed like ``CardSet.identities``."""

    starter: int
    hands: list[list[int]]
    collections: list[list[int]]
    removed: list[int]
    penalty_deck: list[int] = field(default_factory=list)
    """Royal: card identities, top card (face up) first."""


def random_deal(config: GameConfig, rng: np.random.Generator) -> Deal:
    """Shuffle and deal as the rules say, drawing everything from ``rng``.

    Order of draws: the starter (when not configured), then one permutation of the
    deck. The permuted deck is used front to back: removed cards, penalty deck (Royal),
    one face-up opening card per seat (creature to start), then the hands, one card at
    a time starting with the starter. Royal leftovers: the starter gets one extra card
    and the rest go to the bottom of the penalty deck.
    """
    cards = config.cards
    n = config.num_players
    starter = config.starter if config.starter is not None else int(rng.integers(n))
    deck = [card for card, copies in enumerate(cards.copies) for _ in range(copies)]
    order = [deck[i] for i in rng.permutation(len(deck))]
    empty = lambda: [0] * len(cards.identities)  # noqa: E731
    removed, hands, collections = empty(), [empty() for _ in range(n)], [empty() for _ in range(n)]
    position = 0
    for card in order[: config.discard]:
        removed[card] += 1
    position += config.discard
    penalty = order[position : position + config.penalty_deck_size]
    position += config.penalty_deck_size
    for k in range(config.opening_cards * n):
        collections[(starter + k) % n][order[position + k]] += 1
    position += config.opening_cards * n
    rest = order[position:]
    dealt = len(rest) if config.edition == "classic" else (len(rest) // n) * n + (1 if len(rest) % n else 0)
    for k, card in enumerate(rest[:dealt]):
        hands[(starter + k) % n][card] += 1
    penalty += rest[dealt:]
    return Deal(starter, hands, collections, removed, penalty)


def deal_distribution(config: GameConfig, limit: int | None = None) -> list[tuple[float, Deal]]:
    """Every deal ``random_deal`` can produce, merged by what it puts where, with its probability.

    Exact: the cards are drawn in ``random_deal``'s order, one identity at a time with
    probability proportional to the cards of it left, and partial deals that place the
    same cards in the same places are merged. The starter is uniform unless configured.
    The number of deals grows fast with the deck: this is for small decks (the ``mini``
    presets); the printed deck has far too many, and ``limit`` (if given) stops with a
    ``ValueError`` as soon as more than ``limit`` partial deals are in play.
    """
    cards = config.cards
    n, width = config.num_players, len(cards.identities)
    starters = [config.starter] if config.starter is not None else list(range(n))
    deck_size = cards.deck_size
    out: list[tuple[float, Deal]] = []
    for starter in starters:
        # where the card at each position of the permuted deck goes: ("removed",), ("penalty",),
        # ("collection", seat), ("hand", seat)
        where: list[tuple] = [("removed",)] * config.discard + [("penalty",)] * config.penalty_deck_size
        where += [("collection", (starter + k) % n) for k in range(config.opening_cards * n)]
        rest = deck_size - len(where)
        dealt = rest if config.edition == "classic" else (rest // n) * n + (1 if rest % n else 0)
        where += [("hand", (starter + k) % n) for k in range(dealt)] + [("penalty",)] * (rest - dealt)
        empty = (0,) * width
        partial: dict[tuple, float] = {
            (tuple(cards.copies), empty, (), (empty,) * n, (empty,) * n): 1.0 / len(starters)
        }
        for place in where:
            grown: dict[tuple, float] = {}
            for (left, removed, penalty, collections, hands), p in partial.items():
                total = sum(left)
                for card, count in enumerate(left):
                    if not count:
                        continue
                    key = [
                        tuple(left[:card]) + (count - 1,) + tuple(left[card + 1 :]),
                        removed,
                        penalty,
                        collections,
                        hands,
                    ]
                    if place[0] == "removed":
                        key[1] = _plus(removed, card)
                    elif place[0] == "penalty":
                        key[2] = penalty + (card,)
                    else:
                        field = 3 if place[0] == "collection" else 4
                        rows = list(key[field])
                        rows[place[1]] = _plus(rows[place[1]], card)
                        key[field] = tuple(rows)
                    grown[tuple(key)] = grown.get(tuple(key), 0.0) + p * count / total
            if limit is not None and len(grown) > limit:
                raise ValueError(
                    f"{config} has more than limit={limit} distinct deals; expected a small deck (presets mini, "
                    "mini-3p)"
                )
            partial = grown
        for (_, removed, penalty, collections, hands), p in partial.items():
            out.append(
                (
                    p,
                    Deal(
                        starter, [list(h) for h in hands], [list(c) for c in collections], list(removed), list(penalty)
                    ),
                )
            )
    return out


def _plus(row: tuple[int, ...], card: int) -> tuple[int, ...]:
    return row[:card] + (row[card] + 1,) + row[card + 1 :]


def explicit_deal(
    config: GameConfig,
    starter: int,
    hands: Mapping[int, Mapping[str, int]],
    collections: Mapping[int, Mapping[str, int]] | None = None,
    penalty_deck: Sequence[str] | None = None,
) -> Deal:
    """A deal fixed by name (``{seat: {identity: count}}``); cards not dealt are out of play.

    Raises ``ValueError`` naming the first problem: unknown card, negative count, or
    more cards of an identity than the deck holds.
    """
    cards = config.cards
    n = config.num_players
    width = len(cards.identities)

    def counts(where: str, spec: Mapping[str, int]) -> list[int]:
        row = [0] * width
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where} must be a mapping of card name to count, got {spec!r}")
        for name, count in spec.items():
            card = cards.index(name)
            if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
                raise ValueError(f"{where}[{name!r}]={count!r} is not allowed; expected a non-negative integer")
            row[card] += int(count)
        return row

    hand_rows = [counts(f"hands[seat {s}]", hands.get(s, {})) for s in range(n)]
    collection_rows = [counts(f"collections[seat {s}]", (collections or {}).get(s, {})) for s in range(n)]
    if isinstance(penalty_deck, str) or not isinstance(penalty_deck, (Sequence, type(None))):
        raise ValueError(f"penalty_deck={penalty_deck!r} is not allowed; expected a list of card names, top card first")
    if penalty_deck and config.edition != "royal":
        raise ValueError(
            f"penalty_deck={list(penalty_deck)!r} is not allowed with edition={config.edition!r}; only the Royal "
            "edition has a penalty deck"
        )
    penalty = [cards.index(name) for name in (penalty_deck or [])]
    used = [sum(row[c] for row in hand_rows + collection_rows) + penalty.count(c) for c in range(width)]
    for card, (count, copies) in enumerate(zip(used, cards.copies)):
        if count > copies:
            raise ValueError(
                f"the deal uses {count} cards of {cards.identities[card]!r} but the {cards.edition} deck holds only "
                f"{copies}"
            )
    removed = [copies - count for count, copies in zip(used, cards.copies)]
    return Deal(starter, hand_rows, collection_rows, removed, penalty)


class Game:
    """A game of Cockroach Poker under one ``GameConfig``, started from a ``Deal``."""

    def __init__(self, config: GameConfig, deal: Deal):
        self.config = config
        self.cards: CardSet = config.cards
        self._members = [
            [c for c, g in enumerate(self.cards.group_of) if g == group] for group in range(len(self.cards.groups))
        ]
        self.num_players = config.num_players
        self.hands = [list(row) for row in deal.hands]
        self.collections = [list(row) for row in deal.collections]
        self.dealt_hands = tuple(tuple(row) for row in deal.hands)
        """The hands as dealt (never changed; each seat sees only its own row)."""
        self.opening_collections = tuple(tuple(row) for row in deal.collections)
        """The collections as dealt (face up: creature-to-start)."""
        self.removed = list(deal.removed)
        self.penalty_deck = list(deal.penalty_deck)
        self.starter = deal.starter
        self.chain: Chain | None = None
        self.replacement: Replacement | None = None
        self.loser: int | None = None
        self.loss_reason: str | None = None
        self.stats = [[0] * len(STAT_NAMES) for _ in range(self.num_players)]
        self.special_holder: dict[int, int] = {}
        """Joker/blank publicly known to be in a seat's hand (taken or drawn face up)."""
        self.steps = 0
        self.events: list[dict] = [
            {
                "type": "deal",
                "starter": deal.starter,
                "hand_sizes": [sum(row) for row in self.hands],
                "collections": [self._named(row) for row in self.collections],
                "penalty_top": self._penalty_top_name(),
            }
        ]
        for seat in range(self.num_players):
            if self._check_loss(seat):
                raise ValueError(
                    f"the deal's collection of seat {seat} already loses ({self.loss_reason}); expected a game that is "
                    "not over at the start"
                )
        self.phase = Phase.OFFER
        self.current = deal.starter
        self._start_round(deal.starter)

    # ------------------------------------------------------------------ queries
    def hand_size(self, seat: int) -> int:
        return sum(self.hands[seat])

    @property
    def over(self) -> bool:
        return self.phase is Phase.OVER

    def eligible_recipients(self) -> list[int]:
        """Seats that may receive the card in play: everyone who has not seen it, except the holder."""
        chain = self.chain
        if chain is None:
            return []
        return [s for s in range(self.num_players) if s != chain.holder and s not in chain.seen]

    def can_peek(self) -> bool:
        """Peeking needs an eligible recipient. The holder has not seen the card (nobody
        receives a card they have seen), so the eligible are the others not in ``seen``.
        """
        return self.phase is Phase.RESPOND and len(self.chain.seen) + 1 < self.num_players

    def placeable_cards(self) -> list[int]:
        """Royal replacement: the identities the placing player may put into their collection now."""
        if self.phase is not Phase.PLACE:
            return []
        hand = self.hands[self.replacement.player]
        claim = self.replacement.claim
        return [
            c
            for c, count in enumerate(hand)
            if count and not self.cards.is_special[c] and (claim is None or self.cards.fits(c, claim))
        ]

    def known_special_holders(self) -> dict[int, int]:
        """Public knowledge of joker/blank in a hand; uncertain while its holder's offered card is in play."""
        offerer = self.chain.offerer if self.chain is not None else None
        return {card: seat for card, seat in self.special_holder.items() if seat != offerer}

    def copy(self) -> Game:
        """An independent copy (the config, card set and past events are shared: they never change)."""
        twin = copy.copy(self)
        twin.hands = [list(row) for row in self.hands]
        twin.collections = [list(row) for row in self.collections]
        twin.removed = list(self.removed)
        twin.penalty_deck = list(self.penalty_deck)
        twin.stats = [list(row) for row in self.stats]
        twin.special_holder = dict(self.special_holder)
        twin.events = list(self.events)
        if self.chain is not None:
            twin.chain = copy.copy(self.chain)
            twin.chain.seen = list(self.chain.seen)
            twin.chain.claims = list(self.chain.claims)
        if self.replacement is not None:
            twin.replacement = copy.copy(self.replacement)
        return twin

    def __deepcopy__(self, memo: dict) -> Game:
        return self.copy()

    # ------------------------------------------------------------------ moves
    def offer(self, card: int, target: int, claim: int) -> None:
        """The round's starter gives ``card`` face down to ``target`` claiming ``claim``."""
        self._require(Phase.OFFER, "offer")
        player = self.current
        if not 0 <= card < len(self.cards.identities) or self.hands[player][card] == 0:
            raise IllegalMove(f"seat {player} has no {self._card_name(card)} in hand")
        self._require_target(player, target, range(self.num_players))
        self._require_claim(claim)
        self.hands[player][card] -= 1
        self.chain = Chain(card, player, target, player, claim, [player], [(player, claim)])
        self.events.append({"type": "offer", "player": player, "target": target, "claim": self.cards.claims[claim]})
        self._hand_over(target)

    def call(self, believe: bool) -> None:
        """The holder calls the latest claim true (``believe=True``) or false; the card is revealed."""
        self._require(Phase.RESPOND, "call")
        chain = self.chain
        truth = self.cards.truth[chain.card][chain.claim]
        right = bool(believe) == truth
        taker = chain.latest_passer if right else chain.holder
        for seat, claim in chain.claims:
            self.stats[seat][TRUTHFUL_CLAIMS if self.cards.truth[chain.card][claim] else FALSE_CLAIMS] += 1
        self.stats[chain.holder][RIGHT_CALLS if right else WRONG_CALLS] += 1
        self.events.append({"type": "call", "player": chain.holder, "believe": bool(believe), "right": right})
        self.events.append(
            {
                "type": "reveal",
                "card": self.cards.identities[chain.card],
                "claim": self.cards.claims[chain.claim],
                "truth": truth,
                "taker": taker,
            }
        )
        self.steps += 1
        self.chain = None
        self._take(taker, chain.card, chain.claim)

    def peek(self) -> None:
        """The holder looks at the card, committing to pass it on."""
        self._require(Phase.RESPOND, "peek")
        if not self.eligible_recipients():
            raise IllegalMove("no eligible recipient is left (everyone else has seen the card): the holder must call")
        holder = self.chain.holder
        self.chain.seen.append(holder)
        self.stats[holder][PEEKS] += 1
        self.events.append({"type": "peek", "player": holder})
        self.phase = Phase.PASS
        self.steps += 1

    def pass_card(self, target: int, claim: int) -> None:
        """The holder, having peeked, passes the card face down to ``target`` claiming ``claim``."""
        self._require(Phase.PASS, "pass")
        holder = self.chain.holder
        self._require_target(holder, target, self.eligible_recipients())
        self._require_claim(claim)
        self.chain.latest_passer = holder
        self.chain.claim = claim
        self.chain.claims.append((holder, claim))
        self.events.append({"type": "pass", "player": holder, "target": target, "claim": self.cards.claims[claim]})
        self._hand_over(target)

    def place(self, card: int) -> None:
        """Royal replacement: put ``card`` from the placing player's hand into their collection."""
        self._require(Phase.PLACE, "place")
        if card not in self.placeable_cards():
            raise IllegalMove(
                f"{self._card_name(card)} cannot be placed now; placeable: "
                f"{[self.cards.identities[c] for c in self.placeable_cards()]}"
            )
        player = self.replacement.player
        self.hands[player][card] -= 1
        self.replacement.remaining -= 1
        self.replacement.placed += 1
        self.steps += 1
        self._place(player, card, "replacement")
        if self.over:
            return
        if self.replacement.remaining == 0 or not self.placeable_cards():
            self.replacement = None
            self._start_round(player)

    # ------------------------------------------------------------------ rules
    def _hand_over(self, target: int) -> None:
        self.chain.holder = target
        self.current = target
        self.phase = Phase.RESPOND
        self.steps += 1

    def _take(self, taker: int, card: int, claim: int) -> None:
        """The taker receives the revealed card (section 1.4; Royal specials in section 4)."""
        if not self.cards.is_special[card]:
            self._place(taker, card, "call")
            if not self.over:
                self._start_round(taker)
            return
        hand = self.hands[taker]
        others = sum(count for c, count in enumerate(hand) if not self.cards.is_special[c])
        if others == 0:  # ruling: nothing else to place, the special card itself goes face up
            self.special_holder.pop(card, None)  # it is in a collection now, no longer in a known hand
            self._place(taker, card, "call")
            if not self.over:
                self._start_round(taker)
            return
        hand[card] += 1
        self.special_holder[card] = taker
        self.events.append({"type": "take_into_hand", "player": taker, "card": self.cards.identities[card]})
        fitting = any(count and self.cards.fits(c, claim) for c, count in enumerate(hand))
        self.replacement = (
            Replacement(taker, claim, 1, claim) if fitting else Replacement(taker, None, min(2, others), claim)
        )
        self.phase = Phase.PLACE
        self.current = taker

    def _place(self, player: int, card: int, source: str) -> None:
        """Put a card face up in a collection, check for a loss, and draw penalties for royals."""
        self.collections[player][card] += 1
        event = {"type": "place", "player": player, "card": self.cards.identities[card], "source": source}
        if source == "penalty":  # the next penalty card is turned face up: public
            event["penalty_top"] = self._penalty_top_name()
        self.events.append(event)
        if self._check_loss(player, card):
            self._lose(player, self.loss_reason)
            return
        if self.cards.is_royal[card] and self.penalty_deck:
            drawn = self.penalty_deck.pop(0)
            if self.cards.is_special[drawn]:
                self.hands[player][drawn] += 1
                self.special_holder[drawn] = player
                self.events.append(
                    {
                        "type": "penalty_to_hand",
                        "player": player,
                        "card": self.cards.identities[drawn],
                        "penalty_top": self._penalty_top_name(),
                    }
                )
            else:
                self._place(player, drawn, "penalty")

    def _check_loss(self, seat: int, placed: int | None = None) -> bool:
        """Same type (``loss_count`` of one group) or rainbow; sets ``loss_reason``.

        With ``placed`` given, only that card's group can have newly reached the count.
        """
        cards, collection = self.cards, self.collections[seat]
        groups = range(len(cards.groups)) if placed is None else (cards.group_of[placed],)
        for group in groups:
            if group >= 0 and sum([collection[c] for c in self._members[group]]) >= self.config.loss_count:
                self.loss_reason = "same_type"
                return True
        if self.config.rainbow_loses and all(
            any(collection[c] for c in self._members[g]) for g in range(cards.animal_groups)
        ):
            self.loss_reason = "rainbow"
            return True
        return False

    def _start_round(self, starter: int) -> None:
        self.chain = None
        if self.hand_size(starter) == 0:
            self._lose(starter, "empty_hand")
            return
        self.phase = Phase.OFFER
        self.current = starter

    def _lose(self, seat: int, reason: str) -> None:
        self.loser, self.loss_reason = seat, reason
        self.phase = Phase.OVER
        self.chain = None
        self.replacement = None
        self.events.append({"type": "loss", "player": seat, "reason": reason})

    # ------------------------------------------------------------------ checks
    def _require(self, phase: Phase, move: str) -> None:
        if self.phase is not phase:
            raise IllegalMove(f"cannot {move} during the {self.phase.value} phase (expected the {phase.value} phase)")

    def _require_target(self, player: int, target: int, allowed) -> None:
        if target == player or target not in allowed:
            raise IllegalMove(
                f"seat {target} cannot receive the card from seat {player}; eligible seats: "
                f"{[s for s in allowed if s != player]}"
            )

    def _require_claim(self, claim: int) -> None:
        if not 0 <= claim < len(self.cards.claims):
            raise IllegalMove(f"claim index {claim} is out of range 0..{len(self.cards.claims) - 1}")

    def _card_name(self, card: int) -> str:
        return self.cards.identities[card] if 0 <= card < len(self.cards.identities) else f"card index {card}"

    def _named(self, row: Sequence[int]) -> dict[str, int]:
        return {self.cards.identities[c]: n for c, n in enumerate(row) if n}

    def _penalty_top_name(self) -> str | None:
        return self.cards.identities[self.penalty_deck[0]] if self.penalty_deck else None

    def __repr__(self) -> str:
        hands = ", ".join(f"{s}:{self.hand_size(s)}" for s in range(self.num_players))
        return (
            f"Game({self.config.edition}, {self.num_players}p, phase={self.phase.value}, current={self.current}, "
            f"hand sizes {{{hands}}}, chain={self.chain}, loser={self.loser})"
        )
