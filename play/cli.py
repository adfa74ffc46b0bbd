"""``cockroach-play``: play Cockroach Poker in the browser against the agents.

    cockroach-play                      # http://127.0.0.1:8000, opens the browser
    cockroach-play --port 9000 --no-browser --save-dir games/

Every finished game is saved as a JSON game record in ``--save-dir`` (default
``~/.cockroach-play/games``; ``--no-save`` keeps none); ``cockroach-replay GAME.json``
turns one into an offline HTML page.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
import threading
import webbrowser
from collections.abc import Sequence

DEFAULT_SAVE_DIR = os.path.join("~", ".cockroach-play", "games")


def build_parser() -> argparse.ArgumentParser:
    """The options of ``cockroach-play``."""
    parser = argparse.ArgumentParser(
        prog="cockroach-play",
        description="Play Cockroach Poker in the browser against shipped checkpoints, baselines or your own agents.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1: this machine only)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    parser.add_argument(
        "--save-dir",
        default=DEFAULT_SAVE_DIR,
        help=f"directory for the record of every finished game (default {DEFAULT_SAVE_DIR})",
    )
    parser.add_argument("--no-save", action="store_true", help="save no game records")
    parser.add_argument(
        "--max-games", type=int, default=64, help="games held at once (default 64); more are refused with 503"
    )
    parser.add_argument(
        "--allow-custom-agents",
        action="store_true",
        help="take module:Class and checkpoint-path seats from the page on an address other than this machine's "
        "(they import code and read files on the server; always taken on 127.0.0.1, localhost and ::1)",
    )
    parser.add_argument(
        "--idle-minutes",
        type=float,
        default=30.0,
        help="a game nobody touches for this long is dropped "
        f"(default 30; {MIN_IDLE_MINUTES:g} to {MAX_IDLE_MINUTES:g})",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a further name the page may be reached by (a Host header the server takes; repeatable); the --host "
        "address, this machine's names and the loopback names are always taken",
    )
    return parser


MIN_IDLE_MINUTES = 1.0
MAX_IDLE_MINUTES = 7 * 24 * 60.0
MAX_GAMES = 10_000
SHUTDOWN_SECONDS = 5


def option_problem(args: argparse.Namespace) -> str | None:
    """Why an option is refused (named as the user typed it), or None."""
    if not 0 < args.port < 65536:
        return f"--port {args.port} is not allowed; expected 1 to 65535"
    if not 1 <= args.max_games <= MAX_GAMES:
        return f"--max-games {args.max_games} is not allowed; expected 1 to {MAX_GAMES}"
    if not MIN_IDLE_MINUTES <= args.idle_minutes <= MAX_IDLE_MINUTES:  # NaN fails too
        return (
            f"--idle-minutes {args.idle_minutes:g} is not allowed; expected {MIN_IDLE_MINUTES:g} to "
            f"{MAX_IDLE_MINUTES:g} minutes (a shorter time drops a game while its players think)"
        )
    return None


def served_hosts(host: str, sockets: list[socket.socket], extra: Sequence[str]) -> list[str]:
    """The names a request's Host may give: ``--host``, the loopback names, the bound addresses, ``extra``, and for a
    wildcard host this machine's name and addresses.
    """
    names = [host, *LOCAL_HOSTS, *(sock.getsockname()[0] for sock in sockets), *extra]
    if host in ("", "0.0.0.0", "::"):
        machine = socket.gethostname()
        names += [machine, socket.getfqdn()]
        with contextlib.suppress(OSError):
            names += [info[4][0] for info in socket.getaddrinfo(machine, None)]
    return list(dict.fromkeys(names))


LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
"""Hosts only this machine reaches: the page may name any agent there."""


def listen(host: str, port: int) -> list[socket.socket]:
    """Sockets bound to every address ``host`` names (``OSError`` if one cannot be), before
    anything is announced; the wildcard ``::`` takes IPv4 too, as ``0.0.0.0`` would.
    """
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        ):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, int(address[0] != "::"))
            sock.bind(address)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def page_url(host: str, port: int) -> str:
    """The address to open: this machine for a wildcard host, an IPv6 address in brackets."""
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``cockroach-play`` until it is stopped; 2 for a refused option (nothing served)."""
    args = build_parser().parse_args(argv)
    problem = option_problem(args)
    if problem is not None:
        print(f"cockroach-play: error: {problem}", file=sys.stderr)
        return 2
    try:
        import uvicorn

        from play.server import create_app
        from play.store import GameStore
    except ImportError as error:
        print(
            f'cockroach-play: error: {error}; install the web extra with pip install "cockroach-poker-rl[play]"',
            file=sys.stderr,
        )
        return 2
    save_dir = None if args.no_save else os.path.expanduser(args.save_dir)
    local = args.host in LOCAL_HOSTS
    if save_dir is not None:
        from play.replay import checkpoint_folder_problem

        problem = checkpoint_folder_problem("--save-dir", save_dir, folder=True)
        if problem is None and os.path.exists(save_dir) and not os.path.isdir(save_dir):
            problem = f"--save-dir {save_dir!r} is a file; expected a directory (it is created if missing)"
        if problem is not None:
            print(f"cockroach-play: error: {problem}", file=sys.stderr)
            return 2
    try:
        sockets = listen(args.host, args.port)
    except OSError as error:
        print(
            f"cockroach-play: error: cannot listen on --host {args.host!r} --port {args.port} ({error}); "
            "expected a free port on an address of this machine",
            file=sys.stderr,
        )
        return 2
    try:
        store = GameStore(max_games=args.max_games, idle_seconds=args.idle_minutes * 60)
        app = create_app(
            store,
            save_dir=save_dir,
            custom_agents=local or args.allow_custom_agents,
            allowed_hosts=served_hosts(args.host, sockets, args.allow_host),
        )
    except (ValueError, OSError) as error:
        for sock in sockets:
            sock.close()
        print(f"cockroach-play: error: --save-dir {save_dir!r}: {error}", file=sys.stderr)
        return 2
    url = page_url(args.host, args.port)
    print(f"cockroach-play: serving on {url}" + (f"; game records go to {save_dir}" if save_dir else ""), flush=True)
    if not local:
        custom = (
            "and choose any module:Class or checkpoint path as an agent (--allow-custom-agents)"
            if args.allow_custom_agents
            else "(with the baselines and shipped agents only: --allow-custom-agents takes module:Class and paths too)"
        )
        print(
            f"cockroach-play: warning: listening on {args.host}: anyone who can reach it can start games {custom}",
            file=sys.stderr,
        )
    if not args.no_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    # a stop waits at most SHUTDOWN_SECONDS for requests in flight (an agent that loads may take a minute)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=SHUTDOWN_SECONDS)).run(
        sockets=sockets
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
