"""The batched engine: ``B`` games of Cockroach Poker held in arrays and stepped together.

```python
from cockroach_env.batched import BatchedGames, random_legal_actions
games = BatchedGames(config, batch_size=1024, seed=0)
step = games.reset()                       # BatchStep of the first decision of every game
while training:
    actions = policy(step.observation, step.action_mask)   # (B,) ints, one per game
    step = games.step(actions)             # finished games are dealt again automatically
```

Every game is the rules engine's game (``engine.Game``) under the same ``GameConfig``:
observations, masks and action indices are exactly those of the AEC env for the same
state (``tests/test_batched.py`` drives both engines with the same deals and actions and
compares every step). A step takes one action per game, for the seat ``to_act`` there.

``BatchStep`` (numpy arrays, batch first; fresh arrays each call, owned by the caller)

| field          | shape, dtype      | meaning                                                          |
|----------------|-------------------|------------------------------------------------------------------|
| `to_act`       | (B,) int64        | absolute seat to act next                                        |
| `observation`  | (B, O) float32    | that seat's ego-centric observation (C-contiguous)               |
| `action_mask`  | (B, A) int8       | that seat's legal actions                                        |
| `rewards`      | (B, N) float32    | terminal rewards by absolute seat of games that ended now        |
| `done`         | (B,) bool         | the game ended in this step and was dealt again                  |
| `loser`        | (B,) int64        | losing seat, -1 where no one lost now                            |
| `loss_reason`  | (B,) int64        | index into ``engine.LOSS_REASONS``, -1 where no one lost         |
| `truncated`    | (B,) bool         | ended by ``config.max_steps`` (done too; no loser, zero rewards) |
| `window`       | (B, L, F) int16   | recall or history: the move slots as ``cockroach_env.window`` indices |

When ``done[b]``, ``to_act``/``observation``/``action_mask`` of game ``b`` already belong
to the first decision of its new game; ``games.last_deals[b]`` is the new ``engine.Deal``.
``reset(deals=[...])`` starts the games from given ``engine.Deal``s (more than ``B``
queues the rest for the next re-deals, e.g. for duplicate-deal evaluation). An
illegal or malformed action raises ``ValueError`` naming the first such game, the
action and its move in words, and changes nothing. ``state()`` gives the full states.

Design
------
Game state is a handful of small-integer arrays (``bytes_per_game`` reports the size):
hand and collection counts ``(B, N, I)`` and history counters (with 8 spare bytes after
the batch, for word-wide reads), the claim each seat made in
the current round, who has seen the card, the Royal penalty deck with a top pointer,
and one int8 row of per-game scalars (phase, seat to act, the card in play, its holder
and latest passer, the claim, the pending replacement, the penalty deck pointers and
the publicly known holders of the joker and blank).

Two interchangeable backends play identically (the tests compare them):

* ``numpy``: each step is vectorized by move kind (offers, peeks, passes, calls,
  places are index sets of the batch). A placement is a loop over the still-active
  subset: place, check the loss, and for a placed royal draw the next penalty card;
  drawn royals stay active (chained draws), drawn specials go to hand and leave the
  loop, so the loop runs at most ``penalty deck + 1`` times, nearly always once. Taking
  a joker or blank either places it (no other card in hand) or opens the PLACE phase,
  whose decisions are ordinary steps. The observation is the full state vector written
  for the batch, then gathered with ``Encoding.observation_index`` per game.
* ``numba`` (default when numba is importable, ``pip install numba``): the same rules
  as compiled per-game code, close to ``engine.py`` line by line. One kernel call per
  step checks every action, then in one pass over the games (chunks of ``CHUNK``,
  spread over numba's threads with ``parallel=True``) applies each move and writes its
  outcome, mask and observation, then deals the finished games again in game order.
  The observation is written by segment, seats rotated from the viewer (no state
  vector is materialized), into a scratch row that stays in cache, then copied out
  whole. The kernels are compiled for each config shape (sizes and layout offsets are
  constants in them) and cached on disk by numba; a shape's first use compiles for a
  few seconds.

Recall (``GameConfig.recall``)
------------------------------
With ``recall=True`` the observations and states end with the recall segments
(``cockroach_env.encoding``: the dealt hands, the starter, the opening collections and
one slot per decision: its actor, ``Encoding.public_move``, the card a call revealed,
Royal's face-up penalty card after it), exactly as the AEC env writes them
(``tests/test_recall_batched.py``). The compiled kernels are not involved: both backends
write everything before ``dealt_hands``, with the kernels of the same config without
recall, and ``recall.py`` (``_RecallLog``) writes the rest in numpy from a log per game:

* when a game is dealt (``reset``, or again after it ended within a step: its row then
  already belongs to the new game), its dealt hands, starter and opening collections
  are copied from the queued deal and its move log is emptied;
* after a step the backend accepted, every game that did not end in it gets one slot:
  the seat that acted and the card in play (read before the step), the public move
  of its action and, Royal, the top of its penalty deck after the step. A refused
  step changes nothing, the log included;
* the observation's recall part is then written for the seat to act (its own dealt
  hand, seats rotated as everywhere else), and ``state()`` writes every seat's.

Without recall none of this runs (no log, no extra work per step). With it a step
costs about as much as writing its observations out: they hold ``max_decisions``
slots (24,399 floats for classic 4p, 48,953 for Royal 4p), so choose a small batch
(``benchmarks/bench_batched.py --rule-sets "classic 4p recall" "royal 4p recall"``).

Fresh deals follow ``engine.random_deal``'s rules exactly (starter, one permutation of
the deck used front to back: removed cards, penalty deck, opening cards, hands dealt
round-robin from the starter, Royal leftovers); they are drawn ahead in blocks from the
batch's ``numpy.random.Generator`` (``deal_orders``, then ``deals_from_orders``, or its
compiled twin when numba is there), so the stream is not bit-identical to calling
``random_deal`` game by game.

Files
-----
``layout.py`` phase and column codes, the state/observation segments, the per-config
rules tables and ``BatchStep``; ``state.py`` the batch arrays; ``deals.py`` random and
explicit deals and the deal queue; ``numpy_backend.py`` and ``numba_backend.py`` the two
backends, ``numba_kernels.py`` the compiled per-game code; ``recall.py`` the move log
behind ``GameConfig.recall`` (``window_kernels.py`` its compiled writer of the move slots
and their indices); ``random_legal.py`` ``random_legal_actions``; ``games.py`` the
``BatchedGames`` front.
"""

from cockroach_env.batched.deals import deal_orders, deals_from_orders
from cockroach_env.batched.games import BatchedGames
from cockroach_env.batched.layout import BACKENDS, BatchStep
from cockroach_env.batched.numba_kernels import CHUNK, PARALLEL_MIN_GAMES
from cockroach_env.batched.random_legal import random_legal_actions

__all__ = [
    "BatchStep",
    "BatchedGames",
    "random_legal_actions",
    "deal_orders",
    "deals_from_orders",
    "BACKENDS",
    "CHUNK",
    "PARALLEL_MIN_GAMES",
]
