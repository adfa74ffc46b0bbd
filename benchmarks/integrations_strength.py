"""The strength part of ``bench_integrations.py`` (whose docstring describes it): each RL library's route trained for
the same wall time as ``cockroach-train``, then its agent against three ``heuristic`` in the arena.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from baselines.agent import LogitsAgent  # noqa: E402
from cockroach_env import GameConfig  # noqa: E402

CONFIG = GameConfig(num_players=4)


class RLlibAgent(LogitsAgent):
    """An RLlib RLModule (the shared masked policy) as an agent."""

    def __init__(self, module, config: GameConfig, seed: int = 0, name: str = "rllib-ppo"):
        super().__init__(config, seed)
        self.module, self.name = module, name

    def logits(self, observations, masks):
        import torch

        with torch.no_grad():
            batch = {
                "obs": {
                    "observations": torch.as_tensor(observations),
                    "action_mask": torch.as_tensor(masks, dtype=torch.float32),
                }
            }
            return self.module.forward_inference(batch)["action_dist_inputs"].numpy().astype(np.float64)


class TorchRLAgent(LogitsAgent):
    """The logits network of a TorchRL actor as an agent."""

    def __init__(self, net, config: GameConfig, seed: int = 0, name: str = "torchrl-ppo"):
        super().__init__(config, seed)
        self.net, self.name = net, name

    def logits(self, observations, masks):
        import torch

        with torch.no_grad():
            return self.net(torch.as_tensor(observations)).numpy().astype(np.float64)


class QAgent:
    """A Tianshou Q-network as an agent: greedy over the legal actions."""

    supports_batch = True

    def __init__(self, net, config: GameConfig, name: str = "tianshou-dqn"):
        self.net, self.config, self.name = net, config, name

    def act(self, observation) -> int:
        return int(
            self.act_batch(
                np.asarray(observation["observation"], np.float32)[None], np.asarray(observation["action_mask"])[None]
            )[0]
        )

    def act_batch(self, observations, masks):
        import torch

        with torch.no_grad():
            q = self.net(torch.as_tensor(np.asarray(observations, np.float32)))[0].numpy()
        return np.argmax(np.where(np.asarray(masks).astype(bool), q, -np.inf), axis=1).astype(np.int64)


def evaluate(agent, games: int) -> dict:
    from training.evaluation.arena import play_match

    result = play_match([agent, "heuristic*3"], CONFIG, games=games, seed=12345)
    report = result.agents[0]
    return {"loss_rate": report.loss_rate, "ci": report.loss_rate_ci95, "games": report.games}


def train_cockroach(minutes: float, workdir: str) -> tuple[object, dict]:
    command = [
        sys.executable,
        "-m",
        "training.cli",
        "--config",
        str(ROOT / "configs/research/ppo_4p.yaml"),
        "--no-progress",
        "--overwrite",
        "--set",
        f"schedule.time_limit_minutes={minutes}",
        "--set",
        f"output_dir={workdir}",
        "--set",
        "name=bench_integrations",
        "--set",
        "evaluation.every=1000000",
        "--set",
        "evaluation.final_games=4",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    from training.core.checkpoint import load_agent, read_metadata

    final = Path(workdir) / "bench_integrations" / "final"
    step = read_metadata(final).get("step") or {}
    decisions = step.get("decisions") if isinstance(step, dict) else step
    return load_agent(final, seed=0, config=CONFIG), {
        "seconds": time.perf_counter() - start,
        "trained": f"{decisions:,} decisions",
    }


def train_sb3(minutes: float) -> tuple[object, dict]:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    import baselines
    from cockroach_env.integrations.sb3 import MaskedSelfPlayEnv
    from training.evaluation.sb3_agent import SB3Agent

    class Deadline(BaseCallback):
        def __init__(self, seconds: float):
            super().__init__()
            self.deadline = time.perf_counter() + seconds

        def _on_step(self) -> bool:
            return time.perf_counter() < self.deadline

    start = time.perf_counter()
    env = MaskedSelfPlayEnv(baselines.make("heuristic", CONFIG, seed=0), seed=0, config=CONFIG)
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=2048, batch_size=256, gamma=1.0, seed=0, policy_kwargs={"net_arch": [128, 128]}
    )
    model.learn(10**12, callback=Deadline(minutes * 60 - (time.perf_counter() - start)))
    return SB3Agent(model, CONFIG, seed=0, name="sb3-maskable-ppo"), {
        "seconds": time.perf_counter() - start,
        "trained": f"{model.num_timesteps:,} learner decisions",
    }


def train_rllib(minutes: float) -> tuple[object, dict]:
    import ray

    from cockroach_env.integrations.rllib import SHARED_POLICY, ppo_config

    start = time.perf_counter()
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    algo = ppo_config(
        {"num_players": 4},
        hidden=(128, 128),
        train_batch_size_per_learner=4000,
        minibatch_size=256,
        num_epochs=4,
        gamma=1.0,
        lr=3e-4,
    ).build_algo()
    sampled = 0
    while time.perf_counter() - start < minutes * 60:
        sampled = algo.train()["env_runners"].get("num_env_steps_sampled_lifetime", sampled)
    agent = RLlibAgent(algo.get_module(SHARED_POLICY), CONFIG, seed=0)
    info = {"seconds": time.perf_counter() - start, "trained": f"{int(sampled):,} decisions"}
    return agent, info


def train_tianshou(minutes: float) -> tuple[object, dict]:
    import torch
    from tianshou.algorithm import DQN, MARLRandomDiscreteMaskedOffPolicyAlgorithm, MultiAgentOffPolicyAlgorithm
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv, PettingZooEnv
    from tianshou.trainer import OffPolicyTrainerParams
    from tianshou.utils.net.common import Net

    import cockroach_env
    from cockroach_env.integrations.tianshou import EverySeatRewarded

    start = time.perf_counter()
    make = lambda: PettingZooEnv(cockroach_env.env(num_players=4))  # noqa: E731
    env = make()
    net = Net(
        state_shape=env.observation_space["observation"].shape, action_shape=env.action_space.n, hidden_sizes=[128, 128]
    )
    learner = DQN(
        policy=DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.0),
        optim=AdamOptimizerFactory(lr=1e-4),
        gamma=1.0,
        target_update_freq=500,
    )
    algorithm = MultiAgentOffPolicyAlgorithm(
        algorithms=[learner]
        + [MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space) for _ in range(3)],
        env=env,
    )
    train_envs, test_envs = DummyVectorEnv([make] * 4), DummyVectorEnv([make])
    train_envs.seed(0)
    test_envs.seed(1)
    torch.manual_seed(0)
    collector = Collector[CollectStats](
        algorithm,
        train_envs,
        VectorReplayBuffer(100_000, 4),
        exploration_noise=True,
        on_episode_done_hook=EverySeatRewarded(env),
    )
    collector.reset()
    deadline = start + minutes * 60
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=collector,
            test_collector=Collector[CollectStats](algorithm, test_envs),
            max_epochs=10**6,
            epoch_num_steps=2_000,
            collection_step_num_env_steps=None,
            collection_step_num_episodes=4,
            test_step_num_episodes=1,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.1,
            test_in_training=False,
            stop_fn=lambda reward: time.perf_counter() > deadline,
            multi_agent_return_reduction=lambda rews: rews[:, 0],
            show_progress=False,
        )
    )
    net.eval()
    return QAgent(net, CONFIG), {
        "seconds": time.perf_counter() - start,
        "trained": f"{result.train_step:,} decisions (all seats)",
    }


def _seat_decisions(game, seat: str):
    """One seat's decisions in a one-game TorchRL rollout as a flat sequence.

    Each is what the seat saw and did, and what it got until its next decision.
    """
    import torch
    from tensordict import TensorDict

    steps = game[seat, "mask"][:, 0].nonzero()[:, 0]
    rewards = torch.cat([torch.zeros(1), game["next", seat, "reward"].reshape(-1).cumsum(0)])
    ends = torch.cat([steps[1:], torch.tensor([len(game)])])
    observation = game[seat, "observation", "observation"][steps, 0]
    done = torch.zeros(len(steps), 1, dtype=torch.bool)
    done[-1] = True
    return TensorDict(
        {
            "observation": observation,
            "action_mask": game[seat, "action_mask"][steps, 0],
            "action": game[seat, "action"][steps, 0],
            "action_log_prob": game[seat, "action_log_prob"][steps, 0],
            "next": {
                "observation": torch.cat([observation[1:], observation[-1:]]),
                "reward": (rewards[ends] - rewards[steps])[:, None],
                "done": done,
                "terminated": done.clone(),
            },
        },
        batch_size=[len(steps)],
    )


def train_torchrl(minutes: float) -> tuple[object, dict]:
    import torch
    from tensordict.nn import TensorDictModule, TensorDictSequential
    from torchrl.envs import PettingZooWrapper
    from torchrl.modules import MLP, MaskedCategorical, ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE

    import cockroach_env

    start = time.perf_counter()
    torch.manual_seed(0)
    env = PettingZooWrapper(cockroach_env.env(num_players=4), use_mask=True, seed=0)
    seats = list(env.group_map)  # AEC: one group per seat, each with a "mask" saying whether it acts at this step
    size, actions = (
        env.observation_spec[seats[0], "observation", "observation"].shape[-1],
        env.action_spec[seats[0], "action"].space.n,
    )
    net = MLP(in_features=size, out_features=actions, num_cells=[128, 128], activation_class=torch.nn.Tanh)

    def actor(
        observation, prefix=()
    ):  # the shared policy, on the keys of one seat's group (or on flat keys for the loss)
        return ProbabilisticActor(
            TensorDictModule(net, in_keys=[observation], out_keys=[(*prefix, "logits")]),
            in_keys={"logits": (*prefix, "logits"), "mask": (*prefix, "action_mask")},
            out_keys=[(*prefix, "action")],
            distribution_class=MaskedCategorical,
            return_log_prob=True,
            log_prob_key=(*prefix, "action_log_prob"),
        )

    policy = TensorDictSequential(*(actor((seat, "observation", "observation"), (seat,)) for seat in seats))
    critic = ValueOperator(
        MLP(in_features=size, out_features=1, num_cells=[128, 128], activation_class=torch.nn.Tanh),
        in_keys=["observation"],
    )
    loss = ClipPPOLoss(actor("observation"), critic, clip_epsilon=0.2, entropy_coeff=0.01, normalize_advantage=True)
    loss.set_keys(sample_log_prob="action_log_prob")
    advantage = GAE(gamma=1.0, lmbda=0.95, value_network=critic, average_gae=False)
    optimizer = torch.optim.Adam(loss.parameters(), lr=3e-4)
    decisions, deadline = 0, start + minutes * 60
    while time.perf_counter() < deadline:
        batch = []
        with torch.no_grad():
            while not batch or (sum(len(part) for part in batch) < 4000 and time.perf_counter() < deadline):
                game = env.rollout(10_000, policy, break_when_any_done=True)
                batch += [_seat_decisions(game, seat) for seat in seats if game[seat, "mask"].any()]
            batch = torch.cat(batch)
            advantage(batch)
        decisions += len(batch)
        for _ in range(4):
            for index in torch.randperm(len(batch)).split(256):
                losses = loss(batch[index])
                optimizer.zero_grad()
                (losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]).backward()
                torch.nn.utils.clip_grad_norm_(loss.parameters(), 0.5)
                optimizer.step()
    net.eval()
    return TorchRLAgent(net, CONFIG), {"seconds": time.perf_counter() - start, "trained": f"{decisions:,} decisions"}


def strength(libraries: list[str], minutes: float, games: int) -> list[dict]:
    import torch

    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        routes = [("cockroach-train", lambda: train_cockroach(minutes, workdir))]
        routes += [
            (name, fn)
            for name, fn in (
                ("rllib", lambda: train_rllib(minutes)),
                ("sb3", lambda: train_sb3(minutes)),
                ("tianshou", lambda: train_tianshou(minutes)),
                ("torchrl", lambda: train_torchrl(minutes)),
            )
            if name in libraries
        ]
        for name, train in routes:
            print(f"training {name} for {minutes} min ...", flush=True)
            try:
                agent, info = train()
            except ImportError as error:
                print(f"{name}: skipped ({error})", flush=True)
                continue
            row = {"route": name, **info, **evaluate(agent, games)}
            rows.append(row)
            print(
                f"{name}: {row['trained']} in {row['seconds'] / 60:.1f} min; loss rate against three heuristic "
                f"{100 * row['loss_rate']:.1f}% [{100 * row['ci'][0]:.1f}, {100 * row['ci'][1]:.1f}] "
                f"({row['games']} games)",
                flush=True,
            )
    return rows
