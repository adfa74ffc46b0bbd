"""Batched engine speed: random legal play at several batch sizes, beside the single AEC env.

    python benchmarks/bench_batched.py [--seconds 1] [--sizes 1 64 1024 8192]
        [--variants numba numba-threads numpy] [--rule-sets "classic 4p" "classic 6p" "royal 4p"]
    python benchmarks/bench_batched.py --rule-sets "classic 4p recall" "royal 4p recall" --sizes 1 64 256

One step is one decision in one game: a call ``games.step(actions)`` on ``B`` games
counts ``B`` steps. The timed loop is the public API as a training loop uses it::

    actions = random_legal_actions(step.action_mask, rng)   # uniform over each game's legal actions
    step = games.step(actions)                               # fresh output arrays, finished games re-dealt

so the random legal choice (compiled when numba is installed, else ``argmax(mask *
noise)``; ``--sampler argmax`` forces the latter) and the automatic re-deals are inside
it; the ``sampler`` column is its share of the loop. Every rate is given twice: per
second of wall time, and per second of CPU time of this process (``time.process_time``,
all threads). The machine may be shared: wall rates drop under load, CPU-time rates
much less, so the load average is printed before and after. ``numba-threads`` is
``parallel=True`` for both the engine and the sampler, on numba's threads, timed from
``PARALLEL_MIN_GAMES`` games on (smaller batches run the serial kernels). It only pays
where the cores are free, and there it depends on the threading layer (printed at the
end; ``NUMBA_THREADING_LAYER`` picks it): see ``BatchedGames``.

The AEC baseline is the wrapped PettingZoo env in its ``agent_iter`` / ``last`` /
``step`` loop with a random legal action from the mask, counting decisions only (not
the dead steps after the end), timed in the same run; ratios are wall to wall and CPU
to CPU. Pgx and OpenSpiel are timed on their Leduc Hold'em when importable, for scale only.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from dataclasses import dataclass

import numpy as np

from cockroach_env.batched import PARALLEL_MIN_GAMES, BatchedGames, random_legal_actions
from cockroach_env.batched.numba_kernels import numba
from cockroach_env.config import GameConfig

RULE_SETS = {
    "classic 4p": GameConfig(num_players=4),
    "classic 6p": GameConfig(num_players=6),
    "royal 4p": GameConfig(num_players=4, edition="royal"),
    "classic 4p recall": GameConfig(num_players=4, recall=True),
    "royal 4p recall": GameConfig(num_players=4, edition="royal", recall=True),
    "classic 4p history16": GameConfig(num_players=4, history=16),
    "classic 4p history32": GameConfig(num_players=4, history=32),
}
DEFAULT_RULE_SETS = ["classic 4p", "classic 6p", "royal 4p"]
"""Run without ``--rule-sets``; the ``recall`` ones (``GameConfig.recall``, observations of 24k and 47k floats) on
request.
"""
VARIANTS = {"numba": ("numba", False), "numba-threads": ("numba", True), "numpy": ("numpy", False)}


@dataclass
class Rate:
    """Steps per second of wall time and of process CPU time; the sampler's share of the wall time."""

    wall: float
    cpu: float
    sampler: float = 0.0

    @property
    def cores(self) -> float:
        return self.wall / self.cpu


class Clock:
    """Wall and process CPU time since ``start``."""

    def __init__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def rate(self, steps: int, sampler: float = 0.0) -> Rate:
        wall, cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu
        return Rate(steps / wall, steps / cpu, sampler / wall)


def aec_rate(config: GameConfig, seconds: float, seed: int = 0) -> Rate:
    """Decisions per second of one AEC env playing random legal moves."""
    import cockroach_env

    env = cockroach_env.env(config=config)
    chooser = random.Random(seed)
    decisions, games = 0, 0
    clock = Clock()
    while time.perf_counter() - clock.wall < seconds:
        env.reset(seed=seed + games)
        games += 1
        for _agent in env.agent_iter():
            observation, _reward, terminated, truncated, _info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = observation["action_mask"].nonzero()[0]
            env.step(int(legal[chooser.randrange(len(legal))]))
            decisions += 1
    return clock.rate(decisions)


def argmax_sampler(mask: np.ndarray, rng: np.random.Generator, parallel: bool = False) -> np.ndarray:
    return np.argmax(mask * rng.random(mask.shape, dtype=np.float32), axis=1)


def batched_rate(
    config: GameConfig, batch_size: int, backend: str, parallel: bool, seconds: float, sampler
) -> tuple[Rate, int]:
    """Decisions per second of ``batch_size`` games stepped together; and bytes per game."""
    games = BatchedGames(config, batch_size, seed=0, backend=backend, parallel=parallel)
    rng = np.random.default_rng(0)
    step = games.reset()
    for _ in range(3):  # compile (first use) and warm up
        step = games.step(sampler(step.action_mask, rng, parallel))
    calls, sampling = 0, 0.0
    clock = Clock()
    while time.perf_counter() - clock.wall < seconds:
        start = time.perf_counter()
        actions = sampler(step.action_mask, rng, parallel)
        sampling += time.perf_counter() - start
        step = games.step(actions)
        calls += 1
    return clock.rate(calls * batch_size, sampling), games.bytes_per_game


