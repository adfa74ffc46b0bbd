"""Ray RLlib with the real library: its env checker, the reward of every seat, 2 PPO iterations on a local Ray."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("ray.rllib")

from ray.rllib.utils.pre_checks.env import check_multiagent_environments  # noqa: E402

from cockroach_env.integrations.rllib import SHARED_POLICY, RLlibMultiAgentEnv, ppo_config  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    """One Ray session for the module (starting Ray takes ~15 s), one CPU, torch on one thread."""
    import ray
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the local env runner and learner run in this process
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()
    torch.set_num_threads(threads)


@pytest.mark.parametrize(
    "env_config",
    [
        {},
        {"num_players": 2},
        {"preset": "royal", "num_players": 4},
        {"num_players": 3, "illegal_action": "penalize", "max_steps": 40},
    ],
)
def test_rllib_env_checker_passes(env_config):
    for _ in range(3):  # the checker steps a random (mostly illegal) action after reset(seed=42)
        check_multiagent_environments(RLlibMultiAgentEnv(env_config))


def test_observations_have_the_keys_of_rllibs_action_masking_module():
    env = RLlibMultiAgentEnv({"num_players": 4})
    obs, infos = env.reset(seed=0)
    (agent,) = obs
    assert agent == env.game.agent_selection and set(infos) == {agent}
    assert set(obs[agent]) == {"observations", "action_mask"}
    assert obs[agent]["action_mask"].dtype == np.float32  # the module takes log(mask)
    assert env.get_observation_space(agent).contains(obs[agent])
    seen = env.game.observe(agent)  # exactly the env's observation of that seat, nothing more
    np.testing.assert_array_equal(obs[agent]["observations"], seen["observation"])
    np.testing.assert_array_equal(obs[agent]["action_mask"], seen["action_mask"])


def test_every_seat_receives_its_terminal_reward():
    env = RLlibMultiAgentEnv({"num_players": 4})
    rng = np.random.default_rng(0)
    for seed in range(10):
        obs, _ = env.reset(seed=seed)
        totals = dict.fromkeys(env.possible_agents, 0.0)
        while True:
            ((agent, o),) = obs.items()
            action = int(rng.choice(np.flatnonzero(o["action_mask"])))
            obs, rewards, terminateds, truncateds, infos = env.step({agent: action})
            for a, r in rewards.items():
                totals[a] += r
            if terminateds["__all__"]:
                break
            assert set(obs) == {env.game.agent_selection} and set(rewards) == {agent}
        assert set(obs) == set(rewards) == set(infos) == set(env.possible_agents)
        loser = env.possible_agents[infos["player_0"]["loser"]]
        assert totals == {a: -1.0 if a == loser else pytest.approx(1 / 3) for a in env.possible_agents}
        assert all(not o["action_mask"].any() for o in obs.values())
        with pytest.raises(RuntimeError, match="after the episode ended"):
            env.step({agent: 0})


def test_bad_env_config_and_actions_are_named():
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['num_player'\]"):
        RLlibMultiAgentEnv({"num_player": 4})
    with pytest.raises(ValueError, match="num_players"):
        RLlibMultiAgentEnv({"num_players": 9})
    for env_config in ("num_players=4", 4):
        with pytest.raises(ValueError, match=f"env_config={env_config!r} is not allowed; expected a dict"):
            RLlibMultiAgentEnv(env_config)
    for hidden in (256, (), (64, 0)):
        with pytest.raises(ValueError, match=re.escape(f"hidden={hidden!r} is not allowed; expected")):
            ppo_config({}, hidden=hidden)
    env = RLlibMultiAgentEnv({"render_mode": "rgb_array"})
    assert env.render_mode in env.metadata["render_modes"]
    env = RLlibMultiAgentEnv({"illegal_action": "raise"})
    obs, _ = env.reset(seed=0)
    other = next(a for a in env.possible_agents if a not in obs)
    with pytest.raises(ValueError, match=f"expected exactly one action, for '{env.game.agent_selection}'"):
        env.step({other: 0})


def test_two_ppo_iterations_with_one_shared_masked_policy(local_ray):
    config = ppo_config(
        {"num_players": 4}, hidden=(64, 64), train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1
    )
    assert not config.disable_env_checking  # RLlib checks the env it builds
    algo = config.build_algo()
    try:
        results = [algo.train() for _ in range(2)]
        assert SHARED_POLICY in results[-1]["learners"]
        assert results[-1]["env_runners"]["num_env_steps_sampled_lifetime"] >= 512
        module = algo.get_module(SHARED_POLICY)
        env = RLlibMultiAgentEnv({"num_players": 4})
        obs, _ = env.reset(seed=3)
        (o,) = obs.values()
        import torch

        batch = {"obs": {k: torch.as_tensor(v)[None] for k, v in o.items()}}
        logits = module.forward_inference(batch)["action_dist_inputs"][0]
        assert o["action_mask"][int(torch.argmax(logits))] == 1  # the mask reaches the logits
    finally:
        algo.stop()
