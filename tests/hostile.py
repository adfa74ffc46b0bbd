"""The checks the hostile suite shares (``tests/test_hostile_*.py``): a bad input is refused with a
``ValueError`` whose message names the value, and the refused call changes nothing.
"""

from __future__ import annotations

import contextlib
import copy
import signal
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest


def refused(call: Callable[[], Any], *fragments: str, error: type[BaseException] = ValueError) -> str:
    """Run ``call``; it must raise ``error`` (never another exception) whose message holds every fragment."""
    with pytest.raises(error) as caught:
        call()
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in the error message {message!r}"
    return message


def env_snapshot(env) -> dict[str, Any]:
    """What a refused env call must leave as it was: the game, the agent to act, the RNG stream."""
    raw = env.unwrapped
    game = raw.game
    return {
        "rng": copy.deepcopy(raw._rng.bit_generator.state),
        "state": None if game is None else raw.state().tolist(),
        "history": None if game is None else copy.deepcopy(raw.history),
        "agent_selection": getattr(raw, "agent_selection", None),
        "agents": list(getattr(raw, "agents", [])),
    }


def same_arrays(a: Any, b: Any) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


@contextlib.contextmanager
def within(seconds: int, what: str) -> Iterator[None]:
    """Fail the test if the block runs longer than ``seconds`` (a read that blocks on a FIFO, a runaway loop):
    SIGALRM interrupts even a blocking ``open``.
    """

    def stop(signum, frame):
        raise TimeoutError(f"{what} still ran after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
