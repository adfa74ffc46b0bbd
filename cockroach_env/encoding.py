"""Action and observation layouts: the one definition of every index the agents see.

Actions
-------
One ``Discrete(A)`` per config, in fixed slices (targets are seat offsets: ``k`` means
the player ``k`` seats after the actor, so one policy serves every seat)::

    offer   card (I) x target offset 1..N-1 x claim (C)
    respond call true, call false, peek                       (3)
    pass    target offset 1..N-1 x claim (C)
    place   card (I)                                           (Royal only; 0 in classic)

``I`` is the number of card identities (8 classic, 16 Royal) and ``C`` the number of
claims (8 in both editions).

State and observation
---------------------
``StateLayout`` is the full state (absolute seats) for centralized critics. The
observation of seat ``v`` is derived from it in one gather::

    obs = state_with_zero[observation_index(v, has_seen_card)]

which rotates every per-seat segment so that the observer is seat 0, keeps only the
observer's own row of ``hands``, drops ``removed`` and ``penalty_hidden``, reads
``chain_card`` only when the observer offered or peeked the card, and reads the Royal
``place_claim`` and ``place_remaining`` only when the observer is the placing player
(zeros otherwise). ``observation_mask(v)`` marks the same visible entries over the
state vector.

One flag, ``has_seen_card`` (``has_private_view(game, v)``), gates both private
segments: no card is in play during a replacement, so the two never hold values at
the same time.

Royal replacement: what each seat sees
--------------------------------------
While a player places cards for the joker or blank they took (phase ``place``), the
placing player's ``place_claim`` is the claim the card must fit (all zeros when no card
in their hand fits it and any card may be placed) and ``place_remaining`` the cards
still to place (1 or 2). Every other seat sees zeros in both, for the whole
replacement: before the first placed card they would tell whether the placer's hand
holds a card fitting the claim. What is public reaches every seat by the other
segments: ``phase`` (a replacement is under way), ``to_act`` (who places),
``collections`` (the cards placed) and, with ``recall`` or ``history``, the reveal and
every placement in the move segments.

Recall (``GameConfig.recall``)
------------------------------
The observation above is Markov in the public state but forgets the order of events
(which claims a seat made while it held which cards). With ``recall=True`` the state
gains, after every other segment::

    dealt_hands          (N, I)    own     the hands as dealt
    starter              (N,)              seat that started the game
    opening_collections  (N, I)            creature-to-start only
    move_actor           (L, N)            one slot per decision: who made it,
    move_public          (L, P)            the move without its hidden card (``public_move``),
    move_revealed        (L, I)            the card a call revealed,
    move_top             (L, I)            Royal: the face-up penalty card after it

with ``L = max_decisions`` and ``P = public_moves``; the observation keeps the
observer's own ``dealt_hand`` and rotates seats as everywhere else. Together with
``chain_card`` (the card in play when the observer offered or peeked it) this is the
observer's information state with perfect recall (``cockroach_env.information``), up
to the seat rotation: two observations are equal exactly when the information states are
(``tests/test_recall.py``). Every decision fills one slot; ``L`` bounds a game's
decisions, so a slot is never missing.

History window (``GameConfig.history``)
---------------------------------------
``history=K`` adds the same segments with ``L = K`` slots holding the last ``K``
decisions, newest first: slot 0 is the most recent decision, slot ``K - 1`` the ``K``-th
most recent, and slots past the game's decisions so far are zeros. ``move_slots(config)``
is ``L`` and ``keeps_moves(config)`` says whether the layout has these segments (recall or
history); only ``recall`` is perfect recall.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property, lru_cache

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.engine import STAT_NAMES, Phase

PHASES = (Phase.OFFER, Phase.RESPOND, Phase.PASS, Phase.PLACE)
"""Phases encoded one-hot (all zeros once the game is over)."""

_PHASE_INDEX = {phase: k for k, phase in enumerate(PHASES)}

RESPOND_ACTIONS = ("call_true", "call_false", "peek")

LAYOUT_VERSION = 1
"""Bumped whenever the action or observation layout changes; checkpoints record it."""


@dataclass(frozen=True)
class Segment:
    """A named block of a flat vector."""

    name: str
    start: int
    shape: tuple[int, ...]
    seat_axis: int | None = None
    """Axis indexed by seat (rotated ego-centrically in observations), if any."""
    visibility: str = "public"
    """``public``, ``own`` (only the row of the observer), ``seen`` (only if the observer saw the card in play),
    ``placer`` (only if the observer places a Royal replacement) or ``hidden``.
    """

    size: int = 0
    stop: int = 0

    def __post_init__(self) -> None:
        size = 1
        for extent in self.shape:
            size *= extent
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "stop", self.start + size)


class Layout:
    """An ordered set of segments over a flat float32 vector, with named views."""

    def __init__(self, specs: list[tuple]):
        self.segments: dict[str, Segment] = {}
        start = 0
        for name, shape, *rest in specs:
            seg = Segment(name, start, tuple(shape), *rest)
            self.segments[name] = seg
            start = seg.stop
        self.size = start

    def view(self, vec: np.ndarray, name: str) -> np.ndarray:
        """The segment ``name`` of ``vec`` (last axis), reshaped; a view, not a copy."""
        seg = self.segments[name]
        return vec[..., seg.start : seg.stop].reshape(vec.shape[:-1] + seg.shape)

    def unpack(self, vec: np.ndarray) -> dict[str, np.ndarray]:
        return {name: self.view(vec, name) for name in self.segments}

    def describe(self) -> list[dict]:
        """Index table of the layout, for documentation."""
        return [
            {"name": s.name, "start": s.start, "stop": s.stop, "shape": s.shape, "visibility": s.visibility}
            for s in self.segments.values()
        ]


def _state_specs(config: GameConfig) -> list[tuple]:
    n = config.num_players
    cards = config.cards
    i, c, k = len(cards.identities), len(cards.claims), len(STAT_NAMES)
    specs = [
        ("hands", (n, i), 0, "own"),
        ("collections", (n, i), 0),
        ("hand_sizes", (n,), 0),
        ("history", (n, k), 0),
        ("removed", (i,), None, "hidden"),
        ("phase", (len(PHASES),)),
        ("to_act", (n,), 0),
        ("chain_claim", (c,)),
        ("chain_latest_passer", (n,), 0),
        ("chain_holder", (n,), 0),
        ("chain_seen", (n,), 0),
        ("chain_claims", (n, c), 0),
        ("chain_card", (i,), None, "seen"),
    ]
    if config.edition == "royal":
        specs += [
            ("penalty_top", (i,)),
            ("penalty_size", (1,)),
            ("special_holder", (2, n), 1),
            ("place_claim", (c,), None, "placer"),
            ("place_remaining", (1,), None, "placer"),
            ("penalty_hidden", (i,), None, "hidden"),
        ]
    if keeps_moves(config):
        length = move_slots(config)
        specs += [("dealt_hands", (n, i), 0, "own"), ("starter", (n,), 0)]
        if config.opening_cards:
            specs.append(("opening_collections", (n, i), 0))
        specs += [
            ("move_actor", (length, n), 1),
            ("move_public", (length, public_moves(config))),
            ("move_revealed", (length, i)),
        ]
        if config.edition == "royal":
            specs.append(("move_top", (length, i)))
    return specs


RECALL_SEGMENTS = (
    "dealt_hands",
    "starter",
    "opening_collections",
    "move_actor",
    "move_public",
    "move_revealed",
    "move_top",
)
"""State segments of ``GameConfig.recall`` and ``GameConfig.history`` (always last in the layout)."""

_OWN_NAMES = {"hands": "own_hand", "dealt_hands": "dealt_hand"}
"""Observation names of the ``own`` state segments (the observer's row)."""


def dealt_cards(config: GameConfig) -> int:
    """Cards dealt into the hands (Royal leftovers go under the penalty deck)."""
    n, cards = config.num_players, config.cards
    rest = cards.deck_size - config.discard - config.penalty_deck_size - config.opening_cards * n
    return rest if config.edition != "royal" else (rest // n) * n + (1 if rest % n else 0)


def max_decisions(config: GameConfig, hand_cards: int | None = None) -> int:
    """An upper bound on the decisions of one game (``max_steps`` if smaller), whose hands
    hold ``hand_cards`` cards in all at the start (default: as many as the rule set deals).

    Every round takes at least one card out of the hands for good, in at most ``2N - 2``
    decisions (an offer, a peek and a pass per further seat, a call), plus two Royal
    placements; one more decision for the round a rule may end without a card leaving.
    In Royal the joker and the blank may also come into a hand from the penalty deck,
    which makes up to two more cards to leave the hands.
    """
    n, royal = config.num_players, config.edition == "royal"
    cards = (dealt_cards(config) if hand_cards is None else hand_cards) + (
        len([c for c in config.cards.is_special if c]) if royal else 0
    )
    bound = cards * (2 * n - 2 + (2 if royal else 0)) + 1
    return min(bound, config.max_steps) if config.max_steps is not None else bound


def keeps_moves(config: GameConfig) -> bool:
    """Whether the layout ends with the move segments (``RECALL_SEGMENTS``): ``recall`` or a ``history`` window."""
    return config.recall or config.history > 0


def without_moves(config: GameConfig) -> GameConfig:
    """``config`` without ``recall`` or ``history``: the rules whose observation is the prefix of ``config``'s."""
    return replace(config, recall=False, history=0) if keeps_moves(config) else config


def observation_option(config: GameConfig) -> str:
    """The option that adds the move segments, as ``name=value`` (``recall=True``, ``history=32``); ``""`` without."""
    if config.recall:
        return "recall=True"
    return f"history={config.history}" if config.history else ""


def move_slots(config: GameConfig) -> int:
    """Move slots of the layout: ``max_decisions`` with ``recall``, the window with ``history``, 0 otherwise."""
    if config.recall:
        return max_decisions(config)
    return config.history


def check_recall_deal(config: GameConfig, hand_cards: int, where: str = "the deal") -> None:
    """``ValueError`` if, with ``recall=True`` or a ``history`` window, an explicit deal of ``hand_cards`` cards in
    hands could outrun the ``max_decisions(config)`` decisions that the move log holds (more cards than the rule set
    deals): recall's observation has that many slots, and the batched engine logs that many decisions to fill a
    window.
    """
    slots = max_decisions(config)
    if keeps_moves(config) and max_decisions(config, hand_cards) > slots:
        option = "recall=True" if config.recall else f"history={config.history}"
        raise ValueError(
            f"{where} puts {hand_cards} cards in hands, more than the {dealt_cards(config)} this rule set deals; with "
            f"{option} the move log holds {slots} decisions (max_decisions), too few for such a game: expected "
            f"at most {dealt_cards(config)} cards in hands, or a max_steps of at most {slots}, or "
            f"{'recall=False' if config.recall else 'history=0'}"
        )


def public_moves(config: GameConfig) -> int:
    """Number of moves without their hidden card: offers by (target, claim), the responses, passes, Royal placements."""
    targets, claims = config.num_players - 1, len(config.cards.claims)
    return (
        targets * claims * 2 + len(RESPOND_ACTIONS) + (len(config.cards.identities) if config.edition == "royal" else 0)
    )


class Encoding:
    """Action codec and state/observation layouts of one ``GameConfig``."""

    def __init__(self, config: GameConfig):
        self.config = config
        cards = config.cards
        self.num_players = n = config.num_players
        self.num_cards = len(cards.identities)
        self.num_claims = len(cards.claims)
        self.num_targets = n - 1
        self.offer_size = self.num_cards * self.num_targets * self.num_claims
        self.respond_start = self.offer_size
        self.pass_start = self.respond_start + len(RESPOND_ACTIONS)
        self.place_start = self.pass_start + self.num_targets * self.num_claims
        self.num_actions = self.place_start + (self.num_cards if config.edition == "royal" else 0)
        self.state = Layout(_state_specs(config))
        self.observation = Layout(self._observation_specs())
        self.offsets = {name: seg.start for name, seg in self.state.segments.items()}
        """Start index of every state segment (hot-path lookups)."""
        self.tail_offsets = tuple(
            self.offsets[name]
            for name in (
                "phase",
                "to_act",
                "chain_claim",
                "chain_latest_passer",
                "chain_holder",
                "chain_seen",
                "chain_claims",
                "chain_card",
            )
        )
        self.royal = config.edition == "royal"
        self.recall = keeps_moves(config)
        """Whether the layout ends with the move segments (``recall`` or ``history``)."""
        self.recall_start = self.state.segments["dealt_hands"].start if self.recall else self.state.size + 1
        """Where the recall segments start in the state vector (past the zero slot without them)."""
        self.special_cards = tuple(c for c in range(self.num_cards) if cards.is_special[c])
        """Identities whose holder the ``special_holder`` segment tracks, in row order."""

    def _observation_specs(self) -> list[tuple]:
        specs = []
        for seg in self.state.segments.values():
            if seg.visibility == "hidden":
                continue
            if seg.visibility == "own":
                specs.append((_OWN_NAMES[seg.name], seg.shape[1:], None, "own"))
            else:
                specs.append((seg.name, seg.shape, seg.seat_axis, seg.visibility))
        return specs

    @cached_property
    def card_index(self) -> dict[str, int]:
        """Card identity name -> index (``Game.events`` name cards)."""
        return {name: k for k, name in enumerate(self.config.cards.identities)}

    @cached_property
    def claim_index(self) -> dict[str, int]:
        """Claim name -> index."""
        return {name: k for k, name in enumerate(self.config.cards.claims)}

    # ------------------------------------------------------------- actions
    def public_move(self, action: int) -> int:
        """The move without its hidden part (an offer's card): an index below ``public_moves(config)``.

        Offers by ``(target offset, claim)``, then every action after the offers in order.
        """
        per_target = self.num_targets * self.num_claims
        if action < self.respond_start:
            return action % per_target
        return per_target + (action - self.respond_start)

    def action_slices(self) -> dict[str, slice]:
        return {
            "offer": slice(0, self.respond_start),
            "respond": slice(self.respond_start, self.pass_start),
            "pass": slice(self.pass_start, self.place_start),
            "place": slice(self.place_start, self.num_actions),
        }

    def offer_action(self, card: int, offset: int, claim: int) -> int:
        return (card * self.num_targets + offset - 1) * self.num_claims + claim

    def pass_action(self, offset: int, claim: int) -> int:
        return self.pass_start + (offset - 1) * self.num_claims + claim

    def place_action(self, card: int) -> int:
        return self.place_start + card

    def decode_action(self, action: int) -> tuple:
        """One of ``("offer", card, offset, claim)``, ``("call", believe)``, ``("peek",)``, ``("pass", offset,
        claim)``, ``("place", card)``.
        """
        if action < self.respond_start:
            rest, claim = divmod(action, self.num_claims)
            card, offset = divmod(rest, self.num_targets)
            return ("offer", card, offset + 1, claim)
        if action < self.pass_start:
            return (("call", True), ("call", False), ("peek",))[action - self.respond_start]
        if action < self.place_start:
            offset, claim = divmod(action - self.pass_start, self.num_claims)
            return ("pass", offset + 1, claim)
        return ("place", action - self.place_start)

    @cached_property
    def decoded_actions(self) -> tuple[tuple, ...]:
        """``decode_action`` of every index, precomputed (the env's step reads it)."""
        return tuple(self.decode_action(a) for a in range(self.num_actions))

    # ------------------------------------------------------------- bounds
    @cached_property
    def state_high(self) -> np.ndarray:
        """Upper bound of every state entry (every entry is >= 0), derived from the deck.

        Card counts and hand sizes are at most the deck size. Each history counter is too:
        a seat claims, calls and peeks at most once per round, and every round takes at
        least one card out of the hands for good (a joker or blank drawn from the Royal
        penalty deck adds one, at most twice, from the same deck), so a game has at most
        ``deck_size`` rounds. ``place_remaining`` is at most 2; one-hot entries at most 1.
        """
        high = np.ones(self.state.size, np.float32)
        deck = float(self.config.cards.deck_size)
        for seg in self.state.segments.values():
            if seg.name in (
                "hands",
                "collections",
                "hand_sizes",
                "history",
                "removed",
                "penalty_size",
                "penalty_hidden",
                "dealt_hands",
                "opening_collections",
            ):
                high[seg.start : seg.stop] = deck
            elif seg.name == "place_remaining":
                high[seg.start : seg.stop] = 2.0
        high.flags.writeable = False
        return high

    @cached_property
    def observation_high(self) -> np.ndarray:
        """Upper bound of every observation entry: ``state_high`` gathered like an observation."""
        high = np.append(self.state_high, np.float32(0.0))[self.observation_index(0, True)]
        high.flags.writeable = False
        return high

    # ------------------------------------------------------------- observation index
    @cached_property
    def zero_slot(self) -> int:
        """Index of the always-zero entry appended to the state vector for gathers."""
        return self.state.size

    def observation_index(self, viewer: int, has_seen_card: bool) -> np.ndarray:
        """Gather index of ``viewer``'s observation; ``has_seen_card`` is ``has_private_view(game, viewer)``: the
        ``seen`` and ``placer`` segments are read only with it (zero slot otherwise).
        """
        return self._observation_indices[viewer][int(has_seen_card)]

    @cached_property
    def _observation_indices(self) -> list[list[np.ndarray]]:
        return [[self._build_index(v, seen) for seen in (False, True)] for v in range(self.num_players)]

    def _build_index(self, viewer: int, has_seen_card: bool) -> np.ndarray:
        n = self.num_players
        parts = []
        for seg in self.state.segments.values():
            idx = np.arange(seg.start, seg.stop).reshape(seg.shape)
            if seg.visibility == "hidden":
                continue
            if seg.visibility == "own":
                parts.append(idx[viewer].ravel())
                continue
            if seg.seat_axis is not None:
                idx = np.take(idx, [(viewer + r) % n for r in range(n)], axis=seg.seat_axis)
            if seg.visibility in ("seen", "placer") and not has_seen_card:
                idx = np.full_like(idx, self.zero_slot)
            parts.append(idx.ravel())
        index = np.concatenate(parts)
        assert index.size == self.observation.size
        return index

    def observation_mask(self, viewer: int, has_seen_card: bool) -> np.ndarray:
        """Boolean mask over the state vector of what ``viewer`` may see."""
        mask = np.zeros(self.state.size + 1, dtype=bool)
        mask[self.observation_index(viewer, has_seen_card)] = True
        return mask[: self.state.size]


def has_private_view(game, seat: int) -> bool:
    """The ``has_seen_card`` flag of ``Encoding.observation_index``: ``seat`` offered or peeked the card in play, or
    places a Royal replacement (its own hand tells whether a card fits the claim). Never both at once.
    """
    chain, replacement = game.chain, game.replacement
    if chain is not None:
        return seat in chain.seen
    return replacement is not None and replacement.player == seat


def apply_action(game, encoding: Encoding, action: int) -> None:
    """Play action index ``action`` for the seat to act; the engine raises ``IllegalMove`` if the rules refuse it."""
    decoded = encoding.decoded_actions[action]
    kind, seat, n = decoded[0], game.current, game.num_players
    if kind == "offer":
        game.offer(decoded[1], (seat + decoded[2]) % n, decoded[3])
    elif kind == "call":
        game.call(decoded[1])
    elif kind == "peek":
        game.peek()
    elif kind == "pass":
        game.pass_card((seat + decoded[1]) % n, decoded[2])
    else:
        game.place(decoded[1])


def legal_actions(game, encoding: Encoding) -> list[int]:
    """The legal action indices of the seat to act, ascending (empty once the game is over).

    The same set as the env's action mask (a test compares them at every step).
    """
    phase, seat, n = game.phase, game.current, game.num_players
    if phase is Phase.OFFER:
        per_card = encoding.num_targets * encoding.num_claims
        return [card * per_card + k for card, count in enumerate(game.hands[seat]) if count for k in range(per_card)]
    if phase is Phase.RESPOND:
        start = encoding.respond_start
        return [start, start + 1, start + 2] if game.can_peek() else [start, start + 1]
    if phase is Phase.PASS:
        offsets = sorted((target - seat) % n for target in game.eligible_recipients())
        return [encoding.pass_action(offset, claim) for offset in offsets for claim in range(encoding.num_claims)]
    if phase is Phase.PLACE:
        return [encoding.place_action(card) for card in game.placeable_cards()]
    return []


@lru_cache(maxsize=64)
def encoding_for(config: GameConfig) -> Encoding:
    """The (cached) ``Encoding`` of a config."""
    return Encoding(config)


def write_state(encoding: Encoding, game, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` (length ``state.size + 1``; the last entry stays zero) with the full state of ``game``.

    The count segments (hands, collections, hand sizes, history, removed) lead the layout, so
    they are written in one assignment; the one-hot segments after them are set entry
    by entry. This runs once per env step, so it avoids per-segment numpy calls.
    """
    counts = [x for row in game.hands for x in row]
    counts += [x for row in game.collections for x in row]
    counts += [sum(row) for row in game.hands]
    counts += [x for row in game.stats for x in row]
    counts += game.removed
    out[: len(counts)] = counts
    _write_tail(encoding, game, out, len(counts))
    return out


def recall_moves(encoding: Encoding, game) -> list[tuple[int, int, int, int]]:
    """``(actor, public move, revealed card or -1, face-up penalty card after it or -1)`` of every decision of ``game``.

    Read from ``game.events``, the public record of the game (the information state's
    events): one tuple per offer, call, peek, pass and Royal placement, in order.
    """
    n = encoding.num_players
    card_of, claim_of = encoding.card_index, encoding.claim_index
    c, per_target = encoding.num_claims, encoding.num_targets * encoding.num_claims
    events = game.events
    first = events[0].get("penalty_top")
    top = card_of[first] if first is not None else -1
    moves: list[list[int]] = []
    for event in events[1:]:
        kind = event["type"]
        if kind == "offer":
            moves.append(
                [event["player"], ((event["target"] - event["player"]) % n - 1) * c + claim_of[event["claim"]], -1, top]
            )
        elif kind == "call":
            moves.append([event["player"], per_target + (0 if event["believe"] else 1), -1, top])
        elif kind == "reveal":
            moves[-1][2] = card_of[event["card"]]
        elif kind == "peek":
            moves.append([event["player"], per_target + 2, -1, top])
        elif kind == "pass":
            moves.append(
                [
                    event["player"],
                    per_target + 3 + ((event["target"] - event["player"]) % n - 1) * c + claim_of[event["claim"]],
                    -1,
                    top,
                ]
            )
        elif kind == "place" and event["source"] == "replacement":
            moves.append([event["player"], per_target + 3 + per_target + card_of[event["card"]], -1, top])
        if "penalty_top" in event and kind != "deal":
            top = card_of[event["penalty_top"]] if event["penalty_top"] is not None else -1
            if moves:
                moves[-1][3] = top
    return [tuple(move) for move in moves]


def write_recall(encoding: Encoding, game, out: np.ndarray) -> None:
    """Fill the move segments of the state vector ``out`` from ``game`` (zeros first): every decision in order with
    ``recall``, the last ``history`` decisions newest first with a window.
    """
    at, n, i = encoding.offsets, encoding.num_players, encoding.num_cards
    recall = encoding.state.segments["dealt_hands"]
    out[recall.start :] = 0.0
    out[recall.start : recall.stop] = [x for row in game.dealt_hands for x in row]
    out[at["starter"] + game.starter] = 1.0
    if "opening_collections" in at:
        seg = encoding.state.segments["opening_collections"]
        out[seg.start : seg.stop] = [x for row in game.opening_collections for x in row]
    public = public_moves(encoding.config)
    actor_at, public_at, revealed_at = at["move_actor"], at["move_public"], at["move_revealed"]
    top_at = at.get("move_top")
    moves = recall_moves(encoding, game)
    window = encoding.config.history
    if window:
        moves = moves[: -window - 1 : -1]  # the last ``window`` decisions, newest first
    elif len(moves) > encoding.state.segments["move_actor"].shape[0]:
        raise RuntimeError(
            f"the game has {len(moves)} decisions, more than the recall layout's "
            f"{encoding.state.segments['move_actor'].shape[0]} slots (max_decisions); this is a bug"
        )
    for k, (actor, move, revealed, top) in enumerate(moves):
        out[actor_at + k * n + actor] = 1.0
        out[public_at + k * public + move] = 1.0
        if revealed >= 0:
            out[revealed_at + k * i + revealed] = 1.0
        if top_at is not None and top >= 0:
            out[top_at + k * i + top] = 1.0


def _write_tail(encoding: Encoding, game, out: np.ndarray, head: int) -> None:
    """Everything after the leading count segments: phase, seat to act, chain, Royal extras."""
    phase_at, to_act_at, claim_at, passer_at, holder_at, seen_at, claims_at, card_at = encoding.tail_offsets
    out[head : encoding.recall_start] = 0.0  # write_recall clears the rest itself
    if game.phase is not Phase.OVER:
        out[phase_at + _PHASE_INDEX[game.phase]] = 1.0
        out[to_act_at + game.current] = 1.0
    chain = game.chain
    if chain is not None:
        c = encoding.num_claims
        out[claim_at + chain.claim] = 1.0
        out[passer_at + chain.latest_passer] = 1.0
        out[holder_at + chain.holder] = 1.0
        for s in chain.seen:
            out[seen_at + s] = 1.0
        for s, claim in chain.claims:
            out[claims_at + s * c + claim] = 1.0
        out[card_at + chain.card] = 1.0
    if encoding.royal:
        _write_royal(encoding, game, out)
    if encoding.recall:
        write_recall(encoding, game, out)


class StateWriter:
    """Keeps one state vector up to date, rewriting only the count rows that changed.

    Produces exactly ``write_state``'s vector (a test checks it at every step); the env
    uses it because a full rewrite of the count rows costs more than the game step.
    """

    def __init__(self, encoding: Encoding):
        self.encoding = encoding
        self.out = np.zeros(encoding.state.size + 1, np.float32)
        self._rows: list[list[list[int]]] | None = None
        """Copies of the hands, collections and history rows as last written."""
        n, i, k = encoding.num_players, encoding.num_cards, len(STAT_NAMES)
        at = encoding.offsets
        self._starts = (
            [at["hands"] + s * i for s in range(n)],
            [at["collections"] + s * i for s in range(n)],
            [at["history"] + s * k for s in range(n)],
        )
        """Start of each seat's row in the hands, collections and history segments."""
        self._sizes_at = at["hand_sizes"]
        self._head = at["removed"] + i

    def reset(self) -> None:
        """Forget the previous game: the next write is a full one."""
        self._rows = None

    def write(self, game) -> np.ndarray:
        out = self.out
        previous = self._rows
        if previous is None:  # a new game: full write (the removed cards are fixed from here on)
            write_state(self.encoding, game, out)
            self._rows = [[list(row) for row in group] for group in (game.hands, game.collections, game.stats)]
            return out
        for group, written, starts in zip((game.hands, game.collections, game.stats), previous, self._starts):
            if group == written:  # one C-level comparison in the common case
                continue
            for k, row in enumerate(group):
                if row != written[k]:
                    out[starts[k] : starts[k] + len(row)] = row
                    written[k] = list(row)
            if starts is self._starts[0]:
                out[self._sizes_at : self._sizes_at + len(group)] = list(map(sum, group))
        _write_tail(self.encoding, game, out, self._head)
        return out


def _write_royal(encoding: Encoding, game, out: np.ndarray) -> None:
    at = encoding.offsets
    if game.penalty_deck:
        out[at["penalty_top"] + game.penalty_deck[0]] = 1.0
        for card in game.penalty_deck[1:]:
            out[at["penalty_hidden"] + card] += 1.0
    out[at["penalty_size"]] = len(game.penalty_deck)
    known = game.known_special_holders()
    for row, card in enumerate(encoding.special_cards):
        seat = known.get(card)
        if seat is not None:
            out[at["special_holder"] + row * encoding.num_players + seat] = 1.0
    if game.replacement is not None:
        if game.replacement.claim is not None:
            out[at["place_claim"] + game.replacement.claim] = 1.0
        out[at["place_remaining"]] = game.replacement.remaining
