"""The cost of each RL-library route: env throughput beside PettingZoo's Leduc, and strength per wall time.

    python benchmarks/bench_integrations.py [--seconds 20] [--rounds 5] [--minutes 10] [--games 1000]
                                            [--only throughput|batched|sb3-learn|torchrl-marl|strength]
                                            [--num-envs 1024]
                                            [--sb3-envs 16,64,256] [--sb3-rollouts 2] [--sb3-rollout-size 2048]
                                            [--libraries rllib,sb3,tianshou,torchrl,gymnasium]

**Throughput.** Each library's own loop with random legal actions, on 4-player
Cockroach Poker and on PettingZoo's ``leduc_holdem_v4``, interleaved in short slices
over ``--rounds`` rounds (so machine load hits both alike); the ratio is the median
of the per-round ratios of steps per CPU second of this process:

- RLlib: ``MultiAgentEnv.step`` of ``RLlibMultiAgentEnv`` and of RLlib's own
  ``PettingZooEnv(leduc_holdem_v4.env())``;
- SB3: ``DummyVecEnv.step`` of ``MaskedSelfPlayEnv`` (one seat against ``random``) and
  of the same one-seat-against-random construction over Leduc (one step = one learner
  decision; the opponents' decisions happen inside it);
- Tianshou: ``Collector.collect`` with its masked random policies over
  ``PettingZooEnv(env)`` in a ``DummyVectorEnv`` (one step = one decision);
- TorchRL: ``PettingZooWrapper(env, use_mask=True).rollout`` with random actions from
  the masked spec (one step = one decision).

**Batched.** For Gymnasium, SB3 and TorchRL, the one-game route beside the batched
route (``cockroach_env.vector``), both with ``--num-envs`` sub-environments, one learner
seat against three ``random`` in each, random legal learner actions, interleaved over
``--rounds`` rounds; the ratio is the median of the per-round ratios of steps per wall
second:

- Gymnasium: ``SyncVectorEnv`` of ``MaskedSelfPlayEnv`` vs ``SelfPlayVectorEnv``;
- SB3: ``DummyVecEnv`` of ``MaskedSelfPlayEnv`` vs ``MaskedSelfPlayVecEnv`` (masks
  through ``get_action_masks``; one step = one learner decision in each sub-environment);
- TorchRL: ``PettingZooWrapper(env, use_mask=True).rollout`` (one step = one decision of
  any seat, one game) vs ``BatchedCockroachEnv.rollout`` (one step = one learner decision).

**TorchRL, every seat a learner** (``--only torchrl-marl``). ``BatchedCockroachEnv.rollout``
(one learner seat against three ``random`` per game: a step is one learner decision,
the opponents' moves inside it) beside ``BatchedCockroachMultiAgentEnv.rollout`` (every
seat a learner: a step is one move per game, every seat's observation written), both
with ``--num-envs`` games and random legal actions from the masked spec, interleaved
over ``--rounds`` rounds; the ratio is the median of the per-round ratios of steps per
wall second.

**SB3 end to end** (``--only sb3-learn``). ``MaskablePPO.learn`` (with ``VecMonitor``) on
``DummyVecEnv(MaskedSelfPlayEnv)`` and on ``MaskedSelfPlayVecEnv`` at ``--sb3-envs``
(16, 64, 256) envs, against three ``random`` and three ``heuristic``: rollouts of
``--sb3-rollout-size`` (2,048) learner decisions (``n_steps = 2048 / envs``,
``batch_size=256``, ``n_epochs=4``),
``--sb3-rollouts`` of them per run, the routes alternating over ``--rounds`` rounds; the
ratio is the median of the per-round ratios of learner decisions per wall second, updates
included.

Then the env's share of the wall time of each library's own masked PPO loop on the
batched route, for ``--seconds``: the CleanRL-style loop of ``docs/integrations.md``
(its settings), ``MaskablePPO.learn`` (``n_steps=16``, ``batch_size=1024``) and a TorchRL
loop of ``rollout`` + ``GAE`` + ``ClipPPOLoss``; the env's time is that of its
``step``/``reset`` calls. Tianshou and RLlib have no batched route here.

**Strength.** What each route's agent reaches in the same ``--minutes`` of wall time as
``cockroach-train`` (``configs/research/ppo_4p.yaml`` cut to that time): the loss rate of one
agent against three ``heuristic`` in ``--games`` arena games (duplicate deals, seat
rotation, 95% Wilson interval; parity is 25%). The routes: RLlib's PPO with one shared
masked policy in self-play (``ppo_config``); SB3's MaskablePPO on ``MaskedSelfPlayEnv``
against three ``heuristic``; Tianshou's DQN in seat 0 of the plain ``PettingZooEnv``
recipe against three masked random policies (Tianshou's tutorial set-up) with
``EverySeatRewarded``; TorchRL's ``ClipPPOLoss`` and ``GAE`` with one shared
``MaskedCategorical`` policy in self-play, on games played by
``PettingZooWrapper(env, use_mask=True).rollout`` (TorchRL ships no trainer for
turn-based games, whose agents act one at a time: each seat's decisions in a game are
cut out of the rollout with its ``mask`` and become one trajectory, its reward
until its next decision summed onto it). Torch runs on one thread
for every route.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from integrations_sb3_learn import SB3_ROLLOUT, print_sb3_learn  # noqa: E402
from integrations_strength import strength  # noqa: E402

from cockroach_env import GameConfig  # noqa: E402

LIBRARIES = ("rllib", "sb3", "tianshou", "torchrl", "gymnasium")
CONFIG = GameConfig(num_players=4)


# ---------------------------------------------------------------------------- throughput loops
class Loop:
    """A library's loop on one env; ``run(seconds)`` returns (steps, wall seconds, CPU seconds)."""

    def run(self, seconds: float) -> tuple[int, float, float]:
        steps, cpu, start = 0, time.process_time(), time.perf_counter()
        while time.perf_counter() - start < seconds:
            steps += self.chunk()
        return steps, time.perf_counter() - start, time.process_time() - cpu


