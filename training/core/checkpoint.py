"""Checkpoints: safetensors tensors plus a JSON metadata file, written atomically, loaded without pickle.

A checkpoint named ``P`` is two files side by side::

    P.json          metadata: format, kind ("agent" or "run"), game config, observation
                    layout version, observation and action sizes, network shape, step,
                    training config, evaluation results, the command that made it,
                    RNG states and optimizer hyperparameters (a run), and the name,
                    size and sha256 of the tensor file
    P.<G>.safetensors  tensors of generation ``G`` (``P.safetensors`` in checkpoints
                    written before generations): "model.*" (the network); a run checkpoint adds
                    "optimizer.*" (Adam moments), "pool.<id>.*" (opponent snapshots),
                    "rng.*" (torch generator states), with an exploiter
                    "exploiter.model.*" and "exploiter.optimizer.*", and with a
                    magnet "magnet.*"; a mixture (kind "mixture", see training.core.mixture)
                    holds "member.<k>.model.*" for each member, and its metadata's
                    "mixture" entry holds the members' names and weights; a CFR
                    solver's run (kind "solver", see training.algorithms.cfr) holds
                    "cfr.regrets" and "cfr.strategy_sum"

Saving writes the tensors of a new generation under a new name (``P.<G+1>.safetensors``,
through a temporary file, fsynced), then the metadata that points at them
(``tensors.file``) to a temporary file, and switches with one ``os.replace`` of
``P.json``: that rename is the commit. A kill at any instant leaves ``P.json`` naming a
complete tensor file, the old pair or the new one; the tensors of older generations and
the temporary files of killed writes are removed after the switch and by
``remove_stale`` (when a run starts). The metadata records the tensor file's size and
sha256, so a truncated or corrupted file is reported on load instead of loading silently.

Loading reads JSON and safetensors only (never ``torch.load``/pickle). The metadata is
validated against one declared schema (``SCHEMA``, and ``RUN_SCHEMA`` to resume a run)
before anything is built; the recorded network's shapes are compared with the tensors
(on torch's meta device, allocating nothing) before it is built; non-finite tensors are
refused; the format, layout version, rule set and sizes are checked against the code.
``python -m training.checkpoint PATH`` (``training.cli.checkpoint``) prints a checkpoint's metadata.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
import socket
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.encoding import LAYOUT_VERSION, encoding_for

FORMAT = "cockroach-poker-checkpoint"
FORMAT_VERSION = 1
KINDS = ("agent", "run", "mixture", "solver")
SHIPPED_DIR = "checkpoints"
"""Package directory (inside ``training``) of the pretrained checkpoints loadable by name."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message names the file and the problem."""


# ---------------------------------------------------------------------------- metadata schema


def _integer(low: int = 0) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _file_name(v: Any) -> bool:
    """A plain file name beside the metadata (never a path elsewhere)."""
    return (
        isinstance(v, str)
        and v.endswith(".safetensors")
        and v == os.path.basename(v)
        and v not in ("", ".", "..")
        and "\\" not in v
    )


def _is(*kinds: type) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, kinds) and not (isinstance(v, bool) and bool not in kinds)


def _activation(v: Any) -> bool:
    from training.core.config import ACTIVATIONS

    return v in ACTIVATIONS


@dataclass(frozen=True)
class Field:
    """One metadata entry: its dotted path, whether it must be there, the check, and what is expected."""

    path: str
    check: Callable[[Any], bool]
    expected: str
    required: bool = True


SCHEMA: tuple[Field, ...] = (
    Field("format", lambda v: v == FORMAT, repr(FORMAT)),
    Field("format_version", lambda v: v == FORMAT_VERSION, str(FORMAT_VERSION)),
    Field("kind", lambda v: v in KINDS, f"one of {list(KINDS)}"),
    Field("layout_version", _integer(0), "an integer"),
    Field("game_config", _is(dict), "a mapping of GameConfig options"),
    Field("observation_size", _integer(1), "a positive integer"),
    Field("num_actions", _integer(1), "a positive integer"),
    Field("model", _is(dict), "a mapping with hidden_sizes and activation"),
    Field(
        "model.hidden_sizes",
        lambda v: isinstance(v, list) and len(v) >= 1 and all(_integer(1)(h) for h in v),
        "a non-empty list of positive integers",
    ),
    Field("model.activation", _activation, "'tanh' or 'relu'"),
    Field("model.card_counting", _is(bool), "true or false", required=False),
    Field("tensors", _is(dict), "a mapping with file, bytes and sha256"),
    Field("tensors.file", _file_name, "a .safetensors file name in the checkpoint's directory"),
    Field("tensors.bytes", _integer(0), "an integer >= 0"),
    Field(
        "tensors.sha256",
        lambda v: isinstance(v, str) and re.fullmatch("[0-9a-f]{64}", v) is not None,
        "64 lowercase hex digits",
    ),
    Field("name", _is(str, type(None)), "a string", required=False),
    Field("step", _is(dict, type(None)), "a mapping", required=False),
    Field(
        "commands",
        lambda v: isinstance(v, list) and all(isinstance(c, str) for c in v),
        "a list of strings",
        required=False,
    ),
)
"""What every checkpoint's metadata holds (checked by ``read_metadata`` before anything is built)."""

