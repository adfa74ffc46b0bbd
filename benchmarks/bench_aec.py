"""AEC speed: random legal games through the wrapped PettingZoo env, side by side with
PettingZoo's Leduc and Texas Hold'em (rlcard-based), in one run.

    python benchmarks/bench_aec.py [--seconds 20] [--rounds 10] [--players 4]

Every env runs the same loop: ``agent_iter`` / ``last`` / pick a uniformly random legal
action from the mask / ``step``. One step is one ``env.step`` call (the dead steps at
the end of a game included, as the loop makes them for every env). The contenders take
turns in short slices over several rounds, so a change in machine load hits them all
alike; the ratio printed is the median of the per-round ratios of steps per CPU
second of this process (wall-clock rates are printed too; on a busy machine they
measure the other jobs as much as the env). Peers are skipped with
a note when not installed (``pip install rlcard pygame``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time


class Runner:
    """Plays random legal games on one env, a time slice at a time."""

    def __init__(self, make_env, seed: int = 0):
        self.env = make_env()
        self.chooser = random.Random(seed)  # seeded and injected: the same cost for every env
        self.seed = seed
        self.games = 0

    def run(self, seconds: float) -> tuple[int, float, float]:
        """Play whole games for about ``seconds``; return (steps, wall seconds, CPU seconds)."""
        env, chooser = self.env, self.chooser
        steps = 0
        cpu = time.process_time()
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            env.reset(seed=self.seed + self.games)
            self.games += 1
            for _agent in env.agent_iter():
                observation, reward, terminated, truncated, info = env.last()
                if terminated or truncated:
                    action = None
                else:
                    legal = observation["action_mask"].nonzero()[0]
                    action = int(legal[chooser.randrange(len(legal))])
                env.step(action)
                steps += 1
        return steps, time.perf_counter() - start, time.process_time() - cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="total wall time per env")
    parser.add_argument("--rounds", type=int, default=10, help="slices per env, interleaved")
    parser.add_argument("--players", type=int, default=4)
    args = parser.parse_args(argv)

    import cockroach_env

    contenders = {
        f"cockroach_poker classic {args.players}p": lambda: cockroach_env.env(num_players=args.players),
        f"cockroach_poker royal {args.players}p": lambda: cockroach_env.env(num_players=args.players, edition="royal"),
    }
    reference = "pettingzoo leduc_holdem_v4"
    try:
        from pettingzoo.classic import leduc_holdem_v4, texas_holdem_v4

        contenders[reference] = leduc_holdem_v4.env
        contenders["pettingzoo texas_holdem_v4"] = texas_holdem_v4.env
    except Exception as error:  # rlcard or pygame missing
        print(f"note: PettingZoo Hold'em envs unavailable ({error}); install with pip install rlcard pygame")

    runners = {name: Runner(make) for name, make in contenders.items()}
    totals = {name: [0, 0.0, 0.0] for name in runners}
    per_round: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(args.rounds):
        for name, runner in runners.items():
            steps, wall, cpu = runner.run(args.seconds / args.rounds)
            totals[name][0] += steps
            totals[name][1] += wall
            totals[name][2] += cpu
            per_round[name].append(steps / cpu)

    print(
        f"{'env':32s} {'steps/CPU s':>12s} {'steps/wall s':>13s} {'games':>7s}  "
        f"{'x ' + reference.split()[-1] + ' (CPU)':>24s}"
    )
    for name, (steps, wall, cpu) in totals.items():
        if reference in per_round:
            ratios = [a / b for a, b in zip(per_round[name], per_round[reference])]
            ratio = f"{statistics.median(ratios):8.2f}x (min {min(ratios):.2f})"
        else:
            ratio = "n/a"
        print(f"{name:32s} {steps / cpu:12,.0f} {steps / wall:13,.0f} {runners[name].games:7d}  {ratio:>24s}")


if __name__ == "__main__":
    main()
