"""Batched engine speed: random legal play at several batch sizes, beside the single AEC env.

    python benchmarks/bench_batched.py [--seconds 1] [--sizes 1 64 1024 8192] [--backends numba numpy] [--parallel]

One step is one decision in one game: a call ``games.step(actions)`` on ``B`` games
counts ``B`` steps. The timed loop is ``actions = random_legal_actions(step.action_mask,
rng); step = games.step(actions)``: the vectorized random legal choice (compiled when
numba is installed, else ``argmax(mask * noise)``; ``--sampler argmax`` forces the latter)
is part of it, and so are the automatic re-deals of finished games. The AEC baseline is
the wrapped PettingZoo env in its ``agent_iter`` / ``last`` / ``step`` loop with a random
legal action from the mask, counting decisions only (not the dead steps after the end).
Pgx and OpenSpiel are timed on their Leduc Hold'em when importable, for scale only.
"""

from __future__ import annotations

import argparse
import os
import random
import time

import numpy as np

from cockroach_env.batched import BatchedGames, numba, random_legal_actions
from cockroach_env.config import GameConfig

RULE_SETS = {
    "classic 4p": GameConfig(num_players=4),
    "classic 6p": GameConfig(num_players=6),
    "royal 4p": GameConfig(num_players=4, edition="royal"),
}


def aec_rate(config: GameConfig, seconds: float, seed: int = 0) -> float:
    """Decisions per second of one AEC env playing random legal moves."""
    import cockroach_env

    env = cockroach_env.env(config=config)
    chooser = random.Random(seed)
    decisions, games = 0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
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
    return decisions / (time.perf_counter() - start)


def argmax_sampler(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.argmax(mask * rng.random(mask.shape, dtype=np.float32), axis=1)


def batched_rate(config: GameConfig, batch_size: int, backend: str, parallel: bool, seconds: float, sampler) -> tuple[float, int]:
    """Decisions per second of ``batch_size`` games stepped together; and bytes per game."""
    games = BatchedGames(config, batch_size, seed=0, backend=backend, parallel=parallel)
    rng = np.random.default_rng(0)
    step = games.reset()
    for _ in range(3):  # compile (first use) and warm up
        step = games.step(sampler(step.action_mask, rng))
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        step = games.step(sampler(step.action_mask, rng))
        calls += 1
    return calls * batch_size / (time.perf_counter() - start), games.bytes_per_game


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
        state = jax.tree_util.tree_map(lambda a, b: jnp.where(state.terminated.reshape((-1,) + (1,) * (a.ndim - 1)), b, a), state, fresh)
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
    parser.add_argument("--backends", nargs="+", default=["numba", "numpy"] if numba is not None else ["numpy"], choices=["numba", "numpy"])
    parser.add_argument("--parallel", action="store_true", help="also time numba's threaded kernels (numba.set_num_threads)")
    parser.add_argument("--sampler", choices=["auto", "argmax"], default="auto", help="auto: random_legal_actions; argmax: numpy argmax(mask * noise)")
    parser.add_argument("--rule-sets", nargs="+", default=list(RULE_SETS), choices=list(RULE_SETS))
    args = parser.parse_args(argv)

    sampler = random_legal_actions if args.sampler == "auto" else argmax_sampler
    sampler_name = ("compiled k-th legal entry" if numba is not None else "numpy argmax(mask * noise)") if args.sampler == "auto" else "numpy argmax(mask * noise)"
    variants = [(backend, False) for backend in args.backends]
    if args.parallel and "numba" in args.backends:
        variants.append(("numba", True))
        threads = numba.get_num_threads()
    print(f"steps/s = decisions/s over all games; random legal action selection ({sampler_name}) is inside the timed loop")
    print(f"cpus={os.cpu_count()} load average={os.getloadavg()[0]:.2f} (other processes share these cores: expect noise)")
    for name in args.rule_sets:
        config = RULE_SETS[name]
        aec = aec_rate(config, args.seconds)
        print(f"\n{name}: single AEC env {aec:,.0f} steps/s")
        header = f"{'B':>6}" + "".join(f"{(b + (f' x{threads}' if p else '')):>24}" for b, p in variants)
        print(header)
        rows = []
        for size in args.sizes:
            cells, per_game = [], 0
            for backend, parallel in variants:
                rate, per_game = batched_rate(config, size, backend, parallel, args.seconds, sampler)
                cells.append(f"{rate:>13,.0f} {rate / aec:>7.1f}x")
                rows.append((size, backend, parallel, rate))
            print(f"{size:>6}" + "".join(f"{cell:>24}" for cell in cells))
        print(f"(ratio: to the single AEC env; {per_game} bytes of game state per game)")
    spiel = openspiel_rate(args.seconds)
    print("\nOpenSpiel leduc_poker (single state):", f"{spiel:,.0f} steps/s" if spiel else "not installed; skipped (pip install open_spiel)")
    for size in args.sizes:
        rate = pgx_rate(size, args.seconds)
        if rate is None:
            print("Pgx leduc_holdem: not installed; skipped (pip install pgx)")
            break
        print(f"Pgx leduc_holdem B={size}: {rate:,.0f} steps/s")


if __name__ == "__main__":
    main()
