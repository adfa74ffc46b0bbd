"""Stable-Baselines3 with the real library: checkers, 2k MaskablePPO steps, evaluation through cockroach-eval."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

import baselines  # noqa: E402
from cockroach_env import GameConfig, IllegalActionError  # noqa: E402
from cockroach_env.integrations.sb3 import MaskedSelfPlayEnv  # noqa: E402


class Stubborn:
    """An agent that always returns action 0, legal or not."""

    name = "stubborn"

    def act(self, observation):
        return 0


def _play(env: MaskedSelfPlayEnv, rng: np.random.Generator, seed=None):
    obs, info = env.reset(seed=seed)
    trace = [obs.tobytes()]
    while True:
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        trace.append(obs.tobytes())
        if terminated or truncated:
            return reward, info, trace


def test_gymnasium_and_sb3_env_checkers_pass_with_penalize():
    from gymnasium.utils.env_checker import check_env as gymnasium_check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    for options in ({"num_players": 4}, {"num_players": 2}, {"preset": "royal", "num_players": 4}):
        env = MaskedSelfPlayEnv(
            baselines.make("random", GameConfig.from_options(**options), seed=0),
            seed=0,
            illegal_action="penalize",
            **options,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing but the render-mode note may warn
            warnings.filterwarnings("ignore", message=".*alternative render modes.*")
            gymnasium_check_env(env)
            sb3_check_env(env)


def test_an_unmasked_learner_action_raises_by_default_and_changes_nothing():
    env = MaskedSelfPlayEnv(baselines.make("random", seed=0), seed=0)
    with pytest.raises(RuntimeError, match="before reset"):
        env.action_masks()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    env.reset(seed=1)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    before = env.game.state()
    with pytest.raises(IllegalActionError, match=f"illegal action {illegal}"):
        env.step(illegal)
    np.testing.assert_array_equal(env.game.state(), before)


def test_the_learner_sees_exactly_its_env_observation_and_info():
    """The adapter adds nothing to what the env lets the learner's seat see (tests/test_no_leak.py covers the env)."""
    env = MaskedSelfPlayEnv(baselines.make("random", seed=0), seed=0)
    rng = np.random.default_rng(2)
    obs, info = env.reset(seed=2)
    for _ in range(30):
        np.testing.assert_array_equal(obs, env.game.observe(env._learner)["observation"])
        assert info == env.game.infos[env._learner]
        np.testing.assert_array_equal(env.action_masks(), env.game.observe(env._learner)["action_mask"].astype(bool))
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if terminated or truncated:
            obs, info = env.reset()


def test_penalize_ends_the_episode_with_minus_one_for_the_learner():
    env = MaskedSelfPlayEnv(baselines.make("random", seed=0), seed=0, illegal_action="penalize")
    env.reset(seed=1)
    _, reward, terminated, truncated, info = env.step(int(np.flatnonzero(~env.action_masks())[0]))
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info["illegal_move"] and env.game.possible_agents[info["offender"]] == env._learner


def test_the_learner_rotates_seats_and_gets_its_terminal_reward():
    env = MaskedSelfPlayEnv(
        [baselines.make(name, seed=s) for s, name in enumerate(("random", "honest", "bluffer"))], seed=3
    )
    rng = np.random.default_rng(0)
    seats, rewards = [], []
    for _ in range(12):
        reward, info, _ = _play(env, rng)
        seats.append(env._learner)
        rewards.append(reward)
        assert reward == (-1.0 if env.game.possible_agents[info["loser"]] == env._learner else pytest.approx(1 / 3))
    assert seats == [f"player_{k % 4}" for k in range(12)]
    assert -1.0 in rewards and any(r > 0 for r in rewards)


def test_the_constructor_seed_seeds_only_the_first_reset():
    """SB3 seeds the first reset itself (``MaskablePPO(..., seed=0)``); the next reset must not replay the
    constructor's seed.
    """
    env = MaskedSelfPlayEnv(baselines.make("random", seed=0), seed=0)
    env.reset(seed=0)
    first = env.game.state()
    env.reset()
    assert env._learner == "player_1" and not np.array_equal(env.game.state(), first)


def test_a_game_cut_by_max_steps_before_the_learners_first_decision_is_dealt_again():
    config = GameConfig(num_players=4, max_steps=2)  # a seat often waits more than two decisions for its first
    env = MaskedSelfPlayEnv(baselines.make("random", config, seed=0), seed=0, config=config)
    rng = np.random.default_rng(0)
    for _ in range(8):
        obs, info = env.reset()
        assert env.game.agent_selection == env._learner and env.action_masks().any() and info["truncated_at_step"] == -1
        while True:
            obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            if terminated or truncated:
                break
        assert (reward, terminated, truncated) == (0.0, False, True)
    config = GameConfig(num_players=4, max_steps=1, starter=0)  # only seat 0 ever decides
    env = MaskedSelfPlayEnv(baselines.make("random", config, seed=0), seed=0, config=config)
    env.reset()
    with pytest.raises(ValueError, match="player_1 had no decision in 100 deals in a row"):
        env.reset()