def _legal(rng: np.random.Generator, mask) -> int:
    return int(rng.choice(np.flatnonzero(np.asarray(mask))))


class RLlibLoop(Loop):
    def __init__(self, env_name: str):
        if env_name == "cockroach":
            from cockroach_env.integrations.rllib import RLlibMultiAgentEnv

            self.env, self.obs_key = RLlibMultiAgentEnv({"num_players": 4}), "action_mask"
        else:
            from pettingzoo.classic import leduc_holdem_v4
            from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

            self.env, self.obs_key = PettingZooEnv(leduc_holdem_v4.env()), "action_mask"
        self.rng, self.seed = np.random.default_rng(0), 0
        self.obs = None

    def chunk(self) -> int:
        if self.obs is None:
            self.obs, _ = self.env.reset(seed=self.seed)
            self.seed += 1
        steps = 0
        for _ in range(100):
            ((agent, o),) = self.obs.items()
            self.obs, _, terminateds, truncateds, _ = self.env.step({agent: _legal(self.rng, o[self.obs_key])})
            steps += 1
            if terminateds["__all__"] or truncateds["__all__"]:
                self.obs = None
                break
        return steps


class OneSeatVsRandom:
    """Leduc as a one-seat gymnasium-style env against a random opponent (what MaskedSelfPlayEnv is for this game)."""

    def __init__(self):
        import gymnasium
        from pettingzoo.classic import leduc_holdem_v4

        self.aec = leduc_holdem_v4.env()
        self.rng = np.random.default_rng(1)
        self.aec.reset(seed=0)
        self.observation_space = self.aec.observation_space("player_0")["observation"]
        self.action_space = self.aec.action_space("player_0")
        self.gym = gymnasium
        self.episode = 0

    def reset(self, seed=None, options=None):
        self.learner = self.aec.possible_agents[self.episode % 2]
        self.episode += 1
        self.aec.reset(seed=seed)
        self._opponents()
        while self.aec.terminations[self.learner]:  # over before the learner's first decision: deal again
            self.aec.reset(seed=int(self.rng.integers(2**31)))
            self._opponents()
        return self.aec.observe(self.learner)["observation"], {}

    def _opponents(self):
        while self.aec.agents and self.aec.agent_selection != self.learner:
            obs, _, term, trunc, _ = self.aec.last()
            self.aec.step(None if term or trunc else _legal(self.rng, obs["action_mask"]))

    def step(self, action):
        self.aec.step(int(action))
        self._opponents()
        done = not self.aec.agents or self.aec.terminations[self.learner]
        reward = float(self.aec._cumulative_rewards.get(self.learner, 0.0)) if done else 0.0
        if done and self.aec.agents:
            obs = self.aec.observe(self.learner)["observation"]
        else:
            obs = np.zeros(self.observation_space.shape, self.observation_space.dtype)
        return obs, reward, bool(done), False, {}

    def action_masks(self):
        if not self.aec.agents:
            return np.ones(self.action_space.n, bool)
        return self.aec.observe(self.learner)["action_mask"].astype(bool)


