"""The opponent pool's snapshots in one batched pass against one forward pass each, in the real training loop.

    python benchmarks/bench_pool.py                                   # configs/classic-4p.yaml, 28 updates, 2 rounds
    python benchmarks/bench_pool.py --config configs/classic-2p.yaml --updates 30 --rounds 3

Each run trains the config synchronously (no warm start, no overlap, no evaluation) with a snapshot after every update,
so the pool fills to ``opponents.max_snapshots`` within the run; a third kind of run keeps a pool of one snapshot (the
cost of the rest of the update). The three alternate, ``--rounds`` times, in this process. Printed: the median seconds
of the last ``--last`` updates of each (the pool then full), and the ratio of the one-by-one pass to the stacked one
(``training.core.stacked.PoolSampler``). Other jobs on the same cores lower every figure; only figures of one run
compare.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = ("stacked", "one by one", "pool of one")


def run(config_path: str, overrides: list[str], updates: int, kind: str, last: int) -> tuple[float, int]:
    """The median seconds of the last ``last`` updates of one run of ``kind``, and its final pool size."""
    from training.algorithms import ppo
    from training.core.config import load_config
    from training.core.stacked import PoolSampler

    with tempfile.TemporaryDirectory() as out:
        config = load_config(
            config_path,
            [
                *overrides,
                f"output_dir={out}",
                "name=bench",
                "warm_start.teacher=null",
                "ppo.overlap=false",
                "evaluation.every=0",
                "evaluation.final_games=0",
                f"opponents.snapshot_every={updates + 1 if kind == 'pool of one' else 1}",
            ],
        )
        config.schedule.total_decisions = updates * config.ppo.num_envs * config.ppo.num_steps
        config.schedule.checkpoint_every = updates
        PoolSampler.stacked_pass = kind != "one by one"
        try:
            ppo.train(config, progress_bar=False)
        finally:
            PoolSampler.stacked_pass = True
        with open(Path(out) / "bench" / "metrics.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
    wall = [float(r["wall_seconds"]) for r in rows]
    seconds = [b - a for a, b in zip(wall, wall[1:])][-last:]
    return statistics.median(seconds), int(rows[-1]["pool_size"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "classic-4p.yaml"))
    parser.add_argument("--updates", type=int, default=28, help="updates per run (default 28)")
    parser.add_argument("--last", type=int, default=6, help="updates timed at the end of each run (default 6)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each kind (default 2)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    for name in ("updates", "last", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)} is not allowed; expected a positive integer")
    if args.last >= args.updates:
        parser.error(f"--last={args.last} is not allowed; expected fewer than --updates={args.updates}")
    import torch

    torch.set_num_threads(1)
    before = os.getloadavg()
    seconds: dict[str, list[float]] = {kind: [] for kind in KINDS}
    pools: dict[str, int] = {}
    for _ in range(args.rounds):
        for kind in KINDS:
            value, pools[kind] = run(args.config, args.overrides, args.updates, kind, args.last)
            seconds[kind].append(value)
    print(f"config: {args.config} {' '.join(args.overrides)}; {args.updates} updates x {args.rounds} rounds per kind")
    print(f"load average before: {before[0]:.2f}, after: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    print("| pass | pool at the end | seconds per update (median of the last updates) |")
    print("|---|---|---|")
    medians = {kind: statistics.median(values) for kind, values in seconds.items()}
    for kind in KINDS:
        print(f"| {kind} | {pools[kind]} | {medians[kind]:.3f} |")
    pool_cost = {kind: medians[kind] - medians["pool of one"] for kind in ("stacked", "one by one")}
    print(
        f"one by one / stacked: {medians['one by one'] / medians['stacked']:.2f}x per update; the full pool's cost "
        f"beyond a pool of one: {pool_cost['one by one'] * 1000:.0f} ms one by one, {pool_cost['stacked'] * 1000:.0f} "
        "ms stacked"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
