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

The parts: ``format`` (names, metadata schema, ``Checkpoint``), ``files`` (atomic writes, generations),
``loading`` (reading and checking), ``models`` (networks, agents, mixtures), ``states`` (optimizer and
generator states) and ``export`` (weights-only agents, averaged).
"""

from training.core.checkpoint.export import (
    export_agent,
)
from training.core.checkpoint.files import (
    remove_checkpoint,
    remove_orphaned_temporaries,
    remove_stale,
    save_checkpoint,
    write_file_atomically,
)
from training.core.checkpoint.format import (
    FORMAT,
    FORMAT_VERSION,
    KINDS,
    MEMBER_PREFIX,
    NFSP_AVERAGE,
    NFSP_NETWORKS,
    PROGRESS_COUNTERS,
    RUN_SCHEMA,
    SCHEMA,
    SHIPPED_DIR,
    Checkpoint,
    CheckpointError,
    Field,
    checkpoint_files,
    validate_metadata,
)
from training.core.checkpoint.loading import (
    MAX_METADATA_BYTES,
    load_checkpoint,
    read_metadata,
    resolve,
    shipped_checkpoints,
)
from training.core.checkpoint.models import (
    build_model,
    build_model_from,
    check_shapes,
    load_agent,
    load_mixture_agent,
    member_models,
    mixture_weights,
    save_mixture_checkpoint,
)
from training.core.checkpoint.states import (
    numpy_rng_state,
    optimizer_state,
    restore_numpy_rng,
    restore_optimizer,
)

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "FORMAT",
    "FORMAT_VERSION",
    "Field",
    "KINDS",
    "MAX_METADATA_BYTES",
    "MEMBER_PREFIX",
    "NFSP_AVERAGE",
    "NFSP_NETWORKS",
    "PROGRESS_COUNTERS",
    "RUN_SCHEMA",
    "SCHEMA",
    "SHIPPED_DIR",
    "build_model",
    "build_model_from",
    "check_shapes",
    "checkpoint_files",
    "export_agent",
    "load_agent",
    "load_checkpoint",
    "load_mixture_agent",
    "member_models",
    "mixture_weights",
    "numpy_rng_state",
    "optimizer_state",
    "read_metadata",
    "remove_checkpoint",
    "remove_orphaned_temporaries",
    "remove_stale",
    "resolve",
    "restore_numpy_rng",
    "restore_optimizer",
    "save_checkpoint",
    "save_mixture_checkpoint",
    "shipped_checkpoints",
    "validate_metadata",
    "write_file_atomically",
]
