"""Checkpoint files: names and generations, atomic writes (``save_checkpoint``, ``write_file_atomically``), and
the removal of what killed writes left.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import tempfile
from pathlib import Path
from typing import Any

import cockroach_env
from cockroach_env.config import GameConfig
from cockroach_env.encoding import LAYOUT_VERSION, encoding_for
from training.core.checkpoint.format import (
    FORMAT,
    FORMAT_VERSION,
    GENERATION_PATTERN,
    KINDS,
    CheckpointError,
    check_finite,
    checkpoint_files,
    checkpoint_stem,
)
from training.core.checkpoint.loading import read_metadata


def _generations(stem: Path) -> dict[int, Path]:
    """The generation tensor files ``P.<G>.safetensors`` of checkpoint ``P`` on disk."""
    found = {}
    prefix = stem.name + "."
    try:
        entries = list(os.scandir(stem.parent))
    except OSError:
        return {}
    for entry in entries:
        if entry.name.startswith(prefix):
            match = GENERATION_PATTERN.fullmatch("." + entry.name[len(prefix) :])
            if match:
                found[int(match.group(1))] = stem.parent / entry.name
    return found


def remove_stale(path: str | os.PathLike) -> list[Path]:
    """Remove what killed saves of checkpoint ``P`` left behind; return the removed paths.

    Temporary files of interrupted writes always go; tensor files go only when
    ``P.json`` is a valid checkpoint naming another tensor file (so nothing that may
    still be needed is ever removed).
    """
    stem = checkpoint_stem(Path(path))
    meta_path = stem.with_name(stem.name + ".json")
    removed = []
    try:
        entries = [e.name for e in os.scandir(stem.parent)]
    except OSError:
        return []
    for name in entries:
        if name.startswith(f".{stem.name}.") and name.endswith(".tmp"):
            removed.append(stem.parent / name)
    try:
        current = read_metadata(meta_path)["tensors"]["file"] if meta_path.is_file() else None
    except CheckpointError:
        current = None
    if current is not None:
        candidates = list(_generations(stem).values()) + [stem.with_name(stem.name + ".safetensors")]
        removed += [c for c in candidates if c.name != current and c.exists()]
    for stale in removed:
        try:
            os.unlink(stale)
        except FileNotFoundError:
            pass
    return removed


def remove_checkpoint(path: str | os.PathLike) -> list[Path]:
    """Remove checkpoint ``P`` whole (``P.json`` first: from then on it is gone for loaders, whatever a kill leaves),
    with every tensor generation and temporary file of it; return the removed paths. For a run started again
    (``--overwrite``).
    """
    stem = checkpoint_stem(Path(path))
    meta_path = stem.with_name(stem.name + ".json")
    removed = []
    if meta_path.is_file() or meta_path.is_symlink():
        os.unlink(meta_path)
        removed.append(meta_path)
        _fsync_directory(meta_path.parent)
    for stale in [*_generations(stem).values(), stem.with_name(stem.name + ".safetensors")]:
        if stale.exists():
            os.unlink(stale)
            removed.append(stale)
    return removed + remove_stale(stem)


def save_checkpoint(path: str | os.PathLike, tensors: dict[str, Any], metadata: dict[str, Any]) -> Path:
    """Write ``tensors`` (name -> torch tensor) and ``metadata`` atomically as checkpoint ``path``.

    ``metadata`` must hold ``kind``, ``game_config`` and ``model``; the format fields,
    layout version, sizes, the writing package's version and the tensor file's checksum are added here.
    """
    from safetensors.torch import save as save_tensors

    stem = checkpoint_stem(Path(path))
    meta_path = stem.with_name(stem.name + ".json")
    meta_path.parent.mkdir(parents=True, exist_ok=True)
    previous = checkpoint_files(stem)[1]
    generation = 1 + max([*_generations(stem), *_generation_of(previous)], default=0)
    tensor_path = stem.with_name(f"{stem.name}.{generation}.safetensors")
    game = GameConfig(**metadata["game_config"])
    enc = encoding_for(game)
    tensors = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    check_finite(tensors, f"{meta_path} (not saved)")
    blob = save_tensors(tensors)
    document = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "layout_version": LAYOUT_VERSION,
        "observation_size": enc.observation.size,
        "num_actions": enc.num_actions,
        **metadata,
        "package_version": cockroach_env.__version__,  # the version that wrote this file (not its source's)
        "tensors": {"file": tensor_path.name, "bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()},
    }
    if document["kind"] not in KINDS:
        raise ValueError(f"kind={document['kind']!r} is not allowed; expected one of {list(KINDS)}")
    text = json.dumps(document, indent=1, sort_keys=False, allow_nan=False) + "\n"
    temporaries = []
    try:
        tmp_tensors = _write_temporary(tensor_path, blob)
        temporaries.append(tmp_tensors)
        os.replace(tmp_tensors, tensor_path)  # a new name: the current pair is untouched
        temporaries[-1] = str(tensor_path)
        _fsync_directory(meta_path.parent)
        tmp_meta = _write_temporary(meta_path, text.encode())
        temporaries.append(tmp_meta)
        os.replace(tmp_meta, meta_path)  # the commit: P.json now names the new tensors
        temporaries.clear()
        _fsync_directory(meta_path.parent)
    finally:
        for tmp in temporaries:  # a failed save (full disk...) removes its own files; the previous pair stays
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
    remove_stale(stem)
    return meta_path


def _generation_of(path: Path) -> list[int]:
    match = GENERATION_PATTERN.search(path.name)
    return [int(match.group(1))] if match else []


def _writer_tag() -> str:
    """``HOST-PID`` of this process as it appears in its temporary files' names (the host as a short hash: no dots)."""
    return f"{hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]}-{os.getpid()}"


