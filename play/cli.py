"""``cockroach-play``: play Cockroach Poker in the browser against the agents.

    cockroach-play                      # http://127.0.0.1:8000, opens the browser
    cockroach-play --port 9000 --no-browser --save-dir games/

Every finished game is saved as a JSON game record in ``--save-dir`` (default
``~/.cockroach-play/games``; ``--no-save`` keeps none); ``cockroach-replay GAME.json``
turns one into an offline HTML page.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import webbrowser
from collections.abc import Sequence

DEFAULT_SAVE_DIR = os.path.join("~", ".cockroach-play", "games")


def build_parser() -> argparse.ArgumentParser:
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
        "--idle-minutes", type=float, default=30.0, help="a game nobody touches for this long is dropped (default 30)"
    )
    return parser


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
    args = build_parser().parse_args(argv)
    if not 0 < args.port < 65536:
        print(f"cockroach-play: error: --port {args.port} is not allowed; expected 1 to 65535", file=sys.stderr)
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
    try:
        store = GameStore(max_games=args.max_games, idle_seconds=args.idle_minutes * 60)
        app = create_app(store, save_dir=save_dir, custom_agents=local or args.allow_custom_agents)
    except (ValueError, OSError) as error:
        print(f"cockroach-play: error: {error}", file=sys.stderr)
        return 2
    try:
        sockets = listen(args.host, args.port)
    except OSError as error:
        print(
            f"cockroach-play: error: cannot listen on --host {args.host!r} --port {args.port} ({error}); expected a free port on an address of this machine",
            file=sys.stderr,
        )
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
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=sockets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
