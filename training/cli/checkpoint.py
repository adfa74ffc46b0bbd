"""``python -m training.checkpoint PATH``: print a checkpoint's metadata, or export its weights.

The file format, loading and export live in ``training.core.checkpoint``; this is their command line.
"""

from __future__ import annotations

import json
import os
import sys

from training.core.checkpoint import CheckpointError, export_agent, read_metadata


def main(argv: list[str] | None = None) -> None:
    """Print a checkpoint's metadata, or export its weights (``python -m training.checkpoint PATH [--export DEST
    [--member NAME] [--average-from UPDATE | --average-with CKPT ...] [--overwrite]]``).
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m training.checkpoint",
        description="Print the metadata of a checkpoint, or export its weights as a small agent checkpoint.",
    )
    parser.add_argument("checkpoint", help="checkpoint path or shipped name")
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
    try:
        print(json.dumps(meta, indent=1), flush=True)
    except (
        BrokenPipeError
    ):  # the reader stopped early (``| head``): not an error; the Python docs' recipe keeps the exit quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    main()
