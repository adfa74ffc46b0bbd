"""Tianshou with the real library: the plain PettingZooEnv recipe trains one short epoch; every seat its reward."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tianshou")

import torch  # noqa: E402
from tianshou.algorithm import DQN, MARLRandomDiscreteMaskedOffPolicyAlgorithm, MultiAgentOffPolicyAlgorithm  # noqa: E402
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy  # noqa: E402
from tianshou.algorithm.optim import AdamOptimizerFactory  # noqa: E402
from tianshou.data import Collector, CollectStats, VectorReplayBuffer  # noqa: E402
from tianshou.env import DummyVectorEnv, PettingZooEnv  # noqa: E402
from tianshou.trainer import OffPolicyTrainerParams  # noqa: E402
from tianshou.utils.net.common import Net  # noqa: E402

import cockroach_env  # noqa: E402
from cockroach_env.integrations.tianshou import EverySeatRewarded  # noqa: E402


@pytest.fixture(autouse=True)
def one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def make_env(**options):
    return PettingZooEnv(cockroach_env.env(**options))


def random_players(env):
    return MultiAgentOffPolicyAlgorithm(
        algorithms=[MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space) for _ in env.agents],
        env=env,
    )


def test_the_plain_recipe_trains_one_short_epoch_without_nans_in_the_buffer():
    env = make_env(num_players=4)
    net = Net(
        state_shape=env.observation_space["observation"].shape, action_shape=env.action_space.n, hidden_sizes=[64, 64]
    )
    learner = DQN(
        policy=DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.05),
        optim=AdamOptimizerFactory(lr=1e-4),
        gamma=0.99,
        target_update_freq=100,
    )
    opponents = [MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space) for _ in range(3)]
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[learner, *opponents], env=env)
    train_envs, test_envs = DummyVectorEnv([make_env] * 2), DummyVectorEnv([make_env] * 2)
    train_envs.seed(0)
    test_envs.seed(1)
    torch.manual_seed(0)
    train_collector = Collector[CollectStats](
        algorithm, train_envs, VectorReplayBuffer(5_000, 2), exploration_noise=True
    )
    test_collector = Collector[CollectStats](algorithm, test_envs, exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=128)
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=1,
            epoch_num_steps=400,  # more than the ~150 steps after which the old info schema broke the buffer
            collection_step_num_env_steps=20,
            test_step_num_episodes=2,
            batch_size=32,
            update_step_num_gradient_steps_per_sample=0.1,
            test_in_training=False,
            multi_agent_return_reduction=lambda rews: rews[:, 0],
        )
    )
    assert result.update_step > 0
    assert not train_collector.buffer.hasnull()
    assert len(train_collector.buffer) >= 400


def _own_rewards(buffer, agents):
    data = buffer.sample(0)[0]
    acted, rew = np.asarray(data.obs.agent_id), np.asarray(data.rew)
    return (
        {agent: int(((acted == agent) & (rew[:, seat] != 0)).sum()) for seat, agent in enumerate(agents)},
        rew,
        int(np.asarray(data.done).sum()),
    )


def test_the_dispatcher_sees_a_terminal_reward_only_for_the_last_mover_unless_every_seat_is_rewarded():
    env = make_env(num_players=4)
    algorithm = random_players(env)
    counts = {}
    for hook in (None, EverySeatRewarded(env)):
        envs = DummyVectorEnv([make_env])
        envs.seed(0)
        collector = Collector[CollectStats](algorithm, envs, VectorReplayBuffer(5_000, 1), on_episode_done_hook=hook)
        collector.reset()
        collector.collect(n_episode=12)
        counts[hook is not None], rew, games = _own_rewards(collector.buffer, env.agents)
        assert games == 12
        assert rew.sum() == pytest.approx(0.0, abs=1e-9)  # the zero-sum total is kept
    assert sum(counts[False].values()) == 12  # one seat per game: the one that moved last
    assert counts[True] == dict.fromkeys(env.agents, 12)


def test_every_seat_rewarded_refuses_what_is_not_a_pettingzoo_env():
    with pytest.raises(ValueError, match="expected a tianshou.env.PettingZooEnv"):
        EverySeatRewarded(object())
