"""The checkpoint metadata's declared schema (``SCHEMA``, ``RUN_SCHEMA``), its validation, and ``Checkpoint``."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockroach_env.config import GameConfig

FORMAT = "cockroach-poker-checkpoint"
FORMAT_VERSION = 1
KINDS = ("agent", "run", "mixture", "solver")
SHIPPED_DIR = "agents"
"""Package directory (inside ``training``) of the pretrained checkpoints loadable by name."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message names the file and the problem."""


# ---------------------------------------------------------------------------- metadata schema


def _integer(low: int = 0) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def is_file_name(v: Any) -> bool:
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
    Field("tensors.file", is_file_name, "a .safetensors file name in the checkpoint's directory"),
    Field("tensors.bytes", _integer(0), "an integer >= 0"),
    Field(
        "tensors.sha256",
        lambda v: isinstance(v, str) and re.fullmatch("[0-9a-f]{64}", v) is not None,
        "64 lowercase hex digits",
    ),
    Field("name", _is(str, type(None)), "a string", required=False),
    Field("package_version", _is(str), "a version string (cockroach_env.__version__)", required=False),
    Field("step", _is(dict, type(None)), "a mapping", required=False),
    Field(
        "commands",
        lambda v: isinstance(v, list) and all(isinstance(c, str) for c in v),
        "a list of strings",
        required=False,
    ),
)
"""What every checkpoint's metadata holds (checked by ``read_metadata`` before anything is built)."""


def _positive_number(v: Any) -> bool:
    return _number(v) and v > 0


def is_optimizer_groups(groups: Any) -> bool:
    """Adam's ``param_groups`` as a checkpoint records them: ``lr`` > 0, ``betas`` two numbers in [0, 1), ``eps`` > 0,
    ``weight_decay`` >= 0, ``params`` indices (a tampered value would fail only at the first ``optimizer.step``).
    """
    return isinstance(groups, list) and all(
        isinstance(g, dict)
        and _positive_number(g.get("lr"))
        and isinstance(g.get("betas"), (list, tuple))
        and len(g["betas"]) == 2
        and all(_number(b) and b < 1 for b in g["betas"])
        and _positive_number(g.get("eps"))
        and _number(g.get("weight_decay", 0))
        and isinstance(g.get("params"), list)
        and all(_integer(0)(i) for i in g["params"])
        for g in groups
    )


OPTIMIZER_GROUPS = "a list of Adam parameter groups (lr > 0, betas two numbers in [0, 1), eps > 0, params indices)"

BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


def is_numpy_rng_state(v: Any) -> bool:
    """A state that a numpy bit generator of ``BIT_GENERATORS`` accepts (tried on a fresh generator)."""
    import numpy as np

    if not isinstance(v, dict) or v.get("bit_generator") not in BIT_GENERATORS:
        return False
    try:
        getattr(np.random, v["bit_generator"])().state = v
    except (TypeError, ValueError, KeyError, OverflowError, AttributeError, IndexError):
        return False
    return True


def _is_evaluation(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and _integer(0)(entry.get("update"))
        and _integer(0)(entry.get("decisions"))
        and isinstance(entry.get("final"), bool)
        and isinstance(entry.get("results"), list)
        and all(
            isinstance(r, dict)
            and isinstance(r.get("opponent"), str)
            and _number(r.get("loss_rate"))
            and r["loss_rate"] <= 1
            for r in entry["results"]
        )
    )


def _consistent_progress(progress: Any) -> bool:
    """Every update takes at least one decision: a counter beyond the decisions is tampered."""
    counters = [progress.get(name) for name in ("update", "decisions")]
    return not all(_integer(0)(c) for c in counters) or counters[0] <= counters[1]


PROGRESS_COUNTERS = ("update", "decisions", "samples", "games", "next_snapshot_id", "pool_games", "pool_losses")

RUN_SCHEMA: tuple[Field, ...] = (
    Field("training_config", _is(dict), "a mapping (the run's training config)"),
    Field("optimizer", _is(dict), "a mapping with param_groups and scalars"),
    Field("optimizer.param_groups", is_optimizer_groups, OPTIMIZER_GROUPS),
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
    Field("progress", _consistent_progress, "progress.update <= progress.decisions (each update takes decisions)"),
    Field("progress.wall_seconds", _number, "a finite number >= 0"),
    Field(
        "progress.evaluations",
        lambda v: isinstance(v, list) and all(_is_evaluation(e) for e in v),
        "a list of {update, decisions, final, results: [{opponent, loss_rate in [0, 1]}, ...]}",
    ),
    Field(
        "progress.commands", lambda v: isinstance(v, list) and all(isinstance(c, str) for c in v), "a list of strings"
    ),
    Field("progress.base_run", _is(dict, type(None)), "a mapping or null", required=False),
    Field("rng", _is(dict), "a mapping with the numpy generator state"),
    Field(
        "rng.numpy",
        is_numpy_rng_state,
        f"the state of a numpy bit generator of {list(BIT_GENERATORS)} (this one cannot be restored)",
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


def check_finite(tensors: dict[str, Any], where: Path | str) -> None:
    """Refuse NaN or infinite values in any floating-point tensor (a diverged or tampered network)."""
    import torch

    for name, tensor in tensors.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise CheckpointError(
                f"{where}: tensor {name!r} holds {bad} NaN or infinite value(s) of {tensor.numel()}; expected "
                f"finite weights (the run diverged, or the file was altered)"
            )


GENERATION_PATTERN = re.compile(r"\.(\d+)\.safetensors$")


def checkpoint_files(path: str | os.PathLike) -> tuple[Path, Path]:
    """``(P.json, tensors)`` for ``P``, ``P.json``, ``P.safetensors`` or ``P.<G>.safetensors``.

    The tensor file is the one ``P.json`` names (``tensors.file``) when it can be read,
    else ``P.safetensors``.
    """
    meta = checkpoint_stem(Path(path))
    meta = meta.with_name(meta.name + ".json")
    tensors = meta.with_name(meta.name[: -len(".json")] + ".safetensors")
    try:
        if not meta.is_file():  # a FIFO or a device is never opened here: it could block or never end
            raise OSError
        record = json.loads(meta.read_bytes()).get("tensors")
        if is_file_name(record.get("file")):
            tensors = meta.with_name(record["file"])
    except (OSError, ValueError, AttributeError):
        pass
    return meta, tensors


def checkpoint_stem(path: Path) -> Path:
    """``P`` of ``P``, ``P.json``, ``P.safetensors`` and ``P.<G>.safetensors``."""
    name = GENERATION_PATTERN.sub("", path.name)
    if name != path.name:
        return path.with_name(name)
    if path.suffix in (".json", ".safetensors"):
        return path.with_suffix("")
    return path


MEMBER_PREFIX = "member"
"""A mixture member's tensors are ``member.<k>.model.*``."""
NFSP_AVERAGE = "average"
"""Prefix of an NFSP run checkpoint's average-policy tensors and metadata (``training.algorithms.nfsp.AVERAGE``)."""
NFSP_NETWORKS = ("average", "best_response")
"""The networks of an NFSP run checkpoint that ``export_agent`` exports: the average policy (the default) or the best
response.
"""