PROGRESS_COUNTERS = ("update", "decisions", "samples", "games", "next_snapshot_id", "pool_games", "pool_losses")

RUN_SCHEMA: tuple[Field, ...] = (
    Field("training_config", _is(dict), "a mapping (the run's training config)"),
    Field("optimizer", _is(dict), "a mapping with param_groups and scalars"),
    Field(
        "optimizer.param_groups",
        lambda v: isinstance(v, list) and all(isinstance(g, dict) for g in v),
        "a list of mappings",
    ),
    Field("optimizer.scalars", _is(dict), "a mapping"),
    Field(
        "pool",
        lambda v: (
            isinstance(v, list)
            and all(isinstance(e, dict) and _integer(0)(e.get("id")) and _integer(0)(e.get("update")) for e in v)
        ),
        "a list of {id, update} with integers >= 0",
    ),
    Field("progress", _is(dict), "a mapping of the run's counters"),
    *(Field(f"progress.{name}", _integer(0), "an integer >= 0") for name in PROGRESS_COUNTERS),
    Field("progress.wall_seconds", _number, "a finite number >= 0"),
    Field(
        "progress.evaluations",
        lambda v: isinstance(v, list) and all(isinstance(e, dict) for e in v),
        "a list of mappings",
    ),
    Field(
        "progress.commands", lambda v: isinstance(v, list) and all(isinstance(c, str) for c in v), "a list of strings"
    ),
    Field("progress.base_run", _is(dict, type(None)), "a mapping or null", required=False),
    Field("rng", _is(dict), "a mapping with the numpy generator state"),
    Field(
        "rng.numpy",
        lambda v: isinstance(v, dict) and isinstance(v.get("bit_generator"), str),
        "a numpy bit generator state",
    ),
)
"""What a run checkpoint holds besides ``SCHEMA``, to be resumed (``load_checkpoint(..., schema=RUN_SCHEMA)`` in
``training.algorithms.ppo``).
"""

_MISSING = object()


def validate_metadata(meta: Any, schema: tuple[Field, ...], where: Path | str) -> None:
    """Raise ``CheckpointError`` naming the file and the first field of ``schema`` that ``meta`` lacks or gets wrong."""
    if not isinstance(meta, dict):
        raise CheckpointError(
            f"{where}: the metadata is {_short(meta)}; expected a JSON object (not a checkpoint of this project?)"
        )
    for field in schema:
        value: Any = meta
        for part in field.path.split("."):
            value = value.get(part, _MISSING) if isinstance(value, dict) else _MISSING
        if value is _MISSING:
            if field.required:
                raise CheckpointError(
                    f"{where}: the metadata lacks {field.path!r} (expected {field.expected}); the file is "
                    f"incomplete or not a checkpoint of this version"
                )
            continue
        if not field.check(value):
            raise CheckpointError(
                f"{where}: metadata field {field.path!r} is {_short(value)}; expected {field.expected}"
            )


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Checkpoint:
    """A loaded checkpoint: its metadata and its tensors (grouped by prefix)."""

    path: Path
    metadata: dict[str, Any]
    tensors: dict[str, Any]

    def group(self, prefix: str) -> dict[str, Any]:
        """Tensors whose name starts with ``prefix.``, with the prefix removed."""
        cut = len(prefix) + 1
        return {k[cut:]: v for k, v in self.tensors.items() if k.startswith(prefix + ".")}

    @property
    def game_config(self) -> GameConfig:
        return GameConfig(**self.metadata["game_config"])


# ---------------------------------------------------------------------------- paths


_GENERATION = re.compile(r"\.(\d+)\.safetensors$")


