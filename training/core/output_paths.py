"""Output files of the command-line tools, checked before any work (games, training) is done."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import tempfile
from pathlib import Path


def output_file_problem(
    option: str, path: str | os.PathLike | None, checkpoint: bool = False, replace: bool = True
) -> str | None:
    """Why ``path`` (the value of ``option``) cannot be written, or None; creates nothing that stays.

    Refused: an existing directory, a missing or non-directory parent, a parent where no
    file can be created (read-only, no permission), and the metadata file of an existing
    checkpoint (writing a report there would destroy it) unless ``checkpoint`` (the
    command writes a checkpoint there itself); with ``replace=False`` (a command whose
    ``--overwrite`` was not given), any existing file. ``None`` and ``-`` (stdout) pass.
    """
    if path is None or str(path) == "-":
        return None
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        return f"{option} {str(path)!r} is a directory; expected a file path"
    if not checkpoint and _is_checkpoint_metadata(target):  # before "exists": --overwrite would not make this one safe
        return (
            f"{option} {str(path)!r} is the metadata of a checkpoint; writing there would destroy the "
            f"checkpoint: choose another file name"
        )
    if not replace and target.exists():
        return f"{option} {path} already exists; pass --overwrite to replace it, or give another path"
    if not parent.is_dir():
        why = "does not exist" if not parent.exists() else "is not a directory"
        return (
            f"{option} {str(path)!r}: the directory {str(parent)!r} {why}; expected a file path in an "
            f"existing directory"
        )
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as error:
        return f"{option} {str(path)!r}: cannot create a file in {str(parent)!r} ({error.strerror or error})"
    return None


def write_json_report(path: str | os.PathLike, data, indent: int = 1) -> None:
    """Write a command's ``--json`` report (checked first by ``output_file_problem``): to stdout for ``-``, else
    through a temporary file and one rename, so that a kill never leaves a torn report.
    """
    text = json.dumps(data, indent=indent) + "\n"
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    # here: training.core.checkpoint is heavy, and most callers only check paths
    from training.core.checkpoint import (
        write_file_atomically,
    )

    write_file_atomically(path, text.encode())


def _is_checkpoint_metadata(path: Path) -> bool:
    """Whether ``path`` is an existing checkpoint's JSON metadata (its ``format`` field, read from the first bytes)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open, a device could never end
            return False
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return False
    try:
        head = os.read(fd, 4096) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return False
    finally:
        os.close(fd)
    return re.search(rb'"format"\s*:\s*"cockroach-poker-checkpoint"', head) is not None


def run_dir_problem(run_dir: Path, resume: bool, overwrite: bool) -> str | None:
    """Why ``run_dir`` cannot be used as asked (or None); checked before any work. Creates the directory."""
    try:
        if run_dir.exists() and not run_dir.is_dir():
            return f"the run directory {run_dir} is a file; expected a directory (change output_dir or name)"
        existing = sorted(entry.name for entry in os.scandir(run_dir)) if run_dir.is_dir() else []
    except OSError as error:
        return f"cannot read the run directory {run_dir}: {error.strerror or error}"
    checkpoint = run_dir / "checkpoint.json"
    if resume and not checkpoint.is_file():
        found = f"; it holds {existing[:8]}" if existing else ""
        return f"--resume: no checkpoint at {checkpoint}{found}"
    if not resume and not overwrite and existing:
        shown = ", ".join(existing[:8]) + (", ..." if len(existing) > 8 else "")
        return (
            f"{run_dir} already holds a run ({shown}); pass --resume to continue it, --overwrite to start "
            f"again (replacing its files), or --set name=..."
        )
    why = _unwritable(run_dir)
    return (
        None
        if why is None
        else f"cannot write to the run directory {run_dir}: {why} (check output_dir={str(run_dir.parent)!r} "
        f"and its permissions)"
    )


def new_directory_problem(option: str, directory: Path) -> str | None:
    """Why ``directory`` (the value of ``option``) cannot take a command's new files, or None, having created it:
    it must be new or empty, so that earlier files there are kept and never mixed with the new ones.
    """
    try:
        if directory.exists() and not directory.is_dir():
            return f"{option} {str(directory)!r} is a file; expected a new or empty directory"
        held = sorted(entry.name for entry in os.scandir(directory)) if directory.is_dir() else []
    except OSError as error:
        return f"{option} {str(directory)!r}: cannot read it ({error.strerror or error})"
    if held:
        return (
            f"{option} {str(directory)!r} already holds "
            f"{', '.join(held[:4])}{', ...' if len(held) > 4 else ''}; expected a new or empty directory (earlier "
            f"files are kept)"
        )
    why = _unwritable(directory)
    return None if why is None else f"{option} {str(directory)!r}: cannot write there ({why})"


def _unwritable(directory: Path) -> str | None:
    """Why no file can be created in ``directory`` (created with its parents if missing), or None."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        return str(error.strerror or error)
    return None
