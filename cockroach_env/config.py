"""Rule options of one game: ``GameConfig``, its defaults and its named presets."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from typing import Any

from cockroach_env.cards import EDITIONS, CardSet, classic_cards, royal_cards

MIN_PLAYERS, MAX_PLAYERS = 2, 6
MAX_STEPS = 2**15 - 1
MAX_HISTORY = 1024
"""Largest ``history`` window (a classic 4p game has at most 385 decisions; a longer window only adds zeros)."""
"""Largest ``max_steps`` bound: the batched engine counts decisions in int16, and no game
comes near it (every decision moves a card toward a collection or a peek, a game of 64
cards ends within a few thousand decisions)."""

PRESETS: dict[str, dict[str, Any]] = {
    "classic": {},
    "duel": {"num_players": 2},
    "even-deal": {"discard": 4},
    "rainbow": {"rainbow_loses": True},
    "three-of-a-kind": {"loss_count": 3},
    "creature-to-start": {"opening_cards": 1},
    "royal": {"edition": "royal"},
    "mini": {"num_players": 2, "num_types": 3, "copies_per_type": 2, "discard": 2, "loss_count": 2},
    "mini-3p": {"num_players": 3, "num_types": 2, "copies_per_type": 2, "discard": 1, "loss_count": 2},
}
"""Named rule sets (section 3 of the rules). Combine several with ``+``, e.g. ``"rainbow+even-deal"``.

