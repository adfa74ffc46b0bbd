"""The Royal edition (rules section 4), pinned rule by rule.

Scenarios are short tables of moves from a fixed deal with the outcome the rulebook
gives. Seats are ``player_0``, ``player_1``, ... and ``player_0`` starts unless said
otherwise. Property tests (Hypothesis) and random play cover what tables cannot:
card conservation, one loser, zero-sum rewards, termination, and that no observation
leaks a hidden card (other hands, the card in play, face-down penalty cards).
"""

from __future__ import annotations

import copy
import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, seed_test

import cockroach_env
from cockroach_env import GameConfig, IllegalActionError, IllegalMove, Move, decode_observation, encoding_for
from cockroach_env.cards import ROYAL_ANIMALS, ROYAL_IDENTITIES, royal_cards
from cockroach_env.encoding import write_state
from cockroach_env.engine import Game, Phase, explicit_deal, random_deal
from cockroach_env.view import seat_view

PLAYER_COUNTS = (2, 3, 4, 5, 6)
ROYALS = tuple(f"royal_{a}" for a in ROYAL_ANIMALS)
CLAIMS = ROYAL_ANIMALS + ("royal",)
CALL_TRUE = Move("call", believe=True)
CALL_FALSE = Move("call", believe=False)
PEEK = Move("peek")


# ---------------------------------------------------------------- helpers
def offer(card: str, target: str, claim: str) -> Move:
    return Move("offer", card=card, target=target, claim=claim)


def pass_to(target: str, claim: str) -> Move:
    return Move("pass", target=target, claim=claim)


def place(card: str) -> Move:
    return Move("place", card=card)


def royal_table(num_players: int = 3, hands=None, penalty_deck=None, collections=None, **flags):
    """A Royal env from a fixed deal; ``player_0`` starts."""
    e = cockroach_env.env(edition="royal", num_players=num_players, **flags)
    options = {"starter": "player_0", "hands": hands or {}}
    if penalty_deck is not None:
        options["penalty_deck"] = penalty_deck
    if collections is not None:
        options["collections"] = collections
    e.reset(seed=0, options=options)
    return e


def play(e, *moves: Move) -> None:
    for move in moves:
        e.step(e.unwrapped.encode(move))


def view(e) -> dict:
    return e.unwrapped.public_view()


def collection(e, agent: str) -> dict:
    return view(e)["collections"][agent]


def seen_by(e, agent: str) -> dict:
    """What ``agent``'s observation says, decoded (seats relative to ``agent``)."""
    return decode_observation(e.observe(agent)["observation"], e.unwrapped.config)


def hand(e, agent: str) -> dict:
    return seen_by(e, agent)["own_hand"]


def placeable(e) -> list[str]:
    return sorted(m.card for m in e.unwrapped.legal_moves() if m.kind == "place")


def to_act(e) -> str | None:
    return view(e)["to_act"]


def loser(e) -> tuple[str | None, str | None]:
    return view(e)["loser"], view(e)["loss_reason"]


# ---------------------------------------------------------------- cards and claims
def test_the_deck_has_65_cards_in_16_identities_and_8_claims():
    cards = GameConfig(edition="royal").cards
    assert cards.identities == ROYAL_IDENTITIES
    assert "spider" not in cards.identities
    assert dict(zip(cards.identities, cards.copies)) == {
        **{a: 8 for a in ROYAL_ANIMALS},
        **{r: 1 for r in ROYALS},
        "joker": 1,
        "blank": 1,
    }
    assert cards.deck_size == 65
    assert cards.claims == CLAIMS


def _true_claims(identity: str, blank_counts_as_royal: bool) -> set[str]:
    """Section 4's truth table, row by row."""
    if identity in ROYAL_ANIMALS:  # normal animal X: true iff the claim is X
        return {identity}
    if identity in ROYALS:  # royal animal X: its animal and `royal`
        return {identity.removeprefix("royal_"), "royal"}
    if identity == "joker":  # every animal, never `royal`
        return set(ROYAL_ANIMALS)
    assert identity == "blank"  # no animal; `royal` only under the flag
    return {"royal"} if blank_counts_as_royal else set()


@pytest.mark.parametrize("blank_counts_as_royal", [False, True])
def test_truth_table_every_identity_against_every_claim(blank_counts_as_royal):
    cards = royal_cards(blank_counts_as_royal=blank_counts_as_royal)
    for card, identity in enumerate(cards.identities):
        for claim, name in enumerate(cards.claims):
            assert cards.truth[card][claim] == (name in _true_claims(identity, blank_counts_as_royal)), (identity, name)


@pytest.mark.parametrize("blank_counts_as_royal", [False, True])
def test_a_call_reveals_the_truth_of_the_table(blank_counts_as_royal):
    """The engine judges calls with the table: a right call gives the card to the passer."""
    config = GameConfig(edition="royal", num_players=3, blank_counts_as_royal=blank_counts_as_royal)
    cards = config.cards
    for card, identity in enumerate(cards.identities):
        for claim, name in enumerate(cards.claims):
            game = Game(
                config, explicit_deal(config, 0, {0: {identity: 1}, 1: {"rat" if identity != "rat" else "bat": 1}})
            )
            game.offer(card, 1, claim)
            game.call(believe=True)
            reveal = next(ev for ev in game.events if ev["type"] == "reveal")
            truth = name in _true_claims(identity, blank_counts_as_royal)
            assert reveal["truth"] is truth, (identity, name)
            assert reveal["taker"] == (0 if truth else 1), (identity, name)


def test_which_cards_fit_a_replacement():
    """A royal card fits its own animal and a `royal` claim; the joker and blank never fit."""
    for flag in (False, True):
        cards = royal_cards(blank_counts_as_royal=flag)
        for card, identity in enumerate(cards.identities):
            fits = {cards.claims[c] for c in range(len(cards.claims)) if cards.fits(card, c)}
            expected = set() if identity in ("joker", "blank") else _true_claims(identity, flag)
            assert fits == expected, identity


