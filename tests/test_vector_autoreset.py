"""``SelfPlayVectorEnv``'s autoreset modes: Gymnasium's ``NEXT_STEP`` by default, ``SAME_STEP`` on request.

Both modes play the same games from the same seed; ``NEXT_STEP`` shows a game's final
observation in the step that ends it and the new game in the next one, so Gymnasium's own
vector wrappers, which refuse ``SAME_STEP``, run over it.
"""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.spaces import Box
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import vector as wrappers

from cockroach_env import GameConfig
from cockroach_env.vector import INFO_KEYS, SelfPlayVectorEnv
from tests.test_vector import random_actions

NEXT, SAME = AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP


def test_the_default_is_gymnasiums_next_step_and_same_step_is_kept_on_request():
    assert SelfPlayVectorEnv(2, "random").metadata["autoreset_mode"] == NEXT
    assert SelfPlayVectorEnv(2, "random", autoreset_mode=SAME).metadata["autoreset_mode"] == SAME
    assert SelfPlayVectorEnv(2, "random", autoreset_mode="SameStep").autoreset_mode == SAME
    assert SelfPlayVectorEnv.metadata["autoreset_mode"] == NEXT  # the class's own metadata is not changed


@pytest.mark.parametrize("mode", [AutoresetMode.DISABLED, "same", 1, None])
def test_an_autoreset_mode_it_does_not_play_is_refused_by_name(mode):
    with pytest.raises(ValueError, match=rf"autoreset_mode={mode!r} is not allowed; expected AutoresetMode.NEXT_STEP"):
        SelfPlayVectorEnv(2, "random", autoreset_mode=mode)


@pytest.mark.parametrize("options", [{"num_players": 4}, {"num_players": 3, "history": 4}])
def test_next_step_shows_the_final_observation_then_the_new_game(options):
    """One game at a time, ``NEXT_STEP`` is ``SAME_STEP`` with one step inserted after every game: the ending step
    shows ``SAME_STEP``'s ``final_obs`` (mask all zero) and ``final_info``, the inserted step ignores its action and
    shows the new game (reward 0, not done, the new game's info).
    """
    same = SelfPlayVectorEnv(1, ["random", "heuristic"], seed=3, autoreset_mode=SAME, **options)
    next_ = SelfPlayVectorEnv(1, ["random", "heuristic"], seed=3, **options)
    obs_s, info_s = same.reset()
    obs_n, info_n = next_.reset()
    rng, games = np.random.default_rng(0), 0
    while games < 6:
        assert np.array_equal(obs_s["observation"], obs_n["observation"])
        assert np.array_equal(obs_s["action_mask"], obs_n["action_mask"])
        assert np.array_equal(next_.action_masks(), obs_n["action_mask"].astype(bool))
        assert all(np.array_equal(info_s[key], info_n[key]) for key in INFO_KEYS)
        actions = random_actions(obs_s["action_mask"], rng)
        obs_s, reward_s, term_s, trunc_s, info_s = same.step(actions)
        obs_n, reward_n, term_n, trunc_n, info_n = next_.step(actions)
        assert reward_s == reward_n and term_s == term_n and trunc_s == trunc_n
        if not (term_s[0] or trunc_s[0]):
            continue
        games += 1
        assert np.array_equal(obs_n["observation"][0], info_s["final_obs"][0]["observation"])
        assert not obs_n["action_mask"].any() and not next_.action_masks().any()
        assert next_.observation_space.contains(obs_n)
        assert all(np.array_equal(info_n[key], info_s["final_info"][key]) for key in INFO_KEYS)
        obs_n, reward_n, term_n, trunc_n, info_n = next_.step(np.array([2**40]))  # ignored, whatever it is
        assert reward_n[0] == 0 and not term_n[0] and not trunc_n[0]
        assert info_n["loser"][0] == -1 and info_n["learner_seat"][0] == info_s["learner_seat"][0]