def test_every_render_mode_of_the_env_passes_gymnasiums_checker():
    pytest.importorskip("PIL")
    from gymnasium.utils.env_checker import check_env as gymnasium_check_env

    env = MaskedSelfPlayEnv(
        baselines.make("random", seed=0), seed=0, illegal_action="penalize", render_mode="rgb_array"
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*alternative render modes.*")
        gymnasium_check_env(env)
    env.reset(seed=0)
    assert env.render().dtype == np.uint8


def test_a_seed_reproduces_the_episode_including_the_opponents():
    env = MaskedSelfPlayEnv(baselines.make("heuristic", GameConfig(num_players=3), seed=0), num_players=3)
    first = _play(env, np.random.default_rng(5), seed=11)
    _play(env, np.random.default_rng(6))
    again = _play(env, np.random.default_rng(5), seed=11)
    assert first[2] == again[2] and first[0] == again[0]


def test_bad_opponents_are_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="has 2 agents; expected one agent or a list of 3"):
        MaskedSelfPlayEnv([baselines.make("random"), baselines.make("random")])
    with pytest.raises(ValueError, match=r"opponents\[0\]='heuristic' is not an agent"):
        MaskedSelfPlayEnv("heuristic")
    with pytest.raises(ValueError, match="was built for"):
        MaskedSelfPlayEnv(baselines.make("random", GameConfig(num_players=3)), num_players=4)
    env = MaskedSelfPlayEnv(lambda episode: ["not an agent"] * 3)
    with pytest.raises(ValueError, match=r"opponents\(0\) result\[0\]"):
        env.reset(seed=0)
    with pytest.raises(ValueError, match=r"opponents\[0\]=<class .*RandomAgent'> is a class, not an agent"):
        MaskedSelfPlayEnv(type(baselines.make("random")))  # act() would fail only at the first opponent move
    for seed in (-1, 1.5, "0"):  # refused here, not at the first reset
        with pytest.raises(ValueError, match=f"seed={seed!r} is not allowed"):
            MaskedSelfPlayEnv(baselines.make("random"), seed=seed)
    env = MaskedSelfPlayEnv(Stubborn())
    with pytest.raises(ValueError, match="opponent 'stubborn' .* returned 0, which is not a legal action"):
        for seed in range(8):  # some deal lets an opponent move before the learner
            _play(env, np.random.default_rng(0), seed=seed)


def test_maskable_ppo_trains_2k_steps_saves_and_is_ranked_by_cockroach_eval(tmp_path, capsys):
    import torch
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks

    from training.cli.eval import main as cockroach_eval
    from training.evaluation.sb3_agent import SB3Agent

    torch.set_num_threads(1)
    config = GameConfig(num_players=4)
    env = MaskedSelfPlayEnv(baselines.make("random", config, seed=0), seed=0, config=config)
    model = MaskablePPO("MlpPolicy", env, n_steps=512, batch_size=128, n_epochs=2, seed=0, verbose=0)
    model.learn(2048)
    assert model.num_timesteps >= 2048

    # an evaluation game in the env, the SB3 way
    obs, _ = env.reset(seed=100)
    done = False
    while not done:
        action, _ = model.predict(obs, action_masks=get_action_masks(env), deterministic=True)
        obs, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert info["loser"] >= 0

    # the same model as an agent of the protocol, and through cockroach-eval
    agent = SB3Agent(model, config, seed=0)
    e = __import__("cockroach_env").env(config=config)
    e.reset(seed=0)
    assert e.observe(e.agent_selection)["action_mask"][agent.act(e.observe(e.agent_selection))]
    path = tmp_path / "model.zip"
    model.save(path)
    assert cockroach_eval([str(path), "random*3", "--games", "8", "--json", "-", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["games"] == 8 and result["agents"][0]["name"] == "model"
    assert cockroach_eval([str(path), "random"]) == 2
    assert "observations of shape (132,)" in capsys.readouterr().err


def test_self_play_opponents_refresh_a_frozen_copy_on_schedule():
    from sb3_contrib import MaskablePPO

    from training.evaluation.sb3_agent import SelfPlayOpponents

    config = GameConfig(num_players=3)
    opponents = SelfPlayOpponents(config, refresh_every=2, seed=0, first=baselines.make("random", config, seed=0))
    env = MaskedSelfPlayEnv(opponents, seed=0, config=config)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0)
    opponents.attach(model)
    rng = np.random.default_rng(0)
    frozen = []
    for _ in range(5):
        _play(env, rng)
        frozen.append(opponents.frozen)
    assert opponents.refreshes == 3  # episodes 0, 2 and 4
    assert (
        frozen[0] is frozen[1] and frozen[2] is not frozen[1] and frozen[2] is frozen[3] and frozen[4] is not frozen[3]
    )
    assert frozen[2].policy is not model.policy
    with pytest.raises(ValueError, match="refresh_every=0"):
        SelfPlayOpponents(config, refresh_every=0)


def test_a_mixture_opponent_draws_its_member_each_episode_and_replays_from_the_seed():
    pytest.importorskip("torch")
    from training.core.mixture import MixtureAgent
    from training.core.model import ActorCritic, PolicyAgent

    config = GameConfig(num_players=4)
    members = [PolicyAgent(ActorCritic(config, [8], seed=s), config, seed=s) for s in range(3)]
    mixture = MixtureAgent(members, [1, 1, 1], config, seed=0)
    env = MaskedSelfPlayEnv(mixture, num_players=4)
    drawn, traces = [], []
    for episode in range(12):
        traces.append(_play(env, np.random.default_rng(episode % 6), seed=100 if episode in (0, 6) else None)[2])
        drawn.append(mixture.current)
    assert len(set(drawn)) > 1  # new_game() at every reset
    assert traces[0] == traces[6] and drawn[0] == drawn[6]  # reset(seed=...) reseeds the draws and every member
