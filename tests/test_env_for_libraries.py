"""What RL libraries need from the env: finite bounds on every space, ``np_random``, one info schema."""

from __future__ import annotations

import numpy as np
import pytest

from cockroach_env import GameConfig, encoding_for, env
from cockroach_env.engine import LOSS_REASONS
from cockroach_env.env import INFO_DEFAULTS

from .conftest import rule_sets


@pytest.mark.parametrize("preset, num_players", rule_sets())
def test_every_space_has_finite_bounds_from_the_deck(preset, num_players):
    e = env(preset=preset, num_players=num_players)
    enc = e.unwrapped.encoding
    deck = e.unwrapped.config.cards.deck_size
    boxes = [
        e.observation_space("player_0")["observation"],
        e.observation_space("player_0")["action_mask"],
        e.unwrapped.state_space,
    ]
    for box in boxes:
        assert np.isfinite(box.low).all() and np.isfinite(box.high).all()
        assert box.is_bounded("both")
    state_high = e.unwrapped.state_space.high
    history = enc.state.segments["history"]
    assert (state_high[history.start : history.stop] == deck).all()
    assert state_high.max() == deck
    np.testing.assert_array_equal(e.observation_space("player_0")["observation"].high, enc.observation_high)


def test_bounds_are_defined_once_in_the_encoding_and_are_read_only():
    enc = encoding_for(GameConfig(num_players=4))
    with pytest.raises(ValueError):
        enc.state_high[0] = 7.0
    with pytest.raises(ValueError):
        enc.observation_high[0] = 7.0
    obs_history = enc.observation.segments["history"]
    assert (enc.observation_high[obs_history.start : obs_history.stop] == 64).all()


@pytest.mark.parametrize("preset, num_players", [("classic", 2), ("classic", 3), ("royal", 4)])
def test_long_random_games_stay_inside_the_bounds(preset, num_players):
    """Random play produces the longest games; every observation and state stays in bounds."""
    e = env(preset=preset, num_players=num_players)
    rng = np.random.default_rng(5)
    high = e.unwrapped.state_space.high
    peak = np.zeros_like(high)
    for seed in range(20):
        e.reset(seed=seed)
        while not e.unwrapped.game.over:
            state = e.unwrapped.state()
            assert (state <= high).all() and (state >= 0).all()
            peak = np.maximum(peak, state)
            obs = e.observe(e.agent_selection)
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert peak.max() > 1  # the counters did move


def test_np_random_is_the_generator_of_the_deals():
    a, b = env(num_players=4), env(num_players=4)
    a.reset(seed=3)
    b.reset(seed=3)
    assert isinstance(a.np_random, np.random.Generator)
    assert a.np_random.integers(1 << 30) == b.np_random.integers(1 << 30)
    b.unwrapped.np_random = np.random.default_rng(11)
    c = env(num_players=4)
    c.unwrapped.np_random = np.random.default_rng(11)
    b.reset()
    c.reset()
    assert b.unwrapped.game.hands == c.unwrapped.game.hands
    with pytest.raises(ValueError, match="np_random=42 is not allowed"):
        a.unwrapped.np_random = 42


def _infos_of_a_game(e, rng, illegal_at: int | None = None) -> list[dict]:
    seen = []
    for step, _agent in enumerate(e.agent_iter()):
        obs, reward, terminated, truncated, info = e.last()
        seen.append(dict(info))
        seen.extend(dict(i) for i in e.infos.values())
        if terminated or truncated:
            e.step(None)
        elif step == illegal_at:
            e.step(int(np.flatnonzero(obs["action_mask"] == 0)[0]))
        else:
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return seen


@pytest.mark.parametrize(
    "options, illegal_at",
    [({}, None), ({"max_steps": 6}, None), ({"illegal_action": "penalize"}, 3), ({"edition": "royal"}, None)],
)
def test_every_info_has_the_same_keys_and_types_on_every_step(options, illegal_at):
    e = env(num_players=4, **options)
    e.reset(seed=1)
    infos = _infos_of_a_game(e, np.random.default_rng(1), illegal_at)
    assert len(infos) > 10
    for info in infos:
        assert list(info) == list(INFO_DEFAULTS)
        assert all(v is not None and type(v) is type(INFO_DEFAULTS[k]) for k, v in info.items()), info
    assert infos[0] == INFO_DEFAULTS
    last = infos[-1]
    if illegal_at is not None:
        assert last["illegal_move"] and last["offender"] >= 0
    elif "max_steps" in options:
        assert last["truncated_at_step"] == 6 and last["loser"] == -1
    else:
        assert last["loser"] >= 0 and LOSS_REASONS[last["loss_reason"]]


def test_the_refusal_reason_is_kept_out_of_every_info():
    """The reason may name the offender's cards ("has no fly in hand"): it is ``env.unwrapped.refusal`` only."""
    e = env(num_players=4, illegal_action="penalize")
    e.reset(seed=0)
    offender = e.agent_selection
    mask = e.observe(offender)["action_mask"]
    e.step(int(np.flatnonzero(mask == 0)[0]))
    assert e.unwrapped.refusal and offender in e.unwrapped.refusal
    assert all(
        e.infos[a] == {**INFO_DEFAULTS, "illegal_move": True, "offender": int(offender[-1])} for a in e.possible_agents
    )
    e.reset(seed=1)
    assert e.unwrapped.refusal is None


def test_infos_are_numbers_only():
    """TorchRL builds tensor specs from the infos at reset; Tianshou stacks them into arrays."""
    assert all(type(v) in (int, bool) for v in INFO_DEFAULTS.values())
