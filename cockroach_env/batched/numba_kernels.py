"""The compiled per-game kernels of the numba backend (see the package docstring)."""

from __future__ import annotations

import numpy as np

from cockroach_env.batched.layout import (
    CARD,
    CLAIM,
    CURRENT,
    EMPTY_HAND,
    GROUP,
    HOLDER,
    OFFER,
    OFFERER,
    OVER,
    P_ANIMAL_GROUPS,
    P_C,
    P_I,
    P_K,
    P_LOSS_COUNT,
    P_MAX_STEPS,
    P_N,
    P_RAINBOW,
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
    ROYAL,
    S_CHAIN_CARD,
    S_CHAIN_CLAIM,
    S_CHAIN_CLAIMS,
    S_CHAIN_HOLDER,
    S_CHAIN_LATEST_PASSER,
    S_CHAIN_SEEN,
    S_COLLECTIONS,
    S_HAND_SIZES,
    S_HANDS,
    S_HISTORY,
    S_PENALTY_HIDDEN,
    S_PENALTY_SIZE,
    S_PENALTY_TOP,
    S_PHASE,
    S_PLACE_CLAIM,
    S_PLACE_REMAINING,
    S_REMOVED,
    S_SPECIAL_HOLDER,
    S_TO_ACT,
    SAME_TYPE,
    SPECIAL,
    SPECIAL_HOLDER,
    SPECIAL_ROW,
    TRUTH,
    _Dims,
)  # fmt: skip
from cockroach_env.engine import FALSE_CLAIMS, PEEKS, RIGHT_CALLS, TRUTHFUL_CLAIMS, WRONG_CALLS

try:  # optional: the compiled backend
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None


# ---------------------------------------------------------------------------- numba backend
# Per-game code mirroring engine.py. ``d`` is the config's ``_Dims`` (sizes and layout
# offsets): a constant of every compiled kernel, so the fixed-size loops unroll and the
# divisions by N and C become multiplications. The rule numbers (``P_*`` positions in
# ``params``) and the card table (``_Rules.card_table``) are runtime arguments.
# The kernels allocate nothing and are compiled without numba's reference counting
# (``_nrt=False``): with it, the arrays handed through the inlined functions cost a few
# atomic reference-count calls per game, more than the game step itself. Where the
# outcome of a branch is a coin flip (whether a seat claimed, the phase of a random
# game), the code computes both sides instead: mispredicted branches cost more.
def _jit(function):
    return numba.njit(cache=True, inline="always")(function) if numba is not None else function


