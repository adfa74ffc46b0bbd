"""``cockroach-replay GAME.json -o game.html``: one self-contained HTML page that replays a
saved game offline: step forward and back, a reveal toggle, every claim marked true or
false once its card is revealed, and a summary per player.

An existing output file is replaced only with ``--overwrite``; a checkpoint's file, a file
in a folder of checkpoints or in a run directory, and the game record itself never are.
A pipe or a device (``-o /dev/stdout``) is written into.

The page embeds the whole record, deal included (a record holds every hidden card by
design); it shows hidden cards only while the reveal toggle is on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from cockroach_env.art import art_sheet
from cockroach_env.config import GameConfig
from cockroach_env.record import RecordError, load_record
from play.narrative import claims, frames, summary


def replay_data(record: dict[str, Any]) -> dict[str, Any]:
    """What the replay page shows, computed from a checked record."""
    config = GameConfig(**record["config"])
    return {
        "players": record["players"],
        "result": record["result"],
        "meta": record["meta"],
        "config": record["config"],
        "frames": frames(record),
        "claims": claims(record),
        "summary": summary(record),
        "art": art_sheet(config.cards.identities),
    }


def replay_html(record: dict[str, Any]) -> str:
    """The replay page of ``record`` as one HTML document (no network needed to open it)."""
    load_record(record)
    template = (resources.files("play") / "static" / "replay.html").read_text(encoding="utf-8")
    data = json.dumps(replay_data(record), separators=(",", ":")).replace("</", "<\\/")
    return template.replace("__REPLAY_DATA__", data)


def write_page(html: str, output: str) -> None:
    """Write ``html`` to ``output``: a file is replaced whole (``training.core.checkpoint.write_file_atomically``,
    so a reader never sees half a page); a device or a pipe (``/dev/null``) is written into.
    """
    if os.path.exists(output) and not os.path.isfile(output):
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(html)
        return
    from training.core.checkpoint import write_file_atomically  # (no torch)

    write_file_atomically(output, html.encode("utf-8"))


def checkpoint_folder_problem(option: str, path: str | os.PathLike, folder: bool = False) -> str | None:
    """Why ``path`` (the value of ``option``: a file, or with ``folder`` a folder to write files in) is a
    checkpoint's file or a run's file, or None.

    Refused whatever ``--overwrite`` says: a ``.safetensors`` file, any file in a folder that
    holds checkpoint tensors (``*.safetensors``), and any file in a run directory (a folder,
    or one above, holding the run's ``checkpoint.json`` beside its tensors). Only names are
    looked at: nothing is opened, so a pipe or a device never blocks.
    """
    target = Path(os.path.abspath(path))
    if folder:
        target = target / "file"  # a file the command would write there
    elif target.name.endswith(".safetensors"):
        return (
            f"{option} {str(path)!r} is a checkpoint's tensor file; writing there would destroy the checkpoint: "
            "choose another file name"
        )
    directory = target.parent
    try:
        tensors = sorted(entry.name for entry in os.scandir(directory) if entry.name.endswith(".safetensors"))
    except OSError:
        tensors = []  # a missing or unreadable folder is named by the checks that follow
    if tensors:
        where = "is" if folder else f"is in {str(directory)!r},"
        return (
            f"{option} {str(path)!r} {where} the folder of the checkpoint tensors {tensors[0]!r}: "
            "a file written there could replace a checkpoint's file; choose another folder"
        )
    for run_dir in target.parents:
        if (run_dir / "checkpoint.json").is_file() and any(run_dir.glob("checkpoint*.safetensors")):
            return (
                f"{option} {str(path)!r} is inside the run directory {str(run_dir)!r} (it holds the run's checkpoint): "
                "a file written there could replace the run's files; choose a folder outside it"
            )
    return None


def output_problem(option: str, path: str, overwrite: bool) -> str | None:
    """Why the command may not write its page to ``path``, or None (``training.core.output_paths.output_file_problem``,
    plus ``checkpoint_folder_problem``). A pipe or a device (``/dev/stdout``, ``/dev/null``) is written into, never
    replaced: it passes.
    """
    from training.core.output_paths import output_file_problem  # (no torch)

    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        return None
    return checkpoint_folder_problem(option, path) or output_file_problem(option, path, replace=overwrite)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``cockroach-replay``; the exit status (2: a refused game record or output, nothing written)."""
    parser = argparse.ArgumentParser(
        prog="cockroach-replay", description="Write a saved Cockroach Poker game as one offline HTML replay page."
    )
    parser.add_argument("game", help="a game record (JSON) saved by cockroach-play or cockroach-eval --save-games")
    parser.add_argument("-o", "--output", default=None, help="the HTML file to write (default: GAME with .html)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing -o file (never a checkpoint, a file of a run directory, or the game record itself)",
    )
    args = parser.parse_args(argv)
    output = args.output or os.path.splitext(args.game)[0] + ".html"
    if os.path.exists(output) and os.path.exists(args.game) and os.path.samefile(output, args.game):
        print(
            f"cockroach-replay: error: -o {output!r} is the game record itself; writing there would destroy it: "
            "choose another file name",
            file=sys.stderr,
        )
        return 2
    problem = output_problem("-o", output, args.overwrite)
    if problem is not None:
        print(f"cockroach-replay: error: {problem}", file=sys.stderr)
        return 2
    try:
        record = load_record(args.game)
        html = replay_html(record)
    except RecordError as error:
        print(f"cockroach-replay: error: {error}", file=sys.stderr)
        return 2
    try:
        write_page(html, output)
    except OSError as error:
        print(f"cockroach-replay: error: cannot write -o {output!r} ({error})", file=sys.stderr)
        return 2
    print(f"cockroach-replay: wrote {output} ({len(record['actions'])} moves)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