class SB3Loop(Loop):
    def __init__(self, env_name: str):
        import gymnasium
        from stable_baselines3.common.vec_env import DummyVecEnv

        if env_name == "cockroach":
            import baselines
            from cockroach_env.integrations.sb3 import MaskedSelfPlayEnv

            make = lambda: MaskedSelfPlayEnv(baselines.make("random", CONFIG, seed=0), seed=0, config=CONFIG)  # noqa: E731
        else:

            class LeducEnv(OneSeatVsRandom, gymnasium.Env):
                def __init__(self):
                    OneSeatVsRandom.__init__(self)

            make = LeducEnv
        self.venv = DummyVecEnv([make])
        self.venv.reset()
        self.rng = np.random.default_rng(0)

    def chunk(self) -> int:
        for _ in range(100):
            mask = self.venv.env_method("action_masks")[0]
            self.venv.step(np.array([_legal(self.rng, mask)]))
        return 100


class TianshouLoop(Loop):
    def __init__(self, env_name: str):
        from tianshou.algorithm import MARLRandomDiscreteMaskedOffPolicyAlgorithm, MultiAgentOffPolicyAlgorithm
        from tianshou.data import Collector, CollectStats
        from tianshou.env import DummyVectorEnv, PettingZooEnv

        if env_name == "cockroach":
            import cockroach_env

            make = lambda: PettingZooEnv(cockroach_env.env(num_players=4))  # noqa: E731
        else:
            from pettingzoo.classic import leduc_holdem_v4

            make = lambda: PettingZooEnv(leduc_holdem_v4.env())  # noqa: E731
        env = make()
        players = MultiAgentOffPolicyAlgorithm(
            algorithms=[MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space) for _ in env.agents],
            env=env,
        )
        envs = DummyVectorEnv([make])
        envs.seed(0)
        self.collector = Collector[CollectStats](players, envs)
        self.collector.reset()

    def chunk(self) -> int:
        return int(self.collector.collect(n_step=100).n_collected_steps)


class TorchRLLoop(Loop):
    def __init__(self, env_name: str):
        from torchrl.envs import PettingZooWrapper

        if env_name == "cockroach":
            import cockroach_env

            aec = cockroach_env.env(num_players=4)
        else:
            from pettingzoo.classic import leduc_holdem_v4

            aec = leduc_holdem_v4.env()
        self.env = PettingZooWrapper(aec, use_mask=True, seed=0)

    def chunk(self) -> int:
        return int(self.env.rollout(100, break_when_any_done=False).batch_size[0])


PEER_MODULES = ("rlcard", "pygame")
"""What PettingZoo's ``leduc_holdem_v4`` imports beyond PettingZoo (the ``bench`` extra)."""

LOOPS = {"rllib": RLlibLoop, "sb3": SB3Loop, "tianshou": TianshouLoop, "torchrl": TorchRLLoop}