def checkpoint_files(path: str | os.PathLike) -> tuple[Path, Path]:
    """``(P.json, tensors)`` for ``P``, ``P.json``, ``P.safetensors`` or ``P.<G>.safetensors``.

    The tensor file is the one ``P.json`` names (``tensors.file``) when it can be read,
    else ``P.safetensors``.
    """
    meta = _stem(Path(path))
    meta = meta.with_name(meta.name + ".json")
    tensors = meta.with_name(meta.name[: -len(".json")] + ".safetensors")
    try:
        record = json.loads(meta.read_bytes()).get("tensors")
        if _file_name(record.get("file")):
            tensors = meta.with_name(record["file"])
    except (OSError, ValueError, AttributeError):
        pass
    return meta, tensors


def _stem(path: Path) -> Path:
    """``P`` of ``P``, ``P.json``, ``P.safetensors`` and ``P.<G>.safetensors``."""
    name = _GENERATION.sub("", path.name)
    if name != path.name:
        return path.with_name(name)
    if path.suffix in (".json", ".safetensors"):
        return path.with_suffix("")
    return path


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
            match = _GENERATION.fullmatch("." + entry.name[len(prefix) :])
            if match:
                found[int(match.group(1))] = stem.parent / entry.name
    return found


def remove_stale(path: str | os.PathLike) -> list[Path]:
    """Remove what killed saves of checkpoint ``P`` left behind; return the removed paths.

    Temporary files of interrupted writes always go; tensor files go only when
    ``P.json`` is a valid checkpoint naming another tensor file (so nothing that may
    still be needed is ever removed).
    """
    stem = _stem(Path(path))
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
    with
    every tensor generation and temporary file of it; return the removed paths. For a run started again
    (``--overwrite``).
    """
    stem = _stem(Path(path))
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
    meta = _stem(Path(path_or_name))
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


def save_checkpoint(path: str | os.PathLike, tensors: dict[str, Any], metadata: dict[str, Any]) -> Path:
    """Write ``tensors`` (name -> torch tensor) and ``metadata`` atomically as checkpoint ``path``.

    ``metadata`` must hold ``kind``, ``game_config`` and ``model``; the format fields,
    layout version, sizes and the tensor file's checksum are added here.
    """
    from safetensors.torch import save as save_tensors

    stem = _stem(Path(path))
    meta_path = stem.with_name(stem.name + ".json")
    meta_path.parent.mkdir(parents=True, exist_ok=True)
    previous = checkpoint_files(stem)[1]
    generation = 1 + max([*_generations(stem), *_generation_of(previous)], default=0)
    tensor_path = stem.with_name(f"{stem.name}.{generation}.safetensors")
    game = GameConfig(**metadata["game_config"])
    enc = encoding_for(game)
    tensors = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    _check_finite(tensors, f"{meta_path} (not saved)")
    blob = save_tensors(tensors)
    document = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "layout_version": LAYOUT_VERSION,
        "observation_size": enc.observation.size,
        "num_actions": enc.num_actions,
        **metadata,
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
    match = _GENERATION.search(path.name)
    return [int(match.group(1))] if match else []


def _writer_tag() -> str:
    """``HOST-PID`` of this process as it appears in its temporary files' names (the host as a short hash: no dots)."""
    return f"{hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]}-{os.getpid()}"


def _write_temporary(final: Path, data: bytes) -> str:
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.{_writer_tag()}-", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would make shipped checkpoints unreadable to other users
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
    _check_finite(tensors, tensor_path)
    return Checkpoint(meta_path, meta, tensors)


def _check_finite(tensors: dict[str, Any], where: Path | str) -> None:
    """Refuse NaN or infinite values in any floating-point tensor (a diverged or tampered network)."""
    import torch

    for name, tensor in tensors.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise CheckpointError(
                f"{where}: tensor {name!r} holds {bad} NaN or infinite value(s) of {tensor.numel()}; expected "
                f"finite weights (the run diverged, or the file was altered)"
            )


def _rules(game: GameConfig) -> str:
    changed = {
        k: v
        for k, v in game.to_dict().items()
        if k not in ("num_players", "edition")
        and v != GameConfig(num_players=game.num_players, edition=game.edition).to_dict()[k]
    }
    extra = f" {changed}" if changed else ""
    return f"{game.num_players}-player {game.edition}{extra}"


