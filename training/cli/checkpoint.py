"""``python -m training.checkpoint PATH``: describe a checkpoint and the commands that made it (``--json``: its
whole metadata), or export its weights.

The file format, loading and export live in ``training.core.checkpoint``; this is their command line.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import textwrap
from typing import Any

from training.core.checkpoint import CheckpointError, export_agent, read_metadata

WIDTH = 110
"""Lines of the description are wrapped at this width (a long command continues on the next line after a
backslash).
"""


def main(argv: list[str] | None = None) -> None:
    """Describe a checkpoint and its recipe, print its metadata (``--json``), or export its weights
    (``python -m training.checkpoint PATH [--json | --export DEST [--member NAME] [--average-from UPDATE |
    --average-with CKPT ...] [--overwrite]]``).
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m training.checkpoint",
        description=(
            "Describe a checkpoint and the commands that made it (--json: its whole metadata), or export its "
            "weights as a small agent checkpoint."
        ),
    )
    parser.add_argument("checkpoint", help="checkpoint path or shipped name")
    parser.add_argument("--json", action="store_true", help="print the whole metadata as JSON")
    parser.add_argument(
        "--export", metavar="DEST", help="write the weights-only agent checkpoint DEST.{json,safetensors}"
    )
    parser.add_argument(
        "--member",
        metavar="NAME",
        help="with --export: the mixture member (name or index), or an NFSP run's average (default) or best_response",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="with --export: replace an existing checkpoint at DEST"
    )
    parser.add_argument(
        "--average-from",
        metavar="UPDATE",
        type=int,
        help="with --export of a run: average the policy with its pool's snapshots from UPDATE on",
    )
    parser.add_argument(
        "--average-with",
        metavar="CKPT",
        action="append",
        default=[],
        help="with --export (repeatable): average the network with CKPT's (one game and network shape)",
    )
    args = parser.parse_args(argv)
    if (
        args.member is not None or args.overwrite or args.average_from is not None or args.average_with
    ) and not args.export:
        parser.error("--member, --average-from, --average-with and --overwrite go with --export DEST")
    if args.json and args.export:
        parser.error("--json prints a checkpoint's metadata; it does not go with --export DEST")
    try:
        if args.export:
            print(
                export_agent(
                    args.checkpoint,
                    args.export,
                    member=args.member,
                    overwrite=args.overwrite,
                    average_from=args.average_from,
                    average_with=args.average_with,
                )
            )
            return
        meta = read_metadata(args.checkpoint)
    except CheckpointError as error:
        raise SystemExit(f"error: {error}") from None
    except (
        OSError
    ) as error:  # (reading is a CheckpointError: this is writing DEST) a file in its path, a full disk, no permission
        where = f" ({error.filename})" if error.filename else ""
        raise SystemExit(
            f"error: --export {args.export}: cannot write the checkpoint{where}: {error.strerror or error}"
        ) from None
    meta.pop("_path")
    text = json.dumps(meta, indent=1) if args.json else describe(meta, args.checkpoint)
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # the reader stopped early (``| head``): not an error; the Python docs' recipe keeps the exit quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def describe(meta: dict[str, Any], label: str) -> str:
    """A checkpoint's metadata for a reader: what it is, the package version that wrote it, its training, and its
    recipe: every command that made it, oldest first, with those of the runs it started from and of a mixture's
    members.
    """
    from cockroach_env.config import GameConfig
    from training.evaluation.report import describe_config

    model = meta["model"]
    network = f"{'x'.join(str(h) for h in model['hidden_sizes'])} {model['activation']}" + (
        ", card counting" if model.get("card_counting") else ""
    )
    rows = [
        ("kind", meta["kind"]),
        ("game", describe_config(GameConfig(**meta["game_config"]))),
        ("network", network),
        ("recorded name", meta.get("name")),
        ("written by", f"cockroach-poker-rl {meta['package_version']}" if "package_version" in meta else None),
        ("created", meta.get("created")),
        ("trained", _step(meta.get("step"))),
        ("exported from", meta.get("exported_from")),
    ]
    if meta["kind"] == "mixture":
        members = (meta.get("mixture") or {}).get("members") or []
        rows.append(("members", ", ".join(f"{m.get('name')} ({m.get('weight', 0):.3g})" for m in members)))
    if "package_version" not in meta:
        rows[4] = ("written by", "not recorded (saved before checkpoints recorded the package version)")
    lines = [label]
    for key, value in rows:
        if value not in (None, ""):
            lines += textwrap.wrap(
                f"{key + ':':15}{value}", WIDTH, initial_indent="  ", subsequent_indent=" " * 17, break_on_hyphens=False
            )
    recipe = _recipe(meta, "  ")
    lines += ["", "recipe (oldest command first):", *(recipe or ["  not recorded"])]
    note = meta.get("note")
    if isinstance(note, str) and note:
        lines += ["", "note:", *textwrap.wrap(note, WIDTH, initial_indent="  ", subsequent_indent="  ")]
    lines += ["", f"the whole metadata: python -m training.checkpoint {shlex.quote(label)} --json"]
    return "\n".join(lines)


