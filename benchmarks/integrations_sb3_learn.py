"""``bench_integrations.py --only sb3-learn``: ``MaskablePPO.learn`` end to end on the two SB3 routes, side by side
(a module of its own, as ``integrations_strength.py`` is).
"""

from __future__ import annotations

import statistics
import time

from cockroach_env import GameConfig

CONFIG = GameConfig(num_players=4)


SB3_ROLLOUT = 2048
"""Learner decisions per ``MaskablePPO`` rollout in ``sb3_learn`` (``n_steps = SB3_ROLLOUT // num_envs``)."""


def _sb3_learn_rate(route: str, num_envs: int, opponent: str, rollouts: int, rollout: int) -> float:
    """Learner decisions per wall second of ``MaskablePPO.learn`` for ``rollouts`` rollouts (and their updates)."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    import baselines
    from cockroach_env.integrations.sb3 import MaskedSelfPlayEnv, MaskedSelfPlayVecEnv

    if route == "batched":
        env = MaskedSelfPlayVecEnv(num_envs, opponent, seed=0, config=CONFIG)
    else:

        def make(i):
            return lambda: MaskedSelfPlayEnv(baselines.make(opponent, CONFIG, seed=i), seed=i, config=CONFIG)

        env = DummyVecEnv([make(i) for i in range(num_envs)])
    n_steps = max(1, rollout // num_envs)
    model = MaskablePPO("MlpPolicy", VecMonitor(env), n_steps=n_steps, batch_size=256, n_epochs=4, seed=0)
    start = time.perf_counter()
    model.learn(rollouts * n_steps * num_envs)
    return model.num_timesteps / (time.perf_counter() - start)


def sb3_learn(counts: list[int], rounds: int, rollouts: int, rollout: int = SB3_ROLLOUT) -> list[dict]:
    """``MaskablePPO.learn`` on ``DummyVecEnv(MaskedSelfPlayEnv)`` and on ``MaskedSelfPlayVecEnv``, side by side.

    For each opponent (three ``random``, three ``heuristic``) and number of envs, both routes
    learn ``rollouts`` rollouts of ``rollout`` learner decisions (``n_steps = rollout /
    num_envs``, ``batch_size=256``, ``n_epochs=4``, ``VecMonitor``), alternating, over
    ``rounds`` rounds; the ratio is the median of the per-round ratios of decisions per wall
    second.
    """
    import warnings

    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    rows = []
    for opponent in ("random", "heuristic"):
        for num_envs in counts:
            rates: dict[str, list[float]] = {"one": [], "batched": []}
            for _ in range(rounds):
                for route in rates:
                    rates[route].append(_sb3_learn_rate(route, num_envs, opponent, rollouts, rollout))
            ratios = [b / o for b, o in zip(rates["batched"], rates["one"])]
            row = {
                "opponent": opponent,
                "num_envs": num_envs,
                "one": statistics.median(rates["one"]),
                "batched": statistics.median(rates["batched"]),
                "ratio": statistics.median(ratios),
                "ratio_min": min(ratios),
            }
            rows.append(row)
            print(
                f"sb3 learn, {num_envs} envs against three {opponent}: DummyVecEnv {row['one']:,.0f}, "
                f"MaskedSelfPlayVecEnv {row['batched']:,.0f} decisions/s, ratio {row['ratio']:.1f}",
                flush=True,
            )
    return rows


def print_sb3_learn(sb3_counts: list[int], rounds: int, rollouts: int, size: int) -> None:
    """Measure and print the ``sb3-learn`` table (Markdown)."""
    rows = sb3_learn(sb3_counts, rounds, rollouts, size)
    print(
        "\n| opponents | envs | DummyVecEnv(MaskedSelfPlayEnv) decisions / s | MaskedSelfPlayVecEnv decisions / s "
        "| ratio (median of rounds) |"
    )
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| three {row['opponent']} | {row['num_envs']} | {row['one']:,.0f} | {row['batched']:,.0f} "
            f"| {row['ratio']:.1f}× (min {row['ratio_min']:.1f}) |"
        )