def build_model(checkpoint: Checkpoint, device: str = "cpu"):
    """The ``ActorCritic`` of a checkpoint, with its weights (of an NFSP run checkpoint: the average policy, the run's
    agent).
    """
    if checkpoint.metadata["kind"] == "mixture":
        raise CheckpointError(
            f"{checkpoint.path}: a mixture checkpoint holds several networks; load it with load_agent, or its "
            f"members with training.core.mixture.member_models"
        )
    if checkpoint.metadata["kind"] == "solver":
        raise CheckpointError(
            f"{checkpoint.path}: a CFR solver checkpoint holds regrets over a game tree, not a network; its "
            f"agent is the run's final checkpoint (runs/<name>/final), its table "
            f"training.algorithms.cfr.load_policy"
        )
    nfsp = (
        checkpoint.metadata["kind"] == "run" and NFSP_AVERAGE in checkpoint.metadata
    )  # the run's agent is its average policy
    return build_model_from(checkpoint, f"{NFSP_AVERAGE}.model" if nfsp else "model", device)


def build_model_from(checkpoint: Checkpoint, prefix: str, device: str = "cpu"):
    """An ``ActorCritic`` of the checkpoint's recorded network holding its ``prefix.*`` tensors
    (``model``, or a mixture member's ``member.<k>.model``), their shapes checked first.
    """
    from training.core.model import ActorCritic

    spec = checkpoint.metadata["model"]
    check_shapes(checkpoint, prefix)
    weights = checkpoint.group(prefix)
    model = ActorCritic(
        checkpoint.game_config, spec["hidden_sizes"], spec["activation"], spec.get("card_counting", False)
    )
    try:
        model.load_state_dict(weights)
    except RuntimeError as error:
        raise CheckpointError(
            f"{checkpoint.path}: the weights do not fit the recorded network {spec}: {error}"
        ) from None
    return model.to(device)


def check_shapes(checkpoint: Checkpoint, prefix: str = "model") -> None:
    """The tensors under ``prefix`` must be exactly those of the recorded network: checked on
    torch's meta device, so a bogus ``hidden_sizes`` costs nothing before it is refused.
    """
    import torch

    from training.core.model import ActorCritic

    spec = checkpoint.metadata["model"]
    with torch.device("meta"):
        expected = {
            k: tuple(v.shape)
            for k, v in ActorCritic(
                checkpoint.game_config, spec["hidden_sizes"], spec["activation"], spec.get("card_counting", False)
            )
            .state_dict()
            .items()
        }
    found = {k: tuple(v.shape) for k, v in checkpoint.group(prefix).items()}
    if found != expected:
        wrong = sorted(set(found) ^ set(expected)) or [k for k in expected if found[k] != expected[k]]
        detail = ", ".join(
            f"{prefix}.{k}: {found.get(k, 'absent')} (expected {expected.get(k, 'absent')})" for k in wrong[:3]
        )
        raise CheckpointError(
            f"{checkpoint.path}: the {prefix!r} tensors do not fit the recorded network {spec}: {detail}"
        )


def load_agent(
    path_or_name: str | os.PathLike,
    seed: int | None = None,
    config: GameConfig | None = None,
    greedy: bool = False,
    device: str = "cpu",
):
    """An agent of the ``baselines`` protocol playing a checkpoint.

    ``path_or_name`` is a checkpoint path (``runs/ppo_4p/final``, with or without
    ``.json``) or a shipped name (``classic-4p``, ``classic-2p``, ...). ``config``, if
    given, must be the rule set the checkpoint was trained for, or that rule set with
    ``recall=True`` (the agent then reads the observation without the history, a
    ``baselines.agent.RecallPrefixAgent``). A mixture checkpoint
    (PSRO's result) gives a ``training.core.mixture.MixtureAgent``.
    """
    from baselines.agent import RecallPrefixAgent
    from training.core.model import PolicyAgent

    table = config
    if (
        config is not None and config.recall
    ):  # an agent trained without recall also plays the same rules with it (the observation's prefix)
        trained = GameConfig(**read_metadata(path_or_name)["game_config"])
        if not trained.recall and dataclasses.replace(config, recall=False) == trained:
            config = trained
    checkpoint = load_checkpoint(path_or_name, game=config)
    if checkpoint.metadata["kind"] == "mixture":  # one member per game, drawn with the mixture's weights
        agent = load_mixture_agent(checkpoint, seed=seed, greedy=greedy, device=device)
        if table is not config:
            agent.members = [RecallPrefixAgent(member, table) for member in agent.members]
            agent.config = table
        return agent
    model = build_model(checkpoint, device)
    name = checkpoint.metadata.get("name") or checkpoint.path.stem
    agent = PolicyAgent(model, checkpoint.game_config, seed=seed, name=name, greedy=greedy)
    return RecallPrefixAgent(agent, table) if table is not config else agent


