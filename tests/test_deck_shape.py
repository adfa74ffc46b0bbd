"""Deck shape (``num_types`` x ``copies_per_type``) and the ``mini`` presets, everywhere a config goes."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest
from pettingzoo.test import api_test

import baselines
from cockroach_env import CARD_TYPES, GameConfig, decode_observation, encoding_for, env, raw_env
from cockroach_env.engine import LOSS_REASONS, Game, deal_distribution, random_deal

from .test_batched import BACKENDS, differential

MINI = ("mini", "mini-3p")


def test_defaults_are_the_printed_deck():
    config = GameConfig()
    assert config.deck_shape == (8, 8) and config.cards.deck_size == 64
    assert config.cards.identities == CARD_TYPES


@pytest.mark.parametrize("num_types, copies", [(2, 2), (3, 2), (5, 4), (8, 3)])
def test_a_smaller_deck_is_the_first_types_of_the_canonical_order(num_types, copies):
    config = GameConfig(num_players=3, num_types=num_types, copies_per_type=copies, loss_count=2)
    cards = config.cards
    assert cards.identities == cards.claims == CARD_TYPES[:num_types]
    assert cards.copies == (copies,) * num_types
    enc = encoding_for(config)
    assert enc.num_cards == enc.num_claims == num_types
    assert enc.num_actions == num_types * 2 * num_types + 3 + 2 * num_types


def test_defaults_that_depend_on_the_deck():
    # the 10 removed cards of the duel belong to the printed deck; a smaller deck removes none by default
    assert GameConfig(num_players=2).discard == 10
    assert GameConfig(num_players=2, num_types=4).discard == 0
    # the default loss count never exceeds the copies of a type
    assert GameConfig(num_players=2, num_types=3, copies_per_type=3).loss_count == 3
    assert GameConfig(num_players=4, copies_per_type=6).loss_count == 4


@pytest.mark.parametrize(
    "options, name, value",
    [
        ({"num_types": 1}, "num_types", "1"),
        ({"num_types": 9}, "num_types", "9"),
        ({"num_types": 3.0}, "num_types", "3.0"),
        ({"copies_per_type": 0}, "copies_per_type", "0"),
        ({"copies_per_type": 1}, "copies_per_type", "1"),  # no loss_count (2 or more) fits one copy
        ({"copies_per_type": 9}, "copies_per_type", "9"),
        ({"copies_per_type": "2"}, "copies_per_type", "'2'"),
        ({"copies_per_type": 3, "loss_count": 4}, "loss_count", "4"),
        ({"copies_per_type": 1, "loss_count": 2}, "loss_count", "2"),
        ({"edition": "royal", "num_types": 4}, "num_types", "4"),
        ({"num_players": 6, "num_types": 2, "copies_per_type": 2}, "discard", "0"),
    ],
)
def test_bad_deck_shapes_are_refused_naming_the_value(options, name, value):
    with pytest.raises(ValueError) as refused:
        raw_env(**options)
    assert name in str(refused.value) and value in str(refused.value)


@pytest.mark.parametrize("preset, players, cards, dealt", [("mini", 2, 6, 4), ("mini-3p", 3, 4, 3)])
def test_mini_presets(preset, players, cards, dealt):
    config = GameConfig.from_options(preset=preset)
    assert config.num_players == players and config.cards.deck_size == cards
    deal = random_deal(config, np.random.default_rng(0))
    assert sum(map(sum, deal.hands)) == dealt and sum(deal.removed) == cards - dealt
    # presets combine and explicit options override them
    assert GameConfig.from_options(preset="mini+rainbow").rainbow_loses
    assert GameConfig.from_options(preset="mini", discard=0).discard == 0


@pytest.mark.parametrize("preset", MINI)
def test_pettingzoo_api_test_on_the_mini_presets(preset):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(env(preset=preset), num_cycles=200)


@pytest.mark.parametrize("preset", MINI + ("mini+rainbow",))
def test_baselines_play_whole_games_and_observations_decode(preset):
    config = GameConfig.from_options(preset=preset)
    agents = [baselines.make(name, config, seed=k) for k, name in enumerate(baselines.names())]
    e = raw_env(config=config)
    losses = Counter()
    for game in range(40):
        e.reset(seed=game)
        for k, _name in enumerate(e.agent_iter()):
            obs, _, terminated, truncated, info = e.last()
            if terminated or truncated:
                e.step(None)
                continue
            decoded = decode_observation(obs["observation"], config)
            assert sum(decoded["own_hand"].values()) == decoded["hand_sizes"][0]
            assert set(decoded["own_hand"]) <= set(config.cards.identities)
            e.step(agents[(game + k) % len(agents)].act(obs))
        losses[LOSS_REASONS[info["loss_reason"]]] += 1  # info holds numbers: an index into LOSS_REASONS
    assert losses["same_type"] > 0


@pytest.mark.parametrize("preset", MINI + ("mini+creature-to-start",))
def test_deal_distribution_is_exact_and_matches_random_deal(preset):
    config = (
        GameConfig.from_options(preset=preset)
        if "creature" not in preset
        else GameConfig.from_options(preset="mini", opening_cards=1, discard=0)
    )
    deals = deal_distribution(config)
    assert sum(p for p, _ in deals) == pytest.approx(1.0, abs=1e-12)

    def key(d):
        return d.starter, tuple(map(tuple, d.hands)), tuple(map(tuple, d.collections)), tuple(d.removed)

    assert len({key(d) for _, d in deals}) == len(deals)
    expected = {key(d): p for p, d in deals}
    rng = np.random.default_rng(1)
    draws = 20000
    counts = Counter(key(random_deal(config, rng)) for _ in range(draws))
    assert set(counts) <= set(expected)
    for k, p in expected.items():  # within 5 binomial standard deviations
        assert abs(counts[k] / draws - p) <= 5 * np.sqrt(p * (1 - p) / draws) + 1e-9, k
    for _, deal in deals:
        Game(config, deal)  # every deal is a legal start


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "options",
    [
        {"preset": "mini"},
        {"preset": "mini-3p"},
        {"preset": "mini+rainbow"},
        {"num_players": 4, "num_types": 5, "copies_per_type": 4, "loss_count": 3},
        {"num_players": 3, "num_types": 3, "copies_per_type": 3, "opening_cards": 1, "loss_count": 3},
    ],
    ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()),
)
def test_batched_engine_plays_like_the_engine_on_smaller_decks(options, backend):
    config = GameConfig.from_options(**options)
    seen = differential(config, backend, batch_size=8, finished_games=40, seed=3)
    assert seen["games"] >= 40 and seen["same_type"] > 0


@pytest.mark.parametrize("engine", ["aec", "batched"])
@pytest.mark.parametrize(
    "preset, lineup", [("mini", ["heuristic", "random"]), ("mini-3p", ["heuristic", "bluffer", "random"])]
)
def test_arena_plays_the_mini_presets(preset, lineup, engine, tmp_path):
    import json

    from training.cli.eval import main

    out = tmp_path / "result.json"
    assert main([*lineup, "--preset", preset, "--games", "120", "--engine", engine, "--quiet", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["config"] == GameConfig.from_options(preset=preset).to_dict()