# ---------------------------------------------------------------- setup
# (hand of the starter, hand of everyone else, penalty deck) for 65 cards
DEALS = {
    2: (25, 24, 16),  # 49 = 2x24 + 1: the starter gets the extra card
    3: (20, 19, 7),  # 58 = 3x19 + 1
    4: (15, 14, 7 + 1),  # 58 = 4x14 + 2: one extra to the starter, one under the penalty deck
    5: (12, 11, 7 + 2),  # 58 = 5x11 + 3
    6: (10, 9, 7 + 3),  # 58 = 6x9 + 4
}


@pytest.mark.parametrize("num_players", PLAYER_COUNTS)
def test_an_uneven_deal_gives_the_starter_one_extra_card_and_the_rest_go_under_the_penalty_deck(num_players):
    starter_hand, other_hand, penalty = DEALS[num_players]
    config = GameConfig(edition="royal", num_players=num_players, starter=1)
    for seed in range(5):
        deal = random_deal(config, np.random.default_rng(seed))
        assert deal.starter == 1
        assert [sum(row) for row in deal.hands] == [starter_hand if s == 1 else other_hand for s in range(num_players)]
        assert len(deal.penalty_deck) == penalty
        assert sum(deal.removed) == 0 and not any(map(any, deal.collections))
        # the documented draw order: one permutation; the penalty deck first, then the hands
        # one card at a time from the starter on; leftovers go under the penalty deck (its end)
        order = np.repeat(np.arange(16), config.cards.copies)[np.random.default_rng(seed).permutation(65)].tolist()
        set_aside, dealt = (16 if num_players == 2 else 7), 65 - penalty
        assert deal.penalty_deck == order[:set_aside] + order[set_aside + dealt :]
        for seat in range(num_players):
            expected = np.bincount(
                order[set_aside : set_aside + dealt][(seat - 1) % num_players :: num_players], minlength=16
            )
            assert deal.hands[seat] == expected.tolist()
        counts = np.sum(deal.hands, axis=0) + np.bincount(deal.penalty_deck, minlength=16)
        assert counts.tolist() == list(config.cards.copies)


@pytest.mark.parametrize("num_players", PLAYER_COUNTS)
def test_the_penalty_top_card_is_face_up_for_everyone(num_players):
    e = cockroach_env.env(edition="royal", num_players=num_players)
    e.reset(seed=3)
    game = e.unwrapped.game
    top = game.cards.identities[game.penalty_deck[0]]
    assert view(e)["penalty_top"] == top and view(e)["penalty_size"] == DEALS[num_players][2]
    for agent in e.possible_agents:
        assert seen_by(e, agent)["penalty_top"] == top
        assert seen_by(e, agent)["penalty_size"] == DEALS[num_players][2]


def test_an_explicit_deal_without_a_penalty_deck_has_an_empty_penalty_deck():
    e = royal_table(hands={"player_0": {"rat": 1}, "player_1": {"bat": 1}, "player_2": {"fly": 1}})
    assert e.unwrapped.game.penalty_deck == []
    assert view(e)["penalty_top"] is None and view(e)["penalty_size"] == 0
    assert seen_by(e, "player_1")["penalty_top"] is None


def test_an_explicit_penalty_deck_lists_the_top_card_first():
    e = royal_table(hands={"player_0": {"rat": 1}}, penalty_deck=["joker", "bat", "royal_fly"])
    assert view(e)["penalty_top"] == "joker" and view(e)["penalty_size"] == 3


@pytest.mark.parametrize(
    "penalty_deck, why",
    [("rat", "list of card names"), (["spider"], "unknown card"), (["joker", "joker"], "deck holds only 1")],
)
def test_a_bad_penalty_deck_is_refused(penalty_deck, why):
    with pytest.raises(ValueError, match=why):
        royal_table(hands={"player_0": {"rat": 1}}, penalty_deck=penalty_deck)


def test_classic_has_no_penalty_deck_and_no_royal_flags():
    e = cockroach_env.env(num_players=3)
    with pytest.raises(ValueError, match="only the Royal edition"):
        e.reset(options={"hands": {"player_0": {"rat": 1}}, "penalty_deck": ["bat"]})
    with pytest.raises(ValueError, match="Royal edition flag"):
        GameConfig(blank_counts_as_royal=True)
    with pytest.raises(ValueError, match="Royal edition flag"):
        GameConfig(royal_counts_as_animal=False)


# ---------------------------------------------------------------- the penalty deck
BASE_HANDS = {"player_0": {"royal_rat": 1, "cockroach": 1}, "player_1": {"bat": 1}, "player_2": {"fly": 1}}
P1_TAKES_ROYAL_RAT = (offer("royal_rat", "player_1", "rat"), CALL_FALSE)  # a true claim doubted: player_1 takes it


def test_a_placed_royal_draws_the_face_up_penalty_card_and_turns_up_the_next():
    e = royal_table(hands=BASE_HANDS, penalty_deck=["toad", "scorpion", "stink_bug"])
    play(e, *P1_TAKES_ROYAL_RAT)
    assert collection(e, "player_1") == {"royal_rat": 1, "toad": 1}
    assert view(e)["penalty_top"] == "scorpion" and view(e)["penalty_size"] == 2
    assert seen_by(e, "player_2")["penalty_top"] == "scorpion"
    assert e.unwrapped.history[-1] == {
        "type": "place",
        "player": "player_1",
        "card": "toad",
        "source": "penalty",
        "penalty_top": "scorpion",
    }
    assert to_act(e) == "player_1" and view(e)["phase"] == "offer"


def test_a_drawn_royal_draws_again():
    e = royal_table(hands=BASE_HANDS, penalty_deck=["royal_bat", "royal_fly", "toad", "rat"])
    play(e, *P1_TAKES_ROYAL_RAT)
    assert collection(e, "player_1") == {"royal_rat": 1, "royal_bat": 1, "royal_fly": 1, "toad": 1}
    assert view(e)["penalty_top"] == "rat" and view(e)["penalty_size"] == 1


