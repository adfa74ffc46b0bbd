"""Stable-Baselines3 on the batched route: ``MaskedSelfPlayVecEnv`` with the real MaskablePPO."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402
from sb3_contrib.common.maskable.utils import get_action_masks  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv  # noqa: E402

from cockroach_env import IllegalActionError  # noqa: E402
from cockroach_env.integrations.sb3 import MaskedSelfPlayVecEnv  # noqa: E402
from cockroach_env.vector import INFO_KEYS, SelfPlayVectorEnv  # noqa: E402


def lowest_legal(masks: np.ndarray) -> np.ndarray:
    return np.asarray(masks).argmax(1).astype(np.int64)


def test_maskable_ppo_trains_on_it_directly_and_get_action_masks_works():
    import torch

    torch.set_num_threads(1)
    env = MaskedSelfPlayVecEnv(16, "random", seed=0, num_players=4)
    assert isinstance(env, VecEnv) and env.num_envs == 16
    model = MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=64, n_epochs=1, seed=0)
    model.learn(512)
    assert model.num_timesteps >= 512
    obs = env.reset()
    masks = get_action_masks(env)
    assert masks.shape == (16, env.action_space.n) and masks.dtype == bool and masks.any(1).all()
    action, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert masks[np.arange(16), action].all()
    env.step(action)


@pytest.mark.parametrize("options", [{"num_players": 4, "history": 8}, {"preset": "mini", "history": 16}])
def test_a_history_window_steps_with_masks_and_terminal_observations_in_the_space(options):
    env = MaskedSelfPlayVecEnv(8, "heuristic", seed=0, **options)
    size = env.observation_space.shape[0]
    assert size == SelfPlayVectorEnv(1, "random", **options).games.encoding.observation.size
    obs, ended = env.reset(), 0
    for _ in range(60):
        assert obs.shape == (8, size) and all(env.observation_space.contains(row) for row in obs)
        obs, _, dones, infos = env.step(lowest_legal(get_action_masks(env)))
        for i in np.flatnonzero(dones):
            assert env.observation_space.contains(infos[i]["terminal_observation"])
            ended += 1
    assert ended > 0


def test_terminal_observation_and_info_keys_follow_sb3s_convention():
    env = MaskedSelfPlayVecEnv(8, "random", seed=0, num_players=4, max_steps=12)
    env.reset()
    assert all(set(info) == set(INFO_KEYS) for info in env.reset_infos)
    ended = truncated = 0
    for _ in range(40):
        obs, rewards, dones, infos = env.step(lowest_legal(get_action_masks(env)))
        assert obs.dtype == np.float32 and rewards.dtype == np.float32 and dones.dtype == bool
        for i, info in enumerate(infos):
            assert set(INFO_KEYS) <= set(info)
            if dones[i]:
                ended += 1
                assert info["terminal_observation"].shape == obs[i].shape
                assert env.observation_space.contains(info["terminal_observation"])
                truncated += info["TimeLimit.truncated"]
                assert info["TimeLimit.truncated"] == (info["truncated_at_step"] == 12)
            else:
                assert "terminal_observation" not in info
    assert ended > 0 and truncated > 0


def test_it_plays_the_same_games_as_the_gymnasium_route_from_the_same_seed():
    sb3 = MaskedSelfPlayVecEnv(4, ["random", "heuristic"], num_players=4)
    sb3.seed(9)  # what MaskablePPO(..., seed=9) does
    gym = SelfPlayVectorEnv(4, ["random", "heuristic"], num_players=4, autoreset_mode=AutoresetMode.SAME_STEP)
    obs = sb3.reset()
    reference, _ = gym.reset(seed=9)
    for _ in range(60):
        assert np.array_equal(obs, reference["observation"])
        actions = lowest_legal(reference["action_mask"])
        obs, rewards, dones, infos = sb3.step(actions)
        reference, reward, terminated, truncated, info = gym.step(actions)
        assert np.array_equal(rewards, reward) and np.array_equal(dones, terminated | truncated)
        for i, sb3_info in enumerate(infos):
            if dones[i]:  # the ended game's info, as Gymnasium's final_info
                assert np.array_equal(sb3_info["terminal_observation"], info["final_obs"][i]["observation"])
                assert all(sb3_info[key] == info["final_info"][key][i] for key in INFO_KEYS)
            else:
                assert all(sb3_info[key] == info[key][i] for key in INFO_KEYS)


def test_an_illegal_action_is_refused_and_bad_arguments_are_named():
    env = MaskedSelfPlayVecEnv(2, "random", seed=0)
    env.reset()
    masks = get_action_masks(env)
    actions = lowest_legal(masks)
    actions[1] = int(np.flatnonzero(~masks[1])[0])
    with pytest.raises(IllegalActionError, match="sub-environment 1"):
        env.step(actions)
    assert np.array_equal(get_action_masks(env), masks)
    with pytest.raises(ValueError, match="num_envs=0 is not allowed"):
        MaskedSelfPlayVecEnv(0, "random")
    with pytest.raises(ValueError, match="opponent 'nobody'"):
        MaskedSelfPlayVecEnv(2, "nobody")
