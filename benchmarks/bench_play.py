"""cockroach-play server latency per move, with many concurrent games, side by side with
the same moves applied in process (no HTTP), in one run.

    python benchmarks/bench_play.py [--games 32] [--seconds 20] [--agent heuristic] [--min-moves 0]

A real server (``python -m play.cli``) runs in its own process on 127.0.0.1 (only the
loopback interface; the benchmark refuses anything else). The load generator, in this
process, plays ``--games`` games at once, one human seat each against three
``--agent`` seats with instant pace: each game listens on its WebSocket and, whenever
its seat is to act, POSTs a random legal move. Two latencies per move:

* ``move``: the POST round trip (the server validates and applies the move and
  answers with the new view);
* ``turn``: from the POST to the WebSocket view in which the seat is to act again (the
  three agents' moves and the pushes included).

Peer: the same session code driven in process, ``GameSession.human_move`` plus
``view`` with no web layer, timed per move; the ratio printed is the HTTP move
latency over it, i.e. the cost of the web layer. Bounded: at most ``--games`` games
(at most 64), ``--seconds`` of load (at most 120), and ``--max-moves`` per game.
``--min-moves N`` measures at least N human moves over HTTP and N in process, however
long that takes on a busy machine (a sample bounded by a count, not by seconds); an
empty sample prints ``-``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from play.session import random_move  # noqa: E402

HOST = "127.0.0.1"


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def median(values: list[float]) -> float:
    """The median, NaN for an empty sample (a short run on a busy machine may measure nothing)."""
    return statistics.median(values) if values else float("nan")


def shown(value: float) -> str:
    return "-" if value != value else f"{value:.2f}"


async def one_game(
    client,
    base: str,
    index: int,
    agent: str,
    deadline: float,
    max_moves: int,
    move_ms: list,
    turn_ms: list,
    errors: list,
    min_moves: int = 0,
) -> int:
    import websockets

    rng = np.random.default_rng(index)
    response = await client.post(
        f"{base}/api/games", json={"seats": ["human", agent, agent, agent], "seed": index, "pace_ms": 0}
    )
    if response.status_code != 200:
        errors.append(response.text)
        return 0
    created = response.json()
    game_id, token = created["game_id"], created["tokens"]["player_0"]
    moves = 0
    handled = -1
    async with websockets.connect(
        f"ws://{base.split('//')[1]}/api/games/{game_id}/ws?token={token}", max_size=None
    ) as ws:
        sent_at = None
        while (time.monotonic() < deadline or len(move_ms) < min_moves) and moves < max_moves:
            view = json.loads(await asyncio.wait_for(ws.recv(), timeout=30))
            if view["over"]:
                break
            if view["legal"] is None or view["version"] <= handled:
                continue
            handled = view["version"]
            if sent_at is not None:
                turn_ms.append((time.perf_counter() - sent_at) * 1000)
            sent_at = time.perf_counter()
            log_from = view["log_from"] + len(view["log"])
            response = await client.post(
                f"{base}/api/games/{game_id}/move",
                json={"token": token, "log_from": log_from, **random_move(view["legal"], rng)},
            )
            move_ms.append((time.perf_counter() - sent_at) * 1000)
            if response.status_code != 200:
                errors.append(response.text)
                break
            moves += 1
    await client.delete(f"{base}/api/games/{game_id}", params={"token": token})
    return moves


async def load(base: str, games: int, seconds: float, agent: str, max_moves: int, min_moves: int = 0):
    import httpx

    move_ms: list[float] = []
    turn_ms: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + seconds
    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=games + 4)) as client:
        round_index = 0
        total_moves = 0
        while time.monotonic() < deadline or len(move_ms) < min_moves:
            counts = await asyncio.gather(
                *(
                    one_game(
                        client,
                        base,
                        round_index * games + k,
                        agent,
                        deadline,
                        max_moves,
                        move_ms,
                        turn_ms,
                        errors,
                        min_moves,
                    )
                    for k in range(games)
                )
            )
            total_moves += sum(counts)
            round_index += 1
            if errors:
                break
    return move_ms, turn_ms, errors, total_moves, time.perf_counter() - started


def in_process(agent: str, seconds: float, min_moves: int = 0) -> list[float]:
    """The same moves through GameSession directly: the session's own cost per move (at least ``min_moves``)."""
    from cockroach_env.config import GameConfig
    from play.session import GameSession

    rng = np.random.default_rng(0)
    times = []
    deadline = time.monotonic() + seconds
    index = 0
    while time.monotonic() < deadline or len(times) < min_moves:
        session = GameSession(GameConfig(), ["human", agent, agent, agent], seed=index, pace_ms=0)
        human = session.seats[0]
        index += 1
        while not session.over and (time.monotonic() < deadline or len(times) < min_moves):
            while session.agent_move():
                pass
            if session.over:
                break
            legal = session.legal(human)
            start = time.perf_counter()
            session.human_move(human, random_move(legal, rng))
            session.view(human)
            times.append((time.perf_counter() - start) * 1000)
    return times