@pytest.mark.parametrize("special", ["joker", "blank"])
def test_a_drawn_joker_or_blank_goes_to_hand_and_nothing_more_is_drawn(special):
    e = royal_table(hands=BASE_HANDS, penalty_deck=[special, "toad"])
    play(e, *P1_TAKES_ROYAL_RAT)
    assert collection(e, "player_1") == {"royal_rat": 1}
    assert hand(e, "player_1") == {"bat": 1, special: 1}
    assert view(e)["penalty_top"] == "toad" and view(e)["penalty_size"] == 1
    # drawn face up: everyone knows where it is (seats relative to the observer)
    assert view(e)["special_holders"] == {special: "player_1"}
    assert [seen_by(e, a)["special_holders"] for a in e.possible_agents] == [{special: 1}, {special: 0}, {special: 2}]


def test_a_chain_of_royals_stops_at_a_drawn_special():
    e = royal_table(hands=BASE_HANDS, penalty_deck=["royal_bat", "blank", "toad"])
    play(e, *P1_TAKES_ROYAL_RAT)
    assert collection(e, "player_1") == {"royal_rat": 1, "royal_bat": 1}
    assert hand(e, "player_1") == {"bat": 1, "blank": 1}
    assert view(e)["penalty_top"] == "toad"


@pytest.mark.parametrize("penalty_deck, drawn", [(None, {}), ([], {}), (["royal_bat"], {"royal_bat": 1})])
def test_an_empty_penalty_deck_means_no_draw(penalty_deck, drawn):
    e = royal_table(hands=BASE_HANDS, penalty_deck=penalty_deck)
    play(e, *P1_TAKES_ROYAL_RAT)
    assert collection(e, "player_1") == {"royal_rat": 1, **drawn}
    assert view(e)["penalty_size"] == 0 and view(e)["penalty_top"] is None
    assert to_act(e) == "player_1"


def test_a_penalty_card_can_complete_a_losing_set():
    e = royal_table(hands=BASE_HANDS, penalty_deck=["toad", "bat"], collections={"player_1": {"toad": 3}})
    play(e, *P1_TAKES_ROYAL_RAT)
    assert loser(e) == ("player_1", "same_type")
    assert view(e)["penalty_top"] == "bat"


def test_a_royal_that_completes_a_losing_set_ends_the_game_before_any_draw():
    e = royal_table(hands=BASE_HANDS, penalty_deck=["toad", "bat"], collections={"player_1": {"rat": 3}})
    play(e, *P1_TAKES_ROYAL_RAT)
    assert loser(e) == ("player_1", "same_type")
    assert view(e)["penalty_size"] == 2


# ---------------------------------------------------------------- the joker/blank replacement
def take_joker(e, claim: str, taker: str = "player_1") -> None:
    """player_0 offers the joker to ``taker`` with an animal claim (true for the joker); the taker doubts it."""
    play(e, offer("joker", taker, claim), CALL_FALSE)


def test_replacement_with_a_fitting_normal_card_is_one_decision_even_when_only_one_fits():
    e = royal_table(
        hands={"player_0": {"joker": 1, "cockroach": 1}, "player_1": {"rat": 1, "bat": 1}, "player_2": {"fly": 1}}
    )
    take_joker(e, "rat")
    assert view(e)["phase"] == "place" and to_act(e) == "player_1"
    assert placeable(e) == ["rat"]
    assert hand(e, "player_1") == {"rat": 1, "bat": 1, "joker": 1}
    obs = seen_by(e, "player_1")
    assert (obs["phase"], obs["place_claim"], obs["place_remaining"]) == ("place", "rat", 1)
    unknown = {"player": "player_1", "called": "rat", "placed": 0, "fits": None, "remaining": None}
    assert view(e)["replacement"] == unknown  # public: whether a card fits is the placer's to know
    assert seat_view(e.unwrapped, "player_1")["replacement"] == {**unknown, "fits": True, "remaining": 1}
    assert seat_view(e.unwrapped, "player_2")["replacement"] == unknown
    assert (seen_by(e, "player_2")["place_claim"], seen_by(e, "player_2")["place_remaining"]) == (None, 0)
    assert view(e)["special_holders"] == {"joker": "player_1"}  # taken into hand in public
    play(e, place("rat"))
    assert collection(e, "player_1") == {"rat": 1}
    assert hand(e, "player_1") == {"bat": 1, "joker": 1}
    assert view(e)["phase"] == "offer" and to_act(e) == "player_1"  # the taker starts next
    assert "replacement" not in view(e)


def test_replacement_with_a_fitting_royal_card_draws_from_the_penalty_deck():
    e = royal_table(
        hands={
            "player_0": {"joker": 1, "cockroach": 1},
            "player_1": {"royal_rat": 1, "bat": 1},
            "player_2": {"fly": 1},
        },
        penalty_deck=["royal_toad", "fly", "stink_bug"],
    )
    take_joker(e, "rat")
    assert placeable(e) == ["royal_rat"]  # a royal card fits its own animal
    play(e, place("royal_rat"))
    assert collection(e, "player_1") == {"royal_rat": 1, "royal_toad": 1, "fly": 1}  # the drawn royal draws again
    assert view(e)["penalty_top"] == "stink_bug"
    assert view(e)["phase"] == "offer" and to_act(e) == "player_1"


def test_only_royal_cards_fit_a_royal_claim():
    e = royal_table(
        hands={
            "player_0": {"joker": 1, "cockroach": 1},
            "player_1": {"royal_bat": 1, "royal_fly": 1, "rat": 1},
            "player_2": {"fly": 1},
        },
        penalty_deck=["toad"],
    )
    play(e, offer("joker", "player_1", "royal"), CALL_TRUE)  # the joker is never royal: player_1 was wrong
    assert placeable(e) == ["royal_bat", "royal_fly"]  # their choice among the fitting cards
    play(e, place("royal_fly"))
    assert collection(e, "player_1") == {"royal_fly": 1, "toad": 1}
    assert hand(e, "player_1") == {"royal_bat": 1, "rat": 1, "joker": 1}


