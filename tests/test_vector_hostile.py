"""Hostile inputs to the three vector envs: each is refused by name, before anything changes.

The Gymnasium, Stable-Baselines3 and TorchRL routes share ``SeatedGames``; each input is
tried on every route, as a user of that library would give it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from cockroach_env import IllegalActionError
from cockroach_env.vector import MAX_NUM_ENVS, SelfPlayVectorEnv
from tests.test_vector import random_actions


def _gymnasium(num_envs=3, **options):
    return SelfPlayVectorEnv(num_envs, "random", seed=0, **options)


def _sb3(num_envs=3, **options):
    pytest.importorskip("sb3_contrib")
    from cockroach_env.integrations.sb3 import MaskedSelfPlayVecEnv

    return MaskedSelfPlayVecEnv(num_envs, "random", seed=0, **options)


def _torchrl(num_envs=3, **options):
    pytest.importorskip("torchrl")
    from cockroach_env.integrations.torchrl import BatchedCockroachEnv

    return BatchedCockroachEnv(batch_size=[num_envs], opponents="random", seed=0, **options)


ROUTES = {"gymnasium": _gymnasium, "sb3": _sb3, "torchrl": _torchrl}


def _reset(route: str, env) -> np.ndarray:
    """Reset; the learner's action masks."""
    if route == "torchrl":
        return env.reset()["action_mask"].numpy()
    if route == "sb3":
        env.reset()
        return env.action_masks()
    return env.reset()[0]["action_mask"]


def _step(route: str, env, actions: np.ndarray):
    if route == "torchrl":
        import torch
        from tensordict import TensorDict

        return env.step(TensorDict({"action": torch.as_tensor(actions)}, batch_size=env.batch_size))
    return env.step(actions)


# ---------------------------------------------------------------------------- unbounded counts
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("num_envs", [10**12, MAX_NUM_ENVS + 1])
def test_a_number_of_games_past_the_bound_is_refused_before_anything_is_allocated(route, num_envs):
    with pytest.raises(
        ValueError, match=rf"(num_envs|batch_size)=\[?{num_envs}\]? is not allowed; .*at most 1,048,576"
    ):
        ROUTES[route](num_envs)


# ---------------------------------------------------------------------------- actions reported as given
@pytest.mark.parametrize(
    ("route", "given", "shown"),
    [
        (route, given, shown)
        for route in ROUTES
        for given, shown in (
            (np.uint64(2**64 - 1), "18446744073709551615"),
            (np.float64(1e20), "100000000000000000000"),
        )
        # (torch has no uint64 tensor: a TorchRL env is never handed a uint64 action)
        if not (route == "torchrl" and given.dtype == np.uint64)
    ],
)
def test_an_action_out_of_range_is_reported_as_the_value_given(route, given, shown):
    env = ROUTES[route]()
    masks = _reset(route, env)
    actions = random_actions(masks, np.random.default_rng(0)).astype(given.dtype)
    actions[1] = given
    with pytest.raises(IllegalActionError, match=rf"sub-environment 1 .*illegal action {shown}\b.*out of range"):
        _step(route, env, actions)


def test_a_uint64_action_in_range_plays_as_its_value():
    env = _gymnasium()
    obs, _ = env.reset()
    other = _gymnasium()
    other.reset()
    actions = random_actions(obs["action_mask"], np.random.default_rng(0))
    played = env.step(actions.astype(np.uint64))[0]["observation"]
    assert np.array_equal(played, other.step(actions)[0]["observation"])


def test_a_penalized_out_of_range_action_ends_only_that_game():
    env = _gymnasium(illegal_action="penalize")
    obs, _ = env.reset()
    actions = random_actions(obs["action_mask"], np.random.default_rng(0)).astype(np.float64)
    actions[0] = 1e20
    _, reward, terminated, _, info = env.step(actions)
    assert terminated[0] and reward[0] == -1 and info["illegal_move"][0] and not terminated[1:].any()


# ---------------------------------------------------------------------------- after close()
@pytest.mark.parametrize("route", ROUTES)
def test_step_and_reset_after_close_are_refused(route):
    env = ROUTES[route]()
    masks = _reset(route, env)
    env.close()
    with pytest.raises(RuntimeError, match=r"step\(\) called after close\(\)"):
        _step(route, env, random_actions(masks, np.random.default_rng(0)))
    with pytest.raises(RuntimeError, match=r"reset\(\) called after close\(\)"):
        _reset(route, env)
    with pytest.raises(RuntimeError, match=r"set_opponents\(\) called after close\(\)"):
        env.set_opponents("random")


# ---------------------------------------------------------------------------- seeds
BAD_SEEDS = [True, -1, 1.7, "abc", 2**64, np.float64(3.0)]


@pytest.mark.parametrize("seed", BAD_SEEDS)
def test_sb3_seed_refuses_what_is_not_a_seed_by_name(seed):
    env = _sb3()
    with pytest.raises(
        ValueError, match=rf"seed={re.escape(repr(seed))} is not allowed; expected None or an integer from 0"
    ):
        env.seed(seed)
    assert np.array_equal(env.reset(), _sb3().reset())  # nothing changed: the constructor's seed plays


@pytest.mark.parametrize("seed", BAD_SEEDS)
def test_torchrl_set_seed_refuses_what_is_not_a_seed_by_name(seed):
    env = _torchrl()
    with pytest.raises(
        ValueError, match=rf"seed={re.escape(repr(seed))} is not allowed; expected None or an integer from 0"
    ):
        env.set_seed(seed)


@pytest.mark.parametrize("seed", [0, 5, 2**63 + 5, 2**64 - 1])
def test_every_seed_gives_the_games_of_the_same_seed_on_the_gymnasium_route(seed):
    env = _torchrl(learner_seat=0)
    env.set_seed(seed)
    observation = env.reset()["observation"].numpy()
    reference, _ = _gymnasium(learner_seat=0).reset(seed=seed)
    assert np.array_equal(observation, reference["observation"])
    sb3 = _sb3(learner_seat=0)
    sb3.seed(seed)
    assert np.array_equal(sb3.reset(), reference["observation"])


def test_a_seed_past_2_63_is_not_taken_modulo():
    far = _torchrl(learner_seat=0)
    far.set_seed(2**63 + 5)
    near = _torchrl(learner_seat=0)
    near.set_seed(5)
    assert not np.array_equal(far.reset()["observation"].numpy(), near.reset()["observation"].numpy())