def new_file_mode() -> int:
    """The permissions a file made with ``open`` would get here (``0o666`` less the umask): given to the files written
    through ``tempfile.mkstemp`` (its 0600 would make checkpoints and logs unreadable to the user's group and others
    where normal files are not).
    """
    mask = os.umask(0o022)  # (reading the umask means setting it; it is put back at once)
    os.umask(mask)
    return 0o666 & ~mask


def _write_temporary(final: Path, data: bytes) -> str:
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.{_writer_tag()}-", suffix=".tmp")
    try:
        os.fchmod(fd, new_file_mode())  # as a normal file: mkstemp's 0600 would hide shipped checkpoints
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def write_file_atomically(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in its directory and one ``os.replace``: a kill at any
    instant leaves the old file or the new one, never a torn one.
    """
    final = Path(path)
    tmp = _write_temporary(final, data)
    try:
        os.replace(tmp, final)
    except BaseException:
        os.unlink(tmp)
        raise
    _fsync_directory(final.parent)
    remove_orphaned_temporaries(final)
    return final


def remove_orphaned_temporaries(path: str | os.PathLike) -> list[Path]:
    """Remove the temporary files that writes of ``path`` killed mid-way (SIGKILL, power loss) left beside it; return
    them.

    Only a temporary whose writer is known to be gone is removed: one written on this host by a process that no
    longer runs (its name holds the writer's host and process id). Another process writing the same file at this
    moment, or one on another host of a shared filesystem, keeps its temporary.
    """
    final = Path(path)
    host = _writer_tag().split("-")[0]
    pattern = re.compile(rf"^\.{re.escape(final.name)}\.{host}-(\d+)-[^/]*\.tmp$")
    try:
        names = [e.name for e in os.scandir(final.parent)]
    except OSError:
        return []
    removed = []
    for name in names:
        match = pattern.match(name)
        if match is None or _process_running(int(match.group(1))):
            continue
        try:
            os.unlink(final.parent / name)
            removed.append(final.parent / name)
        except FileNotFoundError:
            pass
    return removed


def _process_running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process, or a pid this platform cannot test: keep its file
    return True


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # not supported on this platform
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- loading
