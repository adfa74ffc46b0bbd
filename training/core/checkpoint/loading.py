"""Reading checkpoints: metadata (``read_metadata``) and tensors (``load_checkpoint``), checked before use."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from importlib import resources
from pathlib import Path
from typing import Any

from cockroach_env.config import GameConfig
from cockroach_env.encoding import LAYOUT_VERSION, encoding_for, keeps_moves, observation_option, without_moves
from training.core.checkpoint.format import (
    FORMAT,
    FORMAT_VERSION,
    SCHEMA,
    SHIPPED_DIR,
    Checkpoint,
    CheckpointError,
    Field,
    check_finite,
    checkpoint_stem,
    validate_metadata,
)


def shipped_checkpoints() -> list[str]:
    """Names of the pretrained checkpoints shipped in the package (``classic-4p``, ...)."""
    root = resources.files("training") / SHIPPED_DIR
    try:
        return sorted(p.name[: -len(".json")] for p in root.iterdir() if p.name.endswith(".json"))
    except (FileNotFoundError, NotADirectoryError):
        return []


def resolve(path_or_name: str | os.PathLike) -> Path:
    """The metadata file of a checkpoint given by path or by shipped name."""
    if not isinstance(path_or_name, (str, os.PathLike)):
        raise CheckpointError(
            f"checkpoint={path_or_name!r} is not allowed; expected a path or a shipped checkpoint name "
            f"{shipped_checkpoints()}"
        )
    meta = checkpoint_stem(Path(path_or_name))
    meta = meta.with_name(meta.name + ".json")
    if meta.exists():
        return meta
    name = str(path_or_name)
    if name in shipped_checkpoints():
        return Path(str(resources.files("training") / SHIPPED_DIR / f"{name}.json"))
    raise CheckpointError(
        f"{path_or_name}: no checkpoint at {meta} and no shipped checkpoint of that name; shipped "
        f"checkpoints: {shipped_checkpoints()}"
    )


# ---------------------------------------------------------------------------- reading


def read_metadata(path_or_name: str | os.PathLike) -> dict[str, Any]:
    """The checked metadata of a checkpoint, without reading its tensors."""
    meta_path = resolve(path_or_name)
    try:
        text = read_regular_file(meta_path, "the metadata file", most=MAX_METADATA_BYTES).decode("utf-8")
    except UnicodeDecodeError as error:
        raise CheckpointError(
            f"{meta_path}: the metadata is not UTF-8 text (byte {error.start}); the file is corrupted or not "
            f"a checkpoint"
        ) from None
    try:
        meta = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise CheckpointError(
            f"{meta_path}: the metadata is not valid JSON ({error.msg} at line {error.lineno}); the file is "
            f"truncated or corrupted"
        ) from None
    except (ValueError, RecursionError) as error:
        raise CheckpointError(f"{meta_path}: the metadata is not valid checkpoint JSON ({error})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{meta_path}: not a checkpoint of this project "
            f"(format={meta.get('format') if isinstance(meta, dict) else None!r}, expected {FORMAT!r})"
        )
    if meta.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{meta_path}: checkpoint format version {meta.get('format_version')!r} is not supported; "
            f"expected {FORMAT_VERSION}"
        )
    validate_metadata(meta, SCHEMA, meta_path)
    if meta["layout_version"] != LAYOUT_VERSION:
        raise CheckpointError(
            f"{meta_path}: observation/action layout version {meta['layout_version']} does not match this "
            f"code's LAYOUT_VERSION={LAYOUT_VERSION}; retrain or use a matching version of cockroach_env"
        )
    try:
        game = GameConfig(**meta["game_config"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{meta_path}: the recorded game config is not valid here: {error}") from None
    enc = encoding_for(game)
    if (meta["observation_size"], meta["num_actions"]) != (enc.observation.size, enc.num_actions):
        raise CheckpointError(
            f"{meta_path}: observation/action sizes {meta['observation_size']}/{meta['num_actions']} do not match "
            f"{enc.observation.size}/{enc.num_actions} of its game config here; the checkpoint is from an "
            f"incompatible layout"
        )
    meta["_path"] = str(meta_path)
    return meta


MAX_METADATA_BYTES = 64 * 2**20
"""Metadata files are a few kilobytes to a few megabytes (the evaluation history)."""


def read_regular_file(
    path: Path, what: str, most: int | None = None, exactly: int | None = None, recorded_in: Path | None = None
) -> bytes:
    """The bytes of ``path``, a regular file of at most ``most`` bytes (or of ``exactly`` the size that
    ``recorded_in`` declares). Anything else (a FIFO, a device such as ``/dev/zero``, a directory, a socket, a file
    of another size) is a ``CheckpointError`` naming the file and what was expected, found before a byte is read:
    the file is opened without blocking and checked through its descriptor, so a FIFO never hangs the reader and a
    device is never read without bound.
    """
    try:
        mode = os.stat(path).st_mode  # a device is not even opened (opening some has effects)
        if not stat.S_ISREG(mode):
            raise CheckpointError(f"{path}: {what} is {_file_kind(mode)}; expected a regular file{_WHY_REGULAR}")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read {what} ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CheckpointError(
                f"{path}: {what} is {_file_kind(info.st_mode)}; expected a regular file{_WHY_REGULAR}"
            )
        if most is not None and info.st_size > most:
            raise CheckpointError(
                f"{path}: {what} has {info.st_size} bytes; expected at most {most} (not a checkpoint of this project?)"
            )
        if exactly is not None and info.st_size != exactly:
            raise CheckpointError(
                f"{path}: {info.st_size} bytes that do not match the {exactly} bytes recorded in "
                f"{recorded_in.name if recorded_in else 'the metadata'}; the tensor file is truncated, corrupted or "
                f"from another save"
            )
        limit = exactly if exactly is not None else most if most is not None else info.st_size
        chunks, left = [], limit + 1  # one byte more: a file that grew since fstat is noticed
        while left > 0:
            chunk = os.read(fd, min(left, 2**24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read {what} ({error.strerror or error})") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise CheckpointError(f"{path}: {what} changed while it was read (more than {limit} bytes); try again")
    return data


_WHY_REGULAR = " (a checkpoint is a .json file and its .safetensors file)"


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def load_checkpoint(
    path_or_name: str | os.PathLike,
    game: GameConfig | None = None,
    kind: str | None = None,
    schema: tuple[Field, ...] = (),
) -> Checkpoint:
    """Load and check a checkpoint. ``game``: refuse a checkpoint trained for other rules. ``kind``: require "run" or
    "agent". ``schema``: more fields the metadata must hold (``RUN_SCHEMA`` to resume a run), checked before the tensors
    are read.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load as load_tensors

    meta = read_metadata(path_or_name)
    meta_path = Path(meta.pop("_path"))
    if game is not None and GameConfig(**meta["game_config"]) != game:
        trained = GameConfig(**meta["game_config"])
        hint = ""
        if keeps_moves(trained) and without_moves(trained) == without_moves(game):
            option = observation_option(trained)
            name, value = option.split("=")
            value = value.lower()
            hint = (
                f"; the agent sees the game's history: play it with {option} (--option {name}={value} in "
                f"cockroach-eval, --set game.{name}={value} in cockroach-train, GameConfig(..., {option}) in Python)"
            )
        raise CheckpointError(f"{meta_path}: trained for {_rules(trained)}, but the game here is {_rules(game)}{hint}")
    if kind == "run" and meta["kind"] != "run":
        raise CheckpointError(
            f"{meta_path}: an {meta['kind']!r} checkpoint (weights only) cannot resume training; expected a "
            f"run checkpoint (runs/<name>/checkpoint)"
        )
    validate_metadata(meta, schema, meta_path)
    record = meta["tensors"]
    tensor_path = meta_path.with_name(record["file"])
    blob = read_regular_file(tensor_path, "the tensor file", exactly=record["bytes"], recorded_in=meta_path)
    if len(blob) != record["bytes"] or hashlib.sha256(blob).hexdigest() != record["sha256"]:
        raise CheckpointError(
            f"{tensor_path}: {len(blob)} bytes that do not match the {record['bytes']} bytes and sha256 "
            f"recorded in {meta_path.name}; "
            "the tensor file is truncated, corrupted or from another save"
        )
    try:
        tensors = load_tensors(blob)
    except (SafetensorError, ValueError) as error:
        raise CheckpointError(f"{tensor_path}: not a valid safetensors file ({error})") from None
    check_finite(tensors, tensor_path)
    return Checkpoint(meta_path, meta, tensors)


def _rules(game: GameConfig) -> str:
    changed = {
        k: v
        for k, v in game.to_dict().items()
        if k not in ("num_players", "edition")
        and v != getattr(GameConfig(num_players=game.num_players, edition=game.edition), k)
    }
    extra = f" {changed}" if changed else ""
    return f"{game.num_players}-player {game.edition}{extra}"
