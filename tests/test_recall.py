"""``GameConfig.recall``: the observation that keeps the game's history (perfect recall).

The batched engine's recall tail is compared with the AEC env's in ``tests/test_recall_batched.py``.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from cockroach_env import raw_env
from cockroach_env.config import GameConfig
from cockroach_env.encoding import encoding_for, max_decisions, public_moves, recall_moves
from cockroach_env.observation import decode_observation
from training.evaluation.exact import build_tree

from .conftest import legal_actions


def test_recall_is_off_by_default_and_leaves_the_layout_alone():
    plain, recall = GameConfig(), GameConfig(recall=True)
    assert not plain.recall
    plain_enc, recall_enc = encoding_for(plain), encoding_for(recall)
    assert list(recall_enc.observation.segments)[: len(plain_enc.observation.segments)] == list(
        plain_enc.observation.segments
    )
    size = plain_enc.observation.size
    assert recall_enc.observation.segments["dealt_hand"].start == size
    length, public = max_decisions(recall), public_moves(recall)
    assert recall_enc.observation.size == size + 8 + 4 + length * (4 + public + 8)


@pytest.mark.parametrize("value", [1, "yes", None])
def test_recall_must_be_a_bool(value):
    with pytest.raises(ValueError, match=f"recall={value!r} is not allowed; expected True or False"):
        GameConfig(recall=value)


@pytest.mark.parametrize("preset", ["mini", "mini-3p"])
def test_the_recall_observation_is_the_information_state(preset):
    """On the whole tree: one observation per information set, and one information set per (seat, observation)."""
    tree = build_tree(GameConfig.from_options(preset, recall=True))
    decision = tree.infoset >= 0
    observations_of = defaultdict(set)
    infosets_of = defaultdict(set)
    for infoset, row, seat in zip(tree.infoset[decision], tree.observation[decision], tree.player[decision]):
        observations_of[infoset].add(row)
        infosets_of[(seat, row)].add(infoset)
    assert max(map(len, observations_of.values())) == 1
    assert max(map(len, infosets_of.values())) == 1
    plain = build_tree(GameConfig.from_options(preset))
    assert len(tree.observations) > len(plain.observations)  # the plain observation aliases information states


@pytest.mark.parametrize(
    "preset, num_players", [("classic", 4), ("creature-to-start", 3), ("royal", 2), ("royal", 5), ("mini-3p", None)]
)
def test_every_decision_fills_its_slot(preset, num_players):
    options = {"recall": True} | ({"num_players": num_players} if num_players else {})
    config = GameConfig.from_options(preset, **options)
    enc = encoding_for(config)
    rng = np.random.default_rng(7)
    for game_index in range(3):
        env = raw_env(config=config)
        env.reset(seed=game_index)
        game = env.game
        expected = []
        while not game.over:
            seat = game.current
            action = int(rng.choice(legal_actions(env)))
            revealed = game.chain.card if enc.decoded_actions[action][0] == "call" else -1
            env.step(action)
            top = game.penalty_deck[0] if enc.royal and game.penalty_deck else -1
            expected.append((seat, enc.public_move(action), revealed, top))
            assert recall_moves(enc, game) == expected
            for viewer in range(config.num_players):
                obs = env.observe(f"player_{viewer}")["observation"]
                seg = enc.observation.unpack(obs)
                assert seg["dealt_hand"].tolist() == list(game.dealt_hands[viewer])
                assert np.flatnonzero(seg["starter"]).tolist() == [(game.starter - viewer) % config.num_players]
                filled = np.flatnonzero(seg["move_actor"].any(axis=1))
                assert filled.tolist() == list(range(len(expected)))
                actors = np.argmax(seg["move_actor"][filled], axis=1)
                assert actors.tolist() == [(s - viewer) % config.num_players for s, *_ in expected]
                assert np.argmax(seg["move_public"][filled], axis=1).tolist() == [m for _, m, _, _ in expected]
        assert len(expected) == game.steps <= max_decisions(config)
        decoded = decode_observation(env.observe("player_0")["observation"], config)
        assert decoded["dealt_hand"] == {config.cards.identities[c]: k for c, k in enumerate(game.dealt_hands[0]) if k}
        assert len(decoded["moves"]) == len(expected)
        first = decoded["moves"][0]
        assert first["actor"] == game.starter % config.num_players and first["move"]["kind"] == "offer"
        calls = [(m["move"]["kind"], m["revealed"]) for m in decoded["moves"] if m["move"]["kind"].startswith("call")]
        assert calls and all(card is not None for _, card in calls)


def test_an_explicit_deal_with_more_cards_in_hand_than_the_recall_slots_allow_is_refused():
    """``max_decisions`` bounds games of the rule set's own deal; an explicit deal may hold more cards in hand."""
    every_card = {"cockroach": 4, "bat": 4, "fly": 4, "toad": 4, "rat": 4, "scorpion": 4, "spider": 4, "stink_bug": 4}
    deal = {
        "starter": "player_0",
        "hands": {"player_0": every_card, "player_1": every_card},
    }  # 64 cards where a duel deals 54
    env = raw_env(preset="duel", recall=True)
    with pytest.raises(ValueError, match="64 cards in hands.*54.*recall"):
        env.reset(options=deal)
    # such a game fits the slots when max_steps cuts it short, and always without recall
    for options in ({"recall": True, "max_steps": max_decisions(GameConfig.from_options("duel", recall=True))}, {}):
        env = raw_env(preset="duel", **options)
        env.reset(options=deal)
        while not env.game.over and not any(
            env.truncations.values()
        ):  # every card given away on a wrong call: 128 decisions, no loss until a hand is empty
            if env.game.chain:
                env.step(env.encoding.respond_start + 1)
            else:
                card = next(c for c, k in enumerate(env.game.hands[env.game.current]) if k)
                env.step(env.encoding.offer_action(card, 1, card))
            env.observe("player_0")
        assert env.game.steps == (128 if not options else max_decisions(env.config))


