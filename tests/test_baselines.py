"""Baselines: the agent protocol, legality on every rule set, batch = one by one, and the heuristic's judgement."""

from __future__ import annotations

import re

import numpy as np
import pytest

import baselines
from baselines.agent import Agent, AgentProtocol, pick_uniform
from baselines.counting import claim_posterior, read_table, rules_for
from cockroach_env import GameConfig, Move, raw_env
from training.evaluation.arena import play_match

BASELINES = ("random", "honest", "bluffer", "heuristic", "counter")

RULE_SETS = [
    pytest.param(dict(num_players=4), id="classic-4p"),
    pytest.param(dict(num_players=2), id="duel"),
    pytest.param(dict(num_players=3, rainbow_loses=True), id="rainbow-3p"),
    pytest.param(dict(num_players=6, loss_count=3), id="three-of-a-kind-6p"),
    pytest.param(dict(num_players=5, opening_cards=1, discard=4), id="creature-to-start+even-deal-5p"),
    pytest.param(dict(num_players=4, edition="royal"), id="royal-4p"),
    pytest.param(dict(num_players=2, edition="royal"), id="royal-2p"),
    pytest.param(
        dict(
            num_players=3, edition="royal", blank_counts_as_royal=True, royal_counts_as_animal=False, rainbow_loses=True
        ),
        id="royal-flags-3p",
    ),
    pytest.param(dict(num_players=6, edition="royal"), id="royal-6p"),
]


