"""How readable are an agent's claims, and how well does it read them itself?

Each agent plays ``--games`` games against copies of itself (a mixture draws its member
per seat and game). At every response (call true, call false, or peek and pass on) the
responder's observation is kept with the truth of the claim it faces: the engine knows
the card in play, the player does not. A supervised reader, an MLP on the same
observation, is trained on the first 80% of the games and scored on the rest, beside the
copies' own calls on the same rows and the base rate (always guessing the more common
answer). A reader far above the copies' own calls means the claims can be read from
what a responder sees, and the agent does not read them: a best response learns to
(``docs/research.md``, *readable claims*). The baselines are the peers: ``honest``
never lies, so its claims are all readable; ``random``'s calls are coin flips.

The labels are the hidden card, used here only to score and to train the reader; no
agent ever sees them. ``--json`` keeps an existing file unless ``--overwrite``.

    python benchmarks/bench_readability.py classic-4p heuristic random --games 5000
    python benchmarks/bench_readability.py runs/ppo_4p/final --games 2000 --json readability.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TRAIN_SHARE = 0.8


def collect(spec: str, config, games: int, seed: int) -> dict[str, np.ndarray]:
    """Every response of ``games`` games among copies of ``spec``: observations, truths of the claims faced, and the
    responses taken (0 call true, 1 call false, 2 peek).
    """
    from cockroach_env import raw_env
    from cockroach_env.engine import Phase
    from training.evaluation.lineup import resolve_agent

    env = raw_env(config=config)
    respond = env.encoding.respond_start
    copies = [resolve_agent(spec, config, seed=seed + 1 + k) for k in range(config.num_players)]
    rows, truths, responses, game_of = [], [], [], []
    for g in range(games):
        env.reset(seed=seed * 1_000_003 + g)
        for agent in copies:
            if hasattr(agent, "new_game"):
                agent.new_game()
        while not env.game.over:
            seat = env.game.current
            observation = env.observe(env.agent_selection)
            action = int(copies[seat].act(observation))
            if env.game.phase is Phase.RESPOND:
                chain = env.game.chain
                rows.append(observation["observation"])
                truths.append(bool(config.cards.truth[chain.card][chain.claim]))
                responses.append(action - respond)
                game_of.append(g)
            env.step(action)
    return {
        "observation": np.asarray(rows, np.float32),
        "truth": np.asarray(truths),
        "response": np.asarray(responses),
        "game": np.asarray(game_of),
    }


def fit_reader(x: np.ndarray, y: np.ndarray, seed: int, epochs: int = 30):
    """An MLP (256x256, ReLU) trained with Adam on the binary cross-entropy of the truth; returns a function of
    observations giving P(true).
    """
    import torch
    from torch import nn

    generator = torch.Generator().manual_seed(seed)
    scale = torch.as_tensor(np.maximum(np.abs(x).max(0), 1.0))
    net = nn.Sequential(nn.Linear(x.shape[1], 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    with torch.no_grad():
        for layer in net:
            if isinstance(layer, nn.Linear):
                nn.init.kaiming_uniform_(layer.weight, a=5**0.5, generator=generator)
                layer.bias.zero_()
    optimizer = torch.optim.Adam(net.parameters(), 1e-3)
    inputs, targets = torch.as_tensor(x) / scale, torch.as_tensor(y, dtype=torch.float32)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for start in range(0, len(order), 512):
            batch = torch.as_tensor(order[start : start + 512])
            loss = nn.functional.binary_cross_entropy_with_logits(net(inputs[batch]).squeeze(1), targets[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    def predict(observations: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return torch.sigmoid(net(torch.as_tensor(observations) / scale).squeeze(1)).numpy()

    return predict


def measure(spec: str, config, games: int, seed: int) -> dict:
    started = time.perf_counter()
    data = collect(spec, config, games, seed)
    train = data["game"] < int(TRAIN_SHARE * games)
    test = ~train
    if train.sum() < 2 or test.sum() < 1:
        raise ValueError(
            f"{spec}: {games} games gave {len(data['truth'])} responses ({int(train.sum())} to train on, "
            f"{int(test.sum())} to test); expected more games"
        )
    if len(np.unique(data["truth"][train])) < 2:  # every claim true (honest) or false: the reader answers that
        constant = float(data["truth"][train][0])
        predict = lambda observations: np.full(len(observations), constant)  # noqa: E731
    else:
        predict = fit_reader(data["observation"][train], data["truth"][train], seed)
    truth, response = data["truth"][test], data["response"][test]
    guess = predict(data["observation"][test]) > 0.5
    called = response < 2
    rate = lambda hits: float(np.mean(hits)) if len(hits) else None  # noqa: E731
    return {
        "agent": spec,
        "games": games,
        "responses": int(len(data["truth"])),
        "test_responses": int(test.sum()),
        "truth_rate": float(truth.mean()),
        "base_rate_accuracy": float(max(truth.mean(), 1 - truth.mean())),
        "reader_accuracy": float(np.mean(guess == truth)),
        "calls": int(called.sum()),
        "own_call_accuracy": rate((response[called] == 0) == truth[called]),
        "reader_accuracy_on_calls": rate(guess[called] == truth[called]),
        "peek_rate": float(np.mean(~called)),
        "seconds": time.perf_counter() - started,
    }


def build_parser() -> argparse.ArgumentParser:
    """The command line: the agents, the games per agent, the table, the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "agents",
        nargs="+",
        help="agents to measure: checkpoint paths, shipped names (classic-4p, ...) or baselines (heuristic, random, "
        "...)",
    )
    parser.add_argument(
        "--games",
        type=int,
        default=5000,
        help="games per agent among its copies (default 5000; the reader trains on the first 80%%)",
    )
    parser.add_argument(
        "--players",
        type=int,
        help="players when no agent is a checkpoint (default: the first checkpoint's rules, else 4)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals, the agents and the reader (default 0)")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    return parser


