"""The PettingZoo contract: api_test and seed_test on every rule set, spaces, seeding, truncation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from cockroach_env import GameConfig, IllegalActionError, Move, env, raw_env

from .conftest import legal_actions, play_random, rule_sets


@pytest.mark.parametrize("preset, num_players", rule_sets())
def test_pettingzoo_api_test(preset, num_players):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # api_test passes an unknown reset option on purpose
        api_test(env(preset=preset, num_players=num_players), num_cycles=200)


@pytest.mark.parametrize("preset, num_players", rule_sets())
def test_pettingzoo_seed_test(preset, num_players):
    seed_test(lambda: env(preset=preset, num_players=num_players), num_cycles=200)


def test_metadata_follows_the_classic_env_conventions():
    metadata = raw_env.metadata
    assert metadata["name"] == "cockroach_poker_v2"
    assert set(metadata["render_modes"]) == {"ansi", "human", "rgb_array"}
    assert metadata["is_parallelizable"] is False
    wrapped = env()
    assert wrapped.metadata == metadata
    assert isinstance(wrapped.unwrapped, raw_env)


@pytest.mark.parametrize("preset, num_players", [("classic", 2), ("classic", 4), ("royal", 5)])
def test_spaces_are_cached_and_identical_for_every_seat(preset, num_players):
    e = env(preset=preset, num_players=num_players)
    e.reset(seed=0)
    agents = [f"player_{s}" for s in range(num_players)]
    assert e.possible_agents == agents
    first_obs, first_act = e.observation_space(agents[0]), e.action_space(agents[0])
    for a in agents:
        assert e.observation_space(a) is first_obs
        assert e.action_space(a) is first_act
    assert first_act.n == e.unwrapped.encoding.num_actions
    assert first_obs["action_mask"].shape == (first_act.n,)
    assert first_obs["action_mask"].dtype == np.int8


def test_four_player_classic_has_219_actions():
    assert env(num_players=4).action_space("player_0").n == 219


@pytest.mark.parametrize("preset, num_players", rule_sets(("classic", "creature-to-start", "royal")))
def test_observations_and_state_stay_in_their_spaces(preset, num_players):
    e = env(preset=preset, num_players=num_players)
    e.reset(seed=3)
    rng = np.random.default_rng(3)
    state_space = e.unwrapped.state_space
    while not e.unwrapped.game.over:
        for a in e.possible_agents:
            obs = e.observe(a)
            assert e.observation_space(a).contains(obs), a
        assert state_space.contains(e.unwrapped.state())
        e.step(int(rng.choice(legal_actions(e))))


@pytest.mark.parametrize("preset", ["classic", "royal", "rainbow+creature-to-start"])
def test_same_seed_and_actions_give_identical_games(preset):
    def run(seed: int) -> list:
        e = env(preset=preset, num_players=4)
        e.reset(seed=seed)
        rng = np.random.default_rng(11)
        trace = []
        for a in e.agent_iter():
            obs, reward, terminated, truncated, info = e.last()
            trace.append(
                (
                    a,
                    obs["observation"].tobytes(),
                    obs["action_mask"].tobytes(),
                    reward,
                    terminated,
                    truncated,
                    repr(info),
                )
            )
            if terminated or truncated:
                e.step(None)
                continue
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        return trace

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_reset_without_seed_after_a_seeded_reset_continues_deterministically():
    def deals(e):
        e.reset(seed=9)
        first = e.unwrapped.public_view(), [list(h) for h in e.unwrapped.game.hands]
        e.reset()
        second = e.unwrapped.public_view(), [list(h) for h in e.unwrapped.game.hands]
        return first, second

    a, b = deals(env()), deals(env())
    assert a == b
    assert a[0][1] != a[1][1]


def test_starter_is_drawn_from_the_seed_unless_configured():
    starters = set()
    for seed in range(40):
        e = raw_env(num_players=4)
        e.reset(seed=seed)
        starters.add(e.agent_selection)
    assert starters == {f"player_{s}" for s in range(4)}
    for seed in range(5):
        e = raw_env(num_players=4, starter=2)
        e.reset(seed=seed)
        assert e.agent_selection == "player_2"
        e.reset(seed=seed, options={"starter": "player_3"})
        assert e.agent_selection == "player_3"


def test_wrapped_env_raises_illegal_action_error_not_assertion_for_out_of_range_actions():
    e = env()
    e.reset(seed=0)
    with pytest.raises(IllegalActionError):
        e.step(e.action_space(e.agent_selection).n)


def test_max_steps_truncates_every_agent():
    e = env(num_players=3, max_steps=5)
    e.reset(seed=1)
    rng = np.random.default_rng(1)
    steps = 0
    for _agent in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        if terminated or truncated:
            assert truncated and not terminated
            assert reward == 0
            assert not obs["action_mask"].any()
            e.step(None)
            continue
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        steps += 1
    assert steps == 5
    assert e.agents == []


def test_game_over_gives_every_agent_a_final_last_and_removes_them():
    e = env(num_players=4)
    e.reset(seed=2)
    rng = np.random.default_rng(2)
    finished = []
    for a in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        if terminated:
            finished.append((a, reward, info))
            e.step(None)
            continue
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert sorted(a for a, _, _ in finished) == e.possible_agents
    assert sum(r for _, r, _ in finished) == pytest.approx(0.0)
    assert len({info["loser"] for _, _, info in finished}) == 1


def test_config_keyword_is_equivalent_to_keyword_options_for_spaces_and_play():
    a = env(config=GameConfig(num_players=3, rainbow_loses=True))
    b = env(num_players=3, rainbow_loses=True)
    for e in (a, b):
        e.reset(seed=4)
    rng_a, rng_b = np.random.default_rng(0), np.random.default_rng(0)
    play_random(a.unwrapped, rng_a)
    play_random(b.unwrapped, rng_b)
    assert a.unwrapped.history == b.unwrapped.history


def test_returned_observations_are_snapshots_the_env_does_not_change_later():
    e = env(num_players=3)
    e.reset(seed=0)
    first = e.observe(e.agent_selection)
    saved = {k: v.copy() for k, v in first.items()}
    state = e.unwrapped.state()
    saved_state = state.copy()
    e.step(int(np.flatnonzero(first["action_mask"])[0]))
    for k in saved:
        np.testing.assert_array_equal(first[k], saved[k])
    np.testing.assert_array_equal(state, saved_state)
    now = e.observe(e.agent_selection)
    expected = now["action_mask"].copy()
    now["action_mask"][:] = 0  # a caller scribbling on its copy changes nothing
    np.testing.assert_array_equal(e.observe(e.agent_selection)["action_mask"], expected)


def _penalized(render_mode: str = "ansi"):
    e = env(num_players=3, illegal_action="penalize", render_mode=render_mode)
    e.reset(seed=0)
    offender = e.agent_selection
    e.step(int(np.flatnonzero(e.observe(offender)["action_mask"] == 0)[0]))
    return e, offender


def _truncated(render_mode: str = "ansi"):
    e = env(num_players=3, max_steps=3, render_mode=render_mode)
    e.reset(seed=0)
    rng = np.random.default_rng(0)
    while not any(e.truncations.values()):
        e.step(int(rng.choice(np.flatnonzero(e.observe(e.agent_selection)["action_mask"]))))
    return e, None


@pytest.mark.parametrize("ended", [_penalized, _truncated], ids=["illegal action penalized", "max_steps"])
def test_a_game_the_env_ended_shows_nobody_to_act(ended):
    e, offender = ended()
    view = e.unwrapped.public_view()
    assert view["phase"] == "over" and view["to_act"] is None and view["loser"] is None
    assert e.unwrapped.offender == offender
    text = e.render()
    assert not [line for line in text.splitlines() if line.startswith("*")], "no seat is marked to act"
    assert "phase: over" in text
    assert ("chose an illegal action" in text) is (offender is not None) and ("cut at max_steps=3" in text) is (
        offender is None
    )
    picture = ended("rgb_array")[0].render()
    assert picture.ndim == 3 and picture.dtype == np.uint8
    e.reset(seed=1)
    view = e.unwrapped.public_view()
    assert view["to_act"] == e.agent_selection and view["phase"] == "offer" and e.unwrapped.offender is None


def test_a_lost_game_shows_its_loser_and_nobody_to_act():
    e = env(num_players=3)
    hands = {"player_0": {"bat": 1}, "player_1": {"fly": 1}, "player_2": {"rat": 1}}
    e.reset(options={"starter": "player_1", "hands": hands, "collections": {"player_2": {"fly": 3}}})
    e.step(e.unwrapped.encode(Move("offer", card="fly", target="player_2", claim="bat")))
    e.step(e.unwrapped.encode(Move("call", believe=True)))
    view = e.unwrapped.public_view()
    assert (view["phase"], view["to_act"], view["loser"], view["loss_reason"]) == (
        "over",
        None,
        "player_2",
        "same_type",
    )
    assert e.unwrapped.offender is None
