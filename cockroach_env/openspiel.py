"""Cockroach Poker as an OpenSpiel game: ``import cockroach_env.openspiel`` registers ``python_cockroach_poker``.

```python
import pyspiel
import cockroach_env.openspiel  # registers the game (needs the [openspiel] extra: pip install open-spiel)

game = pyspiel.load_game("python_cockroach_poker", {"preset": "mini"})
game = pyspiel.load_game("python_cockroach_poker", {"num_players": 3, "rainbow_loses": True})
```

**Parameters** are the ``GameConfig`` options and ``preset`` (``+``-combined names). OpenSpiel
parameters have one fixed type each, so "the default" is written ``-1`` for the integer
options whose default depends on others (``num_players``, ``discard``, ``loss_count``,
``opening_cards``, ``starter``, ``max_steps``, ``num_types``, ``copies_per_type``) and ``""`` for ``preset``;
explicit values override the preset, as in ``GameConfig.from_options``. Bad values raise
``ValueError`` naming the option and what was expected, in these terms (``-1``, not ``None``).

**Chance nodes** come first. The starter (when not configured), then the shuffle, dealt as
``random_deal`` does: the removed cards, the face-down penalty deck (Royal, one card per
node, top first), the face-up opening cards (creature to start), each hand starting with
the starter, and the Royal leftovers (to the bottom of the penalty deck). A set of cards
whose order does not matter is drawn one card type at a time: the outcome is how many
cards of that type it gets (multivariate hypergeometric, exactly what a uniform shuffle
gives); ordered cards are drawn one at a time, the outcome being the card identity. Nodes
with a single possible outcome are skipped. So the deal distribution is that of the AEC env,
with far fewer chance histories than a card-by-card shuffle.

**Moves** are the env's action indices (``Encoding``: offer, respond, pass, place), legal
exactly where the env's mask is 1. Any other action, and a chance outcome not in
``chance_outcomes()``, raises ``pyspiel.SpielError`` (as OpenSpiel's own games do) naming the
action and what was expected, and leaves the state as it was; ``action_to_string`` refuses a
player or an action out of range the same way. **Returns** are the env's rewards: the loser -1, every
other player 1/(N-1); 0 for all at a ``max_steps`` truncation.

**Observations** (``observation_tensor``/``observation_string``): the env's observation of that
player (the same float vector; its string is ``decode_observation`` as JSON), with the
parameters ``recall`` (bool) and ``history`` (int, a window of the last decisions) as the env has them.
**Information states** have perfect recall: the player's seat and dealt hand, the public
events so far (every claim, call, target, revealed card, Royal penalty and replacement),
and the card in play if the player offered or peeked it. The tensor holds the same
information: a header (seat, dealt hand, starter, opening collections, Royal face-up
penalty card, the card in play if seen) and one slot per move (actor, the move without
its hidden card, the card a call revealed, the face-up penalty card after it).

``AgentPolicy(game, agents)`` turns agents of the ``baselines`` protocol (anything with
``action_probabilities(observation)``) into an OpenSpiel ``Policy``, e.g. for
``exploitability.nash_conv``.
"""

from __future__ import annotations

import copy
import json
from math import comb
from typing import Any

import numpy as np
import pyspiel
from open_spiel.python import policy as policy_lib

from cockroach_env.config import GameConfig
from cockroach_env.encoding import (
    apply_action,
    dealt_cards,
    encoding_for,
    has_private_view,
    legal_actions,
    max_decisions,
    public_moves,
    recall_moves,
    write_state,
)
from cockroach_env.engine import Deal, Game, IllegalMove
from cockroach_env.information import information_state_string
from cockroach_env.observation import decode_observation

SHORT_NAME = "python_cockroach_poker"
DEFAULT = -1
"""Integer parameter value meaning "the default of this option" (OpenSpiel parameters cannot be None)."""

_INT_OPTIONS = (
    "history",
    "num_players",
    "discard",
    "loss_count",
    "opening_cards",
    "starter",
    "max_steps",
    "num_types",
    "copies_per_type",
)
_BOOL_OPTIONS = ("rainbow_loses", "blank_counts_as_royal", "royal_counts_as_animal", "recall")
_SENTINEL_OPTIONS = ("num_players", "discard", "loss_count", "starter", "max_steps", "num_types", "copies_per_type")

_PARAMETERS: dict[str, Any] = {
    "preset": "",
    "edition": "",
    **{name: DEFAULT for name in _SENTINEL_OPTIONS},
    "opening_cards": DEFAULT,
    "history": 0,
    **{name: False for name in _BOOL_OPTIONS},
    "royal_counts_as_animal": True,
}


