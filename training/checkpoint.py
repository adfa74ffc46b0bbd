"""Checkpoints: safetensors tensors plus a JSON metadata file, written atomically, loaded without pickle.

A checkpoint named ``P`` is two files side by side::

    P.json          metadata: format, kind ("agent" or "run"), game config, observation
                    layout version, observation and action sizes, network shape, step,
                    training config, evaluation results, the command that made it,
                    RNG states and optimizer hyperparameters (a run), and the name,
                    size and sha256 of the tensor file
    P.safetensors   tensors: "model.*" (the network); a run checkpoint adds
                    "optimizer.*" (Adam moments), "pool.<id>.*" (opponent snapshots),
                    "rng.*" (torch generator states), with an exploiter
                    "exploiter.model.*" and "exploiter.optimizer.*", and with a
                    magnet "magnet.*"; a mixture (kind "mixture", see training.mixture)
                    holds "member.<k>.model.*" for each member, and its metadata's
                    "mixture" entry holds the members' names and weights

Saving writes both files to temporary files in the same directory, fsyncs them, then
renames them over the old ones with ``os.replace`` (tensors first, metadata last). A
failure before the renames leaves the previous checkpoint untouched; the metadata
records the tensor file's sha256, so a torn pair (a crash between the two renames)
or a truncated or corrupted file is reported on load instead of loading silently.

Loading reads JSON and safetensors only (never ``torch.load``/pickle) and checks the
format, the layout version, the rule set and the sizes against the running code.
``python -m training.checkpoint PATH`` prints a checkpoint's metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from cockroach_env.config import GameConfig
from cockroach_env.encoding import LAYOUT_VERSION, encoding_for

FORMAT = "cockroach-poker-checkpoint"
FORMAT_VERSION = 1
KINDS = ("agent", "run", "mixture")
SHIPPED_DIR = "checkpoints"
"""Package directory (inside ``training``) of the pretrained checkpoints loadable by name."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message names the file and the problem."""


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


def checkpoint_files(path: str | os.PathLike) -> tuple[Path, Path]:
    """``(P.json, P.safetensors)`` for ``P``, ``P.json`` or ``P.safetensors``."""
    path = Path(path)
    if path.suffix in (".json", ".safetensors"):
        path = path.with_suffix("")
    return path.with_name(path.name + ".json"), path.with_name(path.name + ".safetensors")


def shipped_checkpoints() -> list[str]:
    """Names of the pretrained checkpoints shipped in the package (``classic-4p``, ...)."""
    root = resources.files("training") / SHIPPED_DIR
    try:
        return sorted(p.name[: -len(".json")] for p in root.iterdir() if p.name.endswith(".json"))
    except (FileNotFoundError, NotADirectoryError):
        return []


def resolve(path_or_name: str | os.PathLike) -> Path:
    """The metadata file of a checkpoint given by path or by shipped name."""
    meta, _ = checkpoint_files(path_or_name)
    if meta.exists():
        return meta
    name = str(path_or_name)
    if name in shipped_checkpoints():
        return Path(str(resources.files("training") / SHIPPED_DIR / f"{name}.json"))
    raise CheckpointError(f"{path_or_name}: no checkpoint at {meta} and no shipped checkpoint of that name; shipped checkpoints: {shipped_checkpoints()}")


# ---------------------------------------------------------------------------- saving


def save_checkpoint(path: str | os.PathLike, tensors: dict[str, Any], metadata: dict[str, Any]) -> Path:
    """Write ``tensors`` (name -> torch tensor) and ``metadata`` atomically as checkpoint ``path``.

    ``metadata`` must hold ``kind``, ``game_config`` and ``model``; the format fields,
    layout version, sizes and the tensor file's checksum are added here.
    """
    from safetensors.torch import save as save_tensors

    meta_path, tensor_path = checkpoint_files(path)
    meta_path.parent.mkdir(parents=True, exist_ok=True)
    game = GameConfig(**metadata["game_config"])
    enc = encoding_for(game)
    blob = save_tensors({k: v.detach().cpu().contiguous() for k, v in tensors.items()})
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
        tmp_meta = _write_temporary(meta_path, text.encode())
        temporaries.append(tmp_meta)
        os.replace(tmp_tensors, tensor_path)
        os.replace(tmp_meta, meta_path)
        temporaries.clear()
        _fsync_directory(meta_path.parent)
    finally:
        for tmp in temporaries:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
    return meta_path