``mini`` and ``mini-3p`` are small decks whose whole game tree can be traversed, for exact
evaluation (``training.evaluation.exact``) and OpenSpiel's solvers: ``mini`` is a duel with 3 types
x 2 copies, 2 removed unseen, 2 cards each and a pair losing; ``mini-3p`` is 3 players with
2 types x 2 copies, 1 removed, 1 card each (so cards get peeked and passed) and a pair losing."""

THREE_OF_A_KIND_PLAYERS = 3
"""The three-of-a-kind variant is for 3 to 6 players (shared/RULES.md)."""


FULL_DECK = (8, 8)
"""The printed classic deck shape: ``(num_types, copies_per_type)``."""


def _default_discard(edition: str, num_players: int, deck_shape: tuple[int, int] = FULL_DECK) -> int:
    """10 removed cards for a two-player game of the printed deck; 0 otherwise (a smaller deck says its own)."""
    return 10 if edition == "classic" and num_players == 2 and deck_shape == FULL_DECK else 0


def _default_loss_count(num_players: int, copies_per_type: int = 8) -> int:
    """5 of a kind with two players, 4 otherwise; never more than a type has copies (so the loss stays reachable)."""
    return min(5 if num_players == 2 else 4, copies_per_type)


def penalty_deck_size(edition: str, num_players: int) -> int:
    """Royal: 7 penalty cards, 16 with two players. Classic has none."""
    if edition != "royal":
        return 0
    return 16 if num_players == 2 else 7


@dataclass(frozen=True)
class GameConfig:
    """The rule options of a game. ``None`` means "the default for this player count".

    Defaults (rules sections 1-2): ``discard`` is 10 for two players and 0 otherwise,
    ``loss_count`` is 5 for two players and 4 otherwise. After construction every
    field holds its resolved value, so ``GameConfig(num_players=2).discard == 10``.
    """

    num_players: int = 4
    edition: str = "classic"
    discard: int | None = None
    """Cards removed face down before dealing (nobody ever sees them)."""
    loss_count: int | None = None
    """A collection with this many cards of one type loses."""
    rainbow_loses: bool = False
    """A collection holding every creature type loses (rainbow variant)."""
    opening_cards: int = 0
    """Cards dealt face up into each collection before the hands (creature-to-start variant)."""
    starter: int | None = None
    """Seat that starts the first round; ``None`` draws it from the reset seed."""
    blank_counts_as_royal: bool = False
    """Royal: the blank makes a ``royal`` claim true (literal reading of the printed rules)."""
    royal_counts_as_animal: bool = True
    """Royal: a royal card counts toward its own animal for the same-type loss."""
    max_steps: int | None = None
    """Optional safety bound on decisions per game; reaching it truncates the episode."""
    num_types: int = 8
    """Classic deck shape: creature types in play, the first ``num_types`` of the canonical order (2 to 8)."""
    copies_per_type: int = 8
    """Classic deck shape: cards of each type in play (2 to 8: a type must hold ``loss_count`` cards, and
    ``loss_count`` is at least 2).
    """
    recall: bool = False
    """Observation option, not a rule: the observation also keeps the game's history (perfect recall).

    ``True`` appends the observer's dealt hand, the starter, the opening collections
    (creature-to-start) and one slot per decision so far (its actor, the move without its
    hidden card, the card a call revealed, the face-up penalty card after it) to the
    observation, so that two observations are equal exactly when the observer's
    information states are (``cockroach_env.encoding``; ``docs/env.md``, *Perfect recall*)."""
    history: int = 0
    """Observation option, not a rule: a window of the last ``history`` decisions (0: none).

    With ``K > 0`` the observation also keeps the observer's dealt hand, the starter, the
    opening collections (creature-to-start) and the last ``K`` decisions, newest first (slot 0
    is the most recent decision; slots beyond the game's decisions so far are zeros), each
    slot as in ``recall``: its actor (seats counted from the observer), the public move
    (``Encoding.public_move``), the card a call revealed, Royal's face-up penalty card after
    it. A compact, fixed-size alternative to ``recall`` (``docs/env.md``, *History window*);
    the two exclude each other."""

    def __post_init__(self) -> None:
        self._integer("num_players")
        if not MIN_PLAYERS <= self.num_players <= MAX_PLAYERS:
            raise ValueError(
                f"num_players={self.num_players!r} is not allowed; expected an integer from {MIN_PLAYERS} to "
                f"{MAX_PLAYERS}"
            )
        if self.edition not in EDITIONS:
            raise ValueError(f"edition={self.edition!r} is not allowed; expected one of {list(EDITIONS)}")
        self._check_deck_shape()
        if self.discard is None:
            object.__setattr__(self, "discard", _default_discard(self.edition, self.num_players, self.deck_shape))
        if self.loss_count is None:
            object.__setattr__(self, "loss_count", _default_loss_count(self.num_players, self.copies_per_type))
        for name in ("discard", "loss_count", "opening_cards"):
            self._integer(name)
        for name in ("rainbow_loses", "blank_counts_as_royal", "royal_counts_as_animal", "recall"):
            _check_type(name, getattr(self, name), bool)
        self._check_history()
        self._check_edition_rules()
        self._check_deal()
        self._check_starter_and_max_steps()

    def _check_history(self) -> None:
        """The history window: in range, and not together with ``recall``."""
        self._integer("history")
        if not 0 <= self.history <= MAX_HISTORY:
            raise ValueError(
                f"history={self.history!r} is not allowed; expected an integer from 0 (no window) to {MAX_HISTORY}"
            )
        if self.history and self.recall:
            raise ValueError(
                f"history={self.history!r} is not allowed with recall=True; expected one of them (recall keeps every "
                "decision, history the last ones)"
            )

    def _check_edition_rules(self) -> None:
        """The loss count, and the options that only one edition allows."""
        if not 2 <= self.loss_count <= 8:
            raise ValueError(f"loss_count={self.loss_count!r} is not allowed; expected an integer from 2 to 8")
        if self.edition == "classic" and self.loss_count > self.copies_per_type:
            raise ValueError(
                f"loss_count={self.loss_count!r} is not allowed with copies_per_type={self.copies_per_type!r}; "
                f"expected at most {self.copies_per_type} so that the same-type loss can happen"
            )
        if self.edition == "royal":
            if self.discard != 0:
                raise ValueError(
                    f"discard={self.discard!r} is not allowed with edition='royal'; the Royal edition sets aside a "
                    "penalty deck instead, expected 0"
                )
            if self.opening_cards != 0:
                raise ValueError(
                    f"opening_cards={self.opening_cards!r} is not allowed with edition='royal'; expected 0"
                )
        else:
            for name, default in (("blank_counts_as_royal", False), ("royal_counts_as_animal", True)):
                if getattr(self, name) != default:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} is not allowed with edition={self.edition!r}; it is a Royal "
                        "edition flag, expected edition='royal'"
                    )

    def _check_deal(self) -> None:
        """The cards set aside and face up leave every player a card to deal."""
        deck = self.cards.deck_size
        if self.discard < 0:
            raise ValueError(f"discard={self.discard!r} is not allowed; expected a non-negative integer")
        if self.opening_cards not in (0, 1):
            raise ValueError(
                f"opening_cards={self.opening_cards!r} is not allowed; expected 0 or 1 (one face-up card per "
                "collection)"
            )
        dealt = (
            deck
            - self.discard
            - self.opening_cards * self.num_players
            - penalty_deck_size(self.edition, self.num_players)
        )
        if dealt < self.num_players:
            raise ValueError(
                f"discard={self.discard!r} leaves {dealt} cards for {self.num_players} hands; expected at most "
                f"{deck - self.opening_cards * self.num_players - self.num_players} so that every player gets a card"
            )

    def _check_starter_and_max_steps(self) -> None:
        """A fixed starter is a seat of the table, and a step limit is in range."""
        if self.starter is not None:
            self._integer("starter")
            if not 0 <= self.starter < self.num_players:
                raise ValueError(
                    f"starter={self.starter!r} is not allowed; expected None (random) or a seat from 0 to "
                    f"{self.num_players - 1}"
                )
        if self.max_steps is not None:
            self._integer("max_steps")
            if not 0 < self.max_steps <= MAX_STEPS:
                raise ValueError(
                    f"max_steps={self.max_steps!r} is not allowed; expected None or an integer from 1 to {MAX_STEPS}"
                )

    def _check_deck_shape(self) -> None:
        for name, why in (
            ("num_types", ""),
            ("copies_per_type", " (a type must hold loss_count cards, and loss_count is at least 2)"),
        ):
            value = self._integer(name)
            if not 2 <= value <= 8:
                raise ValueError(f"{name}={value!r} is not allowed; expected an integer from 2 to 8{why}")
        if self.edition == "royal" and self.deck_shape != FULL_DECK:
            raise ValueError(
                f"num_types={self.num_types!r}, copies_per_type={self.copies_per_type!r} is not allowed with "
                "edition='royal'; the deck shape is a classic option, expected 8 and 8"
            )

    def _integer(self, name: str) -> int:
        """Check that option ``name`` is an integer and store it as a Python ``int`` (a numpy integer would not be
        JSON).
        """
        value = getattr(self, name)
        _check_type(name, value, int)
        object.__setattr__(self, name, int(value))
        return int(value)

    @property
    def deck_shape(self) -> tuple[int, int]:
        """``(num_types, copies_per_type)`` of the classic deck."""
        return (self.num_types, self.copies_per_type)

    @property
    def cards(self) -> CardSet:
        """The card catalogue of this edition (with the Royal flags and the classic deck shape applied)."""
        if self.edition == "royal":
            return royal_cards(self.blank_counts_as_royal, self.royal_counts_as_animal)
        return classic_cards(self.num_types, self.copies_per_type)

    @property
    def penalty_deck_size(self) -> int:
        return penalty_deck_size(self.edition, self.num_players)

    def to_dict(self) -> dict[str, Any]:
        """The options as a dict (``GameConfig(**d)`` rebuilds the config); ``history`` only when set, so the dicts of
        configs without it are those recorded before the option existed (checkpoints compare them).
        """
        data = asdict(self)
        if not self.history:
            del data["history"]
        return data

    @classmethod
    def from_options(cls, preset: str | Iterable[str] | None = None, **options: Any) -> GameConfig:
        """Build a config from preset names and keyword options; explicit options override presets.

        Defaults that depend on the player count are resolved after the presets and
        options are merged, so ``preset="even-deal", num_players=2`` removes 4 cards.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"unknown game option(s) {unknown}; expected some of {sorted(known)} or preset")
        merged: dict[str, Any] = {}
        names = _preset_names(preset)
        for name in names:
            merged.update(PRESETS[name])
        merged.update({k: v for k, v in options.items()})
        config = cls(**merged)
        if "three-of-a-kind" in names and config.num_players < THREE_OF_A_KIND_PLAYERS:
            raise ValueError(
                f"preset='three-of-a-kind' is not allowed with num_players={config.num_players}; the rules allow three "
                f"of a kind for {THREE_OF_A_KIND_PLAYERS} to {MAX_PLAYERS} players (or set loss_count=3 explicitly)"
            )
        return config