def config_from_params(params: dict[str, Any]) -> GameConfig:
    """The ``GameConfig`` of OpenSpiel parameters (``-1``/``""`` mean the default)."""
    unknown = sorted(set(params) - set(_PARAMETERS))
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown}; expected some of {sorted(_PARAMETERS)}")
    options: dict[str, Any] = {}
    for name, value in params.items():
        if name == "preset" or value == _PARAMETERS[name] and name not in _BOOL_OPTIONS:
            continue
        if name in _BOOL_OPTIONS:
            if value != _PARAMETERS[name]:
                options[name] = bool(value)
            continue
        options[name] = value
    try:
        return GameConfig.from_options(preset=params.get("preset") or None, **options)
    except ValueError as refusal:
        raise ValueError(_in_parameter_terms(str(refusal))) from None


def _in_parameter_terms(message: str) -> str:
    """A ``GameConfig`` refusal as the parameters read: an option's ``None`` is written ``DEFAULT`` (-1)."""
    name = message.split("=", 1)[0]
    if name not in _INT_OPTIONS or _PARAMETERS[name] != DEFAULT:
        return message
    if "expected None" in message:
        return message.replace("expected None", f"expected {DEFAULT}", 1)
    return f"{message}, or {DEFAULT} for the default"


def _game_type() -> pyspiel.GameType:
    return pyspiel.GameType(
        short_name=SHORT_NAME,
        long_name="Python Cockroach Poker",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.ZERO_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=6,
        min_num_players=2,
        provides_information_state_string=True,
        provides_information_state_tensor=True,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=dict(_PARAMETERS),
    )