def throughput(libraries: list[str], seconds: float, rounds: int) -> list[dict]:
    import warnings

    warnings.filterwarnings("ignore")
    rows = []
    for library in [name for name in libraries if name in LOOPS]:
        try:
            loops = {name: LOOPS[library](name) for name in ("cockroach", "leduc")}
        except (
            ImportError
        ) as error:  # the library itself, or the peer's (PettingZoo's Leduc needs rlcard and pygame: the bench extra)
            extra = "bench" if getattr(error, "name", None) in PEER_MODULES else library
            print(f"{library}: skipped ({error}); pip install '.[{extra}]'", flush=True)
            continue
        totals = {name: [0, 0.0, 0.0] for name in loops}
        ratios = []
        for _ in range(rounds):
            rates = {}
            for name, loop in loops.items():
                steps, wall, cpu = loop.run(seconds / rounds)
                totals[name] = [totals[name][0] + steps, totals[name][1] + wall, totals[name][2] + cpu]
                rates[name] = steps / max(cpu, 1e-9)
            ratios.append(rates["cockroach"] / rates["leduc"])
        row = {"library": library, "ratio": statistics.median(ratios), "ratio_min": min(ratios)}
        for name, (steps, wall, cpu) in totals.items():
            row[name] = steps / cpu
            row[name + "_wall"] = steps / wall
        rows.append(row)
        print(
            f"{library}: cockroach {row['cockroach']:,.0f} steps/CPU s, leduc {row['leduc']:,.0f}, "
            f"ratio {row['ratio']:.2f}",
            flush=True,
        )
    return rows


# ---------------------------------------------------------------------------- batched routes
BATCHED = ("gymnasium", "sb3", "torchrl")
"""The libraries with a batched route (``cockroach_env.vector``) beside their one-game route."""


def _random_legal(masks, rng):
    from cockroach_env.batched import random_legal_actions

    return random_legal_actions(np.asarray(masks), rng)


class GymnasiumOneGame(Loop):
    """``gymnasium.vector.SyncVectorEnv`` over ``MaskedSelfPlayEnv`` (one game per sub-environment)."""

    def __init__(self, num_envs: int):
        import gymnasium

        import baselines
        from cockroach_env.integrations.sb3 import MaskedSelfPlayEnv

        def make(i):
            return lambda: MaskedSelfPlayEnv(baselines.make("random", CONFIG, seed=i), seed=i, config=CONFIG)

        self.envs = gymnasium.vector.SyncVectorEnv([make(i) for i in range(num_envs)])
        self.envs.reset(seed=0)
        self.rng, self.num_envs = np.random.default_rng(0), num_envs

    def chunk(self) -> int:
        self.envs.step(_random_legal(np.stack(self.envs.call("action_masks")), self.rng))
        return self.num_envs


class GymnasiumBatched(Loop):
    def __init__(self, num_envs: int):
        from gymnasium.vector import AutoresetMode

        from cockroach_env.vector import SelfPlayVectorEnv

        self.envs = SelfPlayVectorEnv(
            num_envs, "random", seed=0, config=CONFIG, autoreset_mode=AutoresetMode.SAME_STEP
        )  # as the recipe: every step a learner decision
        self.obs, _ = self.envs.reset()
        self.rng, self.num_envs = np.random.default_rng(0), num_envs

    def chunk(self) -> int:
        self.obs, *_ = self.envs.step(_random_legal(self.obs["action_mask"], self.rng))
        return self.num_envs


class SB3OneGame(Loop):
    """``DummyVecEnv`` over ``MaskedSelfPlayEnv``, masks through ``get_action_masks``."""

    def __init__(self, num_envs: int):
        from stable_baselines3.common.vec_env import DummyVecEnv

        import baselines
        from cockroach_env.integrations.sb3 import MaskedSelfPlayEnv

        def make(i):
            return lambda: MaskedSelfPlayEnv(baselines.make("random", CONFIG, seed=i), seed=i, config=CONFIG)

        self.venv = DummyVecEnv([make(i) for i in range(num_envs)])
        self.venv.reset()
        self.rng, self.num_envs = np.random.default_rng(0), num_envs

    def chunk(self) -> int:
        from sb3_contrib.common.maskable.utils import get_action_masks

        self.venv.step(_random_legal(get_action_masks(self.venv), self.rng))
        return self.num_envs


