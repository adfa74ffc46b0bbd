"""Rule options: defaults by player count, presets, overrides, and refusals that name the value."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from cockroach_env import PRESETS, GameConfig, env, raw_env


@pytest.mark.parametrize(
    "num_players, discard, loss_count",
    [(2, 10, 5), (3, 0, 4), (4, 0, 4), (5, 0, 4), (6, 0, 4)],
)
def test_discard_and_loss_count_defaults_depend_on_player_count(num_players, discard, loss_count):
    config = GameConfig(num_players=num_players)
    assert (config.discard, config.loss_count) == (discard, loss_count)
    assert raw_env(num_players=num_players).config == config


@pytest.mark.parametrize(
    "preset, options, expected",
    [
        ("even-deal", {"num_players": 2}, {"discard": 4, "loss_count": 5}),
        ("even-deal", {"num_players": 4}, {"discard": 4, "loss_count": 4}),
        ("three-of-a-kind", {"num_players": 3}, {"discard": 0, "loss_count": 3}),
        ("duel", {}, {"num_players": 2, "discard": 10, "loss_count": 5}),
        ("rainbow", {"num_players": 5}, {"rainbow_loses": True, "loss_count": 4}),
        ("creature-to-start", {"num_players": 6}, {"opening_cards": 1}),
        ("royal", {"num_players": 2}, {"edition": "royal", "discard": 0, "loss_count": 5}),
        ("royal", {"num_players": 4}, {"edition": "royal", "discard": 0, "loss_count": 4}),
        # explicit options override presets
        ("even-deal", {"num_players": 3, "discard": 6}, {"discard": 6}),
        ("three-of-a-kind", {"num_players": 4, "loss_count": 5}, {"loss_count": 5}),
        ("duel", {"discard": 0}, {"num_players": 2, "discard": 0, "loss_count": 5}),
        # combined presets
        ("rainbow+even-deal", {"num_players": 4}, {"rainbow_loses": True, "discard": 4}),
        ("three-of-a-kind+creature-to-start", {"num_players": 3}, {"loss_count": 3, "opening_cards": 1}),
    ],
)
def test_presets_and_explicit_overrides(preset, options, expected):
    config = GameConfig.from_options(preset=preset, **options)
    for name, value in expected.items():
        assert getattr(config, name) == value, name
    assert raw_env(preset=preset, **options).config == config
    assert env(preset=preset, **options).unwrapped.config == config


def test_preset_list_equals_plus_string():
    assert GameConfig.from_options(preset=["rainbow", "even-deal"]) == GameConfig.from_options(
        preset="rainbow+even-deal"
    )


DOCUMENTED_PRESETS = {
    # name: (player counts, the options it sets), as docs/rules.md's table and the PRESETS docstring give them
    "classic": (range(2, 7), {}),
    "duel": ([2], {"num_players": 2}),
    "even-deal": (range(2, 7), {"discard": 4}),
    "rainbow": (range(2, 7), {"rainbow_loses": True}),
    "three-of-a-kind": (range(3, 7), {"loss_count": 3}),
    "creature-to-start": (range(2, 7), {"opening_cards": 1}),
    "royal": (range(2, 7), {"edition": "royal", "discard": 0}),  # (10 removed: the printed classic deck only)
    "mini": ([2], {"num_players": 2, "num_types": 3, "copies_per_type": 2, "discard": 2, "loss_count": 2}),
    "mini-3p": ([3], {"num_players": 3, "num_types": 2, "copies_per_type": 2, "discard": 1, "loss_count": 2}),
}


def _documented_defaults(num_players: int) -> dict:
    """Every field of a config without options (rules sections 1-2: 10 removed and 5 of a kind with two players)."""
    return {
        "num_players": num_players,
        "edition": "classic",
        "discard": 10 if num_players == 2 else 0,
        "loss_count": 5 if num_players == 2 else 4,
        "rainbow_loses": False,
        "opening_cards": 0,
        "starter": None,
        "blank_counts_as_royal": False,
        "royal_counts_as_animal": True,
        "max_steps": None,
        "num_types": 8,
        "copies_per_type": 8,
        "recall": False,
        "history": 0,
    }


@pytest.mark.parametrize("name", sorted(DOCUMENTED_PRESETS))
def test_every_preset_sets_the_documented_fields_for_each_of_its_player_counts(name):
    assert set(PRESETS) == set(DOCUMENTED_PRESETS)  # a new preset needs its documented values here
    counts, options = DOCUMENTED_PRESETS[name]
    for n in counts:
        config = GameConfig.from_options(preset=name, num_players=n)
        assert {f.name for f in dataclasses.fields(config)} == set(_documented_defaults(n))
        assert dataclasses.asdict(config) == {**_documented_defaults(n), **options}, (name, n)


def test_config_object_and_keyword_options_build_the_same_env():
    config = GameConfig(num_players=5, rainbow_loses=True, opening_cards=1)
    by_object = raw_env(config=config)
    by_keywords = raw_env(num_players=5, rainbow_loses=True, opening_cards=1)
    assert by_object.config == by_keywords.config
    assert by_object.observation_space("player_0") == by_keywords.observation_space("player_0")
    assert by_object.action_space("player_0") == by_keywords.action_space("player_0")


def test_options_on_top_of_a_config_keep_its_explicit_values():
    base = GameConfig(num_players=3, loss_count=3)
    assert raw_env(config=base, rainbow_loses=True).config == GameConfig(
        num_players=3, loss_count=3, rainbow_loses=True
    )
    # values that were only defaults follow a changed player count
    assert raw_env(config=GameConfig(num_players=4), num_players=2).config == GameConfig(num_players=2)


def test_preset_on_top_of_a_config_is_applied():
    config = raw_env(config=GameConfig(num_players=3), preset="royal").config
    assert config.edition == "royal" and config.num_players == 3
    config = raw_env(config=GameConfig(num_players=5, opening_cards=1), preset="rainbow").config
    assert config.rainbow_loses and config.opening_cards == 1 and config.num_players == 5


def test_config_is_frozen_hashable_and_round_trips_through_a_dict():
    config = GameConfig(num_players=3, rainbow_loses=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.num_players = 4  # type: ignore[misc]
    assert hash(config) == hash(GameConfig(num_players=3, rainbow_loses=True))
    assert GameConfig(**config.to_dict()) == config


def test_numpy_integer_options_are_stored_as_python_integers():
    # options often come out of numpy arrays; the config (and so every game record and checkpoint) must stay JSON
    config = GameConfig(
        num_players=np.int64(3),
        discard=np.int32(1),
        loss_count=np.int64(3),
        starter=np.int64(2),
        max_steps=np.uint16(500),
        num_types=np.int8(7),
        copies_per_type=np.int64(6),
    )
    assert all(
        type(value) is int
        for value in (
            config.num_players,
            config.discard,
            config.loss_count,
            config.starter,
            config.max_steps,
            config.num_types,
            config.copies_per_type,
        )
    )
    assert (
        json.loads(json.dumps(config.to_dict()))
        == GameConfig(
            num_players=3, discard=1, loss_count=3, starter=2, max_steps=500, num_types=7, copies_per_type=6
        ).to_dict()
    )


@pytest.mark.parametrize(
    "options, name, value",
    [
        ({"num_players": 7}, "num_players", "7"),
        ({"num_players": 1}, "num_players", "1"),
        ({"num_players": "4"}, "num_players", "'4'"),
        ({"num_players": 4.0}, "num_players", "4.0"),
        ({"edition": "deluxe"}, "edition", "'deluxe'"),
        ({"discard": -1}, "discard", "-1"),
        ({"discard": 61}, "discard", "61"),
        ({"loss_count": 1}, "loss_count", "1"),
        ({"loss_count": 9}, "loss_count", "9"),
        ({"loss_count": True}, "loss_count", "True"),
        ({"rainbow_loses": "yes"}, "rainbow_loses", "'yes'"),
        ({"opening_cards": 2}, "opening_cards", "2"),
        ({"starter": 4}, "starter", "4"),
        ({"starter": -1}, "starter", "-1"),
        ({"starter": "player_0"}, "starter", "'player_0'"),
        ({"max_steps": 0}, "max_steps", "0"),
        ({"edition": "royal", "discard": 3}, "discard", "3"),
        ({"edition": "royal", "opening_cards": 1}, "opening_cards", "1"),
        ({"blank_counts_as_royal": 1}, "blank_counts_as_royal", "1"),
        ({"preset": "five-of-a-kind"}, "preset", "'five-of-a-kind'"),
        ({"preset": "rainbow+mirror"}, "preset", "'mirror'"),
        ({"looss_count": 3}, "looss_count", None),
        ({"illegal_action": "ignore"}, "illegal_action", "'ignore'"),
        ({"render_mode": "rgb"}, "render_mode", "'rgb'"),
        ({"render_viewer": "player_4"}, "render_viewer", "'player_4'"),
        ({"config": {"num_players": 3}}, "config", None),
    ],
)
def test_bad_options_raise_value_error_naming_option_and_value(options, name, value):
    with pytest.raises(ValueError) as refused:
        raw_env(**options)
    message = str(refused.value)
    assert name in message
    if value is not None:
        assert value in message