# ---------------------------------------------------------------------------- mixtures (PSRO)

MEMBER_PREFIX = "member"
"""A mixture member's tensors are ``member.<k>.model.*``."""


def save_mixture_checkpoint(
    path: str | Path, models: Sequence[Any], weights: Sequence[float], names: Sequence[str], metadata: dict[str, Any]
) -> Path:
    """Write a mixture checkpoint: every member's weights and ``metadata`` (``game_config``, ``model``, ...) plus the
    ``mixture`` entry.
    """
    weights = [float(w) for w in weights]
    if not (len(models) == len(weights) == len(names)) or not models:
        raise ValueError(
            f"a mixture checkpoint needs one weight and one name per member; got {len(models)} models, "
            f"{len(weights)} weights, {len(names)} names"
        )
    tensors = {
        f"{MEMBER_PREFIX}.{k}.model.{name}": value
        for k, model in enumerate(models)
        for name, value in model.state_dict().items()
    }
    mixture = {**metadata.get("mixture", {}), "members": [{"name": n, "weight": w} for n, w in zip(names, weights)]}
    return save_checkpoint(path, tensors, {**metadata, "kind": "mixture", "mixture": mixture})


def member_models(checkpoint, device: str = "cpu") -> list[Any]:
    """The ``ActorCritic`` of every member of a loaded mixture checkpoint."""
    members = _members_entry(checkpoint)
    models = []
    for k in range(len(members)):
        prefix = f"{MEMBER_PREFIX}.{k}.model"
        if not checkpoint.group(prefix):
            raise CheckpointError(
                f"{checkpoint.path}: member {k} of {len(members)} has no weights ({prefix}.*) in the tensor file"
            )
        models.append(build_model_from(checkpoint, prefix, device))
    return models


def mixture_weights(checkpoint) -> tuple[list[str], np.ndarray]:
    """Names and weights of a loaded mixture checkpoint's members."""
    members = _members_entry(checkpoint)
    return [m["name"] for m in members], np.array([m["weight"] for m in members], np.float64)


def load_mixture_agent(checkpoint, seed: int | None = None, greedy: bool = False, device: str = "cpu"):
    """A ``training.core.mixture.MixtureAgent`` of PolicyAgents, one per member, seeded from ``seed``."""
    from training.core.mixture import MixtureAgent
    from training.core.model import PolicyAgent

    names, weights = mixture_weights(checkpoint)
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, 2**63 - 1, size=len(names) + 1)
    game = checkpoint.game_config
    members = [
        PolicyAgent(model, game, seed=int(s), name=n, greedy=greedy)
        for model, n, s in zip(member_models(checkpoint, device), names, seeds)
    ]
    name = checkpoint.metadata.get("name") or checkpoint.path.stem
    return MixtureAgent(members, weights, game, seed=int(seeds[-1]), name=name)


def _members_entry(checkpoint) -> list[dict[str, Any]]:
    entry = checkpoint.metadata.get("mixture")
    members = entry.get("members") if isinstance(entry, dict) else None
    ok = (
        isinstance(members, list)
        and members
        and all(
            isinstance(m, dict)
            and isinstance(m.get("name"), str)
            and isinstance(m.get("weight"), (int, float))
            and m["weight"] >= 0
            for m in members
        )
    )
    if not ok or not sum(m["weight"] for m in members) > 0:
        raise CheckpointError(
            f"{checkpoint.path}: a mixture checkpoint needs mixture.members, a list of {{name, weight >= 0}} "
            f"with a positive total weight; got {members!r}"
        )
    return members


# ---------------------------------------------------------------------------- optimizer and RNG state


def optimizer_state(optimizer, prefix: str = "optimizer") -> tuple[dict[str, Any], dict[str, Any]]:
    """An optimizer's state as (tensors named ``prefix.*`` for safetensors, JSON-able rest for ``metadata[prefix]``)."""
    state = optimizer.state_dict()
    tensors, scalars = {}, {}
    for index, entries in state["state"].items():
        for key, value in entries.items():
            if hasattr(value, "shape"):
                tensors[f"{prefix}.{index}.{key}"] = value
            else:
                scalars[f"{index}.{key}"] = value
    return tensors, {"param_groups": state["param_groups"], "scalars": scalars}


