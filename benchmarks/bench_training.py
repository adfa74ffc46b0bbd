"""End-to-end training throughput: environment decisions per second of ``cockroach-train``.

Runs the real training loop (rollout on the batched engine with the opponent mix of
the config, GAE, PPO update, logs) for a fixed number of updates, with periodic
evaluation switched off, and reports decisions per second over the updates after the
first (which includes compiling the batched engine) and over the whole run.

    python benchmarks/bench_training.py                         # configs/ppo_4p.yaml, 30 updates
    python benchmarks/bench_training.py --config configs/ppo_2p.yaml --updates 20
    python benchmarks/bench_training.py --set model.hidden_sizes=[256,256]

Target (issue 6): at least 20,000 decisions per second for configs/ppo_4p.yaml on a
2-core machine. The machine's load average is printed, since other processes on the
same cores lower the figure.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET = 20_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "ppo_4p.yaml"))
    parser.add_argument("--updates", type=int, default=30, help="PPO updates to run (default 30)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)

    from training.config import load_config
    from training.ppo import train

    with tempfile.TemporaryDirectory() as out:
        config = load_config(args.config, [*args.overrides, f"output_dir={out}", "name=bench", "evaluation.every=0", "evaluation.final_games=0"])
        per_update = config.ppo.num_envs * config.ppo.num_steps
        config.schedule.total_decisions = args.updates * per_update
        config.schedule.checkpoint_every = args.updates
        config.schedule.time_limit_minutes = None
        load_before = os.getloadavg()
        started = time.perf_counter()
        train(config, progress_bar=False)
        total = time.perf_counter() - started
        with open(Path(out) / "bench" / "metrics.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
    seconds = [float(r["wall_seconds"]) for r in rows]
    steady = (len(rows) - 1) * per_update / (seconds[-1] - seconds[0]) if len(rows) > 1 else float("nan")
    game = config.game_config()
    print(f"config: {args.config} ({game.num_players}-player {game.edition}), network {config.model.hidden_sizes}, "
          f"{config.ppo.num_envs} games x {config.ppo.num_steps} steps per update, {config.ppo.update_epochs} epochs, torch threads {config.torch_threads}")
    print(f"cpu cores: {os.cpu_count()}, load average before: {load_before[0]:.2f}, after: {os.getloadavg()[0]:.2f}")
    print(f"updates: {len(rows)}, decisions: {len(rows) * per_update:,}, samples (learner decisions): {int(rows[-1]['samples']):,}")
    print(f"end to end, after the first update: {steady:,.0f} decisions/s")
    print(f"end to end, whole run incl. start-up and checkpoint: {len(rows) * per_update / total:,.0f} decisions/s ({total:.1f} s)")
    print(f"target {TARGET:,} decisions/s: {'met' if steady >= TARGET else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