def random_positions(config: GameConfig, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of the player to act, from random games (every phase appears)."""
    env = raw_env(config=config)
    rng = np.random.default_rng(seed)
    observations, masks = [], []
    game = 0
    while len(observations) < count:
        env.reset(seed=seed * 1000 + game)
        game += 1
        while not env.game.over:
            obs = env.observe(env.agent_selection)
            observations.append(obs["observation"])
            masks.append(obs["action_mask"])
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return np.array(observations[:count]), np.array(masks[:count])


# ---------------------------------------------------------------------------- protocol and registry
def test_make_builds_every_baseline_with_its_protocol():
    config = GameConfig()
    assert baselines.names() == sorted(BASELINES)
    for name in BASELINES:
        agent = baselines.make(name, config, seed=0)
        assert isinstance(agent, Agent) and isinstance(agent, AgentProtocol)
        assert agent.name == name and agent.config == config
        assert agent.supports_batch


def test_make_refuses_an_unknown_name():
    with pytest.raises(ValueError, match=r"unknown baseline 'hero'.*heuristic"):
        baselines.make("hero", GameConfig())


def test_a_user_agent_in_a_few_lines_plays_in_the_arena():
    class FirstLegal(Agent):
        name = "first-legal"

        def act(self, observation):
            return int(np.flatnonzero(observation["action_mask"])[0])

    config = GameConfig(num_players=3)
    agent = FirstLegal(config, seed=0)
    assert not agent.supports_batch
    result = play_match([agent, "random", "random"], config, games=3, seed=1)
    assert result.engine == "aec" and result.report("first-legal").games == 3


def test_pick_uniform_is_uniform_over_allowed_entries():
    allowed = np.array([[0, 1, 0, 1, 1], [0, 0, 0, 0, 0]], dtype=bool)
    u = np.array([0.0, 0.5])
    assert pick_uniform(allowed, u).tolist() == [1, -1]
    picks = pick_uniform(np.repeat(allowed[:1], 3000, 0), np.random.default_rng(0).random(3000))
    counts = np.bincount(picks, minlength=5)
    assert counts[[0, 2]].sum() == 0 and counts[[1, 3, 4]].min() > 900


# ---------------------------------------------------------------------------- legality and determinism
@pytest.mark.parametrize("options", RULE_SETS)
def test_baselines_always_play_legal_moves(options):
    """The arena raises on any illegal action, so finishing mixed random games is the check."""
    config = GameConfig(**options)
    lineup = [BASELINES[k % len(BASELINES)] for k in range(config.num_players)]
    result = play_match(lineup, config, games=config.num_players, seed=3, engine="aec")
    assert result.games == config.num_players


@pytest.mark.parametrize("options", RULE_SETS)
@pytest.mark.parametrize("name", BASELINES)
def test_act_batch_plays_exactly_like_act_row_by_row(options, name):
    config = GameConfig(**options)
    observations, masks = random_positions(config, 60, seed=1)
    batched = baselines.make(name, config, seed=7).act_batch(observations, masks)
    single = baselines.make(name, config, seed=7)
    one_by_one = [single.act({"observation": o, "action_mask": m}) for o, m in zip(observations, masks)]
    assert batched.dtype == np.int64 and batched.tolist() == one_by_one
    assert masks[np.arange(len(masks)), batched].all()


@pytest.mark.slow
@pytest.mark.parametrize("options", RULE_SETS)
def test_baselines_stay_legal_over_many_batched_games(options):
    config = GameConfig(**options)
    lineup = [BASELINES[(k + 1) % len(BASELINES)] for k in range(config.num_players)]
    result = play_match(lineup, config, games=60 * config.num_players, seed=5)
    assert result.games == 60 * config.num_players


def test_agents_are_reproducible_from_their_seed():
    config = GameConfig()
    observations, masks = random_positions(config, 40)
    for name in BASELINES:
        first = baselines.make(name, config, seed=5).act_batch(observations, masks)
        again = baselines.make(name, config, seed=5).act_batch(observations, masks)
        assert first.tolist() == again.tolist()


@pytest.mark.parametrize("seed", [-1, "x", 1.5, True, [1, 2]])
def test_a_bad_seed_is_named(seed):
    """Reproducible from the seed: what is not one is refused by name (True was taken as seed 1, the rest gave numpy's
    messages).
    """
    for name in BASELINES:
        with pytest.raises(
            ValueError, match=rf"seed={re.escape(repr(seed))} is not allowed; expected None or a non-negative integer"
        ):
            baselines.make(name, GameConfig(), seed=seed)


# ---------------------------------------------------------------------------- card counting
def test_a_claim_of_a_type_with_no_card_left_unseen_is_certainly_false():
    config = GameConfig()
    rules = rules_for(config)
    pool = np.ones((1, 8))
    pool[0, 2] = 0  # every fly is visible to the observer
    p_true, if_true, if_false = claim_posterior(rules, pool, np.array([2]), np.array([0.9]))
    assert p_true[0] == 0.0 and if_false[0, 2] == 0.0


def test_revealed_honesty_moves_the_belief_in_a_claim():
    rules = rules_for(GameConfig())
    pool = np.full((2, 8), 5.0)
    p_true, _, _ = claim_posterior(rules, pool, np.array([1, 1]), np.array([0.9, 0.1]))
    assert p_true.tolist() == pytest.approx([0.9, 0.1])  # an even pool: the claim is as true as its claimant
    pool[:, 1] = 1.0  # the observer sees most bats: a bat claim is less likely true
    scarce, _, _ = claim_posterior(rules, pool, np.array([1, 1]), np.array([0.9, 0.1]))
    assert (scarce < p_true).all() and scarce[1] < 0.03


def test_royal_truth_table_drives_the_posterior():
    config = GameConfig(edition="royal")
    rules = rules_for(config)
    cards = config.cards
    pool = np.zeros((1, len(cards.identities)))
    pool[0, cards.index("royal_bat")] = 1
    pool[0, cards.index("rat")] = 1
    # a 'royal' claim is true only of the royal bat; a truthful claimant claiming 'royal' holds it
    p_true, if_true, _ = claim_posterior(rules, pool, np.array([cards.claim_index("royal")]), np.array([0.5]))
    assert 0 < p_true[0] < 1 and if_true[0, cards.index("royal_bat")] == pytest.approx(1.0)


def test_the_observer_counts_its_hand_collections_and_the_seen_card():
    env = raw_env(num_players=3)
    env.reset(
        options={
            "starter": "player_0",
            "hands": {"player_0": {"bat": 2, "fly": 1}, "player_1": {"rat": 3}, "player_2": {"toad": 3}},
            "collections": {"player_1": {"bat": 1}},
        }
    )
    env.step(env.unwrapped.encode(Move("offer", card="fly", target="player_1", claim="bat")))
    table = read_table(rules_for(env.config), env.observe("player_0")["observation"][None])
    cards = env.config.cards
    assert table.card[0] == cards.index("fly")
    assert table.unseen[0, cards.index("bat")] == 8 - 2 - 1
    assert table.unseen[0, cards.index("fly")] == 8 - 1
    holder_view = read_table(rules_for(env.config), env.observe("player_1")["observation"][None])
    assert holder_view.card[0] == -1 and holder_view.claim[0] == cards.claim_index("bat")


# ---------------------------------------------------------------------------- heuristic judgement
def heuristic_move(env, seed: int = 0) -> Move:
    agent = baselines.make("heuristic", env.config, seed=seed)
    return env.unwrapped.decode(agent.act(env.observe(env.agent_selection)))


def test_heuristic_offers_the_card_that_completes_the_most_vulnerable_set():
    for seed in range(5):
        env = raw_env(num_players=4)
        env.reset(
            options={
                "starter": "player_0",
                "hands": {
                    "player_0": {"bat": 1, "fly": 2, "rat": 2},
                    "player_1": {"toad": 5},
                    "player_2": {"toad": 2, "spider": 3},
                    "player_3": {"scorpion": 5},
                },
                "collections": {"player_2": {"bat": 3}, "player_1": {"cockroach": 1}},
            }
        )
        move = heuristic_move(env, seed)
        assert (move.kind, move.card, move.target) == ("offer", "bat", "player_2")


def test_heuristic_calls_an_impossible_claim_false():
    env = raw_env(num_players=3)
    env.reset(
        options={
            "starter": "player_1",
            "hands": {"player_0": {"fly": 3, "rat": 2}, "player_1": {"bat": 2, "toad": 2}, "player_2": {"toad": 3}},
            "collections": {"player_1": {"fly": 2}, "player_2": {"fly": 3}},
        }
    )
    env.step(env.unwrapped.encode(Move("offer", card="bat", target="player_0", claim="fly")))
    assert heuristic_move(env) == Move("call", believe=False)


def test_heuristic_does_not_doubt_a_claim_that_would_complete_its_own_set():
    """Doubting a true 'bat' with three bats in its collection loses at once; it believes or peeks instead."""
    losses = 0
    for seed in range(6):
        env = raw_env(num_players=4)
        env.reset(
            options={
                "starter": "player_1",
                "hands": {
                    "player_0": {"rat": 3},
                    "player_1": {"bat": 3, "spider": 2},
                    "player_2": {"toad": 3},
                    "player_3": {"scorpion": 3},
                },
                "collections": {"player_0": {"bat": 3}},
            },
            seed=seed,
        )
        env.step(env.unwrapped.encode(Move("offer", card="bat", target="player_0", claim="bat")))
        move = heuristic_move(env, seed)
        losses += move == Move("call", believe=False)
    assert losses == 0


def test_heuristic_places_the_least_dangerous_royal_replacement():
    config = GameConfig(num_players=3, edition="royal")
    env = raw_env(config=config)
    env.reset(
        options={
            "starter": "player_1",
            "hands": {
                "player_0": {"rat": 1, "bat": 1, "fly": 1},
                "player_1": {"joker": 1, "toad": 2},
                "player_2": {"scorpion": 3},
            },
            "collections": {"player_0": {"rat": 3, "bat": 1}},
            "penalty_deck": ["cockroach", "toad", "fly"],
        }
    )
    env.step(env.unwrapped.encode(Move("offer", card="joker", target="player_0", claim="bat")))
    env.step(env.unwrapped.encode(Move("call", believe=False)))  # wrong: the joker is true for every animal
    assert env.game.phase.value == "place" and env.agent_selection == "player_0"
    move = heuristic_move(env)
    assert move == Move("place", card="bat")  # the only card fitting the claim 'bat'
    # with no fitting card the replacement is free: never the rat that completes the set
    env = raw_env(config=config)
    env.reset(
        options={
            "starter": "player_1",
            "hands": {
                "player_0": {"rat": 1, "fly": 1},
                "player_1": {"joker": 1, "toad": 2},
                "player_2": {"scorpion": 3},
            },
            "collections": {"player_0": {"rat": 3}},
            "penalty_deck": ["cockroach", "toad", "fly"],
        }
    )
    env.step(env.unwrapped.encode(Move("offer", card="joker", target="player_0", claim="stink_bug")))
    env.step(env.unwrapped.encode(Move("call", believe=False)))
    assert heuristic_move(env) == Move("place", card="fly")


def test_heuristic_beats_random_with_separated_intervals():
    result = play_match(["heuristic", "random*3"], GameConfig(num_players=4), games=200, seed=11)
    hero, rest = result.report("heuristic"), result.report("random")
    assert hero.loss_rate_ci95[1] < rest.loss_rate_ci95[0]
    assert hero.loss_rate_ci95[1] < 0.25


def test_heuristic_mixes_true_and_false_claims():
    result = play_match(["heuristic", "heuristic", "honest", "bluffer"], GameConfig(num_players=4), games=40, seed=2)
    rate = result.report("heuristic").behaviour["false_offer_rate"]
    assert 0.2 < rate < 0.8


def test_a_registered_baseline_can_be_removed_again_but_a_built_in_one_cannot():
    import baselines
    from baselines.scripted import RandomAgent

    baselines.register("mine", RandomAgent)
    assert "mine" in baselines.names()
    baselines.unregister("mine")
    assert "mine" not in baselines.names()
    for name, expected in (("mine", "unknown baseline 'mine'"), ("heuristic", "built in")):
        with pytest.raises(ValueError, match=expected):
            baselines.unregister(name)
    assert "heuristic" in baselines.names()


def test_the_compiled_uniform_pick_draws_exactly_what_the_numpy_reference_draws():
    from baselines import agent as agent_module

    rng = np.random.default_rng(3)
    for width in (1, 7, 64, 196):
        allowed = rng.random((500, width)) < rng.choice([0.02, 0.3, 0.9], size=(500, 1))
        allowed[:5] = False  # rows with no allowed entry
        allowed[5:10] = True
        u = rng.random(500)
        u[10:20] = np.nextafter(1.0, 0.0)  # the largest uniform: the last allowed entry
        u[20:30] = 0.0
        expected = agent_module._pick_uniform_numpy(allowed, u)
        assert pick_uniform(allowed, u).tolist() == expected.tolist()
        assert (
            pick_uniform(allowed, u.astype(np.float32)).tolist()
            == agent_module._pick_uniform_numpy(allowed, u.astype(np.float32)).tolist()
        )


# ---------------------------------------------------------------------------- counter: a style kept out of training
def test_counter_reads_no_player_and_weighs_danger_otherwise_than_heuristic():
    """``counter`` judges a claim by card counting alone (revealed honesty does not move it) under another danger model:
    on played positions its odds differ from ``heuristic``'s, and its compiled and numpy versions agree.
    """
    from baselines.counter import COUNTER_PARAMS, CounterAgent
    from baselines.counting import honesty

    config = GameConfig()
    observations, masks = random_positions(config, 600, seed=4)
    counter, heuristic = baselines.make("counter", config, seed=1), baselines.make("heuristic", config, seed=1)
    odds = counter.action_probabilities_batch(observations, masks)
    assert np.allclose(odds.sum(1), 1.0) and not (odds[masks == 0] > 0).any()
    assert np.abs(odds - heuristic.action_probabilities_batch(observations, masks)).max() > 0.5
    reference = CounterAgent(config, seed=1, backend="numpy").action_probabilities_batch(observations, masks)
    assert np.abs(reference - odds).max() <= 1e-6
    table = read_table(rules_for(config), observations)  # the history counters of played games
    revealed = honesty(table.history, COUNTER_PARAMS.honesty_prior, COUNTER_PARAMS.honesty_strength)
    assert np.abs(revealed - COUNTER_PARAMS.honesty_prior).max() < 1e-6
    assert np.abs(honesty(table.history, 0.5, 2.0) - 0.5).max() > 0.1  # heuristic's own prior does move


def test_no_training_table_seats_counter():
    """Every config (and every shipped agent's recorded training config) leaves ``counter`` out of its tables and its
    warm start, so it stays a style the agents never trained with (evaluations may name it).
    """
    import json
    from pathlib import Path

    yaml = pytest.importorskip("yaml")
    root = Path(__file__).resolve().parents[1]
    configs = [yaml.safe_load(p.read_text()) or {} for p in sorted((root / "configs").rglob("*.yaml"))]
    shipped = sorted((root / "training" / "agents").glob("*.json"))
    configs += [json.loads(p.read_text()).get("training_config") or {} for p in shipped]
    assert len(configs) > 20
    for data in configs:
        opponents, warm = data.get("opponents") or {}, data.get("warm_start") or {}
        seated = "counter" in (opponents.get("baselines") or {}) or warm.get("teacher") == "counter"
        assert not seated, data.get("name")
