"""Moving the rows of a subset of games between the engine's state arrays and a scratch batch.

Every state array of ``batched._State`` is viewed as C-contiguous bytes, one row per game,
so one compiled loop (numba, when installed) copies the rows of all of them per call;
without numba, ``numpy.take`` and fancy assignment do the same, array by array.
"""

from __future__ import annotations

import numpy as np

from cockroach_env.batched.numba_kernels import numba
from cockroach_env.batched.state import _State


def byte_rows(state: _State) -> tuple[np.ndarray, ...]:
    """Each state array as a ``(games, bytes per game)`` uint8 view (no copy)."""
    return tuple(a.reshape(a.shape[0], -1).view(np.uint8) for a in state.arrays())


def _gather_numpy(rows: np.ndarray, sources: tuple, targets: tuple) -> None:
    for source, target in zip(sources, targets):
        np.take(source, rows, axis=0, out=target[: len(rows)])


def _scatter_numpy(rows: np.ndarray, sources: tuple, targets: tuple) -> None:
    for source, target in zip(sources, targets):
        target[rows] = source[: len(rows)]


if numba is not None:

    @numba.njit(cache=True, _nrt=False)
    def _gather_compiled(rows, sources, targets):  # pragma: no cover - compiled
        for k in numba.literal_unroll(range(len(sources))):
            source, target = sources[k], targets[k]
            for j in range(rows.shape[0]):
                for c in range(source.shape[1]):
                    target[j, c] = source[rows[j], c]

    @numba.njit(cache=True, _nrt=False)
    def _scatter_compiled(rows, sources, targets):  # pragma: no cover - compiled
        for k in numba.literal_unroll(range(len(sources))):
            source, target = sources[k], targets[k]
            for j in range(rows.shape[0]):
                for c in range(source.shape[1]):
                    target[rows[j], c] = source[j, c]

    gather, scatter = _gather_compiled, _scatter_compiled
else:
    gather, scatter = _gather_numpy, _scatter_numpy
