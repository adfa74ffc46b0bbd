"""The batched engine's layout: phase and column codes, the state and observation segments it
knows (the kernels' and the recall tail's), the per-config rules tables (``_Rules``,
``_Dims``) and the ``BatchStep`` outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.encoding import (
    PHASES,
    RECALL_SEGMENTS,
    Encoding,
    keeps_moves,
    max_decisions,
    move_slots,
    public_moves,
)
from cockroach_env.engine import LOSS_REASONS, STAT_NAMES, Phase

BACKENDS = ("auto", "numba", "numpy")

OFFER, RESPOND, PASS, PLACE = (PHASES.index(p) for p in (Phase.OFFER, Phase.RESPOND, Phase.PASS, Phase.PLACE))
OVER = len(PHASES)
"""Phase codes: the position in ``encoding.PHASES`` (the one-hot order), ``OVER`` after a loss."""

SAME_TYPE, EMPTY_HAND, RAINBOW = (LOSS_REASONS.index(r) for r in ("same_type", "empty_hand", "rainbow"))

# Columns of the per-game scalar row ``info`` (int8). -1 means "none".
(
    PHASE,
    CURRENT,
    CARD,
    OFFERER,
    HOLDER,
    PASSER,
    CLAIM,
    PLACE_CLAIM,
    PLACE_REMAINING,
    PENALTY_TOP,
    PENALTY_END,
    SPECIAL_HOLDER,  # first of two columns: joker, blank (the order of ``CardSet.identities``)
) = range(12)
INFO_COLUMNS = SPECIAL_HOLDER + 2

# Columns of the per-identity table handed to the compiled kernels.
GROUP, ROYAL, SPECIAL, SPECIAL_ROW, TRUTH = range(5)  # TRUTH..TRUTH+C: truth; TRUTH+C..: fits

STATE_SEGMENTS = {
    "hands": ("n", "i"),
    "collections": ("n", "i"),
    "hand_sizes": ("n",),
    "history": ("n", "k"),
    "phase": ("phases",),
    "to_act": ("n",),
    "chain_claim": ("c",),
    "chain_latest_passer": ("n",),
    "chain_holder": ("n",),
    "chain_seen": ("n",),
    "chain_claims": ("n", "c"),
    "chain_card": ("i",),
    "removed": ("i",),
    "penalty_top": ("i",),
    "penalty_size": (1,),
    "special_holder": (2, "n"),
    "place_claim": ("c",),
    "place_remaining": (1,),
    "penalty_hidden": ("i",),
}
"""The state segments this module knows how to fill, with their expected shapes."""
SEGMENT_NAMES = tuple(STATE_SEGMENTS)

OBSERVATION_SEGMENTS = {
    "own_hand": (("i",), None, "own"),
    "collections": (("n", "i"), 0, "public"),
    "hand_sizes": (("n",), 0, "public"),
    "history": (("n", "k"), 0, "public"),
    "phase": (("phases",), None, "public"),
    "to_act": (("n",), 0, "public"),
    "chain_claim": (("c",), None, "public"),
    "chain_latest_passer": (("n",), 0, "public"),
    "chain_holder": (("n",), 0, "public"),
    "chain_seen": (("n",), 0, "public"),
    "chain_claims": (("n", "c"), 0, "public"),
    "chain_card": (("i",), None, "seen"),
    "penalty_top": (("i",), None, "public"),
    "penalty_size": ((1,), None, "public"),
    "special_holder": ((2, "n"), 1, "public"),
    "place_claim": (("c",), None, "placer"),
    "place_remaining": ((1,), None, "placer"),
}
"""The observation segments the compiled kernels write: shape, seat axis (rotated so the viewer is seat 0),
visibility.
"""

RECALL_STATE_SEGMENTS = {
    "dealt_hands": ("n", "i"),
    "starter": ("n",),
    "opening_collections": ("n", "i"),
    "move_actor": ("l", "n"),
    "move_public": ("l", "p"),
    "move_revealed": ("l", "i"),
    "move_top": ("l", "i"),
}
"""The ``GameConfig.recall`` and ``GameConfig.history`` state segments, written by ``recall.py`` in numpy (``l``:
move slots, ``p``: public moves).
"""
assert tuple(RECALL_STATE_SEGMENTS) == RECALL_SEGMENTS

RECALL_OBSERVATION_SEGMENTS = {
    "dealt_hand": (("i",), None, "own"),
    "starter": (("n",), 0, "public"),
    "opening_collections": (("n", "i"), 0, "public"),
    "move_actor": (("l", "n"), 1, "public"),
    "move_public": (("l", "p"), None, "public"),
    "move_revealed": (("l", "i"), None, "public"),
    "move_top": (("l", "i"), None, "public"),
}
"""The ``GameConfig.recall`` observation segments (after every kernel segment), as ``OBSERVATION_SEGMENTS``."""

# Rule numbers handed to the compiled kernels at run time, by position (the sizes also for
# ``state()``, whose kernel is shared by every config; the other kernels have them in ``_Dims``).
PARAM_NAMES = ("n", "i", "c", "k", "loss_count", "rainbow", "animal_groups", "max_steps")
P_N, P_I, P_C, P_K, P_LOSS_COUNT, P_RAINBOW, P_ANIMAL_GROUPS, P_MAX_STEPS = range(len(PARAM_NAMES))
(
    S_HANDS, S_COLLECTIONS, S_HAND_SIZES, S_HISTORY, S_PHASE, S_TO_ACT, S_CHAIN_CLAIM, S_CHAIN_LATEST_PASSER,
    S_CHAIN_HOLDER, S_CHAIN_SEEN, S_CHAIN_CLAIMS, S_CHAIN_CARD, S_REMOVED, S_PENALTY_TOP, S_PENALTY_SIZE,
    S_SPECIAL_HOLDER, S_PLACE_CLAIM, S_PLACE_REMAINING, S_PENALTY_HIDDEN,
) = range(len(SEGMENT_NAMES))  # fmt: skip


@dataclass
class BatchStep:
    """The outcome of ``reset`` or ``step`` for every game (see the package docstring)."""

    to_act: np.ndarray
    observation: np.ndarray
    action_mask: np.ndarray
    rewards: np.ndarray
    done: np.ndarray
    loser: np.ndarray
    loss_reason: np.ndarray
    truncated: np.ndarray
    window: np.ndarray | None = None
    """With ``history`` or ``recall``: (B, slots, fields) int16, the move slots of ``observation`` as
    ``cockroach_env.window`` indices (the same information, a few integers per move); None without them.
    """

    def __repr__(self) -> str:
        b, o = self.observation.shape
        return (
            f"BatchStep(B={b}, O={o}, A={self.action_mask.shape[1]}, done={int(self.done.sum())}, "
            f"to_act={self.to_act[:8].tolist()}{'...' if b > 8 else ''})"
        )


class _Dims(NamedTuple):
    """Sizes and layout offsets of one config: the compile-time constants of the numba kernels.

    The observation fields are segment starts in ``Encoding.observation`` (-1: absent).
    ``parallel`` selects the threaded kernels (a field, so that numba's disk cache,
    which ignores the ``parallel`` flag, keys the two variants apart).
    """

    n: int
    i: int
    c: int
    k: int
    royal: int
    offer_size: int
    respond_start: int
    pass_start: int
    place_start: int
    num_actions: int
    observation_size: int
    own_hand: int
    collections: int
    hand_sizes: int
    history: int
    phase: int
    to_act: int
    chain_claim: int
    chain_latest_passer: int
    chain_holder: int
    chain_seen: int
    chain_claims: int
    chain_card: int
    penalty_top: int
    penalty_size: int
    special_holder: int
    place_claim: int
    place_remaining: int
    parallel: int = 0


# ---------------------------------------------------------------------------- rules tables
class _Rules:
    """The config's rules as arrays and integers, shared by both backends."""

    def __init__(self, config: GameConfig, encoding: Encoding):
        cards = config.cards
        self.n = n = config.num_players
        self.i = i = len(cards.identities)
        self.c = c = len(cards.claims)
        self.k = len(STAT_NAMES)
        self.g = len(cards.groups)
        self.royal = config.edition == "royal"
        self.loss_count = config.loss_count
        self.rainbow = config.rainbow_loses
        self.animal_groups = cards.animal_groups
        self.max_steps = config.max_steps or 0
        self.truth = np.array(cards.truth, dtype=bool)
        self.fits = self.truth & ~np.array(cards.is_special)[:, None]
        self.group_of = np.array(cards.group_of, dtype=np.int64)
        self.is_royal = np.array(cards.is_royal, dtype=bool)
        self.is_special = np.array(cards.is_special, dtype=bool)
        self.specials = np.flatnonzero(self.is_special)
        if self.specials.size not in (0, 2):
            raise ValueError(
                f"the {cards.edition} card set has {self.specials.size} special cards; the batched engine expects 0 "
                "or 2"
            )
        self.special_row = np.full(i, -1, np.int64)
        self.special_row[self.specials] = np.arange(self.specials.size)
        # members[card, group]: 1 where the card counts toward the group (specials toward none).
        self.members = np.zeros((i, self.g), np.int64)
        for card, group in enumerate(cards.group_of):
            if group >= 0:
                self.members[card, group] = 1
        # Penalty deck capacity: the configured size plus the Royal leftovers (at most n - 2).
        self.penalty_capacity = max(16, config.penalty_deck_size + n) if self.royal else 0
        self.deck = np.repeat(np.arange(i, dtype=np.int8), cards.copies)
        enc = encoding
        self.offer_size, self.respond_start, self.pass_start, self.place_start = (
            enc.offer_size,
            enc.respond_start,
            enc.pass_start,
            enc.place_start,
        )
        self.num_actions = enc.num_actions
        self.recall_length = max_decisions(config) if keeps_moves(config) else 0
        """Decisions the move log holds (``encoding.max_decisions``, which bounds a game's), 0 without recall or
        history.
        """
        self.recall_slots = move_slots(config)
        """Move slots of the layout: ``recall_length`` with recall, the window with ``history``, 0 otherwise."""
        self.history = config.history
        """``GameConfig.history``: the layout's slots hold the last decisions, newest first (0: every decision)."""
        self.recall_moves = public_moves(config) if keeps_moves(config) else 0
        self._set_vector_layout(encoding)
        self.card_table = np.zeros((i, TRUTH + 2 * c), np.int8)
        self.card_table[:, GROUP] = self.group_of
        self.card_table[:, ROYAL] = self.is_royal
        self.card_table[:, SPECIAL] = self.is_special
        self.card_table[:, SPECIAL_ROW] = self.special_row
        self.card_table[:, TRUTH : TRUTH + c] = self.truth
        self.card_table[:, TRUTH + c :] = self.fits
        self._set_kernel_constants(encoding)

    def _set_vector_layout(self, encoding: Encoding) -> None:
        """Where the backends write in the state and observation vectors, and how an observation reads the state."""
        self.recall_state = self._recall_starts(encoding.state.segments.values(), RECALL_STATE_SEGMENTS, "state")
        self.recall_observation = self._recall_starts(
            encoding.observation.segments.values(), RECALL_OBSERVATION_SEGMENTS, "observation"
        )
        """``{name: start}`` of the recall segments in the state and observation vectors (empty without recall)."""
        self.state_size = min(self.recall_state.values(), default=encoding.state.size)
        self.observation_size = min(self.recall_observation.values(), default=encoding.observation.size)
        """Sizes of what the backends write: everything before the recall segments (the whole vectors without
        recall).
        """
        self.segments = self._segment_starts(encoding)
        index = np.stack(
            [
                np.stack([encoding.observation_index(v, seen)[: self.observation_size] for seen in (False, True)])
                for v in range(self.n)
            ]
        )
        self.observation_index = np.where(index == encoding.zero_slot, self.state_size, index).astype(np.intp)
        """``(N, 2, O)``: ``Encoding.observation_index(viewer, has_seen_card)`` over the backends' part (zero slot:
        ``state_size``).
        """
        self.state_position = np.append(np.arange(self.state_size, dtype=np.int32), -1)

    def _set_kernel_constants(self, encoding: Encoding) -> None:
        """The numba kernels' parameters and compile-time layout constants (``PARAM_NAMES``, ``_Dims``)."""
        values = dict(
            n=self.n, i=self.i, c=self.c, k=self.k, loss_count=self.loss_count, rainbow=int(self.rainbow),
            animal_groups=self.animal_groups, max_steps=self.max_steps,
        )  # fmt: skip
        self.params = np.array([values[name] for name in PARAM_NAMES], np.int64)
        starts = self._observation_starts(encoding)
        self.dims = _Dims(
            n=self.n, i=self.i, c=self.c, k=self.k, royal=int(self.royal), offer_size=self.offer_size,
            respond_start=self.respond_start, pass_start=self.pass_start, place_start=self.place_start,
            num_actions=self.num_actions,
            observation_size=self.observation_size, **starts,
        )  # fmt: skip

    def _recall_starts(self, segments, known: dict, vector: str) -> dict[str, int]:
        """``{name: start}`` of the recall segments of a layout, checked: the known shapes, after every other segment,
        in order.
        """
        extent = {"n": self.n, "i": self.i, "l": self.recall_slots, "p": self.recall_moves}
        segments = list(segments)
        starts = {seg.name: seg.start for seg in segments if seg.name in known}
        if not starts:
            return starts
        tail = [seg for seg in segments if seg.start >= min(starts.values())]
        if [seg.name for seg in tail] != [name for name in known if name in starts]:
            raise ValueError(
                f"the {vector} layout ends with {[seg.name for seg in tail]}; the batched engine expects the recall "
                f"segments {list(known)} (those present) last, in that order"
            )
        for seg in tail:
            shape = known[seg.name][0] if vector == "observation" else known[seg.name]
            expected = tuple(extent.get(d, d) for d in shape)
            described = (expected,) + tuple(known[seg.name][1:]) if vector == "observation" else expected
            found = (tuple(seg.shape), seg.seat_axis, seg.visibility) if vector == "observation" else tuple(seg.shape)
            if found != described:
                raise ValueError(
                    f"{vector} segment {seg.name!r} is {found}; the batched engine writes it as {described}"
                )
        return starts

    def _segment_starts(self, encoding: Encoding) -> np.ndarray:
        """Start of every known segment in the state vector (-1 if absent); refuse unknown layouts."""
        extent = {"n": self.n, "i": self.i, "c": self.c, "k": self.k, "phases": len(PHASES)}
        starts = np.full(len(SEGMENT_NAMES), -1, np.int64)
        for seg in encoding.state.segments.values():
            if seg.name in self.recall_state:
                continue
            if seg.name not in STATE_SEGMENTS:
                raise ValueError(
                    f"state segment {seg.name!r} is unknown to the batched engine; expected only {list(SEGMENT_NAMES)} "
                    "(update cockroach_env/batched/layout.py with the layout)"
                )
            expected = tuple(extent.get(d, d) for d in STATE_SEGMENTS[seg.name])
            if tuple(seg.shape) != expected:
                raise ValueError(
                    f"state segment {seg.name!r} has shape {seg.shape}; the batched engine expects {expected}"
                )
            starts[SEGMENT_NAMES.index(seg.name)] = seg.start
        return starts

    def _observation_starts(self, encoding: Encoding) -> dict[str, int]:
        """Start of every observation segment (-1 if absent); refuse layouts the kernels would not write right."""
        extent = {"n": self.n, "i": self.i, "c": self.c, "k": self.k, "phases": len(PHASES)}
        starts = dict.fromkeys(OBSERVATION_SEGMENTS, -1)
        for seg in encoding.observation.segments.values():
            if seg.name in self.recall_observation:
                continue
            if seg.name not in OBSERVATION_SEGMENTS:
                raise ValueError(
                    f"observation segment {seg.name!r} is unknown to the batched engine; expected only "
                    f"{list(OBSERVATION_SEGMENTS)} (update cockroach_env/batched/layout.py with the layout)"
                )
            shape, seat_axis, visibility = OBSERVATION_SEGMENTS[seg.name]
            expected = (tuple(extent.get(d, d) for d in shape), seat_axis, visibility)
            if (tuple(seg.shape), seg.seat_axis, seg.visibility) != expected:
                raise ValueError(
                    f"observation segment {seg.name!r} is {(seg.shape, seg.seat_axis, seg.visibility)}; the batched "
                    f"engine writes it as (shape, seat axis, visibility) {expected}"
                )
            starts[seg.name] = seg.start
        counts = {
            "own_hand": 0,
            "collections": self.i,
            "hand_sizes": self.i + self.n * self.i,
            "history": self.i + self.n * self.i + self.n,
        }
        end = counts["history"] + self.n * self.k
        if any(starts[name] != at for name, at in counts.items()) or any(
            0 <= at < end for name, at in starts.items() if name not in counts
        ):
            raise ValueError(
                f"the observation layout does not lead with {list(counts)} at {list(counts.values())}; the batched "
                "engine writes them first, eight entries at a time"
            )
        return starts


def _clear_outcome(out: BatchStep) -> None:
    """Nothing ended: zero rewards, no loser."""
    out.rewards.fill(0.0)
    out.done.fill(False)
    out.truncated.fill(False)
    out.loser.fill(-1)
    out.loss_reason.fill(-1)
