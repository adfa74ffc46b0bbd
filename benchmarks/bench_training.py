"""End-to-end training throughput: environment decisions per second of ``cockroach-train``.

Runs the real training loop (rollout on the batched engine with the opponent mix of
the config, GAE, PPO update, logs) for a fixed number of updates, with periodic
evaluation switched off, and reports decisions per second over the updates after the
first (which includes compiling the batched engine) and over the whole run.

    python benchmarks/bench_training.py                         # configs/research/ppo_4p.yaml, 30 updates
    python benchmarks/bench_training.py --config configs/research/ppo_2p.yaml --updates 20
    python benchmarks/bench_training.py --set model.hidden_sizes=[256,256]

Target: at least 50,000 decisions per second for configs/research/ppo_4p.yaml
on a 2-core machine. The machine's load average is printed, since other processes on the
same cores lower the figure.

``--compare [REF ...]`` measures the code at each git ``REF`` (default: commit 1f10436,
before the compiled kernels and the overlapped update) and this tree, each serially and, where it has it, with
``ppo.overlap`` (the next rollout collected in a second thread while the update runs),
alternately, each run in a fresh process, ``--rounds`` times, and prints the medians
and their ratios to the first ``REF``; with other
jobs on the same cores, only interleaved figures compare (and overlap has no second
core to use). ``--profile`` prints where the time
of the training loop goes (engine, network inference, action sampling, opponents, GAE,
update), measured with ``cProfile`` on the real loop:

    python benchmarks/bench_training.py --compare --rounds 3 --updates 20
    python benchmarks/bench_training.py --profile --updates 12
    python benchmarks/bench_training.py --update-ab --rounds 7   # one PPO update: tensor operations vs compiled pass

``--history K`` trains the config as it is (the MLP over the default observation) and with a
history window of ``K`` moves read by the history-aware network (``model.event_embedding``,
``--event-embedding``), alternately in fresh processes, and prints both decisions/s and
their ratio (the target: the history-aware path at least half the MLP's):

    python benchmarks/bench_training.py --history 8 --event-pooling --rounds 3 --updates 20

``--workers N [N ...]`` plays the rollouts on N Ray workers of a local cluster and prints the rollout's decisions/s,
the learner's share of each update and the scaling model of docs/scaling.md fitted to them
(``benchmarks/bench_rollout_workers.py``):

    python benchmarks/bench_training.py --workers 1 2 --rounds 3 --updates 10

``--windows K [K ...]`` trains the config with each history window (``game.history=K``; 0: none), read
by the same network (``--event-embedding E`` for the windows, 0: the MLP over the whole observation),
alternately in fresh processes, ``--rounds`` times, and prints the medians and each window's ratio
to the one before it (the target: 8 moves at least 80% of no window, 32 at least 80% of 8):

    python benchmarks/bench_training.py --windows 0 8 16 32 --event-embedding 0 --rounds 3 --updates 12

``--learning DECISIONS [DECISIONS ...]`` trains the config twice for each number of decisions
(and each of ``--train-seeds``),
without and with ``ppo.overlap`` (whose rollouts play weights one update old), and
measures both agents against N-1 ``heuristic`` in the arena: what the policy lag costs.

    python benchmarks/bench_training.py --learning 3000000 5000000 --train-seeds 1 2 --games 2000

``--strength CHECKPOINT`` measures the strength targets of a trained checkpoint in the
arena instead (seat rotation, duplicate deals, 95% Wilson intervals):

    python benchmarks/bench_training.py --strength classic-4p --games 4000
    python benchmarks/bench_training.py --strength classic-2p --games 4000

The strength targets: classic 4 players, a loss rate <= 8% against three
``heuristic``, <= 3% against three ``random``, and a ``heuristic`` among three copies of
the agent loses >= 40%; classic 2 players, the agent wins >= 80% against ``heuristic``;
every other table, at most half of parity's loss rate against N-1 ``heuristic``. All: a
clearly non-zero false-claim rate, and call accuracy above ``heuristic``'s in the same
match.

``--exploit CHECKPOINT`` measures the exploitability target: ``cockroach-exploit``
trains a best response against the frozen checkpoint (``--decisions``, default 5 M)
and the target is a best-response loss rate within 5 points of parity:

    python benchmarks/bench_training.py --exploit classic-4p --decisions 5000000 --games 4000
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

from bench_rollout_workers import add_workers_options, workers_scaling  # noqa: E402

TARGET = 50_000
BASELINE = "1f10436"
"""The reference commit of ``--compare``: before the compiled kernels and the overlapped update."""


def build_parser() -> argparse.ArgumentParser:
    """The command line: the throughput of the training loop by default, or one of the other measurements."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "research" / "ppo_4p.yaml"))
    parser.add_argument("--updates", type=int, default=30, help="PPO updates to run (default 30)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--strength",
        metavar="CHECKPOINT",
        help="measure the strength targets of a checkpoint instead of the throughput",
    )
    parser.add_argument("--games", type=int, default=4000, help="games per match for --strength (default 4000)")
    parser.add_argument("--seed", type=int, default=0, help="arena seed for --strength (default 0)")
    exploit_help = "measure the exploitability target of a checkpoint instead of the throughput"
    parser.add_argument("--exploit", metavar="CHECKPOINT", help=exploit_help)
    parser.add_argument(
        "--decisions", type=int, default=5_000_000, help="best-response budget for --exploit (default 5,000,000)"
    )
    parser.add_argument(
        "--compare",
        nargs="*",
        metavar="REF",
        help=f"alternate runs of git REFs (default {BASELINE}) and this tree, each with and without ppo.overlap where "
        "it has it; print the ratios",
    )
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side for --compare (default 3)")
    parser.add_argument("--profile", action="store_true", help="print where the training loop's time goes")
    parser.add_argument(
        "--learning",
        type=int,
        nargs="+",
        metavar="DECISIONS",
        help="train without and with ppo.overlap for DECISIONS each (several budgets allowed); compare the agents "
        "against heuristic",
    )
    parser.add_argument(
        "--train-seeds",
        type=int,
        nargs="+",
        default=[1],
        metavar="SEED",
        help="training seeds for --learning (default 1)",
    )
    parser.add_argument(
        "--history",
        type=int,
        metavar="K",
        help="alternate runs of the config as it is (the MLP) and with game.history=K and model.event_embedding "
        "(the history-aware network), --rounds each in fresh processes; print both decisions/s and their ratio",
    )
    parser.add_argument(
        "--windows",
        type=int,
        nargs="+",
        metavar="K",
        help="alternate runs of the config with each history window K (0: none), --rounds each in fresh processes; "
        "print the medians and the ratio of each window to the previous one",
    )
    parser.add_argument(
        "--event-embedding",
        type=int,
        default=16,
        metavar="E",
        help="event embedding width for --history and --windows (default 16; 0: the MLP reads the window)",
    )
    parser.add_argument(
        "--event-pooling",
        action="store_true",
        help="with --history or --windows: the history-aware network sums its embedded moves (model.event_pooling)",
    )
    add_workers_options(parser)
    parser.add_argument(
        "--update-ab",
        action="store_true",
        help="time one PPO update on 10,000 samples, the masked policy from tensor operations (old) vs "
        "training.core.kernels' compiled pass (new), interleaved",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.compare is not None:
        return compare(args.compare or [BASELINE], args.rounds, args.config, args.updates, args.overrides)
    if args.history is not None:
        return history(
            args.config,
            args.updates,
            args.overrides,
            args.history,
            args.event_embedding,
            args.rounds,
            args.event_pooling,
        )
    if args.workers:
        return workers_scaling(args.config, args.overrides, args.workers, args.updates, args.rounds, args.json)
    if args.windows is not None:
        return windows(
            args.config,
            args.updates,
            args.overrides,
            args.windows,
            args.event_embedding,
            args.rounds,
            args.event_pooling,
        )
    if args.profile:
        return profile(args.config, args.updates, args.overrides)
    if args.update_ab:
        return update_ab(args.config, args.rounds)
    if args.learning:
        return learning(args.config, args.learning, args.games, args.seed, args.overrides, args.train_seeds)
    if args.strength:
        return strength(args.strength, args.games, args.seed)
    if args.exploit:
        return exploit(args.exploit, args.decisions, args.games, args.seed)
    return throughput(args)


def throughput(args: argparse.Namespace) -> int:
    """The training loop's decisions per second on ``--updates`` updates of the config, against ``TARGET``."""
    from training.algorithms.ppo import train
    from training.core.config import load_config

    with tempfile.TemporaryDirectory() as out:
        config = load_config(
            args.config,
            [*args.overrides, f"output_dir={out}", "name=bench", "evaluation.every=0", "evaluation.final_games=0"],
        )
        per_update = config.ppo.num_envs * config.ppo.num_steps
        config.schedule.total_decisions = args.updates * per_update
        config.schedule.checkpoint_every = args.updates
        config.schedule.time_limit_minutes = None
        load_before = os.getloadavg()
        started, cpu_started = time.perf_counter(), _cpu_seconds()
        train(config, progress_bar=False)
        total, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_started
        with open(Path(out) / "bench" / "metrics.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
    seconds = [float(r["wall_seconds"]) for r in rows]
    steady = (len(rows) - 1) * per_update / (seconds[-1] - seconds[0]) if len(rows) > 1 else float("nan")
    game = config.game_config()
    print(
        f"config: {args.config} ({game.num_players}-player {game.edition}), network {config.model.hidden_sizes}, "
        f"{config.ppo.num_envs} games x {config.ppo.num_steps} steps per update, {config.ppo.update_epochs} epochs, "
        f"torch threads {config.torch_threads}, ppo.overlap {config.ppo.overlap}"
    )
    print(f"cpu cores: {os.cpu_count()}, load average before: {load_before[0]:.2f}, after: {os.getloadavg()[0]:.2f}")
    print(
        f"updates: {len(rows)}, decisions: {len(rows) * per_update:,}, samples (learner decisions): "
        f"{int(rows[-1]['samples']):,}"
    )
    print(f"end to end, after the first update: {steady:,.0f} decisions/s")
    print(
        f"end to end, whole run incl. start-up and checkpoint: {len(rows) * per_update / total:,.0f} decisions/s "
        f"({total:.1f} s)"
    )
    print(
        f"per CPU-second, whole run incl. start-up, the update process included: {len(rows) * per_update / cpu:,.0f} "
        f"decisions ({cpu:.1f} CPU-s)"
    )
    print(f"target {TARGET:,} decisions/s: {'met' if steady >= TARGET else 'NOT met'}")
    return 0


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended (the update process, once a run is over)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def history(
    path: str, updates: int, overrides: list[str], window: int, embedding: int, rounds: int, pooling: bool = False
) -> int:
    """The MLP over the default observation and the history-aware network (a window of ``window`` moves, each embedded
    in ``embedding`` features) trained by the same config, alternately in fresh processes: medians and their ratio.
    """
    import re
    import statistics
    import subprocess

    sides = {
        "MLP": list(overrides),
        f"history-aware (history={window}, event_embedding={embedding}{', pooled' if pooling else ''})": [
            *overrides,
            f"game.history={window}",
            f"model.event_embedding={embedding}",
            *(["model.event_pooling=true"] if pooling else []),
        ],
    }
    speeds: dict[str, list[float]] = {label: [] for label in sides}
    for round_ in range(rounds):
        for label, sets in sides.items():
            command = [sys.executable, __file__, "--config", path, "--updates", str(updates)]
            command += [a for s in sets for a in ("--set", s)]
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            value = float(re.search(r"after the first update: ([\d,]+) decisions/s", out).group(1).replace(",", ""))
            speeds[label].append(value)
            print(f"round {round_ + 1}: {label}: {value:,.0f} decisions/s", flush=True)
    print(f"config: {path}, {updates} updates per run, {rounds} rounds; load average now {os.getloadavg()[0]:.2f}")
    medians = {label: statistics.median(values) for label, values in speeds.items()}
    mlp, aware = medians.values()
    for label, value in medians.items():
        print(f"  {label:60s} {value:12,.0f} decisions/s (median)")
    print(f"  history-aware / MLP: {aware / mlp:.2f} (target at least 0.5)")
    return 0


def windows(
    path: str, updates: int, overrides: list[str], sizes: list[int], embedding: int, rounds: int, pooling: bool
) -> int:
    """The config trained with each history window in ``sizes`` (0: none), the windows read by the same network
    (``embedding`` features per move, 0: the MLP), alternately in fresh processes: medians and the ratio of each
    window's to the previous one's (the targets: at least 0.8).
    """
    import re
    import statistics
    import subprocess

    def sets(size: int) -> list[str]:
        network = [f"model.event_embedding={embedding}"] if size and embedding else []
        return [
            *overrides,
            f"game.history={size}",
            *network,
            *(["model.event_pooling=true"] if size and pooling else []),
        ]

    speeds: dict[int, list[float]] = {size: [] for size in sizes}
    per_cpu: dict[int, list[float]] = {size: [] for size in sizes}
    load_before = os.getloadavg()
    for round_ in range(rounds):
        for size in sizes:
            command = [sys.executable, __file__, "--config", path, "--updates", str(updates)]
            command += [a for s in sets(size) for a in ("--set", s)]
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            value = float(re.search(r"after the first update: ([\d,]+) decisions/s", out).group(1).replace(",", ""))
            cpu = float(re.search(r"per CPU-second.*: ([\d,]+) decisions", out).group(1).replace(",", ""))
            speeds[size].append(value)
            per_cpu[size].append(cpu)
            print(
                f"round {round_ + 1}: history={size}: {value:,.0f} decisions/s, {cpu:,.0f} per CPU-second", flush=True
            )
    network = f"event_embedding={embedding}{', pooled' if pooling else ''}" if embedding else "the MLP"
    print(
        f"config: {path}, {updates} updates per run, {rounds} rounds, windows read by {network}; cpu cores: "
        f"{os.cpu_count()}, load average before: {load_before[0]:.2f}, now: {os.getloadavg()[0]:.2f}"
    )
    for label, figures in (("decisions/s", speeds), ("decisions per CPU-second", per_cpu)):
        medians = {size: statistics.median(values) for size, values in figures.items()}
        previous = None
        for size, value in medians.items():
            ratio = f"  {value / medians[previous]:.2f} of history={previous}" if previous is not None else ""
            print(f"  history={size:<4d} {value:12,.0f} {label} (median){ratio}")
            previous = size
    return 0


def _bench_config(path: str, updates: int, overrides: list[str], out: str):
    from training.core.config import load_config

    config = load_config(
        path, [*overrides, f"output_dir={out}", "name=bench", "evaluation.every=0", "evaluation.final_games=0"]
    )
    config.schedule.total_decisions = updates * config.ppo.num_envs * config.ppo.num_steps
    config.schedule.checkpoint_every = updates
    config.schedule.time_limit_minutes = None
    return config


def compare(refs: list[str], rounds: int, config: str, updates: int, overrides: list[str]) -> int:
    """Alternate fresh-process runs of each git ref in ``refs`` and of this tree; medians and their ratios to the first
    ref.

    Each tree runs serially, and also with ``ppo.overlap`` where its config knows it.
    """
    import re
    import statistics
    import subprocess
    import tarfile

    line = re.compile(r"end to end, after the first update: ([\d,]+) decisions/s")
    with tempfile.TemporaryDirectory() as scratch:
        trees = {}
        for ref in refs:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
            tree = Path(scratch) / ref.replace("/", "_")
            with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
                tar.extractall(tree, filter="data")
            trees[ref] = tree
        trees["this tree"] = ROOT
        contenders = {}  # name -> (tree, config file, extra overrides)
        for ref, tree in trees.items():
            # (the config module moved from training/ to training/core/: read whichever the tree has)
            config_module = next(
                p for p in (tree / "training" / "core" / "config.py", tree / "training" / "config.py") if p.exists()
            )
            has_overlap = "overlap: bool" in config_module.read_text()
            tree_config = config
            if not has_overlap:  # an older tree refuses the option: the same config without it
                import yaml

                data = yaml.safe_load(Path(config).read_text())
                data.get("ppo", {}).pop("overlap", None)
                tree_config = str(Path(scratch) / f"{tree.name}_config.yaml")
                Path(tree_config).write_text(yaml.safe_dump(data, sort_keys=False))
            contenders[ref] = (tree, tree_config, ["ppo.overlap=false"] if has_overlap else [])
            if has_overlap:
                contenders[f"{ref}, ppo.overlap"] = (tree, tree_config, ["ppo.overlap=true"])
        figures: dict[str, list[float]] = {name: [] for name in contenders}
        loads = []
        for r in range(rounds):
            for name, (tree, tree_config, extra) in contenders.items():
                loads.append(os.getloadavg()[0])
                argv = [
                    sys.executable,
                    str(tree / "benchmarks" / "bench_training.py"),
                    "--config",
                    tree_config,
                    "--updates",
                    str(updates),
                    *[a for s in [*overrides, *extra] for a in ("--set", s)],
                ]
                done = subprocess.run(
                    argv, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True
                )
                match = line.search(done.stdout)
                if done.returncode or not match:
                    print(f"{name}: the benchmark failed:\n{done.stdout}\n{done.stderr}", file=sys.stderr)
                    return 2
                figures[name].append(float(match[1].replace(",", "")))
                print(
                    f"round {r + 1} {name}: {figures[name][-1]:,.0f} decisions/s (load average {loads[-1]:.2f})",
                    flush=True,
                )
    medians = {name: statistics.median(v) for name, v in figures.items()}
    first = medians[refs[0]]
    print(
        f"config {config}, {updates} updates per run, {rounds} rounds, cpu cores {os.cpu_count()}, load average "
        f"{min(loads):.2f} to {max(loads):.2f}"
    )
    for name, median in medians.items():
        print(
            f"  median {name:28s} {median:8,.0f} decisions/s   x {refs[0]} {median / first:.2f}   target {TARGET:,}: "
            f"{'met' if median >= TARGET else 'NOT met'}"
        )
    return 0


PHASES = {
    "engine (BatchedGames.step, reset)": ["batched(\\.py|/games\\.py):.*\\((step|reset)\\)"],
    "network inference (forward in the rollout)": ["model.py:.*\\(sample\\)"],
    "opponents (baselines' act_batch)": ["baselines/.*\\(act_batch\\)"],
    "GAE": ["learner.py:.*\\(gae\\)"],
    "update (PPO epochs)": ["learner.py:.*\\(ppo_update\\)"],
}


def profile(path: str, updates: int, overrides: list[str]) -> int:
    """Where the time of the training loop goes: cumulative time of its parts under cProfile.

    cProfile adds some overhead, so the shares matter more than the seconds.
    """
    import cProfile
    import pstats
    import re

    from training.algorithms.ppo import train

    with tempfile.TemporaryDirectory() as out:
        overrides = [
            *overrides,
            "ppo.overlap=false",
        ]  # cProfile sees only the main thread: profile the loop without the update thread
        train(_bench_config(path, 2, overrides, out), progress_bar=False)  # compile the engine first
        config = _bench_config(path, updates, overrides, out + "/profiled")
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.runcall(train, config, progress_bar=False)
        total = time.perf_counter() - started
    stats = pstats.Stats(profiler).stats
    decisions = updates * config.ppo.num_envs * config.ppo.num_steps
    print(
        f"config {path}: {updates} updates, {decisions:,} decisions in {total:.1f} s under cProfile "
        f"({decisions / total:,.0f} decisions/s), load average {os.getloadavg()[0]:.2f}"
    )
    accounted = 0.0
    for phase, patterns in PHASES.items():
        seconds = sum(
            v[3]
            for (file, lineno, name), v in stats.items()
            if any(re.search(p, f"{file}:{lineno}({name})") for p in patterns)
        )
        accounted += seconds
        print(f"  {phase:45s} {seconds:6.1f} s  {100 * seconds / total:5.1f}%")
    print(
        f"  {'the rest (rollout bookkeeping, logs, checkpoint)':45s} {total - accounted:6.1f} s  "
        f"{100 * (total - accounted) / total:5.1f}%"
    )
    return 0


def update_ab(path: str, rounds: int, samples: int = 10_000) -> int:
    """One PPO update of ``samples`` real observations: the masked policy's log-probabilities and entropies from tensor
    operations (old) or from ``training.core.kernels``'s compiled pass (new), interleaved in this process.
    """
    import statistics

    import numpy as np
    import torch

    from cockroach_env.batched import BatchedGames, random_legal_actions
    from training.core import kernels
    from training.core.config import load_config
    from training.core.learner import Learner, ppo_update
    from training.core.model import ActorCritic

    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = load_config(path)
    game = config.game_config()
    model = ActorCritic.from_spec(game, config.model, seed=0)
    learner = Learner(
        model, config.ppo.learning_rate, samples, 1, game.num_players, model.observation_size, model.num_actions
    )
    games = BatchedGames(game, batch_size=samples, seed=0)
    rng = np.random.default_rng(0)
    step = games.reset(seed=0)
    for _ in range(20):
        step = games.step(random_legal_actions(step.action_mask, rng))
    obs, mask = step.observation.copy(), step.action_mask.astype(bool)
    action, logprob, value = model.sample(torch.from_numpy(obs), torch.from_numpy(mask))
    learner.rollout.append(obs, mask, action.numpy(), logprob.numpy(), value.numpy())
    advantages, returns = (
        rng.standard_normal(samples).astype(np.float32),
        rng.standard_normal(samples).astype(np.float32),
    )
    start = {k: v.clone() for k, v in model.state_dict().items()}
    compiled = kernels.available
    seconds: dict[str, list[float]] = {"old": [], "new": []}
    weights = {}
    try:
        for _ in range(rounds):
            for name in seconds:
                model.load_state_dict(start)
                learner.reset_optimizer()
                kernels.available = compiled if name == "new" else (lambda logits: False)
                began = time.perf_counter()
                ppo_update(
                    learner,
                    learner.rollout,
                    advantages,
                    returns,
                    np.arange(samples),
                    config.ppo,
                    np.random.default_rng(1),
                    "cpu",
                )
                seconds[name].append(time.perf_counter() - began)
                weights[name] = torch.cat([p.detach().flatten() for p in model.parameters()])
    finally:
        kernels.available = compiled
    old, new = statistics.median(seconds["old"]), statistics.median(seconds["new"])
    drift = float((weights["old"] - weights["new"]).abs().max())
    print(
        f"one update of {samples:,} samples ({config.ppo.update_epochs} epochs x {config.ppo.num_minibatches} "
        f"minibatches, network {config.model.hidden_sizes}), median of {rounds}; load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"  old (masked policy from tensor operations) {old:.3f} s, new (compiled pass over the legal actions) "
        f"{new:.3f} s: old/new = {old / new:.3f}"
    )
    print(f"  largest weight difference after the update: {drift:.1e} (float rounding only)")
    return 0


def learning(
    path: str, decisions: list[int], games: int, seed: int, overrides: list[str], train_seeds: list[int]
) -> int:
    """Train without and with ``ppo.overlap`` for the same decisions, per training seed; each agent against N-1
    ``heuristic``.
    """
    import torch

    from training.algorithms.ppo import train
    from training.core.checkpoint import load_agent
    from training.core.config import load_config
    from training.evaluation.arena import play_match

    rows = []
    with tempfile.TemporaryDirectory() as out:
        for train_seed in train_seeds:
            for budget in decisions:
                for overlap in (False, True):
                    name = "overlap" if overlap else "serial"
                    run = f"{name}_{train_seed}_{budget}"
                    config = load_config(
                        path,
                        [
                            *overrides,
                            f"output_dir={out}",
                            f"name={run}",
                            f"seed={train_seed}",
                            f"ppo.overlap={str(overlap).lower()}",
                            "evaluation.every=0",
                            "evaluation.final_games=0",
                        ],
                    )
                    config.schedule.total_decisions = budget
                    config.schedule.time_limit_minutes = None
                    started = time.perf_counter()
                    agent_path = train(config, progress_bar=False)
                    wall = time.perf_counter() - started
                    torch.set_num_threads(1)
                    game = config.game_config()
                    n = game.num_players
                    agent = load_agent(agent_path, seed=seed)
                    agent.name = name
                    report = play_match([agent, f"heuristic*{n - 1}"], game, games=games, seed=seed).report(name)
                    rows.append((train_seed, budget, name, wall, report))
                    low, high = report.loss_rate_ci95
                    print(
                        f"seed {train_seed} {name:8s} {budget:,} decisions in {wall:.0f} s ({budget / wall:,.0f}/s); "
                        f"against {n - 1} heuristic: "
                        f"loss {100 * report.loss_rate:.1f}% [{100 * low:.1f}, {100 * high:.1f}] over {report.games} "
                        "games",
                        flush=True,
                    )
    print(f"config {path}, load average {os.getloadavg()[0]:.2f}")
    for budget in decisions:
        serial = [r.loss_rate for s, b, name, _, r in rows if b == budget and name == "serial"]
        overlapped = [r.loss_rate for s, b, name, _, r in rows if b == budget and name == "overlap"]
        print(
            f"  {budget:,} decisions, mean over seeds {train_seeds}: serial {100 * sum(serial) / len(serial):.1f}%, "
            f"overlap {100 * sum(overlapped) / len(overlapped):.1f}% losses"
        )
    return 0


def play_and_show(lineup, focus: str, config, games: int, seed: int):
    """Play ``lineup`` in the arena and print each agent's row; the report of ``focus`` and every report by name."""
    from training.evaluation.arena import play_match

    started = time.perf_counter()
    result = play_match(lineup, config, games=games, seed=seed)
    reports = {r.name: r for r in result.agents}
    rows = []
    for name, report in reports.items():
        low, high = report.loss_rate_ci95
        b = report.behaviour
        rows.append(
            f"    {name:10s} loss {100 * report.loss_rate:5.1f}% [{100 * low:4.1f}, {100 * high:4.1f}]  false "
            f"offers {_pct(b['false_offer_rate'])}"
            f"  false passes {_pct(b['false_pass_rate'])}  call accuracy {_pct(b['call_accuracy'])}  peek rate "
            f"{_pct(b['peek_rate'])}"
        )
    print(
        f"  {' '.join(str(x) if isinstance(x, str) else 'trained' for x in lineup)}  ({result.games} games, "
        f"{time.perf_counter() - started:.0f} s)"
    )
    print("\n".join(rows))
    return reports[focus], reports


def strength(checkpoint: str, games: int, seed: int) -> int:
    import torch

    torch.set_num_threads(1)
    from cockroach_env import GameConfig
    from training.core.checkpoint import load_agent, read_metadata

    meta = read_metadata(checkpoint)
    config = GameConfig(**meta["game_config"])
    n = config.num_players
    agent = load_agent(checkpoint, seed=seed, config=config)
    agent.name = "trained"
    step = meta.get("step") or {}
    made = (
        [f"{step['decisions']:,} decisions, {step['wall_seconds'] / 60:.0f} min of training"]
        if {"decisions", "wall_seconds"} <= set(step)
        else []
    )
    if meta["kind"] == "mixture":  # (a cockroach-mixture checkpoint has no step of its own)
        made.insert(0, f"a mixture of {len(meta['mixture']['members'])} members")
    print(f"checkpoint {checkpoint}: {n}-player {config.edition}" + "".join(f", {m}" for m in made))
    print(f"made by: {meta.get('command')}")

    def show(lineup, focus):
        return play_and_show(lineup, focus, config, games, seed)

    checks = []
    parity = 1 / n
    classic = config.edition == "classic" and config.num_types == 8  # (the full classic deck, not a mini preset)
    limit = 0.08 if classic and n == 4 else 0.20 if classic and n == 2 else parity / 2
    report, reports = show([agent, f"heuristic*{n - 1}"], "trained")
    calls = (report.behaviour["call_accuracy"], reports["heuristic"].behaviour["call_accuracy"])
    if n == 2:
        checks.append(
            (
                f"wins >= {100 * (1 - limit):.0f}% against heuristic",
                report.loss_rate <= limit,
                f"{100 * (1 - report.loss_rate):.1f}% wins",
            )
        )
    else:
        checks.append(
            (
                f"loss rate <= {100 * limit:.1f}% against {n - 1} heuristic (parity {100 * parity:.1f}%)",
                report.loss_rate <= limit,
                f"{100 * report.loss_rate:.1f}%",
            )
        )
        random_report, _ = show([agent, f"random*{n - 1}"], "trained")
        if classic and n == 4:
            checks.append(
                (
                    f"loss rate <= 3% against {n - 1} random",
                    random_report.loss_rate <= 0.03,
                    f"{100 * random_report.loss_rate:.1f}%",
                )
            )
            heuristic_report, _ = show(["heuristic", *[agent] * (n - 1)], "heuristic")
            checks.append(
                (
                    f"heuristic among {n - 1} trained loses >= 40%",
                    heuristic_report.loss_rate >= 0.40,
                    f"{100 * heuristic_report.loss_rate:.1f}%",
                )
            )
    bluff = report.behaviour["false_offer_rate"] or 0.0
    checks.append(("bluffs: false-claim rate of offers clearly above 0", bluff >= 0.05, f"{100 * bluff:.1f}%"))
    checks.append(
        (
            "call accuracy above heuristic's (same match)",
            (calls[0] or 0) > (calls[1] or 0),
            f"{_pct(calls[0])} vs {_pct(calls[1])}",
        )
    )
    print("targets:")
    for label, ok, value in checks:
        print(f"  [{'met' if ok else 'NOT met'}] {label}: {value}")
    return 0


def exploit(checkpoint: str, decisions: int, games: int, seed: int) -> int:
    """Train a best response with ``cockroach-exploit`` and check it stays within 5 points of parity."""
    import json

    from training.cli.exploit import main as exploitability

    with tempfile.TemporaryDirectory() as out:
        report_path = Path(out) / "report.json"
        started = time.perf_counter()
        argv = [
            checkpoint,
            "--decisions",
            str(decisions),
            "--games",
            str(games),
            "--seed",
            str(seed + 1),
            "--output-dir",
            out,
            "--json",
            str(report_path),
            "--no-progress",
        ]
        if exploitability(argv) != 0:
            return 2
        report = json.loads(report_path.read_text())
    gap = report["exploitability"]
    print(f"best response: {decisions:,} decisions, {time.perf_counter() - started:.0f} s wall")
    print("targets:")
    print(
        f"  [{'met' if gap <= 0.05 else 'NOT met'}] best response within 5 points of parity: {100 * gap:+.1f} points "
        f"(loss rate {100 * report['best_response_loss_rate']:.1f}%, parity {100 * report['parity']:.1f}%)"
    )
    return 0


def _pct(value) -> str:
    return "  n/a" if value is None else f"{100 * value:5.1f}%"


if __name__ == "__main__":
    sys.exit(main())
