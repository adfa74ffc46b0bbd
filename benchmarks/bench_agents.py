r"""The strength table of the shipped agents: every baseline, and a best response, side by side.

For each shipped checkpoint (or those named), in one run:

* its loss rate against N-1 copies of every baseline (``random``, ``honest``,
  ``bluffer``, ``heuristic``), in the arena with seat rotation, duplicate deals and 95%
  Wilson intervals, beside parity (1/N);
* the strength target for its table (classic 4 players: at most 8% against three
  ``heuristic``; classic 2 players: at least 80% wins; every other table: at most half
  of parity against N-1 ``heuristic``);
* its exploitability: for the rule sets small enough to enumerate (the ``mini``
  presets) the exact NashConv (``training.evaluation.exact``); otherwise a best response trained
  by ``cockroach-exploit`` for ``--decisions`` against N-1 frozen copies, its loss rate
  with its interval and its points from parity. Against a mixture it is the worst of
  the best responses from each member of weight at least 1% (``--start-member all``):
  the start matters by a few points. ``--start-from CKPT`` adds a start from another
  network's weights (``cockroach-exploit --start-from``) for every agent of CKPT's rules
  and network shape: a single network's own weights are one start only, and a strong
  network of another run may find more.

It prints a Markdown table (the strength table of docs/shipped.md) and, with ``--json``,
writes every figure, after every agent (an existing file is kept unless ``--overwrite``;
the path is checked before any game is played).

    python benchmarks/bench_agents.py --games 4000 --decisions 2000000
    python benchmarks/bench_agents.py classic-3p royal-2p --games 2000 --decisions 1000000
    python benchmarks/bench_agents.py --no-exploit                 # the baseline columns only
    python benchmarks/bench_agents.py classic-4p --decisions 5000000 \
        --start-from runs/strongx2 --start-from runs/ppo_4p_g
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BASELINES = ("random", "honest", "bluffer", "heuristic")
EXACT_TARGETS = {2: 0.02, 3: 0.05}
"""The target: the largest exact NashConv by player count on the enumerable tables (``mini``, ``mini-3p``)."""


def target(config) -> tuple[float, str]:
    """The target: the largest loss rate against N-1 ``heuristic`` for this table, and how it reads."""
    n, parity = config.num_players, 1 / config.num_players
    classic = config.edition == "classic" and config.num_types == 8
    if classic and n == 4:
        return 0.08, "<= 8%"
    if classic and n == 2:
        return 0.20, ">= 80% wins"
    return parity / 2, f"<= {100 * parity / 2:.1f}% (half of parity)"


def start_sources(agents: list[str], starts: list[str]) -> dict[str, list[str]]:
    """For each agent, the ``--start-from`` checkpoints of its rules and network shape; a ``ValueError`` naming a
    start that is not one network, cannot be read, or fits none of the agents.
    """
    from training.core.checkpoint import CheckpointError, read_metadata

    fits: dict[str, list[str]] = {name: [] for name in agents}
    shapes = {name: read_metadata(name) for name in agents}
    for source in starts:
        try:
            meta = read_metadata(source)
        except CheckpointError as err:
            raise ValueError(f"--start-from {source!r}: {err}") from None
        if meta.get("kind") not in ("agent", "run"):
            raise ValueError(
                f"--start-from {source!r} is a {meta.get('kind')!r} checkpoint; expected an agent or run checkpoint "
                "(one network)"
            )
        matching = [
            n
            for n, m in shapes.items()
            if m.get("game_config") == meta.get("game_config") and m.get("model") == meta.get("model")
        ]
        if not matching:
            raise ValueError(
                f"--start-from {source!r} ({meta.get('game_config', {}).get('num_players')} players, network "
                f"{meta.get('model')}) "
                f"fits none of the agents {agents}; expected a checkpoint of an agent's rules and network shape"
            )
        for n in matching:
            fits[n].append(source)
    return fits


def measure(name: str, games: int, decisions: int, seed: int, exploit: bool, start_from: list[str] = ()) -> dict:
    import torch

    torch.set_num_threads(1)
    from training.core.checkpoint import load_agent, read_metadata
    from training.evaluation.arena import play_match

    agent = load_agent(name, seed=seed)
    config = agent.config
    n = config.num_players
    meta = read_metadata(name)
    row = {
        "agent": name,
        "num_players": n,
        "edition": config.edition,
        "parity": 1 / n,
        "decisions_trained": meta.get("step", {}).get("decisions"),
        "against": {},
    }
    for baseline in BASELINES:
        started = time.perf_counter()
        report = play_match([agent, f"{baseline}*{n - 1}"], config, games=games, seed=seed).report(agent.name)
        low, high = report.loss_rate_ci95
        row["against"][baseline] = {
            "loss_rate": report.loss_rate,
            "ci95": [low, high],
            "games": report.games,
            "seconds": time.perf_counter() - started,
        }
        print(
            f"  {name} vs {n - 1} {baseline}: loss {100 * report.loss_rate:.1f}% [{100 * low:.1f}, {100 * high:.1f}] "
            f"({report.games} games)",
            flush=True,
        )
    limit, label = target(config)
    row["target"] = {
        "max_loss_vs_heuristic": limit,
        "label": label,
        "met": row["against"]["heuristic"]["loss_rate"] <= limit,
    }
    if not exploit:
        return row
    row["exploit"] = exploitability_entry(agent, name, meta, games, decisions, seed, start_from)
    return row


def exploitability_entry(agent, name: str, meta: dict, games: int, decisions: int, seed: int, start_from) -> dict:
    """The agent's exploitability: the exact NashConv where the game tree is small enough, else the loss rate of a best
    response trained by ``cockroach-exploit`` (from every member of a mixture).
    """
    from training.evaluation.exact import TreeTooLarge, evaluate, game_tree

    config, n = agent.config, agent.config.num_players
    try:
        tree = game_tree(config)
    except TreeTooLarge:
        tree = None
    started = time.perf_counter()
    if tree is not None:
        result = evaluate(agent, config, tree)
        limit = EXACT_TARGETS.get(n)
        entry = {
            "kind": "exact",
            "nash_conv": result.nash_conv,
            "target": limit,
            "met": limit is not None and result.nash_conv <= limit,
            "seconds": time.perf_counter() - started,
        }
        print(f"  {name}: exact NashConv {result.nash_conv:.4f} (target <= {limit})", flush=True)
        return entry
    from training.cli.exploit import main as exploitability

    with tempfile.TemporaryDirectory() as out:
        report_path = Path(out) / "report.json"
        argv = [
            name,
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
        if meta.get("kind") == "mixture":  # a mixture's exploitability is the worst over starts from its members
            argv += ["--start-member", "all"]
        for source in start_from:
            argv += ["--start-from", source]
        if exploitability(argv) != 0:
            raise RuntimeError(f"cockroach-exploit {' '.join(argv)} failed")
        report = json.loads(report_path.read_text())
    return {
        "kind": "best_response",
        "decisions": decisions,
        "loss_rate": report["best_response_loss_rate"],
        "ci95": report["ci95"],
        "points_from_parity": 100 * report["exploitability"],
        "start_member": report["start_member"],
        "starts": [
            {
                "start_member": r["start_member"],
                "loss_rate": r["best_response_loss_rate"],
                "ci95": r["ci95"],
                "points_from_parity": 100 * r["exploitability"],
            }
            for r in report.get("starts", [report])
        ],
        "seconds": time.perf_counter() - started,
    }


def markdown(rows: list[dict]) -> str:
    head = (
        "| agent | parity | "
        + " | ".join(f"vs N-1 `{b}`" for b in BASELINES)
        + " | target vs `heuristic` | exploitability |"
    )
    lines = [head, "|" + "---|" * (len(BASELINES) + 4)]
    for row in rows:
        cells = [f"`{row['agent']}`", f"{100 * row['parity']:.1f}%"]
        for baseline in BASELINES:
            r = row["against"][baseline]
            cells.append(f"{100 * r['loss_rate']:.1f}% [{100 * r['ci95'][0]:.1f}, {100 * r['ci95'][1]:.1f}]")
        t = row["target"]
        cells.append(f"{t['label']}: {'met' if t['met'] else '**not met**'}")
        e = row.get("exploit")
        if e is None:
            cells.append("not measured")
        elif e["kind"] == "exact":
            verdict = (
                ""
                if e.get("target") is None
                else f" (target <= {e['target']:g}: {'met' if e['met'] else '**not met**'})"
            )
            cells.append(f"exact NashConv {e['nash_conv']:.4f}{verdict}")
        else:
            worst = (
                "its own weights" if e["start_member"] is None else f"`{e['start_member']}`"
            )  # a single network's own start has no member name
            starts = "" if len(e.get("starts", [])) < 2 else f", worst of {len(e['starts'])} starts: from {worst}"
            cells.append(
                f"best response ({e['decisions'] / 1e6:g} M decisions{starts}) loses {100 * e['loss_rate']:.1f}% "
                f"[{100 * e['ci95'][0]:.1f}, {100 * e['ci95'][1]:.1f}]: {e['points_from_parity']:.1f} points from "
                "parity"
            )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from training.core.checkpoint import shipped_checkpoints

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("agents", nargs="*", help="shipped names or checkpoint paths (default: every shipped agent)")
    parser.add_argument(
        "--games",
        type=int,
        default=4000,
        help="arena games per match and for the best response's evaluation (default 4000)",
    )
    parser.add_argument(
        "--decisions",
        type=int,
        default=2_000_000,
        help="best-response budget where the tree is too large for exact evaluation (default 2,000,000)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-exploit", action="store_true", help="skip the exploitability column")
    parser.add_argument(
        "--start-from",
        action="append",
        default=[],
        metavar="CKPT",
        help="also train each best response from the weights of CKPT (an agent or run; repeatable), for every agent "
        "of its "
        "rules and network shape; the worst start is reported (cockroach-exploit --start-from)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON (rewritten after every agent)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    args = parser.parse_args(argv)
    if args.games < 1 or args.decisions < 1:
        parser.error(f"--games {args.games} and --decisions {args.decisions} must be positive integers")
    from training.core.output_paths import output_file_problem, write_json_report

    problem = output_file_problem("--json", args.json, replace=args.overwrite)  # before any game is played
    if problem:
        parser.error(problem)
    names = args.agents or shipped_checkpoints()
    try:  # before any game is played
        starts = start_sources(names, args.start_from) if args.start_from and not args.no_exploit else {}
    except ValueError as err:
        parser.error(str(err))
    started = time.perf_counter()
    rows = []
    for name in names:
        rows.append(measure(name, args.games, args.decisions, args.seed, not args.no_exploit, starts.get(name, [])))
        if args.json:  # after every agent, so that a long run keeps what it measured
            write_json_report(args.json, rows)
    print(
        f"\n{len(rows)} agents, {args.games} games per match, {time.perf_counter() - started:.0f} s wall, load "
        f"average {os.getloadavg()[0]:.2f}\n"
    )
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