if numba is not None:
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.core.extending import intrinsic

    @intrinsic
    def _nb_popcount(typingctx, word):
        """The number of set bits of a uint64 (one instruction)."""
        if word != types.uint64:
            return None
        return types.uint64(types.uint64), lambda context, builder, signature, args: builder.ctpop(args[0])

    @intrinsic
    def _nb_lowest_bit(typingctx, word):
        """The position of the lowest set bit of a nonzero uint64 (one instruction)."""
        if word != types.uint64:
            return None
        return types.uint64(types.uint64), lambda context, builder, signature, args: builder.cttz(
            args[0], ir.Constant(ir.IntType(1), 0)
        )

    @intrinsic
    def _nb_nonzero_bits(typingctx, array, row, start):
        """Bit ``j`` set where ``array[row, start + j] != 0``, for j < 64, from one 64-byte load.

        ``array``: 2-D, C-contiguous, one byte per entry. The load reads 64 bytes from
        ``array[row, start]`` on: the caller keeps them inside the array's buffer and
        drops the bits past the row's end.
        """
        if not (
            isinstance(array, types.Array)
            and array.ndim == 2
            and array.layout == "C"
            and array.dtype in (types.int8, types.uint8)
        ):
            return None

        def codegen(context, builder, signature, args):
            array_type = signature.args[0]
            pointer = cgutils.get_item_pointer(
                context,
                builder,
                array_type,
                context.make_array(array_type)(context, builder, args[0]),
                args[1:],
                wraparound=False,
            )
            bytes64 = ir.VectorType(ir.IntType(8), 64)
            loaded = builder.load(builder.bitcast(pointer, bytes64.as_pointer()), align=1)
            return builder.bitcast(builder.icmp_unsigned("!=", loaded, ir.Constant(bytes64, None)), ir.IntType(64))

        return types.uint64(array, types.intp, types.intp), codegen

    @intrinsic
    def _nb_widen8(typingctx, source, game, seat, column, out, row, at):
        """``out[row, at:at + 8] = source[game, seat, column:column + 8]``, as float32, in one load and one store.

        Eight entries even past the end of ``source``'s row or ``out``'s segment: the
        caller keeps them inside the buffers (``_padded``, a scratch row with room to
        spare) and overwrites what spills into the next segment.
        """
        if not (isinstance(source, types.Array) and source.ndim == 3 and source.dtype in (types.int8, types.uint8)):
            return None
        if not (isinstance(out, types.Array) and out.ndim == 2 and out.dtype == types.float32):
            return None

        def codegen(context, builder, signature, args):
            source_type, out_type = signature.args[0], signature.args[4]
            source_array = context.make_array(source_type)(context, builder, args[0])
            out_array = context.make_array(out_type)(context, builder, args[4])
            source_at = cgutils.get_item_pointer(
                context, builder, source_type, source_array, args[1:4], wraparound=False
            )
            out_at = cgutils.get_item_pointer(context, builder, out_type, out_array, args[5:7], wraparound=False)
            counts = builder.load(builder.bitcast(source_at, ir.VectorType(ir.IntType(8), 8).as_pointer()), align=1)
            floats = ir.VectorType(ir.FloatType(), 8)
            widened = builder.sitofp(counts, floats) if source_type.dtype.signed else builder.uitofp(counts, floats)
            builder.store(widened, builder.bitcast(out_at, floats.as_pointer()), align=4)
            return context.get_dummy_value()

        return types.none(source, types.intp, types.intp, types.intp, out, types.intp, types.intp), codegen

    @intrinsic
    def _nb_word8(typingctx, source, game, seat, column):
        """The 8 bytes ``source[game, seat, column:column + 8]`` as one little-endian uint64 (one load; see
        ``_nb_widen8``).
        """
        if not (isinstance(source, types.Array) and source.ndim == 3 and source.dtype in (types.int8, types.uint8)):
            return None

        def codegen(context, builder, signature, args):
            source_type = signature.args[0]
            source_array = context.make_array(source_type)(context, builder, args[0])
            source_at = cgutils.get_item_pointer(
                context, builder, source_type, source_array, args[1:4], wraparound=False
            )
            return builder.load(builder.bitcast(source_at, ir.IntType(64).as_pointer()), align=1)

        return types.uint64(source, types.intp, types.intp, types.intp), codegen


@_jit
def _nb_hand_size(d, hands, b, p):
    total = 0
    for card in range(d.i):
        total += hands[b, p, card]
    return total


@_jit
def _nb_can_peek(d, seen, info, b):
    """Someone other than the holder has not seen the card."""
    holder = info[b, HOLDER]
    can = False
    for seat in range(d.n):
        can |= (seat != holder) & (seen[b, seat] == 0)
    return can


@_jit
def _nb_placeable(d, hands, info, card_table, b, card):
    """Royal PLACE phase: may the player put ``card`` from hand into their collection?"""
    claim = info[b, PLACE_CLAIM]  # -1 reads a truth column below: ignored by ``claim < 0``
    fits = (claim < 0) | (card_table[card, TRUTH + d.c + claim] != 0)
    return (hands[b, info[b, CURRENT], card] > 0) & (card_table[card, SPECIAL] == 0) & fits


@_jit
def _nb_any_placeable(d, hands, info, card_table, b):
    any_card = False
    for card in range(d.i):
        any_card |= _nb_placeable(d, hands, info, card_table, b, card)
    return any_card


