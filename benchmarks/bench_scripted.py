"""Speed of the compiled scripted agents beside their numpy reference, in one run.

    python benchmarks/bench_scripted.py                    # 4-player classic, batches of 4,096, vector env of 2,048
    python benchmarks/bench_scripted.py --batch 1024 --num-envs 256 --seconds 1 --rounds 3

Two measures, each side by side, interleaved over ``--rounds`` rounds (medians printed):

* **decisions/s** of ``heuristic``, ``honest`` and ``bluffer`` (compiled, the default, and
  ``backend="numpy"``) and of ``random``, deciding batches of ``--batch`` observations of
  played games (as in the arena), per second of wall time and per second of this
  process's CPU time; and ``act`` on one observation, in microseconds;
* **learner steps/s** of ``SelfPlayVectorEnv`` with ``--num-envs`` games, the learner
  playing its first legal action, against 3 ``random``, 3 ``heuristic`` and 3 numpy
  ``heuristic`` opponents.

Targets (4-player classic): ``heuristic`` at least 1,000,000 decisions per CPU-second at
a batch of 4,096 on one core, and the vector env against 3 ``heuristic`` at least a third
of its steps/s against 3 ``random``. The compiled kernels run on one thread (they do not
spread over cores); ``NUMBA_NUM_THREADS`` is set to 1 for the engine too unless given.
Other jobs on the same cores lower every figure; CPU-seconds are less affected than wall
time (the vector env's rates are given both ways), and only figures of the same run compare.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from baselines import BlufferAgent, HeuristicAgent, HonestAgent, RandomAgent  # noqa: E402
from cockroach_env.batched import BatchedGames  # noqa: E402
from cockroach_env.config import GameConfig  # noqa: E402
from cockroach_env.vector import SelfPlayVectorEnv  # noqa: E402

AGENTS = {
    "heuristic": lambda config, backend: HeuristicAgent(config, seed=0, backend=backend),
    "honest": lambda config, backend: HonestAgent(config, seed=0, backend=backend),
    "bluffer": lambda config, backend: BlufferAgent(config, seed=0, backend=backend),
}


def played_batches(config: GameConfig, batch: int, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``count`` batches of (observations, masks) from games of ``heuristic`` against itself."""
    games = BatchedGames(config, batch_size=batch, seed=0)
    step = games.reset()
    player = HeuristicAgent(config, seed=0)
    batches = []
    for _ in range(count * 3):  # a few moves between kept batches: every phase of the game
        if len(batches) < count and _ % 3 == 2:
            batches.append((step.observation, step.action_mask))
        step = games.step(player.act_batch(step.observation, step.action_mask))
    return batches


def decisions_per_second(agent, batches, seconds: float) -> tuple[float, float]:
    """(decisions per wall second, per CPU second) of ``agent.act_batch`` cycling over ``batches`` for ``seconds``."""
    decisions = 0
    wall, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < seconds:
        for observations, masks in batches:
            agent.act_batch(observations, masks)
            decisions += len(masks)
    return decisions / (time.perf_counter() - wall), decisions / max(time.process_time() - cpu, 1e-9)


def act_microseconds(agent, observation: dict, repeats: int) -> float:
    """Median over 5 tries of the mean time of ``agent.act(observation)``, in microseconds."""
    times = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(repeats):
            agent.act(observation)
        times.append((time.perf_counter() - started) / repeats * 1e6)
    return statistics.median(times)