def test_replacement_offers_a_choice_when_several_cards_fit():
    e = royal_table(
        hands={
            "player_0": {"joker": 1, "cockroach": 1},
            "player_1": {"rat": 2, "royal_rat": 1, "bat": 1},
            "player_2": {"fly": 1},
        }
    )
    take_joker(e, "rat")
    assert placeable(e) == ["rat", "royal_rat"]
    play(e, place("rat"))
    assert collection(e, "player_1") == {"rat": 1} and view(e)["phase"] == "offer"


def test_replacement_fits_the_latest_claim_of_the_chain():
    e = royal_table(
        hands={"player_0": {"joker": 1, "cockroach": 1}, "player_1": {"toad": 1}, "player_2": {"rat": 1, "bat": 1}}
    )
    play(e, offer("joker", "player_1", "rat"), PEEK, pass_to("player_2", "bat"), CALL_FALSE)
    assert to_act(e) == "player_2" and placeable(e) == ["bat"]


def test_without_a_fitting_card_two_cards_of_choice_are_placed_one_decision_each():
    e = royal_table(
        hands={
            "player_0": {"joker": 1, "cockroach": 1},
            "player_1": {"bat": 1, "fly": 1, "royal_toad": 1},
            "player_2": {"fly": 1},
        },
        penalty_deck=["scorpion", "stink_bug"],
    )
    take_joker(e, "rat")
    assert placeable(e) == ["bat", "fly", "royal_toad"]
    assert (seen_by(e, "player_1")["place_claim"], seen_by(e, "player_1")["place_remaining"]) == (None, 2)
    assert view(e)["replacement"]["fits"] is None and view(e)["replacement"]["remaining"] is None
    play(e, place("royal_toad"))  # a royal placed in a replacement draws too
    assert collection(e, "player_1") == {"royal_toad": 1, "scorpion": 1}
    assert view(e)["phase"] == "place" and placeable(e) == ["bat", "fly"]
    assert seen_by(e, "player_1")["place_remaining"] == 1
    assert seen_by(e, "player_2")["place_remaining"] == 0  # the placer's segment, for the whole replacement
    public = {"player": "player_1", "called": "rat", "placed": 1, "fits": False, "remaining": 1}
    assert view(e)["replacement"] == public  # a placed card that did not fit showed it
    play(e, place("fly"))
    assert collection(e, "player_1") == {"royal_toad": 1, "scorpion": 1, "fly": 1}
    assert hand(e, "player_1") == {"bat": 1, "joker": 1}
    assert view(e)["phase"] == "offer" and to_act(e) == "player_1"


def test_with_fewer_than_two_other_cards_the_one_is_placed():
    e = royal_table(hands={"player_0": {"joker": 1, "cockroach": 1}, "player_1": {"bat": 1}, "player_2": {"fly": 1}})
    take_joker(e, "rat")
    assert placeable(e) == ["bat"] and seen_by(e, "player_1")["place_remaining"] == 1
    play(e, place("bat"))
    assert hand(e, "player_1") == {"joker": 1}
    assert view(e)["phase"] == "offer" and to_act(e) == "player_1"


@pytest.mark.parametrize("flags", [{}, {"blank_counts_as_royal": True, "royal_counts_as_animal": False}])
def test_with_no_other_card_the_special_itself_is_placed_face_up_without_a_decision(flags):
    """Ruling: the joker goes face up, counts toward no type (nor the royal set), and the taker starts."""
    e = royal_table(
        hands={"player_0": {"joker": 1, "cockroach": 1}, "player_1": {"blank": 1}, "player_2": {"fly": 1}},
        collections={"player_1": {"rat": 3, "royal_bat": 1, "royal_fly": 1, "royal_toad": 1}},
        **flags,
    )
    take_joker(e, "rat")
    assert collection(e, "player_1") == {"rat": 3, "royal_bat": 1, "royal_fly": 1, "royal_toad": 1, "joker": 1}
    assert loser(e) == (None, None)
    assert view(e)["phase"] == "offer" and to_act(e) == "player_1"
    assert hand(e, "player_1") == {"blank": 1}  # only the *other* cards count: the blank is not one
    assert view(e)["special_holders"] == {}


def test_with_an_empty_hand_the_special_goes_face_up_and_the_taker_then_loses_for_the_empty_hand():
    e = royal_table(hands={"player_0": {"blank": 1, "cockroach": 1}, "player_2": {"fly": 1}})
    play(e, offer("blank", "player_1", "bat"), CALL_TRUE)  # the blank is never an animal
    assert collection(e, "player_1") == {"blank": 1}
    assert loser(e) == ("player_1", "empty_hand")


def test_the_joker_and_the_blank_are_never_placeable():
    e = royal_table(
        hands={
            "player_0": {"joker": 1, "cockroach": 1},
            "player_1": {"blank": 1, "royal_bat": 1, "rat": 1},
            "player_2": {"fly": 1},
        },
        blank_counts_as_royal=True,
    )
    play(e, offer("joker", "player_1", "royal"), CALL_TRUE)
    assert placeable(e) == ["royal_bat"]  # the blank is "royal" under the flag, yet never placed
    for special in ("joker", "blank"):
        with pytest.raises(IllegalActionError, match="cannot be placed"):
            play(e, place(special))
        with pytest.raises(IllegalMove):
            e.unwrapped.game.place(e.unwrapped.cards.index(special))
    assert view(e)["phase"] == "place"


