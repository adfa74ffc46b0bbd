"""The move slots of an observation as small integers: the one mapping between them and the one-hot layout.

With ``GameConfig.history`` or ``recall`` the observation ends with the move segments
(``cockroach_env.encoding``): per slot, one-hot rows for the actor (a seat offset from the
observer), the public move, the card a call revealed and, Royal, the face-up penalty card
after the move. Each row holds at most one 1, so a slot is fully described by the position
of that 1 in each row, or its absence. Training carries the window in this form (a few
``int16`` per move instead of about 60 floats); the observation that users see is unchanged.

| field      | segment         | value                                   | empty |
|------------|-----------------|-----------------------------------------|-------|
| `actor`    | `move_actor`    | seat offset from the observer, 0..N-1   | -1    |
| `move`     | `move_public`   | ``Encoding.public_move``, 0..P-1        | -1    |
| `revealed` | `move_revealed` | card identity a call revealed, 0..I-1   | -1    |
| `top`      | `move_top`      | Royal: face-up penalty card, 0..I-1     | -1    |

A slot the game has not filled (past its decisions) has every field -1; ``revealed`` and
``top`` are -1 where the one-hot row is all zeros. The indices hold nothing the one-hot
observation does not: ``window_one_hot`` rebuilds it entry for entry, and
``window_from_observation`` reads them back from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.encoding import encoding_for

WINDOW_FIELDS = {"actor": "move_actor", "move": "move_public", "revealed": "move_revealed", "top": "move_top"}
"""Each field of a move slot and the observation segment whose one-hot row it indexes, in slot order."""

EMPTY = -1
"""The value of a field whose one-hot row is all zeros."""

WINDOW_DTYPE = np.int16


@dataclass(frozen=True)
class WindowLayout:
    """Where a config's move slots lie in its observation.

    ``slots`` move slots of ``len(fields)`` fields; field ``f`` of slot ``k`` with value ``v``
    is the observation entry ``starts[f] + k * widths[f] + v``. The move segments are the
    last ones of the observation, from ``prefix`` on.
    """

    slots: int
    fields: tuple[str, ...]
    widths: tuple[int, ...]
    starts: tuple[int, ...]
    prefix: int
    """Observation entries before the move segments."""
    size: int
    """The observation's size."""

    @property
    def shape(self) -> tuple[int, int]:
        """``(slots, fields)``: the shape of one observation's window."""
        return self.slots, len(self.fields)

    def columns(self) -> np.ndarray:
        """(slots, fields) int64: the observation entry of value 0 of each field of each slot."""
        slot = np.arange(self.slots)[:, None]
        return np.asarray(self.starts)[None, :] + slot * np.asarray(self.widths)[None, :]


@lru_cache(maxsize=64)
def window_layout(config: GameConfig) -> WindowLayout | None:
    """The move slots of ``config``'s observation; None without ``history`` or ``recall``."""
    segments = encoding_for(config).observation.segments
    if "move_actor" not in segments:
        return None
    present = [(field, segments[name]) for field, name in WINDOW_FIELDS.items() if name in segments]
    slots = present[0][1].shape[0]
    for _, seg in present:
        if seg.shape[0] != slots:
            raise ValueError(f"move segment {seg.name!r} has {seg.shape[0]} slots; expected {slots}")
    starts = [seg.start for _, seg in present]
    prefix = min(starts)
    size = encoding_for(config).observation.size
    if sum(seg.size for _, seg in present) != size - prefix:
        raise ValueError("the move segments are not the last segments of the observation; expected them last")
    return WindowLayout(
        slots=slots,
        fields=tuple(field for field, _ in present),
        widths=tuple(seg.shape[1] for _, seg in present),
        starts=tuple(starts),
        prefix=prefix,
        size=size,
    )


def window_one_hot(window: np.ndarray, layout: WindowLayout) -> np.ndarray:
    """(B, size - prefix) float32: the move segments of the observations whose windows are ``window`` (B, slots,
    fields).
    """
    window = np.asarray(window)
    b = len(window)
    out = np.zeros((b, layout.size - layout.prefix), np.float32)
    column = layout.columns()[None] - layout.prefix + window.astype(np.int64)
    row, slot, field = np.nonzero(window != EMPTY)
    out[row, column[row, slot, field]] = 1.0
    return out


def window_from_observation(observation: np.ndarray, layout: WindowLayout) -> np.ndarray:
    """(B, slots, fields) ``WINDOW_DTYPE``: the window of each observation (B, size), read from its one-hot rows."""
    observation = np.asarray(observation)
    b = len(observation)
    window = np.empty((b, *layout.shape), WINDOW_DTYPE)
    for f, (start, width) in enumerate(zip(layout.starts, layout.widths)):
        rows = observation[:, start : start + layout.slots * width].reshape(b, layout.slots, width)
        hot = rows.argmax(axis=2)
        window[:, :, f] = np.where(rows.max(axis=2) > 0, hot, EMPTY)
    return window
