"""Reading checkpoints: metadata (``read_metadata``) and tensors (``load_checkpoint``), checked before use."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from cockroach_env.config import GameConfig
from cockroach_env.encoding import LAYOUT_VERSION, encoding_for
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


# ---------------------------------------------------------------------------- saving


def read_metadata(path_or_name: str | os.PathLike) -> dict[str, Any]:
    """The checked metadata of a checkpoint, without reading its tensors."""
    meta_path = resolve(path_or_name)
    try:
        size = meta_path.stat().st_size
        if size > MAX_METADATA_BYTES:
            raise CheckpointError(
                f"{meta_path}: the metadata file has {size} bytes; expected at most {MAX_METADATA_BYTES} (not "
                f"a checkpoint of this project?)"
            )
        text = meta_path.read_bytes().decode("utf-8")
    except OSError as error:
        raise CheckpointError(f"{meta_path}: cannot read the checkpoint metadata ({error.strerror or error})") from None
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


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def load_checkpoint(
    path_or_name: str | os.PathLike,
    game: GameConfig | None = None,
    kind: str | None = None,
    schema: tuple[Field, ...] = (),
) -> Checkpoint:
    """Load and check a checkpoint. ``game``: refuse a checkpoint trained for other rules. ``kind``: require "run" or
    "agent".
    ``schema``: more fields the metadata must hold (``RUN_SCHEMA`` to resume a run), checked before the tensors are
    read.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load as load_tensors

    meta = read_metadata(path_or_name)
    meta_path = Path(meta.pop("_path"))
    if game is not None and GameConfig(**meta["game_config"]) != game:
        trained = GameConfig(**meta["game_config"])
        hint = ""
        if trained.recall and not game.recall and dataclasses.replace(trained, recall=False) == game:
            hint = (
                "; the agent sees the game's history: play it with recall=True (--option recall=true, "
                "GameConfig(..., recall=True))"
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
    try:
        blob = tensor_path.read_bytes()
    except OSError as error:
        raise CheckpointError(f"{tensor_path}: cannot read the checkpoint tensors ({error.strerror})") from None
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
        and v != GameConfig(num_players=game.num_players, edition=game.edition).to_dict()[k]
    }
    extra = f" {changed}" if changed else ""
    return f"{game.num_players}-player {game.edition}{extra}"