def test_a_known_special_holder_is_uncertain_only_while_their_offered_card_is_in_play():
    e = royal_table(
        hands={"player_0": {"joker": 1, "cockroach": 1}, "player_1": {"rat": 1, "bat": 2}, "player_2": {"fly": 2}}
    )
    take_joker(e, "rat")
    play(e, place("rat"))
    assert view(e)["special_holders"] == {"joker": "player_1"}
    play(e, offer("bat", "player_2", "bat"))
    assert view(e)["special_holders"] == {}  # the card in play might be the joker
    assert seen_by(e, "player_2")["special_holders"] == {}
    play(e, CALL_TRUE)  # a bat: the joker is still in player_1's hand
    assert view(e)["special_holders"] == {"joker": "player_1"}
    play(e, offer("joker", "player_2", "fly"), CALL_FALSE)  # player_2 takes it into hand
    assert view(e)["special_holders"] == {"joker": "player_2"}
    assert placeable(e) == ["fly"]


def test_a_special_placed_face_up_is_no_longer_in_a_known_hand():
    e = royal_table(hands=BASE_HANDS | {"player_1": {"blank": 1}}, penalty_deck=["joker", "bat"])
    play(e, offer("royal_rat", "player_1", "rat"), CALL_TRUE)  # player_0 takes it back and draws the joker
    assert view(e)["special_holders"] == {"joker": "player_0"}
    play(e, offer("joker", "player_1", "bat"), CALL_FALSE)  # player_1 holds only the blank: joker face up
    assert collection(e, "player_1") == {"joker": 1}
    assert view(e)["special_holders"] == {}
    assert all(seen_by(e, a)["special_holders"] == {} for a in e.possible_agents)


# ---------------------------------------------------------------- loss
@pytest.mark.parametrize("num_players", PLAYER_COUNTS)
def test_loss_by_four_or_five_of_an_animal_counting_royals_as_their_animal(num_players):
    loss_count = 5 if num_players == 2 else 4
    hands = {"player_0": {"royal_rat": 1, "rat": 1, "cockroach": 1}, "player_1": {"bat": 1}}
    e = royal_table(num_players, hands=hands, collections={"player_1": {"rat": loss_count - 2}})
    play(e, offer("royal_rat", "player_1", "rat"), CALL_FALSE)
    assert collection(e, "player_1") == {"rat": loss_count - 2, "royal_rat": 1} and loser(e) == (None, None)
    play(e, offer("bat", "player_0", "rat"), CALL_TRUE)  # player_1 lied; player_0 takes the bat
    play(e, offer("rat", "player_1", "rat"), CALL_FALSE)
    assert loser(e) == ("player_1", "same_type")


@pytest.mark.parametrize("num_players", PLAYER_COUNTS)
def test_with_royal_counts_as_animal_false_royals_form_their_own_set(num_players):
    loss_count = 5 if num_players == 2 else 4
    other_royals = {r: 1 for r in ROYALS[1:loss_count]}  # royals of other animals, one short of a set
    hands = {"player_0": {"royal_cockroach": 1, "cockroach": 1}, "player_1": {"bat": 1}}
    e = royal_table(
        num_players,
        hands=hands,
        collections={"player_1": {"cockroach": loss_count - 1} | other_royals},
        royal_counts_as_animal=False,
    )
    assert collection(e, "player_1") == {"cockroach": loss_count - 1} | other_royals
    play(e, offer("royal_cockroach", "player_1", "cockroach"), CALL_FALSE)  # not a 4th/5th cockroach ...
    assert loser(e) == ("player_1", "same_type")  # ... but the 4th/5th royal
    e = royal_table(
        num_players, hands=hands, collections={"player_1": {"cockroach": loss_count - 1}}, royal_counts_as_animal=False
    )
    play(e, offer("royal_cockroach", "player_1", "cockroach"), CALL_FALSE)
    assert loser(e) == (None, None)


def test_having_to_start_with_an_empty_hand_loses():
    e = royal_table(hands={"player_0": {"rat": 1}, "player_1": {"bat": 1}, "player_2": {"fly": 1}})
    play(e, offer("rat", "player_1", "rat"), CALL_TRUE)  # player_0 takes its own rat and must start
    assert loser(e) == ("player_0", "empty_hand")


# ---------------------------------------------------------------- observation and actions
def test_royal_action_layout_has_a_place_slice_of_one_action_per_identity():
    for n in PLAYER_COUNTS:
        enc = encoding_for(GameConfig(edition="royal", num_players=n))
        slices = enc.action_slices()
        assert slices["place"] == slice(enc.place_start, enc.num_actions) and enc.num_actions - enc.place_start == 16
        assert enc.num_actions == 16 * (n - 1) * 8 + 3 + (n - 1) * 8 + 16
        e = cockroach_env.env(edition="royal", num_players=n)
        e.reset(seed=0)
        for identity in ROYAL_IDENTITIES:
            action = e.unwrapped.encode(place(identity))
            assert action == enc.place_start + ROYAL_IDENTITIES.index(identity)
            assert e.unwrapped.decode(action) == place(identity)
    classic = encoding_for(GameConfig(num_players=4))
    assert classic.place_start == classic.num_actions


def test_royal_observation_segments():
    enc = encoding_for(GameConfig(edition="royal", num_players=4))
    state, obs = enc.state.segments, enc.observation.segments
    assert obs["own_hand"].shape == (16,) and obs["collections"].shape == (4, 16)
    assert obs["chain_claim"].shape == (8,) and obs["chain_claims"].shape == (4, 8)
    assert obs["penalty_top"].shape == (16,) and obs["penalty_size"].shape == (1,)
    assert obs["special_holder"].shape == (2, 4)
    assert obs["place_claim"].shape == (8,) and obs["place_remaining"].shape == (1,)
    assert state["penalty_hidden"].visibility == "hidden" and "penalty_hidden" not in obs and "removed" not in obs


