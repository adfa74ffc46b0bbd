"""Export of a checkpoint's weights as a small agent checkpoint, averaged over snapshots or checkpoints if asked
(``python -m training.checkpoint SRC --export DEST``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from training.core.checkpoint.files import save_checkpoint
from training.core.checkpoint.format import (
    MEMBER_PREFIX,
    NFSP_AVERAGE,
    NFSP_NETWORKS,
    RUN_SCHEMA,
    Checkpoint,
    CheckpointError,
    checkpoint_stem,
    validate_metadata,
)
from training.core.checkpoint.loading import load_checkpoint
from training.core.checkpoint.models import mixture_weights


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
    the same key but ``kind`` (e.g. the command history of a resumed run, or ``exported_from``).
    A mixture exports one ``member`` (its name, or its index in the mixture): that member's weights, name and
    recipe (``mixture.recipes``: its commands, base run and training config), and ``exported_member`` (name, index,
    weight). An NFSP run checkpoint (``training.algorithms.nfsp``) exports its average policy, the run's agent, or with
    ``member="best_response"`` its best response (``network`` in the metadata).
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
    meta_path = checkpoint_stem(Path(destination)).with_name(checkpoint_stem(Path(destination)).name + ".json")
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
