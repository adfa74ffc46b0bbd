"""PSRO benchmarks: meta-solvers side by side, Ray scaling, and exact NashConv over wall time.

    python benchmarks/bench_psro.py --solvers runs/psro_4p/checkpoint
        every meta-solver on the meta-game of a PSRO checkpoint: the NashConv of its
        strategy inside that meta-game, the support size and the solve time, in one run
    python benchmarks/bench_psro.py --scaling --iterations 2
        the same PSRO run (2 best responses per iteration, 2-player classic) in one
        process, then on a local Ray cluster with 1 and with 2 workers: the cost of each
        task (a best response per million decisions, a payoff table per 100 games) and
        the throughput ratio 2 workers / 1 worker
    python benchmarks/bench_psro.py --mixture-scaling --exploiters 4
        cockroach-mixture --exploiters (the weights of the shipped classic-4p-mixture's members
        against exploiters: its members exported as stand-ins) in one process, then with
        --ray on local clusters of 1 and 2 CPUs: seconds per exploiter table, and the
        throughput ratio 2 workers / 1 worker
    python benchmarks/bench_psro.py --nashconv --minutes 10 --cfr-seconds 60 [--out PNG --overwrite]
        exact NashConv over wall time on the `mini` and `mini-3p` rule sets for PSRO,
        PPO self-play, NFSP's average policy over the same PPO learner, OpenSpiel's C++ CFR+ (on the exported tree),
        this project's tree
        solver (training.algorithms.cfr_solver, discounted CFR over information states), the
        exploitability descent over observations that follows it (training.algorithms.descent) and
        the shipped distilled network (its recorded wall time), one plot, with ratios

The machine's load average is printed with every figure: teammates' jobs on the same
cores change the absolute numbers, not the comparisons made inside one run.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--solvers", metavar="CHECKPOINT", help="compare the meta-solvers on the meta-game of a PSRO checkpoint"
    )
    parser.add_argument(
        "--scaling", action="store_true", help="PSRO in one process and on a local Ray cluster with 1 and 2 workers"
    )
    parser.add_argument(
        "--mixture-scaling",
        action="store_true",
        help="cockroach-mixture --exploiters in one process and with --ray on local clusters of 1 and 2 CPUs",
    )
    parser.add_argument(
        "--exploiters", type=int, default=4, help="exploiters for --mixture-scaling (default 4: 80 tables of 200 games)"
    )
    parser.add_argument(
        "--nashconv",
        action="store_true",
        help="exact NashConv over wall time on mini and mini-3p (needs training.evaluation.exact)",
    )
    parser.add_argument("--iterations", type=int, default=2, help="PSRO iterations for --scaling (default 2)")
    parser.add_argument(
        "--decisions", type=int, default=100_000, help="decisions per best response for --scaling (default 100,000)"
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="wall time per method for --nashconv (default 10)")
    parser.add_argument(
        "--cfr-seconds",
        type=float,
        default=60.0,
        help="--nashconv: iteration time budget of OpenSpiel's CFR+ and of the tree solver, per rule set (default 60)",
    )
    parser.add_argument(
        "--descent-steps",
        type=int,
        default=400,
        help="--nashconv: exploitability-descent steps after the tree solver (default 400)",
    )
    parser.add_argument(
        "--out",
        default="psro_nashconv.png",
        help="plot of --nashconv (default psro_nashconv.png in the current directory; the docs' is "
        "docs/img/psro_nashconv.png)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    args = parser.parse_args(argv)
    if args.nashconv:
        from training.core.output_paths import output_file_problem

        problem = output_file_problem("--out", args.out, replace=args.overwrite)
        if problem:
            parser.error(problem)
    if args.solvers:
        return solvers(args.solvers)
    if args.scaling:
        return scaling(args.iterations, args.decisions)
    if args.mixture_scaling:
        return mixture_scaling(args.exploiters)
    if args.nashconv:
        return nashconv(args.minutes, Path(args.out), args.cfr_seconds, args.descent_steps)
    parser.print_help()
    return 2


def solvers(path: str) -> int:
    import numpy as np

    from training.algorithms.meta_solvers import SOLVERS, MetaGame
    from training.core.checkpoint import read_metadata

    meta = read_metadata(path)
    if "psro" not in meta:
        print(f"{path}: not a PSRO checkpoint (no psro entry)", file=sys.stderr)
        return 2
    game = MetaGame.from_dict(meta["psro"]["meta_game"])
    print(
        f"meta-game of {path}: {game.size} members, {game.num_players} players, {len(game.seat_games)} tables; load "
        f"average {os.getloadavg()[0]:.2f}"
    )
    print(f"  {'solver':16s} {'NashConv (points)':>18s} {'support':>8s} {'seconds':>8s}  strategy")
    for name, solver in SOLVERS.items():
        started = time.perf_counter()
        x = solver(game)
        seconds = time.perf_counter() - started
        support = int((x > 0.01).sum())
        print(f"  {name:16s} {100 * game.nash_conv(x):18.3f} {support:8d} {seconds:8.2f}  {np.round(x, 3).tolist()}")
    return 0


def scaling(iterations: int, decisions: int) -> int:
    """The same PSRO run in one process and on local Ray clusters of 1 and 2 CPUs."""
    import ray

    from training.algorithms.psro import train
    from training.core.config import load_config

    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    sets = [
        "algorithm=psro", "game.num_players=2", "ppo.num_envs=128", "ppo.num_steps=32", "model.hidden_sizes=[64, 64]",
        f"psro.iterations={iterations}", "psro.best_responses_per_iteration=2",
        f"psro.best_response_decisions={decisions}", "psro.payoff_games=200", "evaluation.final_games=0",
    ]  # fmt: skip
    results = {}
    with tempfile.TemporaryDirectory() as out:
        for label, cpus in (("one process", None), ("Ray, 1 worker", 1), ("Ray, 2 workers", 2)):
            config = load_config(None, [*sets, f"output_dir={out}", f"name=run_{cpus}"])
            load = os.getloadavg()[0]
            if cpus:
                ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
            started = time.perf_counter()
            train(config, progress_bar=False, ray_address="local" if cpus else None)
            seconds = time.perf_counter() - started
            if cpus:
                ray.shutdown()
            with open(Path(out) / f"run_{cpus}" / "psro.csv", newline="") as handle:
                rows = list(csv.DictReader(handle))
            br = sum(float(r["best_response_seconds"]) for r in rows)
            payoff = sum(float(r["payoff_seconds"]) for r in rows)
            tables = sum(int(r["new_tables"]) for r in rows)
            results[label] = seconds
            responses = 2 * iterations
            print(
                f"{label}: {seconds:.1f} s for {iterations} iterations ({responses} best responses of {decisions:,} "
                f"decisions, {tables} payoff tables of 200 games); load average {load:.2f}"
            )
            print(f"    best-response phase {br:.1f} s wall ({br / responses / decisions * 1e6:.1f} s per million "
                "best-response decisions),"
                  f" payoff phase {payoff:.1f} s wall ({payoff / tables * 0.5:.2f} s per 100 games of a "
                  "table)")  # fmt: skip
    print("throughput ratio, Ray with 2 workers / Ray with 1 worker: "
        f"{results['Ray, 1 worker'] / results['Ray, 2 workers']:.2f}x; "
          f"Ray with 1 worker / one process: {results['one process'] / results['Ray, 1 worker']:.2f}x (Ray's start-up "
          "and task overhead)")  # fmt: skip
    return 0


def mixture_scaling(exploiters: int) -> int:
    """One ``cockroach-mixture --exploiters`` build (4 players, the shipped classic-4p-mixture's members) in one process
    and on local Ray clusters of 1 and 2 CPUs.
    """
    import ray

    from training.cli.mixture import main as mixture
    from training.core import checkpoint as ckpt

    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    names, _ = ckpt.mixture_weights(ckpt.load_checkpoint("classic-4p-mixture"))
    results, weights = {}, {}
    with tempfile.TemporaryDirectory() as out:
        stand_ins = []
        for k in range(
            exploiters
        ):  # the members themselves stand in for best responses: the cost of a table is what is measured
            stand_ins.append(
                str(
                    ckpt.export_agent(
                        "classic-4p-mixture", Path(out) / f"exploiter{k}", member=names[k % len(names)]
                    ).with_suffix("")
                )
            )
        tables = exploiters * 20  # 4 members, 3 seats: 20 multisets
        for label, cpus in (("one process", None), ("Ray, 1 worker", 1), ("Ray, 2 workers", 2)):
            load = os.getloadavg()[0]
            if cpus:
                ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
            started = time.perf_counter()
            code = mixture(
                [
                    str(Path(out) / f"mix_{cpus}"),
                    "classic-4p-mixture",
                    "--exploiters",
                    *stand_ins,
                    "--payoff-games",
                    "200",
                    *(["--ray"] if cpus else []),
                ]
            )
            seconds = time.perf_counter() - started
            if cpus:
                ray.shutdown()
            if code:
                return code
            weights[label] = [m["weight"] for m in ckpt.read_metadata(Path(out) / f"mix_{cpus}")["mixture"]["members"]]
            results[label] = seconds
            print(
                f"{label}: {seconds:.1f} s for {tables} exploiter tables of 200 games ({seconds / tables:.2f} s a "
                f"table); load average {load:.2f}"
            )
    same = all(w == weights["one process"] for w in weights.values())
    print("throughput ratio, Ray with 2 workers / Ray with 1 worker: "
        f"{results['Ray, 1 worker'] / results['Ray, 2 workers']:.2f}x; "
          f"2 workers / one process: {results['one process'] / results['Ray, 2 workers']:.2f}x; the same weights "
          f"everywhere: {same}")  # fmt: skip
    return 0 if same else 1


PRESETS = {"mini": 0.02, "mini-3p": 0.05}
"""The mini rule sets and their NashConv targets."""
COMMON = [
    "model.hidden_sizes=[64, 64]",
    "ppo.num_envs=128",
    "ppo.num_steps=16",
    "ppo.learning_rate=3e-4",
    "evaluation.every=0",
    "evaluation.final_games=0",
]
"""The PPO learner both methods share: the same network, rollout and update."""


def nashconv(minutes: float, out: Path, cfr_seconds: float = 60.0, descent_steps: int = 400) -> int:
    """Exact NashConv over wall time on each mini rule set: PSRO, PPO self-play, NFSP, OpenSpiel's CFR+, our solver and
    descent, the shipped network; one plot.
    """
    try:
        from training.evaluation.exact import nash_conv
    except ImportError:
        print("--nashconv needs training.evaluation.exact, the exact evaluator of the mini rule sets", file=sys.stderr)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cockroach_env import GameConfig

    curves: dict[str, dict[str, list[tuple[float, float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for preset in PRESETS:
            game = GameConfig.from_options(preset=preset)
            nash_conv(_uniform(game), game)  # build the game tree once, outside the timed runs
            curves[preset] = {
                "OpenSpiel CFR+ (C++, information states)": _openspiel_cfr_curve(game, cfr_seconds),
                **_tree_solver_curves(game, cfr_seconds, descent_steps),
                "PSRO (regret matching)": _psro_curve(preset, game, minutes, Path(tmp), nash_conv),
                "PPO self-play (snapshots)": _ppo_curve(preset, game, minutes, Path(tmp), nash_conv),
                "NFSP (average policy)": _ppo_curve(preset, game, minutes, Path(tmp), nash_conv, nfsp=True),
            }
            shipped = _shipped_point(preset, game)
            if shipped:
                curves[preset][f"shipped `{preset}` network"] = shipped
    fig, axes = plt.subplots(1, len(curves), figsize=(7.5 * len(curves), 5))
    print(
        f"exact NashConv over training wall time, {minutes:g} minutes per method; load average now "
        f"{os.getloadavg()[0]:.2f}"
    )
    for ax, (preset, methods) in zip(np.atleast_1d(axes), curves.items()):
        _plot_preset(ax, preset, methods)
        _print_preset(preset, methods)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    print(f"plot: {out}")
    return 0


def _plot_preset(ax, preset: str, methods: dict[str, list[tuple[float, float]]]) -> None:
    """One rule set's curves on a log-log axis, with its target and the uniform random policy's NashConv."""
    for label, points in methods.items():
        single = len(points) == 1
        # a log time axis: the starting points (uniform random) are the dotted line
        shown = [p for p in points if p[0] > 0]
        ax.plot(
            [p[0] for p in shown],
            [p[1] for p in shown],
            marker="*" if single else "o",
            markersize=12 if single else 3,
            linestyle="none" if single else "-",
            label=label,
        )
    ax.axhline(PRESETS[preset], color="grey", linestyle="--", label=f"target {PRESETS[preset]}")
    ax.axhline(methods["PSRO (regret matching)"][0][1], color="grey", linestyle=":", label="uniform random policy")
    ax.set_yscale("log")
    ax.set_xscale("log")
    ax.set_xlabel("wall time of the method (s, log)")
    ax.set_ylabel("exact NashConv")
    ax.set_title(preset)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def _print_preset(preset: str, methods: dict[str, list[tuple[float, float]]]) -> None:
    """Each method's last NashConv, three pairs compared at equal wall time, and the solvers' time to a NashConv."""
    first = methods["PSRO (regret matching)"][0][1]
    print(f"  {preset} (the uniform random policy: {first:.4f}; target {PRESETS[preset]}):")
    for label, points in methods.items():
        last = points[-1]
        print(f"    {label:48s} NashConv {last[1]:.5f} after {last[0]:7.1f} s  ({last[1] / first:.4f}x uniform random)")
    for a_label, b_label in (
        ("PSRO (regret matching)", "PPO self-play (snapshots)"),
        ("NFSP (average policy)", "PPO self-play (snapshots)"),
        ("ours: DCFR (information states)", "OpenSpiel CFR+ (C++, information states)"),
    ):
        a_points, b_points = methods[a_label], methods[b_label]
        end = min(a_points[-1][0], b_points[-1][0])
        at = lambda points: [v for t, v in points if t <= end][-1]  # noqa: E731, B023 (used in this iteration)
        print(
            f"    at equal wall time {end:.0f} s: {a_label} {at(a_points):.5f} / {b_label} {at(b_points):.5f} = "
            f"{at(a_points) / max(at(b_points), 1e-12):.3f}"
        )
    ours, theirs = methods["ours: DCFR (information states)"], methods["OpenSpiel CFR+ (C++, information states)"]
    target = max(ours[-1][1], theirs[-1][1])
    reach = lambda points: next(t for t, v in points if v <= target)  # noqa: E731, B023 (used in this iteration)
    print(
        f"    time to NashConv {target:.5f}: ours {reach(ours):.1f} s, OpenSpiel CFR+ {reach(theirs):.1f} s "
        f"({reach(theirs) / max(reach(ours), 1e-9):.1f}x)"
    )


def _openspiel_cfr_curve(game, seconds: float) -> list[tuple[float, float]]:
    """OpenSpiel's C++ CFR+ on the exported tree at doubling iteration counts.

    Returns (iteration seconds, NashConv of the average policy) for each count.
    """
    import pyspiel

    from benchmarks.bench_exact import openspiel_curve
    from training.evaluation.exact import efg_string, game_tree

    efg = pyspiel.load_efg_game(efg_string(game_tree(game)))
    curve = openspiel_curve(efg, pyspiel.CFRPlusSolver, seconds, "OpenSpiel CFR+")
    return [(0.0, pyspiel.nash_conv(efg, pyspiel.UniformRandomPolicy(efg)))] + [
        (spent, value) for _, spent, value in curve
    ]


def _tree_solver_curves(game, seconds: float, descent_steps: int) -> dict[str, list[tuple[float, float]]]:
    """This project's solver (DCFR over information states, as configs/cfr_mini*.yaml) at doubling iteration counts,
    then exploitability descent
    over observations from its projection (the table the shipped network is fitted to), its time counted after the
    solver's.
    """
    from training.algorithms.cfr import average_policy, observation_table
    from training.algorithms.cfr_solver import TreeSolver
    from training.algorithms.descent import ObservationDescent
    from training.evaluation.exact import evaluate, game_tree

    tree = game_tree(game)
    solver = TreeSolver(tree, keys="information_state", variant="dcfr")
    state = solver.initial_state()
    points = [(0.0, evaluate(average_policy(solver, state), game, tree).nash_conv)]
    spent, target = 0.0, 1
    while spent < seconds:
        started = time.perf_counter()
        while state.iteration < target:
            state = solver.iterate(state)
        spent += time.perf_counter() - started
        points.append((spent, evaluate(average_policy(solver, state), game, tree).nash_conv))
        print(
            f"  tree solver (DCFR) {state.iteration} iterations: {spent:.1f} s, NashConv {points[-1][1]:.5f}",
            flush=True,
        )
        target *= 2
    started = time.perf_counter()
    table = observation_table(solver, state)[0]
    projection = time.perf_counter() - started
    result = ObservationDescent(tree).run(table, descent_steps)
    best = np.minimum.accumulate([value for _, _, value in result.history])  # the descent keeps the best table seen
    descent = [
        (spent + projection + seconds_, float(best[step]))
        for step, seconds_, _ in result.history
        if step % 10 == 0 or step == descent_steps
    ]
    print(
        f"  exploitability descent over observations: {descent_steps} steps, {result.history[-1][1]:.1f} s, NashConv "
        f"{descent[0][1]:.5f} -> {result.nash_conv:.5f}",
        flush=True,
    )
    return {
        "ours: DCFR (information states)": points,
        "ours: its projection + exploitability descent (observations)": descent,
    }


def _shipped_point(preset: str, game) -> list[tuple[float, float]] | None:
    """The shipped distilled network of ``preset``: its recorded wall time and its exact NashConv, measured now.

    The wall time is the one its metadata records: solver, descent and distillation.
    """
    from training.core.checkpoint import CheckpointError, load_agent, read_metadata
    from training.evaluation.exact import nash_conv

    try:
        meta = read_metadata(preset)
    except CheckpointError:
        return None
    step = meta.get("step") or {}
    seconds = (
        float(step.get("solver_seconds", 0))
        + float(meta.get("exact", {}).get("descent_seconds", 0))
        + float(step.get("distill_seconds", 0))
    )
    value = nash_conv(load_agent(preset, config=game), game)
    print(
        f"  shipped {preset}: NashConv {value:.5f} (recorded {meta.get('exact', {}).get('nash_conv')}), {seconds:.0f} "
        "s of solver, descent and distillation",
        flush=True,
    )
    return [(seconds, value)]


def _uniform(game):
    import baselines

    return baselines.make("random", game, seed=0)


def _psro_curve(preset: str, game, minutes: float, tmp: Path, nash_conv) -> list[tuple[float, float]]:
    """PSRO one iteration at a time (each call resumes the last): (wall seconds, NashConv of the mixture) after each."""
    from training.algorithms.psro import train
    from training.core.checkpoint import load_agent, read_metadata
    from training.core.config import load_config

    sets = [
        *COMMON,
        "algorithm=psro",
        f"game.preset={preset}",
        f"output_dir={tmp}",
        f"name=psro_{preset}",
        "psro.best_response_decisions=100000",
        "psro.payoff_games=400",
    ]
    points = [(0.0, nash_conv(_uniform(game), game))]
    iteration = 0
    while points[-1][0] < 60 * minutes:
        iteration += 1
        path = train(
            load_config(None, [*sets, f"psro.iterations={iteration}"]), resume=iteration > 1, progress_bar=False
        )
        seconds = read_metadata(path)["step"]["wall_seconds"]
        points.append((seconds, nash_conv(load_agent(path, config=game), game)))
        print(f"  {preset} PSRO iteration {iteration}: {seconds:.0f} s, NashConv {points[-1][1]:.4f}", flush=True)
    return points


NFSP = ["algorithm=nfsp", "opponents.population=0.8", "opponents.self_play=0.2", "opponents.snapshots=0",
        "opponents.snapshot_every=0", "opponents.beat_pool_loss_rate=0", "nfsp.reservoir_size=1000000",
        "nfsp.sl_batch_size=1024", "nfsp.sl_steps=4", "nfsp.sl_learning_rate=1e-3", "ppo.learning_rate=1e-3",
        "ppo.ent_coef=0.1"]  # fmt: skip
"""NFSP's settings on the mini rule sets (``--nashconv``): the best response at 80% of its tables against the average
policy, self-play in the rest, and a faster, more exploring best response than ``COMMON``'s (measured on ``mini``,
docs/research.md: with ``COMMON``'s learning rate and entropy bonus the average policy's NashConv stayed near 1.3, with
these it fell below the uniform random policy's)."""


def _ppo_curve(
    preset: str, game, minutes: float, tmp: Path, nash_conv, nfsp: bool = False
) -> list[tuple[float, float]]:
    """PPO self-play with its snapshot pool (or with ``nfsp``, NFSP's average policy over the same PPO learner), in
    segments of
    200,000 decisions (each resumes the last): (wall seconds, NashConv of the run's agent) after each.
    """
    from training.algorithms.nfsp import train as train_nfsp
    from training.algorithms.ppo import train as train_ppo
    from training.core.checkpoint import load_agent, read_metadata
    from training.core.config import load_config

    segment = 200_000
    per_update = 128 * 16
    sets = [*COMMON, f"game.preset={preset}", f"output_dir={tmp}", f"name={'nfsp' if nfsp else 'ppo'}_{preset}",
            "opponents.self_play=0.5", "opponents.snapshots=0.5", "opponents.baselines={}",
            "opponents.snapshot_every=20", "ppo.anneal_lr=false", f"schedule.checkpoint_every={segment // per_update}",
            *(NFSP if nfsp else [])]  # fmt: skip
    train = train_nfsp if nfsp else train_ppo
    points = [(0.0, nash_conv(_uniform(game), game))]
    total = 0
    while points[-1][0] < 60 * minutes:
        total += segment
        path = train(
            load_config(None, [*sets, f"schedule.total_decisions={total}"]), resume=total > segment, progress_bar=False
        )
        seconds = read_metadata(path)["step"]["wall_seconds"]
        points.append((seconds, nash_conv(load_agent(path, config=game), game)))
        print(
            f"  {preset} {'NFSP' if nfsp else 'PPO'} {total:,} decisions: {seconds:.0f} s, NashConv "
            f"{points[-1][1]:.4f}",
            flush=True,
        )
    return points


if __name__ == "__main__":
    sys.exit(main())
