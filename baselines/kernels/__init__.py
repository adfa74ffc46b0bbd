"""Compiled decisions of the scripted baselines (numba), the default where numba is installed.

``heuristic``, ``honest`` and ``bluffer`` decide here row by row, in one compiled pass
over a batch, as the batched engine steps its games (``cockroach_env.batched``). Each
kernel mirrors its agent's numpy implementation, which stays the reference
(``backend="numpy"``): the same reading of the observation (``baselines.counting``'s
layout offsets, taken from ``cockroach_env.encoding``), the same arithmetic in the same
order, the same uniforms from the agent's generator. ``tests/test_compiled_baselines.py``
compares the two on a million rows of every rule set.

* ``stream``: the uniforms a decision draws, read straight from the agent's PCG64 stream
  at the positions the numpy implementation would use them (the heuristic's tie-breaking
  jitter is only read for the actions it can decide between).
* ``table``: one observation row read into the counts that ``counting.read_table`` gives.
* ``heuristic`` and ``claim_style``: the agents' decisions and action probabilities.

The kernels compile on a machine's first use; numba caches them on disk.
"""

from __future__ import annotations

try:  # optional: the compiled baselines
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

BACKENDS = ("auto", "numba", "numpy")
"""``backend`` values of the scripted agents: ``auto`` is ``numba`` where numba is installed, else ``numpy``."""


def resolve_backend(backend: str, agent: str) -> str:
    """``numba`` or ``numpy`` for the ``backend`` option of agent ``agent``; a clear ``ValueError`` otherwise."""
    if backend not in BACKENDS:
        raise ValueError(f"{agent}: backend={backend!r} is not allowed; expected one of {list(BACKENDS)}")
    if backend == "numba" and numba is None:
        raise ValueError(
            f"{agent}: backend='numba' needs numba; install it with pip install numba, or use backend='numpy'"
        )
    if backend == "auto":
        return "numba" if numba is not None else "numpy"
    return backend


def jit(function):
    """A compiled kernel: ``numba.njit(cache=True)`` without reference counting where numba is installed (the function
    itself otherwise, never called then).

    As the engine's kernels (``cockroach_env.batched.numba_kernels``), these allocate nothing (the callers hand them
    scratch arrays) and run without numba's reference counting: with it, every array handed to a called function
    costs atomic reference-count updates, more than the arithmetic of the small functions here.
    """
    return numba.njit(cache=True, _nrt=False)(function) if numba is not None else function


def inline(function):
    """A part of a kernel, inlined into it (``inline="always"``): a call that passes a dozen arrays costs more than
    the few operations of most parts.
    """
    return numba.njit(cache=True, _nrt=False, inline="always")(function) if numba is not None else function


def shared(function):
    """A part that several kernels call, compiled once and called (not inlined into each): a part as large as a whole
    row's evaluation costs most of the compile time when numba inlines it into every kernel, and a call once a row
    costs nothing measurable beside its work.
    """
    return numba.njit(cache=True, _nrt=False)(function) if numba is not None else function