def test_a_royal_claim_shows_in_the_chain_and_collections_are_keyed_by_identity():
    e = royal_table(hands=BASE_HANDS, penalty_deck=["toad"])
    play(e, offer("royal_rat", "player_1", "royal"))
    for agent in e.possible_agents:
        chain = seen_by(e, agent)["chain"]
        assert chain["claim"] == "royal"
        assert chain["card"] == ("royal_rat" if agent == "player_0" else None)
    assert view(e)["chain"]["claims"] == [{"player": "player_0", "claim": "royal"}]
    play(e, CALL_FALSE)
    assert view(e)["collections"] == {"player_0": {}, "player_1": {"royal_rat": 1, "toad": 1}, "player_2": {}}
    assert seen_by(e, "player_2")["collections"] == [{}, {}, {"royal_rat": 1, "toad": 1}]
    assert hand(e, "player_0") == {"cockroach": 1}


# ---------------------------------------------------------------- termination
def hidden_potential(game: Game) -> int:
    """Cards in hands plus specials still in the penalty deck: every round lowers it by at least one."""
    return sum(map(sum, game.hands)) + sum(1 for c in game.penalty_deck if game.cards.is_special[c])


def step_bound(game: Game) -> int:
    """Decisions a game can take: each round (offer, at most N-2 peek-and-pass pairs, a call,
    at most two placements) takes at most 2N steps, and there are at most as many rounds as
    the potential at the start.
    """
    return 2 * game.num_players * hidden_potential(game)


def play_randomly(e, rng: np.random.Generator, check=None) -> int:
    """Play uniformly random legal actions to the end; returns the number of steps."""
    game = e.unwrapped.game
    bound, steps = step_bound(game), 0
    potential, round_steps = hidden_potential(game), 0
    for _agent in e.agent_iter():
        obs, _, terminated, truncated, _ = e.last()
        if terminated or truncated:
            e.step(None)
            continue
        if check is not None:
            check(e)
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        steps += 1
        round_steps += 1
        game = e.unwrapped.game
        if game.phase is Phase.OFFER and game.chain is None and game.replacement is None:
            assert hidden_potential(game) < potential, "a round did not lower the cards in hands"
            assert round_steps <= 2 * game.num_players
            potential, round_steps = hidden_potential(game), 0
        assert steps <= bound
    return steps


@pytest.mark.parametrize("num_players", PLAYER_COUNTS)
def test_random_play_always_terminates(num_players):
    for seed in range(60):
        for loss_count in (None, 8):  # 8 of a kind almost never happens: the longest games
            e = cockroach_env.env(edition="royal", num_players=num_players, loss_count=loss_count)
            e.reset(seed=seed)
            play_randomly(e, np.random.default_rng(seed))
            assert e.unwrapped.game.over


@pytest.mark.slow
@pytest.mark.parametrize("num_players", PLAYER_COUNTS)
def test_random_play_always_terminates_many_seeds(num_players):
    for seed in range(60, 600):
        e = cockroach_env.env(
            edition="royal",
            num_players=num_players,
            loss_count=8,
            royal_counts_as_animal=seed % 2 == 0,
            blank_counts_as_royal=seed % 3 == 0,
        )
        e.reset(seed=seed)
        play_randomly(e, np.random.default_rng(seed))
        assert e.unwrapped.game.over


def _longest_line_of_play(game: Game, claims: list[int], memo: dict, on_path: set) -> int:
    """Explore every legal move from ``game`` (claims from ``claims``): the longest line to
    the end. Fails if a state repeats on a line (a cycle), so a result proves every line ends.
    """
    if game.over:
        return 0
    chain, replacement = game.chain, game.replacement
    key = (
        tuple(map(tuple, game.hands)),
        tuple(map(tuple, game.collections)),
        game.phase,
        game.current,
        None
        if chain is None
        else (chain.card, chain.offerer, chain.holder, chain.latest_passer, chain.claim, tuple(chain.seen)),
        None if replacement is None else (replacement.player, replacement.claim, replacement.remaining),
        tuple(game.penalty_deck),
    )
    assert key not in on_path, f"a line of play cycles: {game!r}"
    if key in memo:
        return memo[key]
    moves = []
    if game.phase is Phase.OFFER:
        hand = game.hands[game.current]
        moves = [
            ("offer", c, t, k)
            for c in range(16)
            if hand[c]
            for t in range(game.num_players)
            if t != game.current
            for k in claims
        ]
    elif game.phase is Phase.RESPOND:
        moves = [("call", True), ("call", False)] + ([("peek",)] if game.can_peek() else [])
    elif game.phase is Phase.PASS:
        moves = [("pass", t, k) for t in game.eligible_recipients() for k in claims]
    elif game.phase is Phase.PLACE:
        moves = [("place", c) for c in game.placeable_cards()]
    on_path.add(key)
    longest = 0
    for kind, *args in moves:
        child = game.copy()
        {"offer": child.offer, "call": child.call, "peek": child.peek, "pass": child.pass_card, "place": child.place}[
            kind
        ](*args)
        longest = max(longest, 1 + _longest_line_of_play(child, claims, memo, on_path))
    on_path.discard(key)
    memo[key] = longest
    return longest


@pytest.mark.parametrize(
    "num_players, hands, penalty_deck",
    [
        (2, {0: {"joker": 1}, 1: {"blank": 1}}, []),
        (3, {0: {"joker": 1}, 1: {"blank": 1}, 2: {}}, []),
        (4, {0: {"joker": 1}, 2: {"blank": 1}}, []),
        (3, {0: {"joker": 1, "rat": 1}, 1: {"blank": 1}}, []),
        (3, {0: {"joker": 1, "royal_rat": 1}, 1: {"blank": 1}}, ["royal_bat", "toad"]),
        (2, {0: {"royal_rat": 1, "rat": 1}, 1: {"bat": 1}}, ["joker", "royal_toad", "blank"]),
    ],
)
def test_every_line_of_play_ends_even_when_only_special_cards_remain(num_players, hands, penalty_deck):
    """Ruling: with no other card the special is placed face up, so no line of play cycles
    (without it, two players holding only the joker and the blank could pass them forever).
    """
    config = GameConfig(edition="royal", num_players=num_players)
    game = Game(config, explicit_deal(config, 0, hands, penalty_deck=penalty_deck))
    claims = list(range(len(config.cards.claims)))
    assert _longest_line_of_play(game, claims, {}, set()) <= step_bound(game)


