"""AEC speed: random legal games through the wrapped PettingZoo env, side by side with
PettingZoo's Leduc and Texas Hold'em (rlcard-based), in one run.

    python benchmarks/bench_aec.py [--seconds 5] [--players 4]

Every env runs the same loop: ``agent_iter`` / ``last`` / pick a uniformly random legal
action from the mask / ``step``. One step is one ``env.step`` call (dead steps at the
end of a game included, as the loop makes them for every env). Peers are skipped with
a note when not installed (``pip install rlcard pygame``).
"""

from __future__ import annotations

import argparse
import random
import time


def play(make_env, seconds: float, seed: int = 0) -> tuple[float, int]:
    """Steps per second of random legal play, and the number of games played."""
    env = make_env()
    chooser = random.Random(seed)  # seeded, injected: same cost for every env
    steps = games = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.reset(seed=seed + games)
        games += 1
        for agent in env.agent_iter():
            observation, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                action = None
            else:
                legal = observation["action_mask"].nonzero()[0]
                action = int(legal[chooser.randrange(len(legal))])
            env.step(action)
            steps += 1
    return steps / (time.perf_counter() - start), games


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="wall time per env")
    parser.add_argument("--players", type=int, default=4)
    args = parser.parse_args(argv)

    import cockroach_env

    contenders = [
        (f"cockroach_poker classic {args.players}p", lambda: cockroach_env.env(num_players=args.players)),
        (f"cockroach_poker royal {args.players}p", lambda: cockroach_env.env(num_players=args.players, edition="royal")),
    ]
    try:
        from pettingzoo.classic import leduc_holdem_v4, texas_holdem_v4

        contenders += [("pettingzoo leduc_holdem_v4", leduc_holdem_v4.env), ("pettingzoo texas_holdem_v4", texas_holdem_v4.env)]
    except Exception as error:  # rlcard or pygame missing
        print(f"note: PettingZoo Hold'em envs unavailable ({error}); install with pip install rlcard pygame")

    results = {}
    for name, make in contenders:
        rate, games = play(make, args.seconds)
        results[name] = rate
        print(f"{name:32s} {rate:12,.0f} steps/s   ({games} games)")
    leduc = results.get("pettingzoo leduc_holdem_v4")
    if leduc:
        print()
        for name, rate in results.items():
            print(f"{name:32s} {rate / leduc:8.2f}x leduc_holdem_v4")


if __name__ == "__main__":
    main()