class SB3Batched(SB3OneGame):
    def __init__(self, num_envs: int):
        from cockroach_env.integrations.sb3 import MaskedSelfPlayVecEnv

        self.venv = MaskedSelfPlayVecEnv(num_envs, "random", seed=0, config=CONFIG)
        self.venv.reset()
        self.rng, self.num_envs = np.random.default_rng(0), num_envs


class TorchRLOneGame(TorchRLLoop):
    def __init__(self, num_envs: int):
        super().__init__("cockroach")


class TorchRLBatched(Loop):
    def __init__(self, num_envs: int):
        from cockroach_env.integrations.torchrl import BatchedCockroachEnv

        self.env = BatchedCockroachEnv(batch_size=[num_envs], opponents="random", seed=0, config=CONFIG)

    def chunk(self) -> int:
        return int(self.env.rollout(10, break_when_any_done=False).numel())


class TorchRLMultiAgent(TorchRLBatched):
    """``BatchedCockroachMultiAgentEnv.rollout``: one move per game per step, every seat's observation."""

    def __init__(self, num_envs: int):
        from cockroach_env.integrations.torchrl_marl import BatchedCockroachMultiAgentEnv

        self.env = BatchedCockroachMultiAgentEnv(batch_size=[num_envs], seed=0, config=CONFIG)


ROUTES = {
    "gymnasium": (GymnasiumOneGame, GymnasiumBatched, "SyncVectorEnv(MaskedSelfPlayEnv) vs SelfPlayVectorEnv"),
    "sb3": (SB3OneGame, SB3Batched, "DummyVecEnv(MaskedSelfPlayEnv) vs MaskedSelfPlayVecEnv"),
    "torchrl": (TorchRLOneGame, TorchRLBatched, "PettingZooWrapper.rollout vs BatchedCockroachEnv.rollout"),
}


def batched(libraries: list[str], seconds: float, rounds: int, num_envs: int) -> list[dict]:
    """Each library's one-game route and batched route, interleaved over ``rounds``: steps per wall second and ratio."""
    import warnings

    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    rows = []
    for library in [name for name in libraries if name in BATCHED]:
        one, many, what = ROUTES[library]
        try:
            loops = {"one": one(num_envs), "batched": many(num_envs)}
        except ImportError as error:
            print(f"{library}: skipped ({error}); pip install '.[{library}]'", flush=True)
            continue
        # The one-game route holds num_envs envs of many Python objects each: without this, every full
        # garbage collection walks them all, slowing both routes alike by whatever the other allocates.
        gc.collect()
        gc.freeze()
        row = {"library": library, "routes": what, **_interleaved(loops, seconds, rounds, "batched", "one")}
        del loops
        gc.unfreeze()
        gc.collect()
        row["share"] = env_share(library, num_envs, seconds)
        rows.append(row)
        print(
            f"{library}: one-game {row['one']:,.0f} steps/s, batched {row['batched']:,.0f} steps/s, "
            f"ratio {row['ratio']:.1f}; env share of the training loop {100 * row['share']:.1f}%",
            flush=True,
        )
    return rows


def _interleaved(loops: dict[str, Loop], seconds: float, rounds: int, top: str, bottom: str) -> dict:
    """Run ``loops`` in turn over ``rounds``: each loop's steps per wall second, and the median and least per-round
    ratio of ``top``'s rate to ``bottom``'s.
    """
    totals = {name: [0, 0.0] for name in loops}
    ratios = []
    for _ in range(rounds):
        rates = {}
        for name, loop in loops.items():
            steps, wall, _ = loop.run(seconds / rounds)
            totals[name] = [totals[name][0] + steps, totals[name][1] + wall]
            rates[name] = steps / max(wall, 1e-9)
        ratios.append(rates[top] / rates[bottom])
    return {
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        **{name: steps / wall for name, (steps, wall) in totals.items()},
    }


