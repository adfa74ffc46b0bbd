"""Hostile inputs to the rule options and the PettingZoo env: each is a named ``ValueError``
that changes nothing (an out-of-range ``max_steps`` included),
and Hypothesis throws arbitrary options, seeds and actions at them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cockroach_env
from cockroach_env import GameConfig, IllegalActionError, raw_env
from cockroach_env.config import MAX_STEPS

from .hostile import env_snapshot, refused

# ---------------------------------------------------------------------------- rule options

CONFIG_CASES = [
    ("preset=5", lambda: GameConfig.from_options(preset=5), ["preset=5"]),
    ("preset=[3]", lambda: GameConfig.from_options(preset=[3]), ["preset=3"]),
    ("env(preset=5)", lambda: raw_env(preset=5), ["preset=5"]),
    (
        "duel+three-of-a-kind",
        lambda: GameConfig.from_options(preset="duel+three-of-a-kind"),
        ["three-of-a-kind", "num_players=2", "3 to 6"],
    ),
    (
        "three-of-a-kind, 2 players",
        lambda: raw_env(preset="three-of-a-kind", num_players=2),
        ["three-of-a-kind", "num_players=2"],
    ),
    ("max_steps=10**20", lambda: GameConfig(max_steps=10**20), ["max_steps=100000000000000000000", str(MAX_STEPS)]),
    ("max_steps=1.5", lambda: GameConfig(max_steps=1.5), ["max_steps=1.5"]),
    ("num_players=nan", lambda: GameConfig(num_players=math.nan), ["num_players=nan"]),
    ("edition=[]", lambda: GameConfig(edition=[]), ["edition=[]"]),
    ("starter=True", lambda: GameConfig(starter=True), ["starter=True"]),
]


@pytest.mark.parametrize("call, fragments", [pytest.param(c, f, id=i) for i, c, f in CONFIG_CASES])
def test_bad_rule_options_are_named_errors(call, fragments):
    refused(call, *fragments)


def test_three_of_a_kind_stays_allowed_from_three_players():
    assert GameConfig.from_options(preset="three-of-a-kind", num_players=3).loss_count == 3
    assert GameConfig(max_steps=MAX_STEPS).max_steps == MAX_STEPS


# ---------------------------------------------------------------------------- env calls


def _seeded():
    env = raw_env(num_players=4)
    env.reset(seed=3)
    return env


ENV_CASES = [
    ("observe unknown agent", lambda e: e.observe("player_9"), ["'player_9'", "player_0"]),
    ("observe unhashable agent", lambda e: e.observe(["player_0"]), ["['player_0']"]),
    ("observation_mask unknown agent", lambda e: e.observation_mask("player_9"), ["'player_9'"]),
    ("reset options a list", lambda e: e.reset(options=["hands"]), ["options=['hands']", "dict"]),
    ("reset options a string", lambda e: e.reset(seed=5, options="hands"), ["options='hands'"]),
    ("reset starter a list", lambda e: e.reset(seed=5, options={"starter": ["player_0"]}), ["starter=['player_0']"]),
    ("reset starter a seat number", lambda e: e.reset(seed=5, options={"starter": 0}), ["starter=0"]),
    (
        "reset hands key unhashable",
        lambda e: e.reset(seed=5, options={"hands": {("player_0",): {}}}),
        ["('player_0',)"],
    ),
    ("reset seed a string", lambda e: e.reset(seed="x"), ["seed='x'"]),
    ("reset seed a float", lambda e: e.reset(seed=1.5), ["seed=1.5"]),
    ("reset seed negative", lambda e: e.reset(seed=-1), ["seed=-1"]),
    ("reset seed True", lambda e: e.reset(seed=True), ["seed=True"]),
    ("reset seed then bad options", lambda e: e.reset(seed=5, options={"hands": "x"}), ["hands='x'"]),
    ("reset seed then bad card", lambda e: e.reset(seed=5, options={"hands": {"player_0": {"dragon": 1}}}), ["dragon"]),
    (
        "reset collections a number",
        lambda e: e.reset(seed=5, options={"hands": {"player_0": {"fly": 2}}, "collections": 0}),
        ["collections=0", "dict"],
    ),
    (
        "reset collections an empty list",
        lambda e: e.reset(seed=5, options={"hands": {"player_0": {"fly": 2}}, "collections": []}),
        ["collections=[]", "dict"],
    ),
    (
        "reset a deal that already lost",
        lambda e: e.reset(options={"hands": {"player_0": {"fly": 2}}, "collections": {"player_1": {"bat": 4}}}),
        ["seat 1", "already loses"],
    ),
    (
        "reset seed then a deal that already lost",
        lambda e: e.reset(seed=5, options={"hands": {"player_0": {"fly": 2}}, "collections": {"player_1": {"bat": 4}}}),
        ["seat 1", "already loses"],
    ),
    ("reset a deal of no cards", lambda e: e.reset(options={"hands": {}}), ["hands={}", "no card", "empty_hand"]),
    (
        "reset seed then a deal of no cards",
        lambda e: e.reset(seed=5, options={"hands": {}}),
        ["hands={}", "(drawn at random)", "at least one card in the starter's hand"],
    ),
    (
        "reset a starter dealt no card",
        lambda e: e.reset(options={"starter": "player_1", "hands": {"player_0": {"fly": 2}, "player_1": {"bat": 0}}}),
        ["hands['player_1']={'bat': 0}", "starter player_1 no card", "empty_hand"],
    ),
    (
        "reset a starter missing from hands",
        lambda e: e.reset(options={"starter": "player_2", "hands": {"player_0": {"fly": 2}}}),
        ["no entry for 'player_2'", "starter player_2 no card"],
    ),
    ("decode a float", lambda e: e.decode(3.7), ["action=3.7"]),
    ("decode a string", lambda e: e.decode("3"), ["action='3'"]),
    ("decode out of range", lambda e: e.decode(10**6), ["action=1000000"]),
    ("decode a bool", lambda e: e.decode(True), ["action=True"]),
    ("encode a string", lambda e: e.encode("offer"), ["move='offer'"]),
    ("step a float", lambda e: e.step(3.7), ["3.7"]),
    ("step a string", lambda e: e.step("0"), ["'0'"]),
    ("step out of range", lambda e: e.step(-1), ["-1"]),
]


@pytest.mark.parametrize("call, fragments", [pytest.param(c, f, id=i) for i, c, f in ENV_CASES])
def test_bad_env_calls_are_named_errors_that_change_nothing(call, fragments):
    env = _seeded()
    before = env_snapshot(env)
    refused(lambda: call(env), *fragments)
    assert env_snapshot(env) == before


BEFORE_RESET = [
    ("observe", lambda e: e.observe("player_0")),
    ("last", lambda e: e.last()),
    ("step", lambda e: e.step(0)),
    ("state", lambda e: e.state()),
    ("observation_mask", lambda e: e.observation_mask("player_0")),
    ("public_view", lambda e: e.public_view()),
    ("legal_moves", lambda e: e.legal_moves()),
    ("decode", lambda e: e.decode(0)),
    ("agent_selection", lambda e: e.agent_selection),
    ("history", lambda e: e.history),
    ("render", lambda e: e.render()),
]


@pytest.mark.parametrize("call", [pytest.param(c, id=i) for i, c in BEFORE_RESET])
def test_raw_env_before_reset_says_to_reset(call):
    env = raw_env(num_players=3, render_mode="ansi")
    refused(lambda: call(env), "reset()", error=(ValueError, AttributeError))


def test_raw_env_step_after_every_agent_is_done_is_a_named_error():
    env = raw_env(num_players=2)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    while env.agents:
        _, _, terminated, truncated, _ = env.last()
        env.step(
            None
            if terminated or truncated
            else int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])))
        )
    refused(lambda: env.step(0), "step(0)", "reset()")


def test_a_penalized_illegal_action_tells_the_others_nothing_about_the_offenders_hand():
    env = raw_env(num_players=3, illegal_action="penalize")
    env.reset(
        seed=0,
        options={
            "starter": "player_0",
            "hands": {"player_0": {"fly": 2}, "player_1": {"bat": 2}, "player_2": {"rat": 2}},
        },
    )
    name = "toad"
    env.step(env.encoding.offer_action(env.cards.index(name), 1, 0))
    assert name in env.refusal  # the offender's program learns why, from the env
    for other in env.possible_agents:  # infos are numbers only: no text that could describe a hand
        assert env.infos[other]["illegal_move"] and env.infos[other]["offender"] == 0
        assert name not in str(env.infos[other]) and "hand" not in str(env.infos[other])


# ---------------------------------------------------------------------------- fuzzing

junk = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6), st.lists(st.integers(-3, 9), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from(["classic", "royal", "duel", "rainbow+duel", "three-of-a-kind", "player_0", "fly"]),
)  # fmt: skip
OPTION_NAMES = ["num_players", "edition", "discard", "loss_count", "rainbow_loses", "opening_cards", "starter",
                "blank_counts_as_royal", "royal_counts_as_animal", "max_steps", "preset", "bogus"]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(OPTION_NAMES), st.one_of(junk, st.integers(0, 12)), max_size=4))
def test_any_rule_options_give_a_config_or_a_named_error(options):
    try:
        config = GameConfig.from_options(**options)
    except ValueError as error:
        assert str(error)
        return
    assert GameConfig(**config.to_dict()) == config  # what was accepted is a valid, resolved config
    env = raw_env(config=config)
    env.reset(seed=0)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=junk,
    options=st.one_of(
        junk, st.dictionaries(st.sampled_from(["starter", "hands", "collections", "penalty_deck"]), junk, max_size=3)
    ),
)
def test_any_reset_arguments_reset_or_change_nothing(seed, options):
    env = _seeded()
    before = env_snapshot(env)
    try:
        env.reset(seed=seed, options=options)
    except ValueError:
        assert env_snapshot(env) == before
    else:
        assert env.agents == env.possible_agents


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(junk, st.integers(-5, 230)), min_size=1, max_size=30))
def test_any_actions_play_or_are_refused_leaving_the_game_unchanged(actions):
    env = cockroach_env.env(num_players=4)
    env.reset(seed=1)
    for action in actions:
        if not env.agents:
            break
        before = env_snapshot(env)
        try:
            env.step(action)
        except IllegalActionError as error:
            assert repr(action)[:20] in str(error) or str(action)[:20] in str(error)
            assert env_snapshot(env) == before