def test_an_agent_without_recall_plays_the_same_rules_with_recall_and_is_just_as_exploitable():
    """``load_agent(name, config=rules with recall)`` reads the observation's prefix: same policy, same exact
    NashConv.
    """
    from baselines.agent import RecallPrefixAgent
    from training import load_agent
    from training.evaluation.exact import evaluate, game_tree

    plain, recall = GameConfig.from_options("mini"), GameConfig.from_options("mini", recall=True)
    wrapped = load_agent("mini", config=recall)
    assert isinstance(wrapped, RecallPrefixAgent) and wrapped.config == recall
    assert evaluate(wrapped, recall, game_tree(recall)).nash_conv == pytest.approx(
        evaluate(load_agent("mini"), plain, game_tree(plain)).nash_conv, abs=1e-9
    )
    with pytest.raises(ValueError, match="trained for"):
        load_agent("mini", config=GameConfig.from_options("mini", recall=True, discard=1))


def test_the_shipped_recall_agent_meets_its_table_and_shares_it_with_an_agent_without_recall():
    """``mini-recall`` (CFR on the recall observation): exact NashConv under the 0.02 target; it plays ``mini`` at one
    table.
    """
    from training import load_agent
    from training.core.checkpoint import read_metadata
    from training.evaluation.arena import play_match
    from training.evaluation.exact import evaluate, game_tree

    recall = GameConfig.from_options("mini", recall=True)
    agent = load_agent("mini-recall", seed=0)
    assert agent.config == recall
    nash_conv = evaluate(agent, recall, game_tree(recall)).nash_conv
    assert nash_conv <= 0.02
    # the recorded figure is the network's own; float32 forward passes differ in the last bits between CPU kernels and
    # builds
    assert nash_conv == pytest.approx(read_metadata("mini-recall")["exact"]["nash_conv"], rel=1e-4)
    result = play_match(["mini-recall", "mini"], recall, games=200, seed=1)
    assert sum(result.report(name).games for name in ("mini-recall", "mini")) == 400


def test_openspiel_observation_tensor_is_the_recall_observation():
    """The OpenSpiel parameter ``recall``: ``observation_tensor`` is the AEC env's recall observation, step by step
    from the same deal.
    """
    pyspiel = pytest.importorskip("pyspiel")
    import cockroach_env.openspiel as cos
    from cockroach_env.record import deal_of, env_from_deal

    config = GameConfig.from_options("mini-3p", recall=True)
    game = pyspiel.load_game(cos.SHORT_NAME, {"preset": "mini-3p", "recall": True})
    assert game.observation_tensor_size() == encoding_for(config).observation.size
    rng = np.random.default_rng(5)
    for _ in range(5):
        state = game.new_initial_state()
        while state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        probe = raw_env(config=config)
        probe.game = state.p.game.copy()  # only to name the deal
        env = env_from_deal(config, deal_of(probe))
        while not state.is_terminal():
            seat = state.current_player()
            assert env.agent_selection == f"player_{seat}"
            np.testing.assert_array_equal(
                np.asarray(state.observation_tensor(seat), np.float32), env.observe(f"player_{seat}")["observation"]
            )
            action = int(rng.choice(state.legal_actions()))
            state.apply_action(action)
            env.step(action)