def torchrl_marl(seconds: float, rounds: int, num_envs: int) -> dict:
    """``BatchedCockroachEnv`` and ``BatchedCockroachMultiAgentEnv`` rollouts, interleaved: steps per wall second."""
    import warnings

    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    loops = {"single": TorchRLBatched(num_envs), "every_seat": TorchRLMultiAgent(num_envs)}
    for loop in loops.values():  # compile and warm both before timing
        loop.chunk()
    return _interleaved(loops, seconds, rounds, "every_seat", "single")


class _Clock:
    """Seconds spent inside the wrapped calls."""

    def __init__(self):
        self.seconds = 0.0

    def wrap(self, function):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


def env_share(library: str, num_envs: int, seconds: float) -> float:
    """The env's share of the wall time of the library's own training loop on the batched route (masked PPO)."""
    clock, start = _Clock(), time.perf_counter()
    {"gymnasium": _share_gymnasium, "sb3": _share_sb3, "torchrl": _share_torchrl}[library](num_envs, seconds, clock)
    return clock.seconds / (time.perf_counter() - start)


def _share_gymnasium(num_envs: int, seconds: float, clock: _Clock) -> None:
    """The CleanRL-style masked PPO loop of docs/integrations.md (its settings), cut to ``seconds``."""
    import torch
    from gymnasium.vector import AutoresetMode
    from torch import nn

    from cockroach_env.vector import SelfPlayVectorEnv

    envs = SelfPlayVectorEnv(num_envs, "random", seed=0, config=CONFIG, autoreset_mode=AutoresetMode.SAME_STEP)
    envs.step = clock.wrap(envs.step)
    size, num_actions, num_steps = envs.single_observation_space["observation"].shape[0], envs.single_action_space.n, 32
    actor = nn.Sequential(nn.Linear(size, 128), nn.Tanh(), nn.Linear(128, num_actions))
    critic = nn.Sequential(nn.Linear(size, 128), nn.Tanh(), nn.Linear(128, 1))
    optimizer = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=3e-4, eps=1e-5)

    def act(x, mask, action=None):
        dist = torch.distributions.Categorical(logits=actor(x).masked_fill(~mask, -1e9))
        action = dist.sample() if action is None else action
        return action, dist.log_prob(action), dist.entropy(), critic(x).squeeze(-1)

    obs, _ = envs.reset(seed=0)
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        batch = []
        for _ in range(num_steps):
            x, mask = torch.as_tensor(obs["observation"]), torch.as_tensor(obs["action_mask"]).bool()
            with torch.no_grad():
                action, logprob, _, value = act(x, mask)
            obs, reward, terminated, truncated, _ = envs.step(action.numpy())
            done = torch.as_tensor(terminated | truncated, dtype=torch.float32)
            batch.append((x, mask, action, logprob, value, torch.as_tensor(reward), done))
        x, mask, action, logprob, value, reward, done = (torch.stack(part) for part in zip(*batch))
        with torch.no_grad():
            following = critic(torch.as_tensor(obs["observation"])).squeeze(-1)
        advantage, last = torch.zeros_like(reward), 0.0
        for t in reversed(range(num_steps)):
            delta = reward[t] + following * (1 - done[t]) - value[t]
            advantage[t] = last = delta + 0.95 * (1 - done[t]) * last
            following = value[t]
        returns = (advantage + value).reshape(-1)
        x, mask, action, logprob, advantage = (
            t.reshape(num_steps * num_envs, *t.shape[2:]) for t in (x, mask, action, logprob, advantage)
        )
        for _ in range(4):
            for index in torch.randperm(len(x)).split(512):
                _, new_logprob, entropy, new_value = act(x[index], mask[index], action[index])
                ratio = (new_logprob - logprob[index]).exp()
                a = (advantage[index] - advantage[index].mean()) / (advantage[index].std() + 1e-8)
                policy_loss = torch.max(-a * ratio, -a * ratio.clamp(0.8, 1.2)).mean()
                loss = policy_loss - 0.01 * entropy.mean() + 0.25 * ((new_value - returns[index]) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()


def _share_sb3(num_envs: int, seconds: float, clock: _Clock) -> None:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    from cockroach_env.integrations.sb3 import MaskedSelfPlayVecEnv

    class Deadline(BaseCallback):
        def _on_step(self) -> bool:
            return time.perf_counter() < deadline

    env = MaskedSelfPlayVecEnv(num_envs, "random", seed=0, config=CONFIG)
    env.step_wait = clock.wrap(env.step_wait)
    env.reset = clock.wrap(env.reset)
    model = MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=1024, n_epochs=4, seed=0)
    deadline = time.perf_counter() + seconds
    model.learn(10**12, callback=Deadline())