def restore_optimizer(optimizer, checkpoint: Checkpoint, prefix: str = "optimizer") -> None:
    """Restore what ``optimizer_state(optimizer, prefix)`` saved into ``checkpoint``."""
    if prefix not in checkpoint.metadata:
        raise CheckpointError(f"{checkpoint.path}: no optimizer state {prefix!r} in this checkpoint")
    record = checkpoint.metadata[prefix]
    state: dict[int, dict[str, Any]] = {}
    for name, value in checkpoint.group(prefix).items():
        index, key = name.split(".", 1)
        state.setdefault(int(index), {})[key] = value
    for name, value in record["scalars"].items():
        index, key = name.split(".", 1)
        state.setdefault(int(index), {})[key] = value
    state = dict(sorted(state.items()))
    try:
        optimizer.load_state_dict({"state": state, "param_groups": record["param_groups"]})
    except (ValueError, KeyError) as error:
        raise CheckpointError(f"{checkpoint.path}: the optimizer state does not fit the network: {error}") from None


def numpy_rng_state(rng) -> dict[str, Any]:
    """A numpy ``Generator``'s state, JSON-able."""
    return rng.bit_generator.state


def restore_numpy_rng(state: dict[str, Any]):
    """A numpy ``Generator`` in the state that ``numpy_rng_state`` recorded."""
    import numpy as np

    rng = np.random.Generator(getattr(np.random, state["bit_generator"])())
    rng.bit_generator.state = state
    return rng


NFSP_AVERAGE = "average"
"""Prefix of an NFSP run checkpoint's average-policy tensors and metadata (``training.algorithms.nfsp.AVERAGE``)."""
NFSP_NETWORKS = ("average", "best_response")
"""The networks of an NFSP run checkpoint that ``export_agent`` exports: the average policy (the default) or the best
response.
"""


def export_agent(
    source: str | os.PathLike,
    destination: str | os.PathLike,
    extra: dict[str, Any] | None = None,
    member: str | None = None,
    overwrite: bool = False,
    average_from: int | None = None,
    average_with: list[str | os.PathLike] | tuple[str | os.PathLike, ...] = (),
) -> Path:
    """Write the weights-only (``agent``) checkpoint of ``source`` (a run, agent or mixture checkpoint) to
    ``destination``.

    The metadata is kept, less the run-only fields (optimizers, pool, progress, RNG
    states) and tensors (the exploiter's, Adam moments, snapshots); ``extra`` entries are added last, replacing any of
    the same key
    but ``kind`` (e.g. the command history of a resumed run, or ``exported_from``).
    A mixture exports one ``member`` (its name, or its index in the mixture): that member's weights, name and
    recipe (``mixture.recipes``: its commands, base run and training config), and ``exported_member`` (name, index,
    weight).
    An NFSP run checkpoint (``training.algorithms.nfsp``) exports its average policy, the run's agent, or with
    ``member="best_response"``
    its best response (``network`` in the metadata).
    With ``average_from`` (a run checkpoint only) the exported weights are the uniform average of the run's current
    policy and every policy snapshot in its pool taken at update ``average_from`` or later (stochastic weight
    averaging; ``averaged`` in the metadata lists them).
    With ``average_with`` (checkpoints or shipped names) the exported weights are the uniform average of ``source``'s
    network and each of theirs, taken as ``export_agent`` would export it (an agent's, a run's policy, an NFSP run's
    average policy; not a mixture): e.g. an NFSP run's kept agents (``schedule.keep_agent_every``). All must have the
    same rules and network shape; ``averaged`` in the metadata lists the sources. The average of networks trained apart
    is rarely a good policy; of one run's checkpoints it can be (``docs/training.md``).
    An existing checkpoint at ``destination`` is refused unless ``overwrite``; nothing is written when anything is
    refused.
    """
    checkpoint = load_checkpoint(source)
    if average_from is not None and checkpoint.metadata["kind"] != "run":
        raise CheckpointError(
            f"{checkpoint.path}: average_from={average_from!r} needs a run checkpoint (its snapshot pool "
            f"holds the weights to average); "
            f"this one is of kind {checkpoint.metadata['kind']!r}"
        )
    meta_path = _stem(Path(destination)).with_name(_stem(Path(destination)).name + ".json")
    if meta_path.resolve() == checkpoint.path.resolve():
        raise CheckpointError(f"{meta_path}: the export destination is its source checkpoint; choose another DEST")
    if meta_path.exists() and not overwrite:
        raise CheckpointError(
            f"{meta_path}: a checkpoint already exists there; pass --overwrite (overwrite=True) to replace "
            f"it, or choose another DEST"
        )
    if average_with and average_from is not None:
        raise CheckpointError(
            f"{checkpoint.path}: average_from={average_from!r} and average_with are two kinds of average; "
            f"give one or the other"
        )
    tensors, meta = _export_weights(checkpoint, member, average_from)
    if average_with:
        tensors, meta["averaged"] = _averaged_with(checkpoint, tensors, average_with, meta_path)
    meta.update(exported_from=str(checkpoint.path))
    meta.update(extra or {})  # ``extra`` may name the source better (e.g. the run an exported agent came from)
    meta["kind"] = "agent"  # whatever ``extra`` says
    return save_checkpoint(destination, tensors, meta)