def _preset_names(preset: str | Iterable[str] | None) -> list[str]:
    if preset is None:
        return []
    if isinstance(preset, str):
        names = preset.split("+")
    elif isinstance(preset, (list, tuple)):
        names = list(preset)
    else:
        raise ValueError(
            f"preset={preset!r} is not allowed; expected a preset name from {sorted(PRESETS)}, names joined by '+', "
            "or a list of names"
        )
    for name in names:
        if not isinstance(name, str) or name not in PRESETS:
            raise ValueError(f"preset={name!r} is not allowed; expected one of {sorted(PRESETS)} (combine with '+')")
    return names


def _check_type(name: str, value: Any, kind: type) -> None:
    if kind is int and (isinstance(value, bool) or not isinstance(value, (int,)) and not _is_numpy_int(value)):
        raise ValueError(f"{name}={value!r} is not allowed; expected an integer")
    if kind is bool and not isinstance(value, bool):
        raise ValueError(f"{name}={value!r} is not allowed; expected True or False")


def _is_numpy_int(value: Any) -> bool:
    return type(value).__module__ == "numpy" and "int" in type(value).__name__


def check_seed(name: str, value: Any) -> int | None:
    """``value`` as a seed: ``None`` or an integer from 0 to 2**64 - 1 (what ``numpy.random.default_rng`` and torch
    take).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not (isinstance(value, int) or _is_numpy_int(value)) or not 0 <= int(value) < 2**64:
        raise ValueError(f"{name}={value!r} is not allowed; expected None or an integer from 0 to 2**64 - 1")
    return int(value)