def test_only_the_games_that_ended_wait_and_the_others_play_on():
    envs = SelfPlayVectorEnv(64, "random", seed=1)
    obs, _ = envs.reset()
    rng, waited = np.random.default_rng(1), 0
    done = np.zeros(64, bool)
    for _ in range(40):
        before = obs["observation"].copy()
        obs, reward, terminated, truncated, info = envs.step(random_actions(obs["action_mask"], rng))
        # A waiting game's step moves nobody: its new game was dealt, and the learner was to act there already.
        waited += int(done.sum())
        assert not (terminated | truncated)[done].any() and (reward[done] == 0).all()
        assert obs["action_mask"][done].any(axis=1).all()
        assert not np.array_equal(obs["observation"][~done], before[~done])
        done = terminated | truncated
    assert waited > 10


def _wrapped(envs):
    """Gymnasium's own vector wrappers, stacked as a user would: the flat observation, normalized, with statistics."""
    box = envs.single_observation_space["observation"]
    envs = wrappers.RecordEpisodeStatistics(envs)
    masks = {}

    def observation_only(obs):
        masks["last"] = obs["action_mask"]
        return obs["observation"]

    envs = wrappers.TransformObservation(envs, observation_only, single_observation_space=box)
    envs = wrappers.NormalizeObservation(envs)
    return wrappers.ClipReward(envs, min_reward=-1.0, max_reward=1.0), masks


def test_gymnasiums_vector_wrappers_run_over_it():
    envs, masks = _wrapped(SelfPlayVectorEnv(32, ["random", "heuristic"], seed=0, num_players=4))
    obs, info = envs.reset(seed=0)
    assert obs.shape == (32, envs.env.single_observation_space.shape[0]) and obs.dtype == np.float32
    rng, returns, ended = np.random.default_rng(0), [], 0
    for _ in range(60):
        obs, reward, terminated, truncated, info = envs.step(random_actions(masks["last"], rng))
        assert np.isfinite(obs).all()
        done = terminated | truncated
        ended += int(done.sum())
        if "episode" in info:
            assert (info["_episode"] == done).all()
            returns += info["episode"]["r"][done].tolist()
            assert (info["episode"]["r"][done] == reward[done]).all()  # one reward per game: the terminal one
    assert ended > 20 and len(returns) == ended
    assert set(np.round(returns, 6)) <= {-1.0, round(1 / 3, 6)}
    normalized = envs.env  # NormalizeObservation's running statistics moved off their start
    assert normalized.obs_rms.count > 32 * 60


def test_flatten_and_dict_info_wrappers_run_over_it():
    envs = SelfPlayVectorEnv(8, "random", seed=0, num_players=3)
    flat = wrappers.DictInfoToList(wrappers.FlattenObservation(envs))
    size = envs.single_observation_space["observation"].shape[0] + envs.single_action_space.n
    assert flat.single_observation_space == Box(flat.single_observation_space.low, flat.single_observation_space.high)
    obs, infos = flat.reset(seed=2)
    assert obs.shape == (8, size) and len(infos) == 8 and set(infos[0]) == set(INFO_KEYS)
    rng = np.random.default_rng(0)
    for _ in range(30):
        obs, reward, terminated, truncated, infos = flat.step(random_actions(envs.action_masks(), rng))
        assert obs.shape == (8, size) and all(set(i) == set(INFO_KEYS) for i in infos)


def test_the_same_step_mode_is_still_refused_by_the_wrappers_that_need_next_step():
    envs = SelfPlayVectorEnv(2, "random", autoreset_mode=SAME)
    box = envs.single_observation_space["observation"]
    with pytest.raises(AssertionError):
        wrappers.NormalizeObservation(
            wrappers.TransformObservation(envs, lambda o: o["observation"], single_observation_space=box)
        )


def test_a_history_window_runs_in_next_step_mode_with_the_wrappers():
    envs, masks = _wrapped(SelfPlayVectorEnv(8, "heuristic", seed=0, config=GameConfig(num_players=4, history=8)))
    obs, _ = envs.reset()
    rng = np.random.default_rng(0)
    for _ in range(40):
        obs, *_ = envs.step(random_actions(masks["last"], rng))
        assert np.isfinite(obs).all()