def _share_torchrl(num_envs: int, seconds: float, clock: _Clock) -> None:
    import torch
    from tensordict.nn import TensorDictModule
    from torchrl.modules import MLP, MaskedCategorical, ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE

    from cockroach_env.integrations.torchrl import BatchedCockroachEnv

    env = BatchedCockroachEnv(batch_size=[num_envs], opponents="random", seed=0, config=CONFIG)
    env._step = clock.wrap(env._step)
    env._reset = clock.wrap(env._reset)
    size, actions = env.observation_spec["observation"].shape[-1], env.action_spec.space.n
    policy = ProbabilisticActor(
        TensorDictModule(MLP(in_features=size, out_features=actions, num_cells=[128]), ["observation"], ["logits"]),
        in_keys={"logits": "logits", "mask": "action_mask"},
        distribution_class=MaskedCategorical,
        return_log_prob=True,
    )
    critic = ValueOperator(MLP(in_features=size, out_features=1, num_cells=[128]), in_keys=["observation"])
    loss = ClipPPOLoss(policy, critic)
    advantage = GAE(gamma=1.0, lmbda=0.95, value_network=critic)
    optimizer = torch.optim.Adam(loss.parameters(), lr=3e-4)
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        with torch.no_grad():
            batch = env.rollout(16, policy, break_when_any_done=False)
            advantage(batch)
        batch = batch.reshape(-1)
        for _ in range(4):
            for index in torch.randperm(len(batch)).split(1024):
                losses = loss(batch[index])
                optimizer.zero_grad()
                (losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]).backward()
                optimizer.step()


