"""``random_legal_actions``: one uniformly random legal action per row of a mask, compiled when numba is there."""

from __future__ import annotations

import numpy as np

from cockroach_env.batched.numba_kernels import CHUNK, PARALLEL_MIN_GAMES, _jit, numba

if numba is not None:
    from cockroach_env.batched.numba_kernels import _nb_lowest_bit, _nb_nonzero_bits, _nb_popcount


@_jit
def _nb_splitmix(state):
    """One step of the SplitMix64 generator (``state`` and the result are uint64)."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


@_jit
def _nb_below(bits, bound):
    """A number in ``[0, bound)`` from the high 32 bits of ``bits`` (bias below ``bound / 2**32``)."""
    return np.int64(((bits >> np.uint64(32)) * np.uint64(bound)) >> np.uint64(32))


@_jit
def _nb_random_legal_row(mask, seeds, words, chunk, b, out):
    """Row ``b``: a uniformly random legal entry (-1 if none), from the 64-bit seed ``seeds[b]``.

    Two tries of a uniform entry first, kept if legal (likely for the many-legal offer
    masks); then a uniform rank among the legal entries, found through the row packed
    into 64-bit words of legal bits (``words[chunk]``: scratch, one per 64 entries).
    Either way the choice is uniform over the legal entries.
    """
    rows, width = mask.shape
    state = seeds[b]
    choice = -1
    for _ in range(2 if width > 0 else 0):
        state, bits = _nb_splitmix(state)
        entry = _nb_below(bits, width)
        if mask[b, entry] != 0:
            choice = entry
            break
    if choice < 0:
        count = 0
        for w in range(words.shape[1]):
            base = w * 64
            left = width - base
            if left >= 64 or b + 1 < rows:  # the 64 bytes from here stay inside the array
                word = _nb_nonzero_bits(mask, b, base)
                if left < 64:
                    word &= (np.uint64(1) << np.uint64(left)) - np.uint64(1)
            else:
                word = np.uint64(0)
                for j in range(left):
                    word |= np.uint64(mask[b, base + j] != 0) << np.uint64(j)
            words[chunk, w] = word
            count += np.int64(_nb_popcount(word))
        if count > 0:
            state, bits = _nb_splitmix(state)
            pick = _nb_below(bits, count)
            for w in range(words.shape[1]):
                word = words[chunk, w]
                inside = np.int64(_nb_popcount(word))
                if pick < inside:
                    for _ in range(pick):
                        word &= word - np.uint64(1)  # drop the lowest legal entries
                    choice = w * 64 + np.int64(_nb_lowest_bit(word))
                    break
                pick -= inside
    out[b] = choice


def _random_legal_kernel(parallel: bool):
    """``random_legal_actions``'s kernel: chunks of ``CHUNK`` rows, spread over numba's threads if ``parallel``."""

    @numba.njit(cache=True, parallel=parallel, _nrt=False)
    def random_legal(mask, seeds, words, out):
        rows = mask.shape[0]
        size = CHUNK if parallel else rows  # a closure constant: keys the two variants apart in numba's cache
        for chunk in numba.prange(words.shape[0]):
            for b in range(chunk * size, min(rows, (chunk + 1) * size)):
                _nb_random_legal_row(mask, seeds, words, chunk, b, out)

    return random_legal


_random_legal = {parallel: _random_legal_kernel(parallel) for parallel in (False, True)} if numba is not None else None


def random_legal_actions(mask: np.ndarray, rng: np.random.Generator, parallel: bool = False) -> np.ndarray:
    """One uniformly random legal action per row of ``mask`` (B, A), vectorized.

    Compiled when numba is importable (one 64-bit seed per row drawn from ``rng``; see
    ``_nb_random_legal_row``), otherwise ``argmax(mask * uniform noise)``. Rows without a
    legal action give -1 (compiled) or 0. ``parallel=True`` spreads rows over numba's
    threads from ``PARALLEL_MIN_GAMES`` rows on (the same choices). A mask that is not
    2-D numbers (or holds NaN), or an ``rng`` that is not a Generator, is a ``ValueError``.
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng={rng!r} is not allowed; expected a numpy.random.Generator (np.random.default_rng(seed))")
    mask = np.ascontiguousarray(mask)
    if mask.ndim != 2:
        raise ValueError(
            f"a mask of shape {mask.shape} is not allowed; expected (B, A), one row of legal actions per game"
        )
    if mask.dtype.kind not in "biuf":
        raise ValueError(
            f"a mask of dtype {mask.dtype} is not allowed; expected 0/1 integers or bools (any nonzero entry is legal)"
        )
    if mask.dtype.kind == "f" and np.isnan(mask).any():
        raise ValueError(f"the mask holds NaN (game {int(np.isnan(mask).any(1).argmax())}); expected 0/1 entries")
    if numba is None:
        return np.argmax(mask * rng.random(mask.shape, dtype=np.float32), axis=1)
    mask = mask.view(np.int8) if mask.dtype.itemsize == 1 else (mask != 0).view(np.int8)
    threads = parallel and len(mask) >= PARALLEL_MIN_GAMES
    out = np.empty(len(mask), np.int64)
    words = np.empty((-(-len(mask) // CHUNK) if threads else 1, (mask.shape[1] + 63) // 64), np.uint64)
    _random_legal[threads](mask, rng.bit_generator.random_raw(len(mask)), words, out)
    return out