@_jit
def _nb_legal(d, hands, seen, info, card_table, b, a):
    if a < 0 or a >= d.num_actions:
        return False
    phase, current = info[b, PHASE], info[b, CURRENT]
    if a < d.offer_size:
        return (phase == OFFER) & (hands[b, current, a // ((d.n - 1) * d.c)] > 0)
    if a < d.pass_start:
        return (phase == RESPOND) & ((a - d.respond_start < 2) | _nb_can_peek(d, seen, info, b))
    if a < d.place_start:
        target = (current + (a - d.pass_start) // d.c + 1) % d.n
        return (phase == PASS) & (seen[b, target] == 0) & (target != info[b, HOLDER])
    return (phase == PLACE) & _nb_placeable(d, hands, info, card_table, b, a - d.place_start)


@_jit
def _nb_lose(info, loser, loss_reason, b, seat, reason):
    info[b, PHASE] = OVER
    loser[b] = seat
    loss_reason[b] = reason


@_jit
def _nb_group_count(d, collections, card_table, b, player, group):
    count = 0
    for card in range(d.i):
        count += collections[b, player, card] * (card_table[card, GROUP] == group)
    return count


@_jit
def _nb_place(d, hands, collections, penalty, info, card_table, params, loser, loss_reason, b, player, card):
    """Face up, loss check, penalty draws for placed royals (chained); True if the player lost."""
    while True:
        collections[b, player, card] += 1
        group = card_table[card, GROUP]
        if group >= 0:  # before this card no group was at the loss count, so only its group can be now
            if _nb_group_count(d, collections, card_table, b, player, group) >= params[P_LOSS_COUNT]:
                _nb_lose(info, loser, loss_reason, b, player, SAME_TYPE)
                return True
            if params[P_RAINBOW]:
                every = True
                for wanted in range(params[P_ANIMAL_GROUPS]):
                    if _nb_group_count(d, collections, card_table, b, player, wanted) == 0:
                        every = False
                        break
                if every:
                    _nb_lose(info, loser, loss_reason, b, player, RAINBOW)
                    return True
        top = info[b, PENALTY_TOP]
        if not card_table[card, ROYAL] or top >= info[b, PENALTY_END]:
            return False
        drawn = penalty[b, top]
        info[b, PENALTY_TOP] = top + 1
        if card_table[drawn, SPECIAL]:  # ruling: a drawn joker or blank goes to hand, nothing more is drawn
            hands[b, player, drawn] += 1
            info[b, SPECIAL_HOLDER + card_table[drawn, SPECIAL_ROW]] = player
            return False
        card = drawn  # a drawn royal draws again


@_jit
def _nb_start_round(d, hands, info, loser, loss_reason, b, starter):
    if _nb_hand_size(d, hands, b, starter) == 0:
        _nb_lose(info, loser, loss_reason, b, starter, EMPTY_HAND)
    else:
        info[b, PHASE] = OFFER
        info[b, CURRENT] = starter


@_jit
def _nb_apply_one(
    d, hands, collections, stats, seat_claim, seen, penalty, info, steps, card_table, params, loser, loss_reason, b, a
):
    n, c = d.n, d.c
    steps[b] += 1
    loser[b] = -1
    loss_reason[b] = -1
    current = info[b, CURRENT]
    if a < d.offer_size:
        card, offset, claim = a // ((n - 1) * c), (a // c) % (n - 1) + 1, a % c
        target = (current + offset) % n
        hands[b, current, card] -= 1
        info[b, CARD], info[b, OFFERER], info[b, PASSER], info[b, CLAIM] = card, current, current, claim
        info[b, HOLDER], info[b, CURRENT], info[b, PHASE] = target, target, RESPOND
        for seat in range(n):
            seen[b, seat] = seat == current
            seat_claim[b, seat] = claim if seat == current else -1
        return
    if a >= d.pass_start and a < d.place_start:
        target, claim = (current + (a - d.pass_start) // c + 1) % n, (a - d.pass_start) % c
        info[b, PASSER], info[b, CLAIM], info[b, HOLDER], info[b, CURRENT], info[b, PHASE] = (
            current,
            claim,
            target,
            target,
            RESPOND,
        )
        seat_claim[b, current] = claim
        return
    if a == d.respond_start + 2:  # peek
        seen[b, current] = True
        stats[b, current, PEEKS] += 1
        info[b, PHASE] = PASS
        return
    if a >= d.place_start:  # Royal replacement
        card = a - d.place_start
        hands[b, current, card] -= 1
        info[b, PLACE_REMAINING] -= 1
        if _nb_place(d, hands, collections, penalty, info, card_table, params, loser, loss_reason, b, current, card):
            return
        if info[b, PLACE_REMAINING] == 0 or not _nb_any_placeable(d, hands, info, card_table, b):
            info[b, PLACE_CLAIM] = -1
            info[b, PLACE_REMAINING] = 0
            _nb_start_round(d, hands, info, loser, loss_reason, b, current)
        return
    # call: reveal, count the history, hand the card to the taker
    believe = a == d.respond_start
    card, claim, holder = info[b, CARD], info[b, CLAIM], info[b, HOLDER]
    right = believe == (card_table[card, TRUTH + claim] != 0)
    taker = info[b, PASSER] if right else holder
    for seat in range(n):  # branch-free: whether a seat claimed is a coin flip for the branch predictor
        made = seat_claim[b, seat]  # -1 (no claim) reads a column left of the truth table: counted as nothing
        stats[b, seat, TRUTHFUL_CLAIMS if card_table[card, TRUTH + made] else FALSE_CLAIMS] += made >= 0
        seat_claim[b, seat] = -1
        seen[b, seat] = False
    stats[b, holder, RIGHT_CALLS if right else WRONG_CALLS] += 1
    for column in range(CARD, CLAIM + 1):
        info[b, column] = -1
    others = 0
    for other in range(d.i):
        others += hands[b, taker, other] * (card_table[other, SPECIAL] == 0)
    if not card_table[card, SPECIAL] or others == 0:  # ruling: a special card with nothing else in hand goes face up
        if card_table[card, SPECIAL]:
            info[b, SPECIAL_HOLDER + card_table[card, SPECIAL_ROW]] = -1
        if not _nb_place(d, hands, collections, penalty, info, card_table, params, loser, loss_reason, b, taker, card):
            _nb_start_round(d, hands, info, loser, loss_reason, b, taker)
        return
    hands[b, taker, card] += 1
    info[b, SPECIAL_HOLDER + card_table[card, SPECIAL_ROW]] = taker
    fitting = False
    for other in range(d.i):
        fitting |= (hands[b, taker, other] > 0) & (card_table[other, TRUTH + c + claim] != 0)
    info[b, PLACE_CLAIM] = claim if fitting else -1
    info[b, PLACE_REMAINING] = 1 if fitting else min(2, others)
    info[b, PHASE] = PLACE
    info[b, CURRENT] = taker


@_jit
def _nb_outcome(d, params, info, steps, loser, b, rewards, done, truncated):
    """Done, truncated and rewards of game ``b`` after its move (``loser`` is set by the move)."""
    ended = info[b, PHASE] == OVER
    cut = (not ended) & (params[P_MAX_STEPS] > 0) & (steps[b] >= params[P_MAX_STEPS])
    done[b] = ended | cut
    truncated[b] = cut
    win = np.float32(1.0 / (d.n - 1)) if ended else np.float32(0.0)
    lose = np.float32(-1.0) if ended else np.float32(0.0)
    for seat in range(d.n):
        rewards[b, seat] = lose if seat == loser[b] else win


@_jit
def _nb_write_mask(d, hands, seen, info, card_table, b, mask):
    """Row ``b`` of ``mask``: the legal actions of the seat to act, every entry written once."""
    phase, current, holder = info[b, PHASE], info[b, CURRENT], info[b, HOLDER]
    width = (d.n - 1) * d.c
    offering = phase == OFFER
    for card in range(d.i):
        legal = offering & (hands[b, current, card] > 0)
        for entry in range(width):
            mask[b, card * width + entry] = legal
    responding = phase == RESPOND
    mask[b, d.respond_start] = responding
    mask[b, d.respond_start + 1] = responding
    mask[b, d.respond_start + 2] = responding & _nb_can_peek(d, seen, info, b)
    passing = phase == PASS
    for offset in range(1, d.n):
        target = (current + offset) % d.n
        legal = passing & (seen[b, target] == 0) & (target != holder)
        for claim in range(d.c):
            mask[b, d.pass_start + (offset - 1) * d.c + claim] = legal
    if d.royal:
        placing = phase == PLACE  # rare: a predictable branch
        for card in range(d.i):
            mask[b, d.place_start + card] = _nb_placeable(d, hands, info, card_table, b, card) if placing else False


@_jit
def _nb_write_observation(d, hands, collections, stats, seat_claim, seen, penalty, info, b, out, row):
    """Row ``row`` of ``out``: game ``b``'s observation by the seat to act (``viewer``), seats counted from it.

    The count segments lead the layout (checked in ``_Rules``): they are widened eight
    entries at a time in layout order, so that what spills past a segment is written
    over next, and everything after them is zeroed. The one-hot entries are written
    unconditionally (the value is the condition, the position clamped into the segment):
    nothing else writes there, and branch-free code is about twice as fast on random states.
    """
    n, i, c, k = d.n, d.i, d.c, d.k
    viewer = np.intp(np.uint8(info[b, CURRENT]))  # unsigned: LLVM then drops the negative-index checks
    for column in range(0, i, 8):
        _nb_widen8(hands, b, viewer, column, out, row, d.own_hand + column)
    for rel in range(n):
        for column in range(0, i, 8):
            _nb_widen8(collections, b, (viewer + rel) % n, column, out, row, d.collections + rel * i + column)
    for rel in range(n):
        for column in range(0, k, 8):
            _nb_widen8(stats, b, (viewer + rel) % n, column, out, row, d.history + rel * k + column)
    for entry in range(d.history + n * k, d.observation_size):
        out[row, entry] = 0.0
    for rel in range(n):
        seat = (viewer + rel) % n
        size = np.uint64(0)
        for column in range(0, i, 8):  # the byte sum of a word: counts are small and not negative
            word = _nb_word8(hands, b, seat, column)
            if i - column < 8:
                word &= (np.uint64(1) << np.uint64(8 * (i - column))) - np.uint64(1)
            size += (word * np.uint64(0x0101010101010101)) >> np.uint64(56)
        out[row, d.hand_sizes + rel] = size
        out[row, d.chain_seen + rel] = seen[b, seat]
        claim = seat_claim[b, seat]
        out[row, d.chain_claims + rel * c + max(claim, 0)] = claim >= 0
    phase, card = info[b, PHASE], info[b, CARD]
    live = phase != OVER
    out[row, d.phase + min(phase, OVER - 1)] = live
    out[row, d.to_act] = live  # the viewer is the seat to act
    chain = card >= 0
    out[row, d.chain_claim + max(info[b, CLAIM], 0)] = chain
    out[row, d.chain_latest_passer + (info[b, PASSER] - viewer + n) % n] = chain
    out[row, d.chain_holder + (info[b, HOLDER] - viewer + n) % n] = chain
    out[row, d.chain_card + max(card, 0)] = chain & seen[b, viewer]  # only who offered or peeked saw it
    if d.royal:
        top, end = info[b, PENALTY_TOP], info[b, PENALTY_END]
        if top < end:
            out[row, d.penalty_top + penalty[b, top]] = 1.0
            out[row, d.penalty_size] = end - top
        for special in range(2):  # known holders, hidden while the holder's offered card is in play
            seat = info[b, SPECIAL_HOLDER + special]
            known = (seat >= 0) & ((card < 0) | (seat != info[b, OFFERER]))
            out[row, d.special_holder + special * n + (seat - viewer + n) % n] = known
        if phase == PLACE:
            if info[b, PLACE_CLAIM] >= 0:
                out[row, d.place_claim + info[b, PLACE_CLAIM]] = 1.0
            out[row, d.place_remaining] = info[b, PLACE_REMAINING]


@_jit
def _nb_emit_one(
    d,
    hands,
    collections,
    stats,
    seat_claim,
    seen,
    penalty,
    info,
    card_table,
    b,
    to_act,
    observation,
    action_mask,
    scratch,
    row,
):
    to_act[b] = info[b, CURRENT]
    _nb_write_mask(d, hands, seen, info, card_table, b, action_mask)
    _nb_write_observation(d, hands, collections, stats, seat_claim, seen, penalty, info, b, scratch, row)
    for entry in range(d.observation_size):
        observation[b, entry] = scratch[row, entry]


# Called, not inlined, where it runs for few games (re-deals, reset): one compiled copy
# serves every config (``d`` is then an argument), and the kernels compile faster.
_nb_emit_called = numba.njit(cache=True, _nrt=False)(_nb_emit_one.py_func) if numba is not None else _nb_emit_one


def _nb_deal_orders(
    starters, orders, discard, penalty_size, opening, dealt, starter, hands, collections, removed, penalty, sizes
):
    """``deals_from_orders`` as a loop, into zeroed arrays (``_Deals`` fields, in order); see ``_deck_positions``."""
    n = hands.shape[1]
    for k in range(orders.shape[0]):
        first = starters[k]
        starter[k] = first
        for position in range(discard):
            removed[k, orders[k, position]] += 1
        position = discard
        depth = 0
        for _ in range(penalty_size):
            penalty[k, depth] = orders[k, position]
            depth += 1
            position += 1
        seat = first
        for _ in range(opening):
            collections[k, seat, orders[k, position]] += 1
            position += 1
            seat = seat + 1 if seat + 1 < n else 0
        seat = first
        for _ in range(dealt):
            hands[k, seat, orders[k, position]] += 1
            position += 1
            seat = seat + 1 if seat + 1 < n else 0
        while position < orders.shape[1]:  # Royal leftovers go under the penalty deck
            penalty[k, depth] = orders[k, position]
            depth += 1
            position += 1
        sizes[k] = depth


_deal_orders_compiled = numba.njit(cache=True, _nrt=False)(_nb_deal_orders) if numba is not None else None


@_jit
def _nb_redeal(hands, collections, stats, seat_claim, seen, removed, penalty, info, steps, b,
               slot, deal_starter, deal_hands, deal_collections, deal_removed, deal_penalty,
               deal_penalty_size):  # fmt: skip
    """Start game ``b`` afresh from the queued deal at ``slot``."""
    for p in range(hands.shape[1]):
        for card in range(hands.shape[2]):
            hands[b, p, card] = deal_hands[slot, p, card]
            collections[b, p, card] = deal_collections[slot, p, card]
        for stat in range(stats.shape[2]):
            stats[b, p, stat] = 0
        seat_claim[b, p] = -1
        seen[b, p] = False
    for card in range(removed.shape[1]):
        removed[b, card] = deal_removed[slot, card]
    for depth in range(penalty.shape[1]):
        penalty[b, depth] = deal_penalty[slot, depth]
    for column in range(info.shape[1]):
        info[b, column] = -1
    info[b, PHASE] = OFFER
    info[b, CURRENT] = deal_starter[slot]
    info[b, PLACE_REMAINING] = 0
    info[b, PENALTY_TOP] = 0
    info[b, PENALTY_END] = deal_penalty_size[slot]
    steps[b] = 0


@_jit
def _nb_put(out, position, index, value):
    """Add ``value`` at the output position of state entry ``index`` (skipped where not visible)."""
    at = position[index]
    if at >= 0:
        out[at] += value


@_jit
def _nb_write_view(
    hands, collections, stats, seat_claim, seen, removed, penalty, info, segments, params, b, position, out
):
    """Game ``b``'s state vector, or the part of it a viewer sees, into ``out``.

    ``position`` maps every state entry to its place in ``out`` (-1: not visible); the
    rows of the per-seat count segments are contiguous runs in it. ``state()`` uses it
    with the identity (not a hot path).
    """
    n, i, c, k = params[P_N], params[P_I], params[P_C], params[P_K]
    out[:] = 0.0
    for p in range(n):
        size = 0
        for card in range(i):
            size += hands[b, p, card]
        at = position[segments[S_HANDS] + p * i]
        if at >= 0:
            for card in range(i):
                out[at + card] = hands[b, p, card]
        at = position[segments[S_COLLECTIONS] + p * i]
        for card in range(i):
            out[at + card] = collections[b, p, card]
        at = position[segments[S_HISTORY] + p * k]
        for stat in range(k):
            out[at + stat] = stats[b, p, stat]
        _nb_put(out, position, segments[S_HAND_SIZES] + p, size)
        if seen[b, p]:
            _nb_put(out, position, segments[S_CHAIN_SEEN] + p, 1.0)
        if seat_claim[b, p] >= 0:
            _nb_put(out, position, segments[S_CHAIN_CLAIMS] + p * c + seat_claim[b, p], 1.0)
    at = position[segments[S_REMOVED]]
    if at >= 0:
        for card in range(i):
            out[at + card] = removed[b, card]
    phase, card = info[b, PHASE], info[b, CARD]
    if phase != OVER:
        _nb_put(out, position, segments[S_PHASE] + phase, 1.0)
        _nb_put(out, position, segments[S_TO_ACT] + info[b, CURRENT], 1.0)
    if card >= 0:
        _nb_put(out, position, segments[S_CHAIN_CLAIM] + info[b, CLAIM], 1.0)
        _nb_put(out, position, segments[S_CHAIN_LATEST_PASSER] + info[b, PASSER], 1.0)
        _nb_put(out, position, segments[S_CHAIN_HOLDER] + info[b, HOLDER], 1.0)
        _nb_put(out, position, segments[S_CHAIN_CARD] + card, 1.0)
    if segments[S_PENALTY_TOP] >= 0:  # Royal
        top, end = info[b, PENALTY_TOP], info[b, PENALTY_END]
        if top < end:
            _nb_put(out, position, segments[S_PENALTY_TOP] + penalty[b, top], 1.0)
            _nb_put(out, position, segments[S_PENALTY_SIZE], end - top)
            if position[segments[S_PENALTY_HIDDEN]] >= 0:
                for depth in range(top + 1, end):
                    _nb_put(out, position, segments[S_PENALTY_HIDDEN] + penalty[b, depth], 1.0)
        for row in range(2):  # known holders, hidden while the holder's offered card is in play
            seat = info[b, SPECIAL_HOLDER + row]
            if seat >= 0 and (card < 0 or seat != info[b, OFFERER]):
                _nb_put(out, position, segments[S_SPECIAL_HOLDER] + row * n + seat, 1.0)
        if phase == PLACE:
            if info[b, PLACE_CLAIM] >= 0:
                _nb_put(out, position, segments[S_PLACE_CLAIM] + info[b, PLACE_CLAIM], 1.0)
            _nb_put(out, position, segments[S_PLACE_REMAINING], info[b, PLACE_REMAINING])


CHUNK = 256
"""Games per chunk of the compiled loops (the unit handed to a thread)."""
PARALLEL_MIN_GAMES = 4 * CHUNK
"""Smaller batches run the serial kernels even with ``parallel=True``: starting threads costs more than they save."""


def _compile(d: _Dims) -> dict:
    """The kernels of one ``_Dims`` (``d.parallel`` included), compiled on first use.

    They are closures over ``d``; numba's disk cache keys closures by their constants,
    so every config shape and the threaded variant get cache entries of their own.
    """
    jit = numba.njit(cache=True, parallel=bool(d.parallel), _nrt=False)

    @jit
    def first_illegal(actions, hands, seen, info, card_table):
        for b in range(actions.shape[0]):
            if not _nb_legal(d, hands, seen, info, card_table, b, actions[b]):
                return b
        return -1

    @jit
    def finish(actions, hands, collections, stats, seat_claim, seen, penalty, info, steps, card_table, params,
               loser, loss_reason, rewards, done, truncated):  # fmt: skip
        """Apply each game's (legal) move without dealing again: the final state of games that end with it."""
        for b in range(actions.shape[0]):
            _nb_apply_one(d, hands, collections, stats, seat_claim, seen, penalty, info, steps, card_table, params,
                          loser, loss_reason, b, actions[b])  # fmt: skip
            _nb_outcome(d, params, info, steps, loser, b, rewards, done, truncated)

    return {
        "first_illegal": first_illegal,
        "step": _step_kernel(d, jit),
        "deal": _deal_kernel(d, jit),
        "finish": finish,
    }


def _step_kernel(d: _Dims, jit):
    @jit
    def step(actions, hands, collections, stats, seat_claim, seen, removed, penalty, info, steps, card_table, params,
             first_slot, deal_starter, deal_hands, deal_collections, deal_removed, deal_penalty, deal_penalty_size,
             to_act, observation, action_mask, rewards, done, loser, loss_reason, truncated, scratch):  # fmt: skip
        """Check every action, apply, re-deal, emit; returns the number of games dealt again.

        If an action is illegal nothing changes and it returns ``-1 - game`` of the first such game.
        """
        games = actions.shape[0]
        for b in range(games):
            if not _nb_legal(d, hands, seen, info, card_table, b, actions[b]):
                return -1 - b
        for chunk in numba.prange(scratch.shape[0]):
            for b in range(chunk * CHUNK, min(games, (chunk + 1) * CHUNK)):
                _nb_apply_one(
                    d,
                    hands,
                    collections,
                    stats,
                    seat_claim,
                    seen,
                    penalty,
                    info,
                    steps,
                    card_table,
                    params,
                    loser,
                    loss_reason,
                    b,
                    actions[b],
                )
                _nb_outcome(d, params, info, steps, loser, b, rewards, done, truncated)
                if not done[b]:
                    _nb_emit_one(
                        d,
                        hands,
                        collections,
                        stats,
                        seat_claim,
                        seen,
                        penalty,
                        info,
                        card_table,
                        b,
                        to_act,
                        observation,
                        action_mask,
                        scratch,
                        chunk,
                    )
        slot = first_slot  # finished games take the queued deals in game order
        for b in range(games):
            if done[b]:
                _nb_redeal(hands, collections, stats, seat_claim, seen, removed, penalty, info, steps, b,
                           slot, deal_starter, deal_hands, deal_collections, deal_removed, deal_penalty,
                           deal_penalty_size)  # fmt: skip
                _nb_emit_called(
                    d,
                    hands,
                    collections,
                    stats,
                    seat_claim,
                    seen,
                    penalty,
                    info,
                    card_table,
                    b,
                    to_act,
                    observation,
                    action_mask,
                    scratch,
                    0,
                )
                slot += 1
        return slot - first_slot

    return step


def _deal_kernel(d: _Dims, jit):
    @jit
    def deal(slot_of, hands, collections, stats, seat_claim, seen, removed, penalty, info, steps, card_table,
             deal_starter, deal_hands, deal_collections, deal_removed, deal_penalty, deal_penalty_size,
             to_act, observation, action_mask, scratch):  # fmt: skip
        """Deal game ``b`` from the queued deal at ``slot_of[b]`` (where >= 0), then emit every game."""
        games = info.shape[0]
        for chunk in numba.prange(scratch.shape[0]):
            for b in range(chunk * CHUNK, min(games, (chunk + 1) * CHUNK)):
                if slot_of[b] >= 0:
                    _nb_redeal(hands, collections, stats, seat_claim, seen, removed, penalty, info, steps, b,
                               slot_of[b], deal_starter, deal_hands, deal_collections, deal_removed, deal_penalty,
                               deal_penalty_size)  # fmt: skip
                _nb_emit_called(
                    d,
                    hands,
                    collections,
                    stats,
                    seat_claim,
                    seen,
                    penalty,
                    info,
                    card_table,
                    b,
                    to_act,
                    observation,
                    action_mask,
                    scratch,
                    chunk,
                )

    return deal


def _nb_write_states(
    hands, collections, stats, seat_claim, seen, removed, penalty, info, segments, params, position, out
):
    for b in range(info.shape[0]):
        _nb_write_view(
            hands, collections, stats, seat_claim, seen, removed, penalty, info, segments, params, b, position, out[b]
        )


_write_states_compiled = numba.njit(cache=True, _nrt=False)(_nb_write_states) if numba is not None else None
"""``state()``: not a hot path, one serial kernel for every config."""

_compiled: dict[_Dims, dict] = {}


def _kernels_for(d: _Dims) -> dict:
    if d not in _compiled:
        _compiled[d] = _compile(d)
    return _compiled[d]