def _arguments(argv: list[str] | None) -> tuple[argparse.Namespace, list[str], list[int]]:
    """The command line, checked: the arguments, the libraries to measure and the env counts of ``sb3-learn``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="throughput: wall time per env and library")
    parser.add_argument("--rounds", type=int, default=5, help="throughput: interleaved slices")
    parser.add_argument(
        "--minutes", type=float, default=10.0, help="strength: wall-time budget of every route (default 10)"
    )
    parser.add_argument("--games", type=int, default=1000, help="strength: arena games against three heuristic")
    parser.add_argument(
        "--only", choices=("throughput", "batched", "sb3-learn", "torchrl-marl", "strength"), default=None
    )
    parser.add_argument(
        "--sb3-envs", default="16,64,256", help="sb3-learn: comma-separated numbers of envs (default 16,64,256)"
    )
    parser.add_argument("--sb3-rollouts", type=int, default=2, help="sb3-learn: rollouts per run")
    parser.add_argument(
        "--sb3-rollout-size", type=int, default=SB3_ROLLOUT, help="sb3-learn: learner decisions per rollout"
    )
    parser.add_argument(
        "--num-envs", type=int, default=1024, help="batched, torchrl-marl: sub-environments (games) of each route"
    )
    parser.add_argument(
        "--libraries", default=",".join(LIBRARIES), help="comma-separated subset of " + ",".join(LIBRARIES)
    )
    args = parser.parse_args(argv)
    libraries = [name.strip() for name in args.libraries.split(",") if name.strip()]
    unknown = sorted(set(libraries) - set(LIBRARIES))
    if unknown:
        parser.error(f"--libraries has unknown name(s) {unknown}; expected some of {list(LIBRARIES)}")
    if args.minutes <= 0 or args.seconds <= 0 or args.rounds < 1 or args.games < 4 or args.num_envs < 1:
        parser.error("--minutes and --seconds must be > 0, --rounds >= 1, --games >= 4, --num-envs >= 1")
    try:
        sb3_counts = [int(word) for word in args.sb3_envs.split(",")]
    except ValueError:
        sb3_counts = []
    size = args.sb3_rollout_size
    if not sb3_counts or min(sb3_counts) < 1 or max(sb3_counts) > size or args.sb3_rollouts < 1:
        parser.error(
            f"--sb3-envs={args.sb3_envs!r}, --sb3-rollouts={args.sb3_rollouts!r}: expected numbers of envs from 1 "
            f"to --sb3-rollout-size ({size}), comma-separated, and at least one rollout"
        )
    return args, libraries, sb3_counts


def _print_throughput(libraries: list[str], seconds: float, rounds: int) -> None:
    """Measure and print the ``throughput`` table (Markdown)."""
    rows = throughput(libraries, seconds, rounds)
    print(
        "\n| library | loop | cockroach 4p steps / CPU s | leduc_holdem_v4 steps / CPU s | ratio (median of rounds) |"
    )
    print("|---|---|---|---|---|")
    loops = {
        "rllib": "MultiAgentEnv.step",
        "sb3": "DummyVecEnv.step (learner decisions)",
        "tianshou": "Collector.collect",
        "torchrl": "rollout",
    }
    for row in rows:
        print(
            f"| {row['library']} | {loops[row['library']]} | {row['cockroach']:,.0f} | {row['leduc']:,.0f} "
            f"| {row['ratio']:.2f}× (min {row['ratio_min']:.2f}) |"
        )


def _print_batched(libraries: list[str], seconds: float, rounds: int, num_envs: int) -> None:
    """Measure and print the ``batched`` table (Markdown)."""
    rows = batched(libraries, seconds, rounds, num_envs)
    print(
        f"\n| library | routes ({num_envs} sub-environments each) | one-game route steps / s | "
        "batched route steps / s | ratio (median of rounds) | env share of the training loop |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['library']} | {row['routes']} | {row['one']:,.0f} | {row['batched']:,.0f} | "
            f"{row['ratio']:.1f}× (min {row['ratio_min']:.1f}) | {100 * row['share']:.1f}% |"
        )


def _print_torchrl_marl(seconds: float, rounds: int, num_envs: int) -> None:
    """Measure and print the ``torchrl-marl`` table (Markdown)."""
    row = torchrl_marl(seconds, rounds, num_envs)
    print(
        "\n| games | BatchedCockroachEnv steps / s (one learner decision per game) | BatchedCockroachMultiAgentEnv "
        "steps / s (one move per game) | ratio (median of rounds) |"
    )
    print("|---|---|---|---|")
    print(
        f"| {num_envs} | {row['single']:,.0f} | {row['every_seat']:,.0f} | {row['ratio']:.2f}× "
        f"(min {row['ratio_min']:.2f}) |"
    )


def _print_strength(libraries: list[str], minutes: float, games: int) -> None:
    """Train, play and print the ``strength`` table (Markdown)."""
    rows = strength(libraries, minutes, games)
    print(f"\n| route ({minutes:g} min wall time) | trained | loss rate against three heuristic | 95% CI |")
    print("|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['route']} | {row['trained']} | {100 * row['loss_rate']:.1f}% "
            f"| [{100 * row['ci'][0]:.1f}, {100 * row['ci'][1]:.1f}] |"
        )


def main(argv: list[str] | None = None) -> None:
    args, libraries, sb3_counts = _arguments(argv)
    load = os.getloadavg()[0]
    print(f"bench_integrations {time.strftime('%Y-%m-%d %H:%M')} load average {load:.2f}", flush=True)
    if args.only in (None, "throughput"):
        _print_throughput(libraries, args.seconds, args.rounds)
    if args.only in (None, "batched"):
        _print_batched(libraries, args.seconds, args.rounds, args.num_envs)
    if args.only in (None, "sb3-learn") and "sb3" in libraries:
        print_sb3_learn(sb3_counts, args.rounds, args.sb3_rollouts, args.sb3_rollout_size)
    if args.only in (None, "torchrl-marl") and "torchrl" in libraries:
        _print_torchrl_marl(args.seconds, args.rounds, args.num_envs)
    if args.only in (None, "strength"):
        _print_strength(libraries, args.minutes, args.games)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
