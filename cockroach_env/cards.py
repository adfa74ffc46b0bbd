"""The card catalogue of each edition: card identities, claims, and the truth of a claim.

This module is the single place that defines card order. Every hand, collection,
vector and table in the project indexes cards by the position of their identity in
``CardSet.identities`` and claims by their position in ``CardSet.claims``.

Classic: identities and claims are the eight creature types, a claim is true iff it
names the card's type. Royal: sixteen identities (seven animals, their seven royal
cards, the joker and the blank) and eight claims (seven animals and ``royal``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

CARD_TYPES = ("cockroach", "bat", "fly", "toad", "rat", "scorpion", "spider", "stink_bug")
"""The canonical creature order used for every vector and table."""

ROYAL_ANIMALS = tuple(t for t in CARD_TYPES if t != "spider")
ROYAL_CLAIM = "royal"
JOKER = "joker"
BLANK = "blank"
ROYAL_IDENTITIES = ROYAL_ANIMALS + tuple(f"royal_{a}" for a in ROYAL_ANIMALS) + (JOKER, BLANK)

EDITIONS = ("classic", "royal")


@dataclass(frozen=True)
class CardSet:
    """Everything the rules need to know about the cards of one edition."""

    edition: str
    identities: tuple[str, ...]
    claims: tuple[str, ...]
    copies: tuple[int, ...]
    """How many cards of each identity the full deck holds."""
    truth: tuple[tuple[bool, ...], ...]
    """``truth[identity][claim]``: is the claim true of a card of that identity?"""
    groups: tuple[str, ...]
    """The sets a collection is counted in for the same-type loss."""
    group_of: tuple[int, ...]
    """Loss group of each identity, -1 for cards that count toward no type."""
    animal_groups: int
    """The first ``animal_groups`` groups are creature types (the rainbow rule needs all of them)."""
    is_royal: tuple[bool, ...]
    """Placing one of these draws from the penalty deck."""
    is_special: tuple[bool, ...]
    """Joker and blank: never placed when taken, replaced from the taker's hand."""

    @property
    def deck_size(self) -> int:
        return sum(self.copies)

    def index(self, name: str) -> int:
        """Identity index of a card name; ValueError naming the allowed names."""
        try:
            return self.identities.index(name)
        except ValueError:
            raise ValueError(
                f"unknown card {name!r} for the {self.edition} edition; expected one of {list(self.identities)}"
            ) from None

    def claim_index(self, name: str) -> int:
        try:
            return self.claims.index(name)
        except ValueError:
            raise ValueError(
                f"unknown claim {name!r} for the {self.edition} edition; expected one of {list(self.claims)}"
            ) from None

    def fits(self, card: int, claim: int) -> bool:
        """Can ``card`` be placed as the replacement for a special card under ``claim``?"""
        return self.truth[card][claim] and not self.is_special[card]


@cache
def classic_cards(num_types: int = len(CARD_TYPES), copies_per_type: int = 8) -> CardSet:
    """The classic deck: the first ``num_types`` creature types of ``CARD_TYPES``, ``copies_per_type`` of each.

    The printed game is the default 8 x 8; smaller decks (the ``mini`` presets) keep the
    canonical order, so a type has the same index in every deck shape.
    """
    n = num_types
    types = CARD_TYPES[:n]
    return CardSet(
        edition="classic",
        identities=types,
        claims=types,
        copies=(copies_per_type,) * n,
        truth=tuple(tuple(card == claim for claim in range(n)) for card in range(n)),
        groups=types,
        group_of=tuple(range(n)),
        animal_groups=n,
        is_royal=(False,) * n,
        is_special=(False,) * n,
    )


@cache
def royal_cards(blank_counts_as_royal: bool = False, royal_counts_as_animal: bool = True) -> CardSet:
    """The Royal deck: eight of each creature but the spider, a royal of each, the joker and the blank.

    ``blank_counts_as_royal``: a "royal" claim is true of the blank; ``royal_counts_as_animal``: a royal card
    counts towards its creature's loss group (else the royals form a group of their own).
    """
    animals = len(ROYAL_ANIMALS)
    claims = ROYAL_ANIMALS + (ROYAL_CLAIM,)
    royal_claim = animals

    def truth_of(name: str, claim: int) -> bool:
        if name == JOKER:
            return claim != royal_claim
        if name == BLANK:
            return claim == royal_claim and blank_counts_as_royal
        if name.startswith("royal_"):
            return claim == royal_claim or ROYAL_ANIMALS[claim] == name[len("royal_") :]
        return claim != royal_claim and ROYAL_ANIMALS[claim] == name

    def group_of(name: str) -> int:
        if name in (JOKER, BLANK):
            return -1
        if name.startswith("royal_"):
            return ROYAL_ANIMALS.index(name[len("royal_") :]) if royal_counts_as_animal else animals
        return ROYAL_ANIMALS.index(name)

    groups = ROYAL_ANIMALS if royal_counts_as_animal else ROYAL_ANIMALS + (ROYAL_CLAIM,)
    return CardSet(
        edition="royal",
        identities=ROYAL_IDENTITIES,
        claims=claims,
        copies=tuple(8 if name in ROYAL_ANIMALS else 1 for name in ROYAL_IDENTITIES),
        truth=tuple(tuple(truth_of(name, c) for c in range(len(claims))) for name in ROYAL_IDENTITIES),
        groups=groups,
        group_of=tuple(group_of(name) for name in ROYAL_IDENTITIES),
        animal_groups=animals,
        is_royal=tuple(name.startswith("royal_") for name in ROYAL_IDENTITIES),
        is_special=tuple(name in (JOKER, BLANK) for name in ROYAL_IDENTITIES),
    )
