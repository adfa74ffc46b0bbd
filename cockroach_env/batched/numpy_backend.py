"""The numpy backend: each step vectorized by move kind (see the package docstring)."""

from __future__ import annotations

import numpy as np

from cockroach_env.batched.deals import _DealQueue
from cockroach_env.batched.layout import (
    CARD,
    CLAIM,
    CURRENT,
    EMPTY_HAND,
    HOLDER,
    OFFER,
    OFFERER,
    OVER,
    PASS,
    PASSER,
    PENALTY_END,
    PENALTY_TOP,
    PHASE,
    PLACE,
    PLACE_CLAIM,
    PLACE_REMAINING,
    RAINBOW,
    RESPOND,
    SAME_TYPE,
    SEGMENT_NAMES,
    SPECIAL_HOLDER,
    BatchStep,
    _clear_outcome,
    _Rules,
)  # fmt: skip
from cockroach_env.batched.state import _State
from cockroach_env.engine import FALSE_CLAIMS, PEEKS, RIGHT_CALLS, TRUTHFUL_CLAIMS, WRONG_CALLS


def _write_states(rules: _Rules, state: _State, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` (B, S+1), last column zero, with the ``Encoding.state`` vector of every game."""
    seg = dict(zip(SEGMENT_NAMES, rules.segments.tolist()))
    b, n, i, c = len(out), rules.n, rules.i, rules.c
    rows = np.arange(b)
    info = state.info.astype(np.int64)
    phase, current, card = info[:, PHASE], info[:, CURRENT], info[:, CARD]
    out[:] = 0.0

    def block(name: str, values: np.ndarray) -> None:
        out[:, seg[name] : seg[name] + values.shape[1]] = values

    def one_hot(name: str, where: np.ndarray, index: np.ndarray) -> None:
        out[rows[where], seg[name] + index[where]] = 1.0

    block("hands", state.hands.reshape(b, -1))
    block("collections", state.collections.reshape(b, -1))
    block("hand_sizes", state.hands.sum(-1, dtype=np.int64))
    block("history", state.stats.reshape(b, -1))
    block("removed", state.removed)
    live = phase != OVER
    one_hot("phase", live, phase)
    one_hot("to_act", live, current)
    chain = card >= 0
    one_hot("chain_claim", chain, info[:, CLAIM])
    one_hot("chain_latest_passer", chain, info[:, PASSER])
    one_hot("chain_holder", chain, info[:, HOLDER])
    block("chain_seen", state.seen)
    one_hot("chain_card", chain, card)
    for seat in range(n):
        claimed = state.seat_claim[:, seat].astype(np.int64)
        one_hot("chain_claims", claimed >= 0, seat * c + claimed)
    if rules.royal:
        top, end = info[:, PENALTY_TOP], info[:, PENALTY_END]
        left = top < end
        one_hot("penalty_top", left, state.penalty[rows, np.minimum(top, rules.penalty_capacity - 1)].astype(np.int64))
        out[:, seg["penalty_size"]] = end - top
        depth = np.arange(rules.penalty_capacity)
        hidden = (depth > top[:, None]) & (depth < end[:, None])
        counts = np.bincount((rows[:, None] * i + state.penalty)[hidden], minlength=b * i).reshape(b, i)
        block("penalty_hidden", counts)
        for row in range(2):
            seat = info[:, SPECIAL_HOLDER + row]
            known = (seat >= 0) & ((card < 0) | (seat != info[:, OFFERER]))
            one_hot("special_holder", known, row * n + seat)
        placing = phase == PLACE
        one_hot("place_claim", placing & (info[:, PLACE_CLAIM] >= 0), info[:, PLACE_CLAIM])
        out[:, seg["place_remaining"]] = np.where(placing, info[:, PLACE_REMAINING], 0)
    return out


# ---------------------------------------------------------------------------- numpy backend
class _NumpyBackend:
    """Vectorized by move kind; see the package docstring."""

    name = "numpy"

    def __init__(self, rules: _Rules, state: _State):
        self.rules, self.state = rules, state
        self.non_special = ~rules.is_special

    # ------------------------------------------------------------ legality
    def legal(self, actions: np.ndarray) -> np.ndarray:
        """(B,) bool: is each game's action legal now (the mask entry, computed from the state)."""
        r, s = self.rules, self.state
        rows = np.arange(len(actions))
        info = s.info.astype(np.int64)
        phase, current = info[:, PHASE], info[:, CURRENT]
        legal = np.zeros(len(actions), bool)
        a = np.where(
            (actions >= 0) & (actions < r.num_actions), actions, r.num_actions
        )  # out of range: matches no kind below
        offer = a < r.offer_size
        card = np.where(offer, a // ((r.n - 1) * r.c), 0)
        legal |= offer & (phase == OFFER) & (s.hands[rows, current, card] > 0)
        respond = (a >= r.respond_start) & (a < r.pass_start)
        can_peek = self._eligible().any(1)
        legal |= respond & (phase == RESPOND) & ((a < r.respond_start + 2) | can_peek)
        passing = (a >= r.pass_start) & (a < r.place_start)
        offset = np.where(passing, (a - r.pass_start) // r.c + 1, 1)
        target = (current + offset) % r.n
        legal |= passing & (phase == PASS) & self._eligible()[rows, target]
        placing = (a >= r.place_start) & (a < r.num_actions)
        legal |= placing & (phase == PLACE) & self._placeable()[rows, np.where(placing, a - r.place_start, 0)]
        return legal

    def _eligible(self) -> np.ndarray:
        """(B, N): seats that may receive the card in play (not seen it, not the holder)."""
        s = self.state
        holder = s.info[:, HOLDER].astype(np.int64)
        eligible = ~s.seen & (s.info[:, CARD] >= 0)[:, None]
        eligible[np.arange(len(holder)), holder] = False  # holder is -1 without a chain: row already all False
        return eligible

    def _placeable(self) -> np.ndarray:
        """(B, I): cards the placing player may put into their collection now."""
        r, s = self.rules, self.state
        rows = np.arange(len(s.info))
        current = s.info[:, CURRENT].astype(np.int64)
        claim = s.info[:, PLACE_CLAIM].astype(np.int64)
        fits = np.where((claim >= 0)[:, None], r.fits[:, np.maximum(claim, 0)].T, True)
        return (s.hands[rows, current] > 0) & self.non_special & fits & (s.info[:, PHASE] == PLACE)[:, None]

    # ------------------------------------------------------------ moves
    def first_illegal(self, actions: np.ndarray) -> int:
        illegal = np.flatnonzero(~self.legal(actions))
        return int(illegal[0]) if illegal.size else -1

    def apply(self, actions: np.ndarray, out: BatchStep) -> int:
        """Check every action, then apply them all; returns the first illegal game (nothing changed) or -1."""
        bad = self.first_illegal(actions)
        if bad >= 0:
            return bad
        _clear_outcome(out)
        r, s = self.rules, self.state
        n, c = r.n, r.c
        info = s.info
        a = actions
        s.steps += 1
        respond = a - r.respond_start

        games = np.flatnonzero(a < r.offer_size)
        if games.size:
            act, current = a[games], info[games, CURRENT].astype(np.int64)
            card, offset, claim = act // ((n - 1) * c), (act // c) % (n - 1) + 1, act % c
            target = (current + offset) % n
            s.hands[games, current, card] -= 1
            info[games, CARD], info[games, OFFERER], info[games, PASSER], info[games, CLAIM] = (
                card,
                current,
                current,
                claim,
            )
            info[games, HOLDER], info[games, CURRENT], info[games, PHASE] = target, target, RESPOND
            s.seen[games] = False
            s.seen[games, current] = True
            s.seat_claim[games] = -1
            s.seat_claim[games, current] = claim

        games = np.flatnonzero(respond == 2)
        if games.size:
            holder = info[games, HOLDER].astype(np.int64)
            s.seen[games, holder] = True
            s.stats[games, holder, PEEKS] += 1
            info[games, PHASE] = PASS

        games = np.flatnonzero((a >= r.pass_start) & (a < r.place_start))
        if games.size:
            act, holder = a[games] - r.pass_start, info[games, HOLDER].astype(np.int64)
            target, claim = (holder + act // c + 1) % n, act % c
            info[games, PASSER], info[games, CLAIM], info[games, HOLDER], info[games, CURRENT] = (
                holder,
                claim,
                target,
                target,
            )
            info[games, PHASE] = RESPOND
            s.seat_claim[games, holder] = claim

        games = np.flatnonzero((respond == 0) | (respond == 1))
        if games.size:
            self._call(games, respond[games] == 0, out)

        games = np.flatnonzero(a >= r.place_start)
        if games.size:
            self._replace(games, a[games] - r.place_start, out)

        if r.max_steps:
            cut = (s.steps >= r.max_steps) & (info[:, PHASE] != OVER)
            out.truncated[cut] = out.done[cut] = True
        ended = out.loser >= 0
        out.rewards[ended] = 1.0 / (n - 1)
        out.rewards[np.flatnonzero(ended), out.loser[ended]] = -1.0
        return -1

    def _call(self, games: np.ndarray, believe: np.ndarray, out: BatchStep) -> None:
        """Reveal, count the history, hand the card to the taker (section 1.2; Royal section 4)."""
        r, s = self.rules, self.state
        info = s.info
        card, claim = info[games, CARD].astype(np.int64), info[games, CLAIM].astype(np.int64)
        holder, passer = info[games, HOLDER].astype(np.int64), info[games, PASSER].astype(np.int64)
        right = believe == r.truth[card, claim]
        taker = np.where(right, passer, holder)
        claims = s.seat_claim[games].astype(np.int64)
        made = claims >= 0
        truthful = r.truth[card[:, None], np.maximum(claims, 0)]
        s.stats[games, :, TRUTHFUL_CLAIMS] += made & truthful
        s.stats[games, :, FALSE_CLAIMS] += made & ~truthful
        s.stats[games, holder, np.where(right, RIGHT_CALLS, WRONG_CALLS)] += 1
        info[games, CARD : CLAIM + 1] = -1
        s.seen[games] = False
        s.seat_claim[games] = -1

        special = r.is_special[card]
        hand = s.hands[games, taker].astype(np.int64)
        others = hand[:, self.non_special].sum(1)
        # Normal cards, and a special card when nothing else is in hand (ruling), go face up.
        face_up = ~special | (others == 0)
        if face_up.any():
            g, t = games[face_up], taker[face_up]
            placed_special = special[face_up]  # no longer in any hand
            info[g[placed_special], SPECIAL_HOLDER + r.special_row[card[face_up][placed_special]]] = -1
            lost = self._place(g, t, card[face_up], out)
            self._start_round(g[~lost], t[~lost], out)
        into_hand = ~face_up
        if into_hand.any():
            g, t, cd, cl = games[into_hand], taker[into_hand], card[into_hand], claim[into_hand]
            s.hands[g, t, cd] += 1
            info[g, SPECIAL_HOLDER + r.special_row[cd]] = t
            fitting = ((s.hands[g, t] > 0) & r.fits[:, cl].T).any(1)
            info[g, PLACE_CLAIM] = np.where(fitting, cl, -1)
            info[g, PLACE_REMAINING] = np.where(fitting, 1, np.minimum(2, others[into_hand]))
            info[g, PHASE], info[g, CURRENT] = PLACE, t

    def _replace(self, games: np.ndarray, card: np.ndarray, out: BatchStep) -> None:
        """Royal PLACE phase: one replacement card from hand to collection."""
        s = self.state
        info = s.info
        player = info[games, CURRENT].astype(np.int64)
        s.hands[games, player, card] -= 1
        info[games, PLACE_REMAINING] -= 1
        lost = self._place(games, player, card, out)
        games, player = games[~lost], player[~lost]
        finished = (info[games, PLACE_REMAINING] == 0) | ~self._placeable()[games].any(1)
        games, player = games[finished], player[finished]
        info[games, PLACE_CLAIM], info[games, PLACE_REMAINING] = -1, 0
        self._start_round(games, player, out)

    def _place(self, games: np.ndarray, player: np.ndarray, card: np.ndarray, out: BatchStep) -> np.ndarray:
        """Put cards face up, check losses, draw penalty cards for royals (chained); returns lost."""
        r, s = self.rules, self.state
        info = s.info
        lost = np.zeros(games.size, bool)
        active = np.arange(games.size)
        card = card.copy()
        while active.size:
            g, p, cd = games[active], player[active], card[active]
            s.collections[g, p, cd] += 1
            group = r.group_of[cd]
            counts = s.collections[g, p].astype(np.int64) @ r.members
            same = (group >= 0) & (counts[np.arange(g.size), np.maximum(group, 0)] >= r.loss_count)
            rainbow = (group >= 0) & ~same & r.rainbow & (counts[:, : r.animal_groups] > 0).all(1)
            losing = same | rainbow
            self._lose(g[losing], p[losing], np.where(same, SAME_TYPE, RAINBOW)[losing], out)
            lost[active[losing]] = True
            top = info[g, PENALTY_TOP].astype(np.int64)
            draws = ~losing & r.is_royal[cd] & (top < info[g, PENALTY_END])
            g, p, top, active = g[draws], p[draws], top[draws], active[draws]
            drawn = s.penalty[g, top].astype(np.int64)
            info[g, PENALTY_TOP] = top + 1
            special = r.is_special[drawn]
            s.hands[g[special], p[special], drawn[special]] += 1
            info[g[special], SPECIAL_HOLDER + r.special_row[drawn[special]]] = p[special]
            active = active[~special]
            card[active] = drawn[~special]
        return lost

    def _start_round(self, games: np.ndarray, starter: np.ndarray, out: BatchStep) -> None:
        s = self.state
        empty = s.hands[games, starter].sum(1) == 0
        self._lose(games[empty], starter[empty], EMPTY_HAND, out)
        s.info[games[~empty], PHASE] = OFFER
        s.info[games[~empty], CURRENT] = starter[~empty]

    def _lose(self, games: np.ndarray, seat: np.ndarray, reason, out: BatchStep) -> None:
        self.state.info[games, PHASE] = OVER
        out.done[games] = True
        out.loser[games] = seat
        out.loss_reason[games] = reason

    def finish(self, actions: np.ndarray, out: BatchStep) -> None:
        """Apply legal ``actions`` without dealing the games that end again (their final state stays)."""
        self.apply(actions, out)

    # ------------------------------------------------------------ outputs
    def states(self, out: np.ndarray) -> np.ndarray:
        return _write_states(self.rules, self.state, out)

    def step(self, actions: np.ndarray, out: BatchStep, queue: _DealQueue) -> tuple[int, int]:
        """Check, apply, deal finished games from the queue in game order, emit; (first illegal game or -1, games
        dealt).
        """
        bad = self.apply(actions, out)
        if bad >= 0:
            return bad, 0
        games = np.flatnonzero(out.done)
        slot_of = np.full(len(actions), -1, np.int64)
        slot_of[games] = np.arange(queue.next, queue.next + games.size)
        self.deal(out, queue, slot_of)
        return -1, games.size

    def deal(self, out: BatchStep, queue: _DealQueue, slot_of: np.ndarray) -> None:
        """Deal game ``b`` from the queued deal at ``slot_of[b]`` (where >= 0), then write to_act, masks and
        observations of every game.
        """
        r, s = self.rules, self.state
        games = np.flatnonzero(slot_of >= 0)
        if games.size:
            s.install(games, queue.deals, slot_of[games])
        b = len(s.info)
        states = _write_states(r, s, np.empty((b, r.state_size + 1), np.float32))
        current = s.info[:, CURRENT].astype(np.int64)
        rows = np.arange(b)
        private = s.private_view()[rows, current]
        out.observation[:] = np.take_along_axis(states, r.observation_index[current, private.astype(np.intp)], axis=1)
        out.to_act[:] = current
        self._write_masks(out.action_mask)

    def _write_masks(self, mask: np.ndarray) -> None:
        r, s = self.rules, self.state
        b = len(mask)
        rows = np.arange(b)
        phase = s.info[:, PHASE]
        current = s.info[:, CURRENT].astype(np.int64)
        mask[:] = 0
        offers = mask[:, : r.offer_size].reshape(b, r.i, -1)
        offers[:] = ((s.hands[rows, current] > 0) & (phase == OFFER)[:, None])[:, :, None]
        eligible = self._eligible()
        responding = phase == RESPOND
        mask[:, r.respond_start] = mask[:, r.respond_start + 1] = responding
        mask[:, r.respond_start + 2] = responding & eligible.any(1)
        targets = eligible[rows[:, None], (current[:, None] + np.arange(1, r.n)) % r.n] & (phase == PASS)[:, None]
        mask[:, r.pass_start : r.place_start].reshape(b, r.n - 1, r.c)[:] = targets[:, :, None]
        if r.royal:
            mask[:, r.place_start :] = self._placeable()
