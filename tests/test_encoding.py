"""The encoding's fast paths agree with its reference definitions."""

import numpy as np
import pytest

from cockroach_env import GameConfig
from cockroach_env.encoding import StateWriter, encoding_for, write_state
from cockroach_env.engine import Game, random_deal

CONFIGS = [
    GameConfig(num_players=2),
    GameConfig(num_players=4),
    GameConfig(num_players=6, rainbow_loses=True, opening_cards=1),
    GameConfig(num_players=4, edition="royal"),
    GameConfig(num_players=2, edition="royal"),
]


def legal_moves(game: Game, enc) -> list[tuple]:
    """Every (method, args) the engine accepts now, enumerated from the rules."""
    n = game.num_players
    if game.phase.value == "offer":
        return [
            ("offer", (c, (game.current + k) % n, claim))
            for c, count in enumerate(game.hands[game.current])
            if count
            for k in range(1, n)
            for claim in range(enc.num_claims)
        ]
    if game.phase.value == "respond":
        return [("call", (True,)), ("call", (False,))] + ([("peek", ())] if game.can_peek() else [])
    if game.phase.value == "pass":
        return [("pass_card", (t, claim)) for t in game.eligible_recipients() for claim in range(enc.num_claims)]
    return [("place", (c,)) for c in game.placeable_cards()]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.edition}-{c.num_players}p")
def test_incremental_state_writer_matches_full_rewrite(config):
    enc = encoding_for(config)
    writer = StateWriter(enc)
    rng = np.random.default_rng(7)
    reference = np.zeros(enc.state.size + 1, np.float32)
    for _ in range(15):
        game = Game(config, random_deal(config, rng))
        writer.reset()
        while True:
            np.testing.assert_array_equal(writer.write(game), write_state(enc, game, reference))
            if game.over:
                break
            moves = legal_moves(game, enc)
            method, args = moves[rng.integers(len(moves))]
            getattr(game, method)(*args)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.edition}-{c.num_players}p")
def test_action_codec_round_trips_every_index(config):
    enc = encoding_for(config)
    for action in range(enc.num_actions):
        decoded = enc.decode_action(action)
        kind = decoded[0]
        if kind == "offer":
            assert enc.offer_action(*decoded[1:]) == action
        elif kind == "pass":
            assert enc.pass_action(*decoded[1:]) == action
        elif kind == "place":
            assert enc.place_action(*decoded[1:]) == action
        else:
            assert enc.respond_start <= action < enc.pass_start


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.edition}-{c.num_players}p")
def test_observation_gathers_exactly_the_visible_state_entries(config):
    enc = encoding_for(config)
    for viewer in range(config.num_players):
        for seen in (False, True):
            index = enc.observation_index(viewer, seen)
            visible = index[index != enc.zero_slot]
            assert len(set(visible.tolist())) == visible.size, "no state entry appears twice"
            mask = enc.observation_mask(viewer, seen)
            assert set(np.flatnonzero(mask).tolist()) == set(visible.tolist())
            hidden_names = [s for s in enc.state.segments.values() if s.visibility == "hidden"]
            for seg in hidden_names:
                assert not mask[seg.start : seg.stop].any()