def _export_weights(
    checkpoint: Checkpoint, member: str | None, average_from: int | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tensors (``model.*``) and metadata of the one network ``export_agent`` exports from ``checkpoint``."""
    nfsp = checkpoint.metadata["kind"] == "run" and NFSP_AVERAGE in checkpoint.metadata
    if checkpoint.metadata["kind"] == "mixture":
        tensors, meta = _member_export(checkpoint, member)
    elif member is not None and not (nfsp and member in NFSP_NETWORKS):
        expected = f"an NFSP run checkpoint's network, one of {list(NFSP_NETWORKS)}" if nfsp else "a mixture checkpoint"
        raise CheckpointError(
            f"{checkpoint.path}: member={member!r} needs {expected}; this one is a "
            f"{checkpoint.metadata['kind']!r} checkpoint with one network"
        )
    else:
        run_only = (
            "optimizer",
            "exploiter.optimizer",
            "pool",
            "progress",
            "rng",
            "tensors",
            "format",
            "format_version",
            NFSP_AVERAGE,
            f"{NFSP_AVERAGE}.optimizer",
        )
        meta = {k: v for k, v in checkpoint.metadata.items() if k not in run_only}
        network = (member or NFSP_NETWORKS[0]) if nfsp else None
        if network == NFSP_NETWORKS[0] and average_from is not None:
            raise CheckpointError(
                f"{checkpoint.path}: average_from={average_from!r} averages the best response's snapshots of "
                f"an NFSP run; pass member='best_response' (--member best_response)"
            )
        source_prefix = f"{NFSP_AVERAGE}.model." if network == NFSP_NETWORKS[0] else "model."
        tensors = {
            f"model.{k[len(source_prefix) :]}": v for k, v in checkpoint.tensors.items() if k.startswith(source_prefix)
        }
        if network is not None:
            meta["network"] = network.replace("_", " ")
        if average_from is not None:
            tensors, meta["averaged"] = _averaged_snapshots(checkpoint, tensors, average_from)
    return tensors, meta


def _same_shapes(weights: dict[str, Any], reference: dict[str, Any]) -> bool:
    """Whether ``weights`` has exactly ``reference``'s tensor names, each of the same shape."""
    return weights.keys() == reference.keys() and all(weights[k].shape == reference[k].shape for k in reference)


def _mean_weights(sources: list[dict[str, Any]]) -> dict[str, Any]:
    """The uniform average of networks of one shape (checked by :func:`_same_shapes`), taken in float64 and
    returned in the first network's dtypes.
    """
    import torch

    first = sources[0]
    return {k: torch.stack([s[k].double() for s in sources]).mean(0).to(first[k].dtype) for k in first}


def _averaged_with(
    checkpoint: Checkpoint, tensors: dict[str, Any], others: Any, destination: Path
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``checkpoint``'s exported weights ``tensors`` averaged with those of the checkpoints ``others``
    (``average_with``);
    ``destination``: the export's metadata file, which may be none of them.
    """
    if isinstance(others, (str, os.PathLike)):
        raise CheckpointError(f"average_with={str(others)!r} is not allowed; expected a list of checkpoints")
    sources, names = [tensors], [str(checkpoint.path)]
    for other in others:
        source = load_checkpoint(other)
        if source.metadata["kind"] == "mixture":
            raise CheckpointError(
                f"{source.path}: average_with takes networks, and this is a mixture of several; export one "
                f"member first (--member)"
            )
        if (
            source.metadata["game_config"] != checkpoint.metadata["game_config"]
            or source.metadata["model"] != checkpoint.metadata["model"]
        ):
            raise CheckpointError(
                f"{source.path}: the rules {source.metadata['game_config']} and network "
                f"{source.metadata['model']} differ from {checkpoint.path}'s "
                f"({checkpoint.metadata['game_config']}, {checkpoint.metadata['model']}); expected one game "
                f"and network shape to average"
            )
        if source.path.resolve() in {Path(n).resolve() for n in names}:
            raise CheckpointError(f"{source.path}: named twice among the checkpoints to average; expected each once")
        if source.path.resolve() == destination.resolve():
            raise CheckpointError(
                f"{destination}: the export destination is one of the checkpoints to average; choose another DEST"
            )
        weights, _ = _export_weights(source, None, None)
        if not _same_shapes(weights, tensors):
            raise CheckpointError(f"{source.path}: its network's tensors and shapes differ from {checkpoint.path}'s")
        sources.append(weights)
        names.append(str(source.path))
    averaged = _mean_weights(sources)
    return averaged, {"sources": names, "networks": len(sources)}


def _averaged_snapshots(
    checkpoint: Checkpoint, tensors: dict[str, Any], average_from: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's policy weights ``tensors`` (``model.*``) averaged with its pool's policy snapshots from update
    ``average_from`` on.
    """
    if isinstance(average_from, bool) or not isinstance(average_from, int) or average_from < 0:
        raise CheckpointError(
            f"average_from={average_from!r} is not allowed; expected an update number, an integer >= 0"
        )
    meta = checkpoint.metadata
    validate_metadata(meta, RUN_SCHEMA, checkpoint.path)
    policy = sorted((e for e in meta["pool"] if e.get("source", "policy") == "policy"), key=lambda e: e["update"])
    chosen = [e for e in policy if e["update"] >= average_from]
    if not chosen:
        taken = ", ".join(str(e["update"]) for e in policy) or "none"
        raise CheckpointError(
            f"{checkpoint.path}: no policy snapshot in the pool was taken at update {average_from} or later "
            f"(the run is at update "
            f"{meta['progress']['update']}; snapshots at updates: {taken}); expected average_from at most the "
            f"last of them"
        )
    sources = [tensors]
    for entry in chosen:
        weights = {f"model.{k}": v for k, v in checkpoint.group(f"pool.{entry['id']}").items()}
        if not _same_shapes(weights, tensors):
            raise CheckpointError(
                f"{checkpoint.path}: snapshot {entry['id']} (update {entry['update']}) does not have the "
                f"policy's tensors and shapes"
            )
        sources.append(weights)
    averaged = _mean_weights(sources)
    record = {
        "from_update": average_from,
        "policy_update": meta["progress"]["update"],
        "snapshots": [{"id": e["id"], "update": e["update"]} for e in chosen],
        "networks": len(sources),
    }
    return averaged, record


def _member_export(checkpoint: Checkpoint, member: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tensors and metadata of one mixture member as an agent checkpoint (see ``export_agent``)."""
    names, weights = mixture_weights(checkpoint)
    listing = ", ".join(f"{k}: {n} ({w:.3f})" for k, (n, w) in enumerate(zip(names, weights / weights.sum())))
    if member is None:
        raise CheckpointError(
            f"{checkpoint.path} is a mixture of {len(names)} members; name the one to export (--member NAME "
            f"or INDEX), one of {listing}"
        )
    index = (
        names.index(member)
        if member in names
        else int(member)
        if str(member).isdigit() and int(member) < len(names)
        else None
    )
    if index is None:
        raise CheckpointError(
            f"{checkpoint.path}: no member {member!r} in this mixture; expected a name or an index, one of {listing}"
        )
    prefix = f"{MEMBER_PREFIX}.{index}.model"
    tensors = {f"model.{k}": v for k, v in checkpoint.group(prefix).items()}
    if not tensors:
        raise CheckpointError(
            f"{checkpoint.path}: member {index} ({names[index]}) has no weights ({prefix}.*) in the tensor file"
        )
    entry = checkpoint.metadata["mixture"]
    recipes = [r for r in entry.get("recipes", []) if isinstance(r, dict) and r.get("name") == names[index]]
    recipe = {k: v for k, v in recipes[0].items() if k not in ("kind", "name")} if len(recipes) == 1 else {}
    meta = {
        "game_config": checkpoint.metadata["game_config"],
        "model": checkpoint.metadata["model"],
        **recipe,
        "name": names[index],
        "exported_member": {
            "name": names[index],
            "index": index,
            "weight": float(weights[index] / weights.sum()),
            "mixture": checkpoint.metadata.get("name") or checkpoint.path.stem,
        },
    }
    return tensors, meta