# ---------------------------------------------------------------- PettingZoo conformance
@pytest.mark.parametrize("num_players", PLAYER_COUNTS)
def test_api_test(num_players):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(cockroach_env.env(edition="royal", num_players=num_players), num_cycles=1000)
        api_test(
            cockroach_env.env(
                edition="royal", num_players=num_players, blank_counts_as_royal=True, royal_counts_as_animal=False
            ),
            num_cycles=1000,
        )


@pytest.mark.parametrize("num_players", PLAYER_COUNTS)
def test_seed_test(num_players):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seed_test(lambda: cockroach_env.env(edition="royal", num_players=num_players), num_cycles=500)


# ---------------------------------------------------------------- properties
def card_counts(game: Game) -> list[int]:
    """Every card, wherever it is: hands, collections, penalty deck, removed, in play."""
    counts = np.sum(game.hands, axis=0) + np.sum(game.collections, axis=0) + np.asarray(game.removed)
    counts += np.bincount(game.penalty_deck, minlength=len(game.cards.identities)).astype(counts.dtype)
    if game.chain is not None:
        counts[game.chain.card] += 1
    return counts.tolist()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_players=st.sampled_from(PLAYER_COUNTS),
    deal_seed=st.integers(0, 2**32 - 1),
    policy_seed=st.integers(0, 2**32 - 1),
    blank_counts_as_royal=st.booleans(),
    royal_counts_as_animal=st.booleans(),
    loss_count=st.sampled_from([None, 3, 8]),
)
def test_property_conservation_one_loser_zero_sum_and_termination(
    num_players, deal_seed, policy_seed, blank_counts_as_royal, royal_counts_as_animal, loss_count
):
    e = cockroach_env.env(
        edition="royal",
        num_players=num_players,
        loss_count=loss_count,
        blank_counts_as_royal=blank_counts_as_royal,
        royal_counts_as_animal=royal_counts_as_animal,
    )
    e.reset(seed=deal_seed)
    copies = list(e.unwrapped.cards.copies)

    def conserved(env) -> None:
        assert card_counts(env.unwrapped.game) == copies

    returns = {a: 0.0 for a in e.possible_agents}
    rng = np.random.default_rng(policy_seed)
    game = e.unwrapped.game
    bound, steps = step_bound(game), 0
    for agent in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        returns[agent] += reward
        if terminated or truncated:
            e.step(None)
            continue
        conserved(e)
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        steps += 1
        assert steps <= bound
    game = e.unwrapped.game
    conserved(e)
    assert game.over and game.loser is not None
    losers = [a for a, r in returns.items() if r < 0]
    assert losers == [f"player_{game.loser}"]
    assert returns[losers[0]] == -1.0
    assert all(r == pytest.approx(1.0 / (num_players - 1)) for a, r in returns.items() if a not in losers)
    assert sum(returns.values()) == pytest.approx(0.0)


# ---------------------------------------------------------------- no leak
def resample_hidden(game: Game, viewer: int, rng: np.random.Generator) -> tuple[Game, set[str]]:
    """A copy of ``game`` with every card ``viewer`` cannot see dealt again at random,
    consistently with what ``viewer`` knows (hand sizes, penalty deck size, the face-up
    penalty card, specials known to be in a hand). Returns the copy and the kinds of
    places whose cards changed.

    A known holder whose offered card is still in play (``viewer`` not having seen it)
    has the special either in hand or in play: both are resampled.
    """
    new = copy.copy(game)  # shallow: only the hidden places below are replaced
    new.chain = chain = None if game.chain is None else dataclasses.replace(game.chain)
    new.penalty_deck = list(game.penalty_deck)
    chain_hidden = chain is not None and viewer not in chain.seen
    slots: list[tuple] = []  # ("hand", seat) | ("chain",) | ("penalty", position) | ("removed",)
    cards: list[int] = []
    for seat in range(new.num_players):
        if seat != viewer:
            for card, count in enumerate(new.hands[seat]):
                slots += [("hand", seat)] * count
                cards += [card] * count
    if chain_hidden:
        slots.append(("chain",))
        cards.append(chain.card)
    for position in range(1, len(new.penalty_deck)):
        slots.append(("penalty", position))
        cards.append(new.penalty_deck[position])
    for card, count in enumerate(new.removed):
        slots += [("removed",)] * count
        cards += [card] * count

    # specials whose place is public stay there; one whose holder's card is in play may be either
    pinned: dict[int, tuple] = {}
    known = new.known_special_holders()
    for card, seat in new.special_holder.items():
        if seat == viewer:
            continue
        if chain_hidden and card not in known:  # the holder's offered card might be this special
            assert chain.offerer == seat
            places = [
                w for w in (("hand", seat), ("chain",)) if any(s == w and k not in pinned for k, s in enumerate(slots))
            ]
            choice = places[rng.integers(len(places))]
            pinned[_take_slot(slots, cards, choice, card, pinned, swap=True)] = choice
        elif chain is None or chain.card != card:  # known, or the viewer saw it is not in play
            pinned[_take_slot(slots, cards, ("hand", seat), card, pinned)] = ("hand", seat)
    free = [k for k in range(len(slots)) if k not in pinned]
    pool = [cards[k] for k in free]
    for k, card in zip(free, rng.permutation(pool).tolist() if pool else []):
        cards[k] = card

    changed: set[str] = set()
    hands = [[0] * 16 if s != viewer else list(new.hands[s]) for s in range(new.num_players)]
    new.removed = [0] * 16
    for slot, card in zip(slots, cards):
        if slot[0] == "hand":
            hands[slot[1]][card] += 1
        elif slot[0] == "chain":
            if card != chain.card:
                changed.add("chain")
            chain.card = card
        elif slot[0] == "penalty":
            if card != new.penalty_deck[slot[1]]:
                changed.add("penalty")
            new.penalty_deck[slot[1]] = card
        else:
            new.removed[card] += 1
    if hands != game.hands:
        changed.add("hands")
    new.hands = hands
    return new, changed