def openspiel_rate(seconds: float) -> float | None:
    try:
        import pyspiel
    except ImportError:
        return None
    game, chooser = pyspiel.load_game("leduc_poker"), random.Random(0)
    decisions, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes())
                state.apply_action(chooser.choices(outcomes, probs)[0])
            else:
                state.apply_action(chooser.choice(state.legal_actions()))
                decisions += 1
    return decisions / (time.perf_counter() - start)


def pgx_rate(batch_size: int, seconds: float) -> float | None:
    try:
        import jax
        import jax.numpy as jnp
        import pgx
    except ImportError:
        return None
    env = pgx.make("leduc_holdem")
    init, step = jax.jit(jax.vmap(env.init)), jax.jit(jax.vmap(env.step))

    @jax.jit
    def play(state, key):
        key, choose, reset = jax.random.split(key, 3)
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(choose, logits, axis=-1)
        state = step(state, action)
        fresh = init(jax.random.split(reset, batch_size))
        state = jax.tree_util.tree_map(
            lambda a, b: jnp.where(state.terminated.reshape((-1,) + (1,) * (a.ndim - 1)), b, a), state, fresh
        )
        return state, key

    key = jax.random.PRNGKey(0)
    state = init(jax.random.split(key, batch_size))
    state, key = play(state, key)
    jax.block_until_ready(state)
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        state, key = play(state, key)
        calls += 1
    jax.block_until_ready(state)
    return calls * batch_size / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="wall time per measurement")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024, 8192], help="batch sizes B")
    default_variants = list(VARIANTS) if numba is not None else ["numpy"]
    parser.add_argument(
        "--variants",
        nargs="+",
        default=default_variants,
        choices=list(VARIANTS),
        help="backends; numba-threads is numba with parallel=True",
    )
    parser.add_argument(
        "--sampler",
        choices=["auto", "argmax"],
        default="auto",
        help="auto: random_legal_actions; argmax: numpy argmax(mask * noise)",
    )
    parser.add_argument("--rule-sets", nargs="+", default=DEFAULT_RULE_SETS, choices=list(RULE_SETS))
    args = parser.parse_args(argv)
    if numba is None and any(VARIANTS[v][0] == "numba" for v in args.variants):
        parser.error("the numba variants need numba (pip install numba)")

    sampler = random_legal_actions if args.sampler == "auto" else argmax_sampler
    sampler_name = (
        "compiled, rejection then rank"
        if numba is not None and args.sampler == "auto"
        else "numpy argmax(mask * noise)"
    )
    print("steps/s = decisions/s over all games, per second of wall time and per second of this process's CPU time;")
    print(f"the timed loop is random_legal_actions ({sampler_name}) + games.step, re-deals included.")
    threads = f"{numba.get_num_threads()} numba threads" if numba is not None else "no numba"
    print(
        f"cpus={os.cpu_count()}, {threads}, load average {os.getloadavg()[0]:.2f} at start "
        "(other processes share these cores)"
    )
    for name in args.rule_sets:
        config = RULE_SETS[name]
        aec = aec_rate(config, args.seconds)
        print(f"\n{name}: single AEC env {aec.wall:,.0f} steps/s wall, {aec.cpu:,.0f} per CPU-second")
        print(
            f"{'B':>6} {'variant':>14} {'steps/s wall':>14} {'x AEC':>7} {'per CPU-s':>12} {'x AEC':>7} "
            f"{'cores':>6} {'sampler':>8}"
        )
        per_game = 0
        for size in args.sizes:
            for variant in args.variants:
                backend, parallel = VARIANTS[variant]
                if parallel and size < PARALLEL_MIN_GAMES:  # runs the serial kernels: the numba row
                    continue
                rate, per_game = batched_rate(config, size, backend, parallel, args.seconds, sampler)
                print(
                    f"{size:>6} {variant:>14} {rate.wall:>14,.0f} {rate.wall / aec.wall:>6.1f}x "
                    f"{rate.cpu:>12,.0f} {rate.cpu / aec.cpu:>6.1f}x"
                    f" {rate.cores:>6.2f} {rate.sampler:>7.0%}"
                )
        print(f"({per_game} bytes of game state per game)")
    layer = ""
    if numba is not None and "numba-threads" in args.variants:
        try:
            layer = f"; numba threading layer {numba.threading_layer()}"
        except ValueError:  # not started
            pass
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end{layer}")
    spiel = openspiel_rate(args.seconds)
    print(
        "OpenSpiel leduc_poker (single state):",
        f"{spiel:,.0f} steps/s" if spiel else "not installed; skipped (pip install open_spiel)",
    )
    for size in args.sizes:
        rate = pgx_rate(size, args.seconds)
        if rate is None:
            print("Pgx leduc_holdem: not installed; skipped (pip install pgx)")
            break
        print(f"Pgx leduc_holdem B={size}: {rate:,.0f} steps/s")


if __name__ == "__main__":
    main()