def _step(step: Any) -> str | None:
    """``500,006,912 decisions, 5,132,939 games, 154 min`` of a ``step`` entry."""
    if not isinstance(step, dict):
        return None
    parts = [
        f"{step[key]:,} {word}"
        for key, word in (("iteration", "iterations"), ("decisions", "decisions"), ("games", "games"))
        if isinstance(step.get(key), int)
    ]
    seconds = step.get("wall_seconds")
    if isinstance(seconds, (int, float)):
        parts.append(f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s")
    return ", ".join(parts) or None


def _recipe(node: dict[str, Any], indent: str) -> list[str]:
    """The commands that made ``node`` (a checkpoint's metadata, a ``base_run``, a mixture's recipe), oldest first:
    those of the run it started from (``base_run``), of the members it mixes (``recipes``: with ``member``, only
    that one), then its own.
    """
    lines: list[str] = []
    base = node.get("base_run")
    if isinstance(base, dict):
        member = f"member {base['member']} of " if isinstance(base.get("member"), str) else ""
        lines.append(f"{indent}started from {member}{base.get('path', 'another run')}:")
        lines += _recipe(base, indent + "  ") or [f"{indent}  (its commands are not recorded)"]
    recipes = node.get("recipes")
    if recipes is None and isinstance(node.get("mixture"), dict):
        recipes = node["mixture"].get("recipes")
    if isinstance(recipes, list):
        wanted = node.get("member")
        if any(isinstance(r, dict) and r.get("name") == wanted for r in recipes):
            recipes = [r for r in recipes if r.get("name") == wanted]
        for member in (r for r in recipes if isinstance(r, dict)):
            source = f" ({member['source']})" if isinstance(member.get("source"), str) else ""
            lines.append(f"{indent}member {member.get('name', '?')}{source}:")
            lines += _recipe(member, indent + "  ") or [f"{indent}  (its commands are not recorded)"]
    commands = node.get("commands")
    if not isinstance(commands, list) or not commands:
        commands = [node["command"]] if isinstance(node.get("command"), str) else []
    if lines and commands:
        lines.append(f"{indent}then:")
    for command in commands:
        if isinstance(command, str):
            lines += _command_lines(command, indent)
    return lines


def _command_lines(command: str, indent: str) -> list[str]:
    """``$ command`` wrapped for a terminal: whole options (``--set x=1``) per line, each line but the last ending
    in a backslash, so that the lines can be pasted into a shell as they are.
    """
    try:
        tokens = shlex.split(command)
    except ValueError:  # unbalanced quotes: shown as recorded
        return [f"{indent}$ {command}"]
    groups: list[list[str]] = []
    for token in tokens:
        if token.startswith("-") or not groups or groups[-1][0].startswith("-") and len(groups[-1]) > 1:
            groups.append([token])
        else:
            groups[-1].append(token)
    words: list[str] = []
    for group in groups:
        quoted = " ".join(shlex.quote(t) for t in group)
        words += [quoted] if len(indent) + 6 + len(quoted) <= WIDTH else [shlex.quote(t) for t in group]
    lines, current = [], f"{indent}$"
    for word in words:
        if len(current) + 1 + len(word) > WIDTH - 2 and current.strip() != "$":
            lines.append(current + " \\")
            current = f"{indent}    {word}"
        else:
            current += f" {word}"
    return [*lines, current]


if __name__ == "__main__":
    main()
