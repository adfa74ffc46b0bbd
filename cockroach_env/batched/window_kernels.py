"""The move slots of the numba backend's observations, in one compiled pass per game (``_RecallLog``).

The numpy form of the same writes (``recall.py``) gathers every filled slot of the batch
with index arrays, which costs more than the step itself once a window holds a few
moves; this pass writes each slot's one-hot entries and its ``cockroach_env.window``
indices together. ``tests/test_history.py`` and ``tests/test_recall_batched.py`` hold both
backends to the AEC env, and ``tests/test_window.py`` the indices to the one-hot slots.
"""

from __future__ import annotations

import numpy as np

try:  # optional: the compiled backend
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None


def _write_move_slots(count, actor, public, revealed, top, logged, viewer, history, n, p, i, starts, out, window):
    """Fill the move slots of row ``b`` of ``out`` (zeros there) and ``window[b]`` from the log of game
    ``logged[b]`` as seat ``viewer[b]`` sees it: slot ``k`` holds the ``k``-th most recent decision with a
    ``history`` window, decision ``k`` with recall (``history`` 0). ``starts``: the observation's ``move_actor``,
    ``move_public``, ``move_revealed`` and ``move_top`` (-1: none) segments.
    """
    slots = window.shape[1]
    for b in range(len(logged)):
        game = logged[b]
        made = count[game]
        for k in range(slots):
            if k >= made:
                window[b, k, :] = -1
                continue
            entry = made - 1 - k if history else k
            seat = (np.int64(actor[game, entry]) - viewer[b]) % n
            move = np.int64(public[game, entry])
            card = np.int64(revealed[game, entry])
            window[b, k, 0] = seat
            window[b, k, 1] = move
            window[b, k, 2] = card
            out[b, starts[0] + k * n + seat] = 1.0
            out[b, starts[1] + k * p + move] = 1.0
            if card >= 0:
                out[b, starts[2] + k * i + card] = 1.0
            if starts[3] >= 0:
                face_up = np.int64(top[game, entry])
                window[b, k, 3] = face_up
                if face_up >= 0:
                    out[b, starts[3] + k * i + face_up] = 1.0


write_move_slots = numba.njit(cache=True, nogil=True)(_write_move_slots) if numba is not None else None
"""``_write_move_slots`` compiled; None without numba."""