def table_config(args: argparse.Namespace):
    """The table: the first checkpoint's rules, else ``--players`` classic; an error message (str) if refused."""
    from cockroach_env.config import GameConfig
    from training.core.checkpoint import CheckpointError, load_checkpoint

    config = None
    for spec in args.agents:
        try:
            config = load_checkpoint(spec).game_config
            break
        except CheckpointError:
            continue
    if config is None:
        try:
            config = GameConfig(num_players=args.players or 4)
        except ValueError as error:
            return str(error)
    elif args.players is not None and args.players != config.num_players:
        return f"--players {args.players} is not allowed; the checkpoints play {config.num_players}-player games"
    return config


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.games < 10:
        print(
            f"error: --games {args.games} is not allowed; expected at least 10 games (the reader is scored on the "
            "last 20%)",
            file=sys.stderr,
        )
        return 2
    from training.core.output_paths import output_file_problem, write_json_report

    problem = output_file_problem("--json", args.json, replace=args.overwrite)  # before any game is played
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    import torch

    from training.core.checkpoint import CheckpointError

    torch.set_num_threads(max(1, args.torch_threads))
    config = table_config(args)
    if isinstance(config, str):
        print(f"error: {config}", file=sys.stderr)
        return 2
    results = []
    print(
        f"{config.num_players}-player {config.edition}: {args.games} games per agent among its copies, reader trained "
        f"on the first {TRAIN_SHARE:.0%}"
    )
    print(
        f"{'agent':<24} {'responses':>9} {'truth':>6} {'base':>6} {'reader':>7} {'own calls':>9} "
        f"{'reader on calls':>15} {'reader / own':>12} {'peek':>6} {'s':>5}"
    )
    for spec in args.agents:
        try:
            r = measure(spec, config, args.games, args.seed)
        except (CheckpointError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        results.append(r)
        pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"  # noqa: E731
        ratio = "-" if not r["own_call_accuracy"] else f"{r['reader_accuracy_on_calls'] / r['own_call_accuracy']:.2f}x"
        print(
            f"{spec:<24} {r['responses']:>9} {pct(r['truth_rate']):>6} {pct(r['base_rate_accuracy']):>6} "
            f"{pct(r['reader_accuracy']):>7} {pct(r['own_call_accuracy']):>9} "
            f"{pct(r['reader_accuracy_on_calls']):>15} {ratio:>12} {pct(r['peek_rate']):>6} {r['seconds']:>5.0f}"
        )
    if args.json:
        write_json_report(args.json, {"config": config.to_dict(), "seed": args.seed, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
