"""Uniforms of a PCG64 generator read at chosen positions of its stream, in compiled code.

``Generator.random`` on numpy's PCG64 turns each step of a 128-bit linear congruential
generator into one double: ``state = state * MULTIPLIER + increment``, then the XSL-RR
output of the new state, shifted to 53 bits. The ``n``-th step from a state is the
affine map ``state * MULTIPLIER**n + increment * (1 + MULTIPLIER + ... +
MULTIPLIER**(n - 1))``: ``jumps(n)`` tabulates both factors, so a kernel reads the
uniform at any position of a row in two 128-bit multiplications, and skips the rest.
``tests/test_compiled_baselines.py`` checks the uniforms against ``Generator.random``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from baselines.kernels import inline, jit, numba

MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645
"""PCG64's 128-bit multiplier (numpy's ``PCG64``, not ``PCG64DXSM``)."""
_MASK64 = (1 << 64) - 1
_MASK128 = (1 << 128) - 1


def readable(rng: np.random.Generator) -> bool:
    """Whether the kernels can read ``rng``'s stream themselves (a ``PCG64`` bit generator)."""
    return type(rng.bit_generator) is np.random.PCG64


def split(value: int) -> tuple[int, int]:
    """A 128-bit integer as its (high, low) 64-bit halves."""
    return value >> 64, value & _MASK64


@lru_cache(maxsize=16)
def jumps(steps: int) -> np.ndarray:
    """``(steps + 1, 4)`` uint64: for ``n`` steps, ``MULTIPLIER**n`` and ``1 + ... + MULTIPLIER**(n - 1)``, each as
    (high, low).
    """
    table = np.zeros((steps + 1, 4), np.uint64)
    power, total = 1, 0
    for n in range(steps + 1):
        table[n] = (*split(power), *split(total))
        total = (total + power) & _MASK128
        power = (power * MULTIPLIER) & _MASK128
    return table


def state_of(rng: np.random.Generator) -> np.ndarray:
    """``(4,)`` uint64: the PCG64 state and increment of ``rng`` (high, low)."""
    pcg = rng.bit_generator.state["state"]
    return np.array((*split(pcg["state"]), *split(pcg["inc"])), np.uint64)


def set_state(rng: np.random.Generator, words: np.ndarray) -> None:
    """Move ``rng`` to the state in ``words[:2]`` (its increment and buffered 32-bit output unchanged)."""
    state = rng.bit_generator.state
    state["state"]["state"] = (int(words[0]) << 64) | int(words[1])
    rng.bit_generator.state = state


def read(rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """``(state_of(rng), whether rng holds a buffered 32-bit output)``, from one reading of its state."""
    state = rng.bit_generator.state
    pcg = state["state"]
    return np.array((*split(pcg["state"]), *split(pcg["inc"])), np.uint64), bool(state["has_uint32"])


def move_on(rng: np.random.Generator, words: np.ndarray, draws: int, buffered: bool) -> None:
    """Move ``rng``, read by ``read`` as (``words``, ``buffered``), ``draws`` draws on, where a kernel left ``words``:
    ``PCG64.advance`` (a fifth of the cost of setting the state) unless a buffered 32-bit output must be kept, which
    ``advance`` drops.
    """
    if buffered:
        set_state(rng, words)
    else:
        rng.bit_generator.advance(draws)


if numba is not None:
    from llvmlite import ir
    from numba.core import types
    from numba.core.extending import intrinsic

    @intrinsic
    def _nb_mul_add(typingctx, a_hi, a_lo, b_hi, b_lo, c_hi, c_lo):
        """``a * b + c`` modulo 2**128 on (high, low) uint64 halves, in LLVM's 128-bit integers."""
        if not all(arg == types.uint64 for arg in (a_hi, a_lo, b_hi, b_lo, c_hi, c_lo)):
            return None
        pair = types.UniTuple(types.uint64, 2)

        def codegen(context, builder, signature, args):
            wide, word = ir.IntType(128), ir.IntType(64)
            shift = ir.Constant(wide, 64)

            def join(hi, lo):
                return builder.or_(builder.shl(builder.zext(hi, wide), shift), builder.zext(lo, wide))

            value = builder.add(builder.mul(join(*args[0:2]), join(*args[2:4])), join(*args[4:6]))
            high = builder.trunc(builder.lshr(value, shift), word)
            return context.make_tuple(builder, pair, (high, builder.trunc(value, word)))

        return pair(*([types.uint64] * 6)), codegen


@inline
def _nb_advance(state, jump_table, steps):
    """The PCG64 state ``steps`` steps after ``state`` (``(4,)``: state, increment), as (high, low)."""
    add_hi, add_lo = _nb_mul_add(
        state[2], state[3], jump_table[steps, 2], jump_table[steps, 3], np.uint64(0), np.uint64(0)
    )
    return _nb_mul_add(jump_table[steps, 0], jump_table[steps, 1], state[0], state[1], add_hi, add_lo)


@inline
def _nb_uniform(hi, lo):
    """``Generator.random``'s double from a PCG64 state just stepped to (XSL-RR output, top 53 bits)."""
    word = hi ^ lo
    turn = hi >> np.uint64(58)
    word = (word >> turn) | (word << ((np.uint64(64) - turn) & np.uint64(63)))
    return np.float64(word >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@inline
def nb_uniform_at(state, jump_table, position):
    """The uniform that ``Generator.random`` draws ``position`` draws after ``state`` (0: the next one)."""
    hi, lo = _nb_advance(state, jump_table, position + 1)
    return _nb_uniform(hi, lo)


@inline
def nb_fill_increments(state, jump_table, increments):
    """``increments[n]``: ``increment * (1 + MULTIPLIER + ... + MULTIPLIER**(n - 1))``, the additive part of ``n``
    steps of ``state``'s stream (its increment never changes), as (high, low): ``nb_uniform_from`` then reads a draw in
    one 128-bit multiplication instead of two.
    """
    for n in range(increments.shape[0]):
        increments[n, 0], increments[n, 1] = _nb_mul_add(
            state[2], state[3], jump_table[n, 2], jump_table[n, 3], np.uint64(0), np.uint64(0)
        )


@inline
def nb_uniform_from(state, jump_table, increments, position):
    """``nb_uniform_at`` with the additive parts tabulated by ``nb_fill_increments``."""
    steps = position + 1
    hi, lo = _nb_mul_add(
        jump_table[steps, 0], jump_table[steps, 1], state[0], state[1], increments[steps, 0], increments[steps, 1]
    )
    return _nb_uniform(hi, lo)


@inline
def nb_skip_from(state, jump_table, increments, steps):
    """``nb_skip`` with the additive parts tabulated by ``nb_fill_increments``."""
    hi, lo = _nb_mul_add(
        jump_table[steps, 0], jump_table[steps, 1], state[0], state[1], increments[steps, 0], increments[steps, 1]
    )
    state[0] = hi
    state[1] = lo


@inline
def nb_skip(state, jump_table, steps):
    """Move ``state`` (``(4,)``, in place) ``steps`` draws on (``steps`` at most the table's length)."""
    hi, lo = _nb_advance(state, jump_table, steps)
    state[0] = hi
    state[1] = lo


@jit
def _nb_uniforms(state, jump_table, out):
    """``out[k]``: the uniform ``k`` draws after ``state`` (a check of the reading against ``Generator.random``)."""
    for k in range(out.shape[0]):
        out[k] = nb_uniform_at(state, jump_table, k)
