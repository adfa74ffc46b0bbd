"""The optimizer and generator states a run checkpoint carries."""

from __future__ import annotations

from typing import Any

from training.core.checkpoint.format import (
    BIT_GENERATORS,
    OPTIMIZER_GROUPS,
    Checkpoint,
    CheckpointError,
    is_numpy_rng_state,
    is_optimizer_groups,
)
from training.core.config import quoted


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
    if not isinstance(record, dict) or not is_optimizer_groups(record.get("param_groups")):
        groups = record.get("param_groups") if isinstance(record, dict) else record
        raise CheckpointError(
            f"{checkpoint.path}: metadata field '{prefix}.param_groups' is {quoted(groups)}; expected "
            f"{OPTIMIZER_GROUPS}"
        )
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

    if not is_numpy_rng_state(state):
        raise CheckpointError(
            f"the numpy generator state {quoted(state)} is not allowed; expected a state of one of "
            f"{list(BIT_GENERATORS)}"
        )
    rng = np.random.Generator(getattr(np.random, state["bit_generator"])())
    rng.bit_generator.state = state
    return rng