def server_cpu_seconds(pid: int) -> float:
    """User + system CPU time of the server process (Linux /proc; NaN elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def print_report(base: str, args: argparse.Namespace, measured: tuple, local: list[float], cpu: float, own: float):
    """The latencies of the served moves beside the in-process ones, and the CPU the server and this process used."""
    move_ms, turn_ms, errors, moves, wall = measured
    print(
        f"cockroach-play on {base}: {args.games} concurrent games (human + 3 x {args.agent}, instant pace), "
        f"{wall:.1f} s, {moves} human moves, {len(errors)} errors"
    )
    print(f"{'latency per move':<40}{'median ms':>10}{'p99 ms':>10}{'moves':>8}")
    print(
        f"{'HTTP move (POST round trip)':<40}{shown(median(move_ms)):>10}{shown(percentile(move_ms, 99)):>10}"
        f"{len(move_ms):>8}"
    )
    print(
        f"{'turn (POST to the next own-turn push)':<40}{shown(median(turn_ms)):>10}"
        f"{shown(percentile(turn_ms, 99)):>10}{len(turn_ms):>8}"
    )
    print(
        f"{'in process (GameSession, no web)':<40}{shown(median(local)):>10}{shown(percentile(local, 99)):>10}"
        f"{len(local):>8}"
    )
    if move_ms and local:
        print(f"ratio HTTP move / in process (median): {median(move_ms) / median(local):.1f}x")
    else:
        print("ratio HTTP move / in process (median): - (an empty sample: raise --seconds or give --min-moves)")
    if cpu == cpu:
        print(
            f"server CPU: {cpu:.1f} s in {wall:.1f} s of load ({100 * cpu / wall:.0f}% of one core), "
            f"{1000 * cpu / max(1, moves):.1f} ms per human move (with the three agent moves and the pushes it causes)"
        )
    print(
        f"load generator CPU: {own:.1f} s ({100 * own / wall:.0f}% of one core); machine load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=32, help="concurrent games (1-64, default 32)")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of load (at most 120, default 20)")
    parser.add_argument(
        "--agent", default="heuristic", help="the three agent seats of every game (default heuristic; e.g. classic-4p)"
    )
    parser.add_argument("--max-moves", type=int, default=200, help="human moves per game at most (default 200)")
    parser.add_argument(
        "--min-moves",
        type=int,
        default=0,
        help="measure at least this many human moves over HTTP and in process, past --seconds if need be (0-10000)",
    )
    args = parser.parse_args()
    if not 1 <= args.games <= 64 or not 0 < args.seconds <= 120 or args.max_moves < 1:
        parser.error("--games must be 1-64, --seconds in (0, 120], --max-moves positive")
    if not 0 <= args.min_moves <= 10_000:
        parser.error(f"--min-moves {args.min_moves} is not allowed; expected an integer from 0 to 10000")
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "play.cli",
            "--host",
            HOST,
            "--port",
            str(port),
            "--no-browser",
            "--no-save",
            "--max-games",
            str(args.games + 4),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
        stdout=subprocess.DEVNULL,
    )
    base = f"http://{HOST}:{port}"
    try:
        import httpx

        for _ in range(300):
            try:
                httpx.get(f"{base}/api/setup", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            print("the server did not start", file=sys.stderr)
            return 1
        cpu_before, own_before = server_cpu_seconds(server.pid), time.process_time()
        move_ms, turn_ms, errors, moves, wall = asyncio.run(
            load(base, args.games, args.seconds, args.agent, args.max_moves, args.min_moves)
        )
        cpu, own = server_cpu_seconds(server.pid) - cpu_before, time.process_time() - own_before
    finally:
        server.terminate()
        server.wait(timeout=10)
    local = in_process(args.agent, min(args.seconds, 10.0), args.min_moves)
    print_report(base, args, (move_ms, turn_ms, errors, moves, wall), local, cpu, own)
    if errors:
        print("errors:", errors[:3], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