def _write_temporary(final: Path, data: bytes) -> str:
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
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
        text = meta_path.read_text()
    except OSError as error:
        raise CheckpointError(f"{meta_path}: cannot read the checkpoint metadata ({error.strerror})") from None
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{meta_path}: the metadata is not valid JSON ({error.msg} at line {error.lineno}); the file is truncated or corrupted") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{meta_path}: not a checkpoint of this project (format={meta.get('format') if isinstance(meta, dict) else None!r}, expected {FORMAT!r})")
    if meta.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{meta_path}: checkpoint format version {meta.get('format_version')!r} is not supported; expected {FORMAT_VERSION}")
    missing = [k for k in ("kind", "layout_version", "game_config", "observation_size", "num_actions", "model", "tensors") if k not in meta]
    if missing:
        raise CheckpointError(f"{meta_path}: the metadata lacks {missing}; the file is incomplete")
    if meta["layout_version"] != LAYOUT_VERSION:
        raise CheckpointError(
            f"{meta_path}: observation/action layout version {meta['layout_version']} does not match this code's LAYOUT_VERSION={LAYOUT_VERSION}; retrain or use a matching version of cockroach_env"
        )
    try:
        game = GameConfig(**meta["game_config"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{meta_path}: the recorded game config is not valid here: {error}") from None
    enc = encoding_for(game)
    if (meta["observation_size"], meta["num_actions"]) != (enc.observation.size, enc.num_actions):
        raise CheckpointError(
            f"{meta_path}: observation/action sizes {meta['observation_size']}/{meta['num_actions']} do not match "
            f"{enc.observation.size}/{enc.num_actions} of its game config here; the checkpoint is from an incompatible layout"
        )
    meta["_path"] = str(meta_path)
    return meta


def load_checkpoint(path_or_name: str | os.PathLike, game: GameConfig | None = None, kind: str | None = None) -> Checkpoint:
    """Load and check a checkpoint. ``game``: refuse a checkpoint trained for other rules. ``kind``: require "run" or "agent"."""
    from safetensors import SafetensorError
    from safetensors.torch import load as load_tensors

    meta = read_metadata(path_or_name)
    meta_path = Path(meta.pop("_path"))
    if game is not None and GameConfig(**meta["game_config"]) != game:
        raise CheckpointError(f"{meta_path}: trained for {_rules(GameConfig(**meta['game_config']))}, but the game here is {_rules(game)}")
    if kind == "run" and meta["kind"] != "run":
        raise CheckpointError(f"{meta_path}: an {meta['kind']!r} checkpoint (weights only) cannot resume training; expected a run checkpoint (runs/<name>/checkpoint)")
    record = meta["tensors"]
    tensor_path = meta_path.with_name(record["file"])
    try:
        blob = tensor_path.read_bytes()
    except OSError as error:
        raise CheckpointError(f"{tensor_path}: cannot read the checkpoint tensors ({error.strerror})") from None
    if len(blob) != record["bytes"] or hashlib.sha256(blob).hexdigest() != record["sha256"]:
        raise CheckpointError(
            f"{tensor_path}: {len(blob)} bytes that do not match the {record['bytes']} bytes and sha256 recorded in {meta_path.name}; "
            "the tensor file is truncated, corrupted or from another save"
        )
    try:
        tensors = load_tensors(blob)
    except (SafetensorError, ValueError) as error:
        raise CheckpointError(f"{tensor_path}: not a valid safetensors file ({error})") from None
    return Checkpoint(meta_path, meta, tensors)


def _rules(game: GameConfig) -> str:
    changed = {k: v for k, v in game.to_dict().items() if k not in ("num_players", "edition") and v != GameConfig(num_players=game.num_players, edition=game.edition).to_dict()[k]}
    extra = f" {changed}" if changed else ""
    return f"{game.num_players}-player {game.edition}{extra}"


def build_model(checkpoint: Checkpoint, device: str = "cpu"):
    """The ``ActorCritic`` of a checkpoint, with its weights."""
    if checkpoint.metadata["kind"] == "mixture":
        raise CheckpointError(f"{checkpoint.path}: a mixture checkpoint holds several networks; load it with load_agent, or its members with training.mixture.member_models")
    return build_model_from(checkpoint, checkpoint.group("model"), device)


def build_model_from(checkpoint: Checkpoint, weights: dict[str, Any], device: str = "cpu"):
    """An ``ActorCritic`` of the checkpoint's recorded network holding ``weights`` (one group of its tensors)."""
    from training.model import ActorCritic

    spec = checkpoint.metadata["model"]
    model = ActorCritic(checkpoint.game_config, spec["hidden_sizes"], spec["activation"], spec.get("card_counting", False))
    try:
        model.load_state_dict(weights)
    except RuntimeError as error:
        raise CheckpointError(f"{checkpoint.path}: the weights do not fit the recorded network {spec}: {error}") from None
    return model.to(device)


def load_agent(path_or_name: str | os.PathLike, seed: int | None = None, config: GameConfig | None = None, greedy: bool = False, device: str = "cpu"):
    """An agent of the ``baselines`` protocol playing a checkpoint.

    ``path_or_name`` is a checkpoint path (``runs/ppo_4p/final``, with or without
    ``.json``) or a shipped name (``classic-4p``, ``classic-2p``, ...). ``config``, if
    given, must be the rule set the checkpoint was trained for. A mixture checkpoint
    (PSRO's result) gives a ``training.mixture.MixtureAgent``.
    """
    from training.model import PolicyAgent

    checkpoint = load_checkpoint(path_or_name, game=config)
    if checkpoint.metadata["kind"] == "mixture":  # one member per game, drawn with the mixture's weights
        from training.mixture import load_mixture_agent

        return load_mixture_agent(checkpoint, seed=seed, greedy=greedy, device=device)
    model = build_model(checkpoint, device)
    name = checkpoint.metadata.get("name") or checkpoint.path.stem
    return PolicyAgent(model, checkpoint.game_config, seed=seed, name=name, greedy=greedy)


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
    return rng.bit_generator.state


def restore_numpy_rng(state: dict[str, Any]):
    import numpy as np

    rng = np.random.Generator(getattr(np.random, state["bit_generator"])())
    rng.bit_generator.state = state
    return rng


def export_agent(source: str | os.PathLike, destination: str | os.PathLike, extra: dict[str, Any] | None = None) -> Path:
    """Write the weights-only (``agent``) checkpoint of ``source`` (a run or agent checkpoint) to ``destination``.

    The metadata is kept, less the run-only fields (optimizers, pool, progress, RNG
    states) and tensors (the exploiter's, Adam moments, snapshots); ``extra`` entries are added (e.g. the command history of a resumed run).
    """
    checkpoint = load_checkpoint(source)
    run_only = ("optimizer", "exploiter.optimizer", "pool", "progress", "rng", "tensors", "format", "format_version")
    meta = {k: v for k, v in checkpoint.metadata.items() if k not in run_only}
    meta.update(kind="agent", exported_from=str(checkpoint.path), **(extra or {}))
    return save_checkpoint(destination, {k: v for k, v in checkpoint.tensors.items() if k.startswith("model.")}, meta)


def main(argv: list[str] | None = None) -> None:
    """Print a checkpoint's metadata, or export its weights (``python -m training.checkpoint PATH [--export DEST]``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m training.checkpoint", description="Print the metadata of a checkpoint, or export its weights as a small agent checkpoint.")
    parser.add_argument("checkpoint", help="checkpoint path or shipped name")
    parser.add_argument("--export", metavar="DEST", help="write the weights-only agent checkpoint DEST.{json,safetensors}")
    args = parser.parse_args(argv)
    try:
        if args.export:
            print(export_agent(args.checkpoint, args.export))
            return
        meta = read_metadata(args.checkpoint)
    except CheckpointError as error:
        raise SystemExit(f"error: {error}") from None
    meta.pop("_path")
    print(json.dumps(meta, indent=1))


if __name__ == "__main__":
    main()