def _take_slot(slots: list, cards: list, where: tuple, card: int, pinned: dict, swap: bool = False) -> int:
    """Index of a free slot at ``where`` holding ``card``; with ``swap``, move ``card`` there first."""
    here = [k for k, s in enumerate(slots) if s == where and k not in pinned]
    for k in here:
        if cards[k] == card:
            return k
    assert swap, f"{card} is not at {where}"
    source = next(k for k, c in enumerate(cards) if c == card and k not in pinned)
    target = here[0]
    cards[source], cards[target] = cards[target], cards[source]
    return target


def observation_of(game: Game, viewer: int) -> np.ndarray:
    enc = encoding_for(game.config)
    state = write_state(enc, game, np.zeros(enc.state.size + 1, np.float32))
    seen = game.chain is not None and viewer in game.chain.seen
    return state[enc.observation_index(viewer, seen)]


def _check_no_leak(num_players: int, seeds: range, resamples: int, coverage: dict) -> None:
    for seed in seeds:
        flags = {"blank_counts_as_royal": seed % 2 == 1, "royal_counts_as_animal": seed % 3 != 1}
        e = cockroach_env.env(edition="royal", num_players=num_players, loss_count=8, **flags)
        e.reset(seed=seed)
        rng = np.random.default_rng(seed)

        def check(env, rng=rng, seed=seed) -> None:  # (called within this iteration: the defaults are its values)
            game = env.unwrapped.game
            assert card_counts(game) == list(game.cards.copies)
            for viewer in range(num_players):
                before = observation_of(game, viewer)
                for _ in range(resamples):
                    other, changed = resample_hidden(game, viewer, rng)
                    assert card_counts(other) == list(game.cards.copies)
                    assert np.array_equal(observation_of(other, viewer), before), (seed, viewer, changed)
                    coverage.update({k: coverage.get(k, 0) + 1 for k in changed})
                if game.known_special_holders():
                    coverage["known_holder"] = coverage.get("known_holder", 0) + 1
                if (
                    game.special_holder
                    and game.chain is not None
                    and viewer not in game.chain.seen
                    and game.chain.offerer in game.special_holder.values()
                ):
                    coverage["uncertain_holder"] = coverage.get("uncertain_holder", 0) + 1

        play_randomly(e, rng, check)


COVERAGE = ("hands", "penalty", "chain", "known_holder", "uncertain_holder")
"""What the no-leak checks must have met: resampled other hands, face-down penalty cards and
card in play, a special in a publicly known hand, and one whose holder's card is in play."""


@pytest.mark.parametrize("num_players", PLAYER_COUNTS)
def test_no_leak_of_hidden_cards_including_the_face_down_penalty_cards(num_players):
    coverage: dict = {}
    _check_no_leak(num_players, range(12), resamples=1, coverage=coverage)
    assert all(coverage.get(kind, 0) > 0 for kind in COVERAGE), coverage  # not vacuous


@pytest.mark.slow
@pytest.mark.parametrize("num_players", PLAYER_COUNTS)
def test_no_leak_many_seeds(num_players):
    coverage: dict = {}
    _check_no_leak(num_players, range(12, 36), resamples=2, coverage=coverage)
    assert all(coverage.get(kind, 0) > 0 for kind in COVERAGE), coverage


def test_the_no_leak_check_catches_a_leak():
    """Control: the face-down penalty cards are in the full state, and resampling changes them."""
    config = GameConfig(edition="royal", num_players=3)
    game = Game(config, random_deal(config, np.random.default_rng(0)))
    enc = encoding_for(config)
    segment = enc.state.segments["penalty_hidden"]
    rng = np.random.default_rng(1)
    full = lambda g: write_state(enc, g, np.zeros(enc.state.size + 1, np.float32))  # noqa: E731
    differs = [
        not np.array_equal(
            full(resample_hidden(game, 0, rng)[0])[segment.start : segment.stop],
            full(game)[segment.start : segment.stop],
        )
        for _ in range(5)
    ]
    assert any(differs)
    assert np.array_equal(observation_of(resample_hidden(game, 0, rng)[0], 0), observation_of(game, 0))


@pytest.mark.parametrize("num_players", [3, 4])
def test_the_seat_to_act_sees_what_version_1_showed_it(num_players):
    """Only waiting seats lost the replacement segments: the seat to act (the placer, during a replacement) sees
    exactly the version 1 observation, the state gathered with ``place_claim`` and ``place_remaining`` always read,
    so agents trained on version 1 act the same.
    """
    rng = np.random.default_rng(num_players)
    placements = 0
    for seed in range(12):
        env = cockroach_env.raw_env(preset="royal", num_players=num_players)
        env.reset(seed=seed)
        enc, agents = env.encoding, env.possible_agents
        while not env.game.over:
            game, seat = env.game, env.game.current
            index = enc.observation_index(seat, game.chain is not None and seat in game.chain.seen).copy()
            for name in ("place_claim", "place_remaining"):  # version 1 read them for every seat
                shown, held = enc.observation.segments[name], enc.state.segments[name]
                index[shown.start : shown.stop] = np.arange(held.start, held.stop)
            version_1 = np.append(env.state(), np.float32(0.0))[index]
            observation = env.observe(agents[seat])
            np.testing.assert_array_equal(observation["observation"], version_1)
            placements += game.phase is Phase.PLACE
            env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
    assert placements >= 10, placements