def vector_steps_per_second(env: SelfPlayVectorEnv, seconds: float) -> tuple[float, float]:
    """(learner steps per wall second, per CPU second) of ``env``, the learner playing its first legal action."""
    observation, _ = env.reset(seed=0)
    steps = 0
    started, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - started < seconds:
        observation, *_ = env.step(np.argmax(observation["action_mask"], axis=1))
        steps += env.num_envs
    return steps / (time.perf_counter() - started), steps / max(time.process_time() - cpu, 1e-9)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default=None, help="rule set (default 4-player classic)")
    parser.add_argument("--batch", type=int, default=4096, help="observations per act_batch call (default 4096)")
    parser.add_argument("--num-envs", type=int, default=2048, help="games of the vector env (default 2048)")
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measure and round (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are printed (default 3)")
    args = parser.parse_args(argv)
    config = GameConfig.from_options(preset=args.preset)
    print(f"{config.num_players}-player {config.edition}, batch {args.batch:,}, {args.num_envs:,} vector games, "
          f"NUMBA_NUM_THREADS={os.environ['NUMBA_NUM_THREADS']}, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    batches = played_batches(config, args.batch, 4)
    one = {"observation": batches[0][0][0], "action_mask": batches[0][1][0]}
    agents = {
        f"{name} {backend}": make(config, backend) for name, make in AGENTS.items() for backend in ("numba", "numpy")
    }
    agents["random"] = RandomAgent(config, seed=0)
    for agent in agents.values():  # compile (or load from numba's cache) before measuring
        agent.act_batch(*batches[0])
        agent.act(one)
    rates = {name: [] for name in agents}
    act = {name: [] for name in agents}
    for _ in range(args.rounds):
        for name, agent in agents.items():
            rates[name].append(decisions_per_second(agent, batches, args.seconds))
            act[name].append(act_microseconds(agent, one, repeats=20 if "numpy" in name else 200))
    print("\n| agent | decisions/s (wall) | decisions/CPU-s | act on one observation (µs) |\n|---|---|---|---|")
    medians = {}
    for name in agents:
        wall = statistics.median(r[0] for r in rates[name])
        cpu = statistics.median(r[1] for r in rates[name])
        medians[name] = (wall, cpu, statistics.median(act[name]))
        print(f"| {name} | {wall:,.0f} | {cpu:,.0f} | {medians[name][2]:,.1f} |")
    for name in AGENTS:
        fast, slow = medians[f"{name} numba"], medians[f"{name} numpy"]
        print(
            f"{name}: compiled / numpy = {fast[0] / slow[0]:.1f}x decisions/s (wall), {fast[1] / slow[1]:.1f}x per "
            f"CPU-s; act {slow[2] / fast[2]:.1f}x faster"
        )
    cpu = medians["heuristic numba"][1]
    print(f"target: heuristic >= 1,000,000 decisions/CPU-s at a batch of 4,096: {cpu:,.0f} "
          f"{'met' if cpu >= 1e6 else 'missed'}")  # fmt: skip

    tables = {
        "3x random": "random",
        "3x heuristic": "heuristic",
        "3x heuristic (numpy)": HeuristicAgent(config, seed=0, backend="numpy"),
    }
    envs = {name: SelfPlayVectorEnv(args.num_envs, table, seed=0, config=config) for name, table in tables.items()}
    for env in envs.values():
        vector_steps_per_second(env, 0.0)
    steps = {name: [] for name in envs}
    for _ in range(args.rounds):
        for name, env in envs.items():
            steps[name].append(vector_steps_per_second(env, args.seconds))
    print(
        f"\n| SelfPlayVectorEnv, {args.num_envs:,} games | learner steps/s (wall) | x 3x random | learner steps/CPU-s "
        "| x 3x random |\n|---|---|---|---|---|"
    )
    wall = {name: statistics.median(r[0] for r in steps[name]) for name in envs}
    cpu = {name: statistics.median(r[1] for r in steps[name]) for name in envs}
    for name in envs:
        print(
            f"| {name} | {wall[name]:,.0f} | {wall[name] / wall['3x random']:.3f} | {cpu[name]:,.0f} | "
            f"{cpu[name] / cpu['3x random']:.3f} |"
        )
    for unit, rates in (("wall", wall), ("CPU", cpu)):
        share = rates["3x heuristic"] / rates["3x random"]
        print(f"target: 3x heuristic >= 1/3 of 3x random's steps/s ({unit}): {share:.3f} "
              f"{'met' if share >= 1 / 3 else 'missed'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
