"""Properties of random legal play in every rule set (Hypothesis, derandomized for CI).

Each example plays one whole game with uniformly random legal actions and checks after
every step that no card is created or lost, that the game only moves towards its end,
that the env's state vector equals the reference encoding of the game, and that every
legal action survives an encode/decode round trip; at the end, that
exactly one player lost for a reason that really holds and the rewards sum to zero.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockroach_env import Move, Phase, raw_env
from cockroach_env.encoding import write_state
from cockroach_env.engine import LOSS_REASONS
from cockroach_env.env import INFO_DEFAULTS

from .conftest import CLASSIC_PRESETS, legal_actions

RULE_SETS = [
    (preset, n, {})
    for preset in CLASSIC_PRESETS + ("royal", "royal+rainbow")
    for n in range(2, 7)
    if not ("three-of-a-kind" in preset and n == 2)
] + [
    ("royal", n, flags)
    for n in (2, 3, 5)
    for flags in ({"blank_counts_as_royal": True}, {"royal_counts_as_animal": False})
]

PROPERTY_SETTINGS = settings(
    derandomize=True,
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

games = st.tuples(st.sampled_from(RULE_SETS), st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.5, 0.9]))
"""A rule set, a seed, and how often a holder calls right (peeking at the hidden card) rather than at random."""


def card_counts(game) -> np.ndarray:
    """Where every card is: hands, collections, removed, penalty deck and the card in play."""
    counts = np.sum(game.hands, axis=0) + np.sum(game.collections, axis=0) + np.asarray(game.removed)
    for card in game.penalty_deck:
        counts[card] += 1
    if game.chain is not None:
        counts[game.chain.card] += 1
    return counts


def cards_still_to_play(game) -> int:
    """Cards in hands plus penalty cards: every round lowers it by at least one (rules section 5)."""
    return sum(map(sum, game.hands)) + len(game.penalty_deck)


def group_counts(game, seat: int) -> list[int]:
    cards = game.cards
    counts = [0] * len(cards.groups)
    for card, count in enumerate(game.collections[seat]):
        if cards.group_of[card] >= 0:
            counts[cards.group_of[card]] += count
    return counts


def loses(game, seat: int) -> bool:
    counts = group_counts(game, seat)
    rainbow = game.config.rainbow_loses and all(counts[: game.cards.animal_groups])
    return max(counts) >= game.config.loss_count or rainbow


def play_checked_game(preset: str, num_players: int, flags: dict, seed: int, call_skill: float):
    e = raw_env(preset=preset, num_players=num_players, **flags)
    e.reset(seed=seed)
    game, cards = e.game, e.cards
    rng = np.random.default_rng(seed)
    deck = np.asarray(cards.copies)
    reference = np.zeros(e.encoding.state.size + 1, np.float32)
    round_start_potential = cards_still_to_play(game)
    bound = round_start_potential * (2 * num_players + 2)  # decisions per round: offer, peeks and passes, call, places
    steps = 0
    while not game.over:
        assert steps <= bound, "the game outlived its bound"
        legal = legal_actions(e)
        assert legal.size > 0
        for action in legal:
            assert e.encode(e.decode(action)) == action
        action = int(rng.choice(legal))
        if game.phase is Phase.RESPOND and rng.random() < call_skill:  # longer games: fewer wrong calls
            action = e.encode(Move("call", believe=cards.truth[game.chain.card][game.chain.claim]))
        move = e.decode(action)
        assert e.decode(e.encode(move)) == move
        e.step(action)
        steps += 1
        game = e.game
        assert (card_counts(game) == deck).all(), "cards are conserved"
        np.testing.assert_array_equal(e.state(), write_state(e.encoding, game, reference)[:-1])
        for seat in range(num_players):
            assert seat == game.loser or not loses(game, seat), "only the loser's collection may lose"
        for special, seat in game.known_special_holders().items():
            assert game.hands[seat][special] > 0, "a publicly known special card is in its holder's hand"
        if game.phase is Phase.OFFER and game.chain is None and move.kind in ("call", "place"):
            potential = cards_still_to_play(game)
            assert potential < round_start_potential, "every round lowers the cards still to play"
            round_start_potential = potential
    return e


@PROPERTY_SETTINGS
@given(games)
def test_random_play_conserves_cards_and_ends_with_exactly_one_loser(case):
    (preset, num_players, flags), seed, call_skill = case
    e = play_checked_game(preset, num_players, flags, seed, call_skill)
    game = e.game
    loser = e.possible_agents[game.loser]
    assert game.loss_reason in LOSS_REASONS
    if game.loss_reason == "empty_hand":
        assert game.hand_size(game.loser) == 0
    else:
        assert loses(game, game.loser)
    assert e.history[-1] == {"type": "loss", "player": loser, "reason": game.loss_reason}
    assert sum(event["type"] == "loss" for event in e.history) == 1
    assert all(e.terminations.values())
    assert all(
        info == {**INFO_DEFAULTS, "loser": game.loser, "loss_reason": LOSS_REASONS.index(game.loss_reason)}
        for info in e.infos.values()
    )
    rewards = e.rewards
    assert rewards[loser] == -1
    assert all(r == pytest.approx(1 / (num_players - 1)) for a, r in rewards.items() if a != loser)
    assert sum(rewards.values()) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    "preset, num_players", [pytest.param(p, n, id=f"{p}-{n}p") for p, n, flags in RULE_SETS if not flags]
)
def test_every_action_index_decodes_to_a_move_that_encodes_back(preset, num_players):
    e = raw_env(preset=preset, num_players=num_players)
    e.reset(seed=0)
    for actor in e.possible_agents:
        moves = [e.decode(a, actor=actor) for a in range(e.encoding.num_actions)]
        assert len(set(moves)) == len(moves)
        assert [e.encode(m, actor=actor) for m in moves] == list(range(e.encoding.num_actions))