class _Shape:
    """Sizes derived from a config: the deal schedule and the information-state tensor layout."""

    def __init__(self, config: GameConfig):
        self.config = config
        self.encoding = enc = encoding_for(config)
        self.n = n = config.num_players
        self.i = i = enc.num_cards
        self.royal = config.edition == "royal"
        cards = config.cards
        rest = cards.deck_size - config.discard - config.penalty_deck_size - config.opening_cards * n
        self.dealt = dealt_cards(config)
        self.leftovers = rest - self.dealt
        self.max_game_length = max_decisions(config)
        self.public_moves = public_moves(config)
        self.slot = n + self.public_moves + i + (i if self.royal else 0)
        self.header = n + i + n + n * i + (i if self.royal else 0) + i
        self.max_chance_outcomes = max(n, i, max(cards.copies) + 1)

    def __deepcopy__(self, memo: dict) -> _Shape:
        return self  # immutable and shared by every state (OpenSpiel deep-copies a state's attributes to clone it)

    def schedule(self, starter: int) -> list[tuple[str, Any, int]]:
        """``(kind, where, size)`` of every deal step in ``random_deal``'s order; kind ``set`` or ``ordered``."""
        n, config = self.n, self.config
        steps: list[tuple[str, Any, int]] = [
            ("set", ("removed",), config.discard),
            ("ordered", ("penalty",), config.penalty_deck_size),
        ]
        steps += [("set", ("collection", (starter + k) % n), config.opening_cards) for k in range(n)]
        steps += [
            ("set", ("hand", (starter + k) % n), self.dealt // n + (1 if k < self.dealt % n else 0)) for k in range(n)
        ]
        steps.append(("ordered", ("penalty",), self.leftovers))
        return [step for step in steps if step[2] > 0]


class CockroachPokerGame(pyspiel.Game):
    """One rule set of Cockroach Poker (see the module docstring)."""

    def __init__(self, params: dict[str, Any] | None = None):
        params = dict(_PARAMETERS, **(params or {}))
        self.config = config_from_params(params)
        self.shape = shape = _Shape(self.config)
        info = pyspiel.GameInfo(
            num_distinct_actions=shape.encoding.num_actions,
            max_chance_outcomes=shape.max_chance_outcomes,
            num_players=self.config.num_players,
            min_utility=-1.0,
            max_utility=1.0 / (self.config.num_players - 1),
            utility_sum=0.0,
            max_game_length=shape.max_game_length,
        )
        super().__init__(_game_type(), info, params)

    def new_initial_state(self) -> CockroachPokerState:
        return CockroachPokerState(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        if params:
            raise ValueError(f"observer parameters {params!r} are not supported; expected none")
        perfect_recall = iig_obs_type is not None and iig_obs_type.perfect_recall
        if iig_obs_type is not None and (
            iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER or not iig_obs_type.public_info
        ):
            raise ValueError(
                f"observation type {iig_obs_type} is not supported; "
                "expected the default observation or information state of one player"
            )
        return InformationStateObserver(self.shape) if perfect_recall else ObservationObserver(self.shape)


class _Progress:
    """Everything that changes in a state, with a fast deep copy (OpenSpiel clones a state by deep-copying its
    attributes).
    """

    def __init__(self, shape: _Shape):
        width = shape.i
        self.game: Game | None = None
        self.starter: int | None = shape.config.starter
        self.left = list(shape.config.cards.copies)
        self.dealt: dict[str, Any] = {
            "removed": [0] * width,
            "penalty": [],
            "collection": [[0] * width for _ in range(shape.n)],
            "hand": [[0] * width for _ in range(shape.n)],
        }
        self.steps: list[tuple[str, Any, int]] = []
        """The deal schedule (never changed once made: shared by copies)."""
        self.step_at = 0
        self.card_type = 0
        self.still_to_give = 0

    def __deepcopy__(self, memo: dict) -> _Progress:
        twin = copy.copy(self)
        twin.game = self.game.copy() if self.game is not None else None
        twin.left = list(self.left)
        d = self.dealt
        twin.dealt = {
            "removed": list(d["removed"]),
            "penalty": list(d["penalty"]),
            "collection": [list(r) for r in d["collection"]],
            "hand": [list(r) for r in d["hand"]],
        }
        return twin


class CockroachPokerState(pyspiel.State):
    """A game in progress: the deal being drawn, then an ``engine.Game``."""

    def __init__(self, game: CockroachPokerGame):
        super().__init__(game)
        self.shape = game.shape
        self.p = _Progress(game.shape)
        if self.p.starter is not None:
            self._start_schedule()

    # ------------------------------------------------------------------ dealing
    def _start_schedule(self) -> None:
        self.p.steps = self.shape.schedule(self.p.starter)
        self.p.step_at = 0
        self._begin_step()
        self._skip_forced()

    def _begin_step(self) -> None:
        if self.p.step_at < len(self.p.steps):
            self.p.card_type = 0
            self.p.still_to_give = self.p.steps[self.p.step_at][2]

    def _skip_forced(self) -> None:
        """Apply chance nodes with one outcome; start the game when the deal is complete."""
        while self.p.game is None and self.p.starter is not None:
            if self.p.step_at >= len(self.p.steps):
                self._start_game()
                return
            outcomes = self._deal_outcomes()
            if len(outcomes) > 1:
                return
            self._deal(outcomes[0][0])

    def _deal_outcomes(self) -> list[tuple[int, float]]:
        kind = self.p.steps[self.p.step_at][0]
        total = sum(self.p.left)
        if kind == "ordered":
            return [(card, count / total) for card, count in enumerate(self.p.left) if count]
        t, m = self.p.card_type, self.p.still_to_give
        here, later = self.p.left[t], sum(self.p.left[t + 1 :])
        low, high = max(0, m - later), min(here, m)
        ways = comb(here + later, m)
        return [(x, comb(here, x) * comb(later, m - x) / ways) for x in range(low, high + 1)]

    def _deal(self, outcome: int) -> None:
        kind, where, _ = self.p.steps[self.p.step_at]
        pile = self.p.dealt[where[0]] if len(where) == 1 else self.p.dealt[where[0]][where[1]]
        if kind == "ordered":
            self.p.left[outcome] -= 1
            pile.append(outcome)
            self.p.still_to_give -= 1
        else:
            self.p.left[self.p.card_type] -= outcome
            pile[self.p.card_type] += outcome
            self.p.still_to_give -= outcome
            self.p.card_type += 1
        if self.p.still_to_give == 0:
            self.p.step_at += 1
            self._begin_step()

    def _start_game(self) -> None:
        d = self.p.dealt
        self.p.game = Game(
            self.shape.config, Deal(self.p.starter, d["hand"], d["collection"], d["removed"], d["penalty"])
        )

    # ------------------------------------------------------------------ OpenSpiel API
    def current_player(self) -> int:
        if self.p.game is None:
            return pyspiel.PlayerId.CHANCE
        if self.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        return self.p.game.current

    def _legal_actions(self, player: int) -> list[int]:
        if self.p.game is None or self.is_terminal() or player != self.p.game.current:
            return []
        return legal_actions(self.p.game, self.shape.encoding)

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self.p.game is not None:
            return []
        if self.p.starter is None:
            n = self.shape.n
            return [(s, 1.0 / n) for s in range(n)]
        return self._deal_outcomes()

    def _apply_action(self, action: int) -> None:
        action = int(action)
        if self.p.game is None:
            self._check_chance_outcome(action)
            if self.p.starter is None:
                self.p.starter = action
                self._start_schedule()
            else:
                self._deal(action)
                self._skip_forced()
            return
        if self.is_terminal():
            raise pyspiel.SpielError(f"action {action} applied to a terminal state; expected no more actions")
        player, size = self.p.game.current, self.shape.encoding.num_actions
        if not 0 <= action < size:
            raise pyspiel.SpielError(
                f"action {action} of player {player} is out of range; expected an action in [0, {size})"
            )
        try:  # the engine refuses exactly the actions legal_actions leaves out, before changing anything
            apply_action(self.p.game, self.shape.encoding, action)
        except IllegalMove as refusal:
            raise pyspiel.SpielError(
                f"action {action} ({self._action_to_string(player, action)}) of player {player} is illegal: {refusal}; "
                f"expected one of the {len(legal_actions(self.p.game, self.shape.encoding))} legal actions "
                "(state.legal_actions())"
            ) from None

    def _check_chance_outcome(self, action: int) -> None:
        outcomes = [outcome for outcome, _ in self.chance_outcomes()]
        if action not in outcomes:
            raise pyspiel.SpielError(
                f"chance outcome {action} is not possible at this chance node ({self._chance_node_name()}); "
                f"expected one of {outcomes}"
            )

    def _chance_node_name(self) -> str:
        if self.p.starter is None:
            return "the starter"
        kind, where, _ = self.p.steps[self.p.step_at]
        place = where[0] if len(where) == 1 else f"{where[0]} of player_{where[1]}"
        if kind == "ordered":
            return f"the next card to {place}"
        return f"how many {self.shape.config.cards.identities[self.p.card_type]} go to {place}"

    def _action_to_string(self, player: int, action: int) -> str:
        config = self.shape.config
        cards = config.cards
        if player == pyspiel.PlayerId.CHANCE:
            if self.p.game is not None:
                raise pyspiel.SpielError(
                    f"action_to_string(chance, {action}) is not allowed: the deal is complete; "
                    f"expected a player from 0 to {self.shape.n - 1}"
                )
            self._check_chance_outcome(action)
            if self.p.starter is None:
                return f"starter player_{action}"
            kind, where, _ = self.p.steps[self.p.step_at]
            place = where[0] if len(where) == 1 else f"{where[0]} of player_{where[1]}"
            if kind == "ordered":
                return f"{cards.identities[action]} to {place}"
            return f"{action} x {cards.identities[self.p.card_type]} to {place}"
        n, size = config.num_players, self.shape.encoding.num_actions
        if not 0 <= player < n:
            raise pyspiel.SpielError(
                f"player {player} is not allowed; expected a player from 0 to {n - 1} "
                f"or chance ({int(pyspiel.PlayerId.CHANCE)})"
            )
        if not 0 <= action < size:
            raise pyspiel.SpielError(f"action {action} is out of range; expected an action in [0, {size})")
        decoded = self.shape.encoding.decode_action(action)
        if decoded[0] == "offer":
            target, claim = (player + decoded[2]) % n, cards.claims[decoded[3]]
            return f"offer {cards.identities[decoded[1]]} to player_{target} claiming {claim}"
        if decoded[0] == "call":
            return f"call {'true' if decoded[1] else 'false'}"
        if decoded[0] == "peek":
            return "peek"
        if decoded[0] == "pass":
            return f"pass to player_{(player + decoded[1]) % n} claiming {cards.claims[decoded[2]]}"
        return f"place {cards.identities[decoded[1]]}"

    def is_terminal(self) -> bool:
        game = self.p.game
        if game is None:
            return False
        max_steps = self.shape.config.max_steps
        return game.over or (max_steps is not None and game.steps >= max_steps)

    def returns(self) -> list[float]:
        n = self.shape.n
        game = self.p.game
        if game is None or not game.over:
            return [0.0] * n
        return [-1.0 if s == game.loser else 1.0 / (n - 1) for s in range(n)]

    def __str__(self) -> str:
        if self.p.game is None:
            return f"dealing (starter {self.p.starter}, {self.p.dealt})"
        return repr(self.p.game)


# ---------------------------------------------------------------------------- observers


class ObservationObserver:
    """The env's observation of one player (``tensor`` is exactly the AEC env's observation vector)."""

    def __init__(self, shape: _Shape):
        self.shape = shape
        enc = shape.encoding
        self.tensor = np.zeros(enc.observation.size, np.float32)
        self.dict = enc.observation.unpack(self.tensor)
        self._state = np.zeros(enc.state.size + 1, np.float32)

    def set_from(self, state: CockroachPokerState, player: int) -> None:
        game = state.p.game
        if game is None:
            self.tensor.fill(0.0)
            return
        write_state(self.shape.encoding, game, self._state)
        index = self.shape.encoding.observation_index(player, has_private_view(game, player))
        self.tensor[:] = self._state[index]

    def string_from(self, state: CockroachPokerState, player: int) -> str:
        if state.p.game is None:
            return f"player_{player}: the cards are being dealt"
        self.set_from(state, player)
        return json.dumps(decode_observation(self.tensor, self.shape.config), sort_keys=True)


class InformationStateObserver:
    """Perfect recall: seat, dealt hand, public events, and the card in play if this player saw it."""

    def __init__(self, shape: _Shape):
        self.shape = shape
        self.tensor = np.zeros(shape.header + shape.max_game_length * shape.slot, np.float32)
        n, i = shape.n, shape.i
        pieces = [("seat", (n,)), ("dealt_hand", (i,)), ("starter", (n,)), ("opening_collections", (n, i))]
        if shape.royal:
            pieces.append(("penalty_top", (i,)))
        pieces += [("card_in_play", (i,)), ("moves", (shape.max_game_length, shape.slot))]
        self.dict: dict[str, np.ndarray] = {}
        at = 0
        for name, dims in pieces:
            size = int(np.prod(dims))
            self.dict[name] = self.tensor[at : at + size].reshape(dims)
            at += size

    def set_from(self, state: CockroachPokerState, player: int) -> None:
        self.tensor.fill(0.0)
        shape, game = self.shape, state.p.game
        self.dict["seat"][player] = 1.0
        if game is None:
            return
        self.dict["dealt_hand"][:] = state.p.dealt["hand"][player]
        self.dict["starter"][state.p.starter] = 1.0
        self.dict["opening_collections"][:] = state.p.dealt["collection"]
        if shape.royal and state.p.dealt["penalty"]:
            self.dict["penalty_top"][state.p.dealt["penalty"][0]] = 1.0
        if game.chain is not None and player in game.chain.seen:
            self.dict["card_in_play"][game.chain.card] = 1.0
        n, moves = shape.n, self.dict["moves"]
        for k, (actor, public, revealed, top) in enumerate(recall_moves(shape.encoding, game)):
            moves[k, actor] = 1.0
            moves[k, n + public] = 1.0
            if revealed >= 0:
                moves[k, n + shape.public_moves + revealed] = 1.0
            if top >= 0:
                moves[k, n + shape.public_moves + shape.i + top] = 1.0

    def string_from(self, state: CockroachPokerState, player: int) -> str:
        if state.p.game is None:
            return f"player_{player}: the cards are being dealt"
        return information_state_string(state.p.game, player, state.p.dealt["hand"][player])


# ---------------------------------------------------------------------------- agents as a policy


class AgentPolicy(policy_lib.Policy):
    """An OpenSpiel ``Policy`` playing agents of the ``baselines`` protocol (one agent, or a list of one per seat).

    ``action_probabilities(state)`` asks the agent of the seat to act for
    ``action_probabilities(observation)`` on the env's observation of that seat.
    """

    def __init__(self, game: CockroachPokerGame, agents: Any):
        super().__init__(game, list(range(game.num_players())))
        n = game.num_players()
        self.agents = list(agents) if isinstance(agents, (list, tuple)) else [agents] * n
        if len(self.agents) != n:
            raise ValueError(
                f"{len(self.agents)} agents are not allowed for {n} players; expected one agent or a list of {n}"
            )
        self._shape = game.shape
        self._observer = ObservationObserver(game.shape)

    def action_probabilities(self, state, player_id=None):
        player = state.current_player() if player_id is None else player_id
        self._observer.set_from(state, player)
        legal = state.legal_actions(player)
        mask = np.zeros(self._shape.encoding.num_actions, np.int8)
        mask[legal] = 1
        probs = self.agents[player].action_probabilities(
            {"observation": self._observer.tensor.copy(), "action_mask": mask}
        )
        return {a: float(probs[a]) for a in legal}


pyspiel.register_game(_game_type(), CockroachPokerGame)
