# noqa: D212, D415
"""# Cockroach Poker (Kakerlakenpoker)

A bluffing card game for 2-6 players: pass a face-down card with a claim, call the
claim true or false, or peek and pass it on with a new claim. Collect four of a kind
(five with two players) and you lose.

| Import             | `from cockroach_env import cockroach_poker_v2`            |
|--------------------|-----------------------------------------------------------|
| Actions            | Discrete, masked                                          |
| Parallel API       | No (turn-based AEC)                                       |
| Agents             | `agents = ['player_0', ..., 'player_{N-1}']`              |
| Action shape       | `(1,)`, `Discrete(A)` (A = 219 for 4-player classic)      |
| Observation        | `{"observation": float32 (O,), "action_mask": int8 (A,)}` |
| State              | `state()`: float32 full state for centralized critics     |

## Rule sets

`env(num_players=N, preset=..., **options)` or `env(config=GameConfig(...))`. Presets:
`classic`, `duel` (2 players), `even-deal`, `rainbow`, `three-of-a-kind`,
`creature-to-start`, `royal`, `mini` and `mini-3p` (small decks, solved exactly), combinable
with `+`. See `GameConfig` for every option (the deck shape: `num_types`, `copies_per_type`).

## Actions

Fixed slices, targets as seat offsets (1 = next seat clockwise), so one policy serves
every seat (see `cockroach_env.encoding`):

| slice   | indices                       | meaning                              |
|---------|-------------------------------|--------------------------------------|
| offer   | `[0, I*(N-1)*C)`              | card x target offset x claim         |
| respond | next 3                        | call true, call false, peek          |
| pass    | next `(N-1)*C`                | target offset x claim                |
| place   | next `I` (Royal only)         | card to place as joker/blank replacement |

`env.unwrapped.encode(Move(...))` and `env.unwrapped.decode(action)` convert between
indices and readable `Move`s.

## Observation

Ego-centric (the observer is seat 0, seat `r` is `r` seats after them). Segments
(`cockroach_env.encoding.Encoding.observation.describe()` prints the index table):
own hand, all collections, all hand sizes, phase, seat to act, the chain (claim,
latest passer, holder, seen-by, claims made by each seat this round, and the card only
when the observer offered or peeked it), public history counters per seat (truthful
and false claims revealed, right and wrong calls, peeks); Royal adds the face-up
penalty card, the penalty deck size, publicly known holders of the joker and the
blank, and the pending replacement (claim to fit, cards left to place), seen only by the
placing player: every other seat sees zeros there, since before the first placed card
they would tell whether the placer holds a card fitting the claim (what the other seats
see of a replacement is in `cockroach_env.encoding`).

The mask is all zeros for every agent but the one to act.

## Rewards

Zero-sum at the end: the loser gets -1, every other player +1/(N-1). Every agent's
`info` has the same numeric keys on every step (`INFO_DEFAULTS`): at the end `loser`
(the losing seat) and `loss_reason` (index into `engine.LOSS_REASONS`: `same_type`,
`empty_hand`, `rainbow`), `-1` before.

## Rendering

`render_mode="ansi"` (text), `"human"` (printed text) or `"rgb_array"` (an (H, W, 3)
uint8 picture, Pillow needed) draws the table as `render_viewer` sees it (`None`: a
spectator, public information only; or an agent name: that player's hand and the card
in play once they have seen it). `render(full_information=True)`, keyword only, shows
every hidden card for debugging; a positional argument may only repeat the render
mode (RLlib passes it so). Every rendering is drawn from `cockroach_env.view.seat_view`.

## Version history

`cockroach_env.cockroach_poker_v2` names this version (PettingZoo's convention, as
`pettingzoo.classic.tictactoe_v3`); `cockroach_env.env` and `raw_env` are always the
latest; `metadata["name"]` says which one runs. The package release is in brackets.

* v2: during a Royal replacement, `place_claim` and `place_remaining` are all zeros in
  every observation but the placing player's (v1 showed every seat whether the placer
  held a card fitting the claim); `public_view()["replacement"]` holds only public
  information. The seat to act sees what it saw in v1, so agents act the same;
  `cockroach_poker_v1` warns on import and gives v2 (unreleased).
* v1: every agent's `info` holds the same keys on every step, numbers only, so libraries
  can stack them (`INFO_DEFAULTS`): `loser` and `offender` are seat indices, `loss_reason`
  an index into `engine.LOSS_REASONS`, `-1` while unset; the refusal text of a penalized
  illegal action is `env.unwrapped.refusal`, no longer `info["reason"]` (0.2.0).
* v0: initial release: `info["loser"]` and `info["offender"]` were agent names,
  `info["loss_reason"]` a string (`same_type`, `empty_hand`, `rainbow`), `info["reason"]`
  the refusal text, set only when the game ended (0.1.0).
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, replace
from typing import Any

import gymnasium
import numpy as np
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

from cockroach_env.config import GameConfig, check_seed
from cockroach_env.encoding import (
    LAYOUT_VERSION,
    StateWriter,
    apply_action,
    check_recall_deal,
    encoding_for,
    has_private_view,
)
from cockroach_env.engine import LOSS_REASONS, STAT_NAMES, Game, IllegalMove, Phase, explicit_deal, random_deal
from cockroach_env.view import replacement_view

MOVE_KINDS = ("offer", "call", "peek", "pass", "place")
RESET_OPTIONS = ("starter", "hands", "collections", "penalty_deck")
ILLEGAL_ACTION_MODES = ("raise", "penalize")
INFO_DEFAULTS: dict[str, Any] = {
    "loser": -1,
    "loss_reason": -1,
    "illegal_move": False,
    "offender": -1,
    "truncated_at_step": -1,
}
"""Every agent's ``info`` has exactly these keys on every step, numbers only and never
``None`` (Tianshou stacks infos into arrays, TorchRL into tensors): ``loser`` (the losing
seat, agent ``possible_agents[loser]``) and ``loss_reason`` (index into
``engine.LOSS_REASONS``) once someone lost, ``-1`` before; ``illegal_move`` and
``offender`` (a seat) when ``illegal_action="penalize"`` ended the game (the refusal's
text is ``env.unwrapped.refusal``, not in any info: it may name the offender's cards);
``truncated_at_step`` when ``max_steps`` cut the game."""


@dataclass(frozen=True)
class Move:
    """A readable move: ``Move("offer", card="fly", target="player_2", claim="bat")``,
    ``Move("call", believe=False)``, ``Move("peek")``, ``Move("pass", target=..., claim=...)``,
    ``Move("place", card="royal_rat")`` (Royal replacement).
    """

    kind: str
    card: str | None = None
    target: str | None = None
    claim: str | None = None
    believe: bool | None = None

    def __str__(self) -> str:
        parts = [
            f"{k}={v}"
            for k, v in (("card", self.card), ("target", self.target), ("claim", self.claim), ("believe", self.believe))
            if v is not None
        ]
        return f"{self.kind}({', '.join(parts)})"


class IllegalActionError(ValueError):
    """An action the rules do not allow now. The game is unchanged."""

    def __init__(self, agent: str, action: Any, move: Move | None, reason: str):
        self.agent, self.action, self.move, self.reason = agent, action, move, reason
        decoded = f" ({move})" if move is not None else ""
        super().__init__(f"{agent} chose illegal action {action!r}{decoded}: {reason}")


def env(render_mode: str | None = None, **options: Any) -> AECEnv:
    """The wrapped environment: ``raw_env`` plus PettingZoo's order enforcement.

    PettingZoo's out-of-bounds assertion wrapper is deliberately absent: out-of-range
    and illegal actions raise ``IllegalActionError`` with the decoded move and the reason.
    """
    return OrderEnforcing(raw_env(render_mode=render_mode, **options))


class OrderEnforcing(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order enforcement, with ``last()``, ``step()`` and ``render()`` forwarded to the raw env directly.

    Same checks and same results; it skips the wrapper's per-attribute forwarding,
    which costs more than a whole game step here.
    """

    def last(self, observe: bool = True):
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.last(observe)

    @property
    def agent_selection(self) -> str:
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self.env.agent_selection

    @property
    def agents(self) -> list[str]:
        if not self._has_reset:
            raise AttributeError("agents cannot be accessed before reset")
        return self.env.agents

    def render(self, *args: Any, **kwargs: Any) -> str | np.ndarray | None:
        """``raw_env.render``'s arguments pass through (PettingZoo's wrapper takes none)."""
        if not self._has_reset:
            EnvLogger.error_render_before_reset()
        return self.env.render(*args, **kwargs)

    def step(self, action) -> None:
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        elif not self.env.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._has_updated = True
            self.env.step(action)


class raw_env(AECEnv):
    """Cockroach Poker as a PettingZoo AEC environment (see the module docstring)."""

    metadata = {
        "name": "cockroach_poker_v2",
        "render_modes": ["ansi", "human", "rgb_array"],
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        config: GameConfig | None = None,
        render_mode: str | None = None,
        illegal_action: str = "raise",
        preset: str | None = None,
        render_viewer: str | None = None,
        **options: Any,
    ):
        super().__init__()
        if config is None:
            config = GameConfig.from_options(preset=preset, **options)
        elif preset is not None or options:
            if not isinstance(config, GameConfig):
                raise ValueError(f"config={config!r} is not allowed; expected a GameConfig")
            # The config's non-default values count as explicit options: a preset applies
            # under them, and defaults that depend on the player count are resolved again.
            defaults = {
                **GameConfig(num_players=config.num_players, edition=config.edition).to_dict(),
                "num_players": GameConfig.num_players,
                "edition": GameConfig.edition,
            }
            base = {k: v for k, v in config.to_dict().items() if k not in defaults or v != defaults[k]}
            config = GameConfig.from_options(preset=preset, **{**base, **options})
        if not isinstance(config, GameConfig):
            raise ValueError(f"config={config!r} is not allowed; expected a GameConfig")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r} is not allowed; expected None or one of {self.metadata['render_modes']}"
            )
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(
                f"illegal_action={illegal_action!r} is not allowed; expected one of {list(ILLEGAL_ACTION_MODES)}"
            )
        self.config = config
        self._max_steps = config.max_steps
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.encoding = enc = encoding_for(config)
        self.cards = config.cards
        self.possible_agents = [f"player_{s}" for s in range(config.num_players)]
        self.render_viewer = self._render_viewer(render_viewer)
        self._seat = {agent: s for s, agent in enumerate(self.possible_agents)}
        self._observation_space = gymnasium.spaces.Dict(
            {
                "observation": gymnasium.spaces.Box(0.0, enc.observation_high, (enc.observation.size,), np.float32),
                "action_mask": gymnasium.spaces.Box(0, 1, (enc.num_actions,), np.int8),
            }
        )
        self._action_space = gymnasium.spaces.Discrete(enc.num_actions)
        self.state_space = gymnasium.spaces.Box(0.0, enc.state_high, (enc.state.size,), np.float32)
        self._writer = StateWriter(enc)
        self._observation_indices = [
            [enc.observation_index(s, seen) for seen in (False, True)] for s in range(config.num_players)
        ]
        self._masks: dict[tuple, tuple[np.ndarray, bytes]] = {}
        """Legal masks (read-only, and as bytes) by the phase and the few facts they depend on, built once."""
        self._zero_mask = np.zeros(enc.num_actions, np.int8)
        self._zero_mask.flags.writeable = False
        self._no_action = (self._zero_mask, self._zero_mask.tobytes())
        self._rng = np.random.default_rng()
        self.game: Game | None = None

    def _require_reset(self, what: str) -> None:
        if self.game is None:
            raise ValueError(f"{what} called before reset(); call reset() first")

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: the per-game attributes before the first reset.
        if name in (
            "agent_selection",
            "agents",
            "rewards",
            "terminations",
            "truncations",
            "infos",
            "_cumulative_rewards",
        ):
            raise AttributeError(f"{name} cannot be accessed before reset(); call reset() first")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return self._observation_space

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        return self._action_space

    @property
    def np_random(self) -> np.random.Generator:
        """The generator of the deals (reseeded by ``reset(seed=...)``), as in gymnasium's ``Env.np_random``."""
        return self._rng

    @np_random.setter
    def np_random(self, generator: np.random.Generator) -> None:
        if not isinstance(generator, np.random.Generator):
            raise ValueError(f"np_random={generator!r} is not allowed; expected a numpy.random.Generator")
        self._rng = generator

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        # Everything is checked before anything changes: a refused reset leaves the game and the seed stream
        # as they were.
        seed = check_seed("seed", seed)
        if options is not None and not isinstance(options, dict):
            raise ValueError(
                f"options={options!r} is not allowed; expected None or a dict of reset options {list(RESET_OPTIONS)}"
            )
        rng = np.random.default_rng(seed) if seed is not None else copy.deepcopy(self._rng)
        deal = self._deal_from_options(options or {}, rng)
        game = Game(self.config, deal)  # refuses a deal that has already lost, before the seed stream moves on
        if game.over:
            raise ValueError(self._empty_starter_message(options, deal.starter))
        self._rng = rng
        self.game = game
        self._writer.reset()
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: dict(INFO_DEFAULTS) for a in self.agents}
        self.refusal: str | None = None
        """Under ``illegal_action="penalize"``: why the action that ended the game was refused."""
        self.offender: str | None = None
        """Under ``illegal_action="penalize"``: the agent whose action ended the game."""
        self._after_move()

    def _deal_from_options(self, options: dict, rng: np.random.Generator) -> Any:
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            warnings.warn(
                f"reset() ignores unknown option(s) {unknown}; known options: {list(RESET_OPTIONS)}", stacklevel=3
            )
        config = self.config
        if "starter" in options:
            config = replace(config, starter=self._seat_of("starter", options["starter"]))
        if not any(k in options for k in ("hands", "collections", "penalty_deck")):
            return random_deal(config, rng)
        if "hands" not in options:
            raise ValueError(
                "reset options set collections or penalty_deck without hands; an explicit deal needs hands"
            )
        starter = config.starter if config.starter is not None else int(rng.integers(config.num_players))
        deal = explicit_deal(
            config,
            starter,
            self._by_seat("hands", options["hands"]),
            self._by_seat("collections", {} if options.get("collections") is None else options["collections"]),
            options.get("penalty_deck"),
        )
        check_recall_deal(config, sum(map(sum, deal.hands)))
        return deal

    def _empty_starter_message(self, options: dict, starter: int) -> str:
        """Why an explicit deal that gives its starter no card is refused (the game would be over before any move).

        It names the starter's own entry only: the rest of the deal may be hidden from whoever reads the error.
        """
        hands, name = options["hands"], self.possible_agents[starter]
        if not hands:
            given = f"hands={hands!r}"
        elif name in hands:
            given = f"hands[{name!r}]={hands[name]!r}"
        else:
            given = f"hands (no entry for {name!r})"
        drawn = "" if "starter" in options or self.config.starter is not None else " (drawn at random)"
        return (
            f"reset option {given} gives the starter {name}{drawn} no card: the game would be over before any move "
            "(empty_hand); expected at least one card in the starter's hand (options['starter'] chooses the starter)"
        )

    def _seat_of(self, what: str, agent: Any) -> int:
        if not isinstance(agent, str) or agent not in self._seat:
            raise ValueError(f"{what}={agent!r} is not an agent of this game; expected one of {self.possible_agents}")
        return self._seat[agent]

    def _by_seat(self, what: str, spec: Any) -> dict[int, Any]:
        if not isinstance(spec, dict):
            raise ValueError(f"{what}={spec!r} is not allowed; expected a dict of agent name to {{card: count}}")
        return {self._seat_of(f"{what} key", agent): cards for agent, cards in spec.items()}

    # ------------------------------------------------------------------ step
    def step(self, action: Any) -> None:
        self._require_reset("step()")
        if not self.agents:
            raise ValueError(
                f"step({action!r}) called after the game ended and every agent is done; "
                "call reset() to start a new game"
            )
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        try:
            self._play(agent, action)
        except IllegalActionError as error:
            if self.illegal_action == "raise":
                raise
            self._penalize(agent, error)
            return
        self._cumulative_rewards[agent] = 0.0
        self._after_move()

    def _play(self, agent: str, action: Any) -> None:
        """Apply one action; raise ``IllegalActionError`` leaving the game unchanged."""
        enc = self.encoding
        if type(action) is int or isinstance(action, np.integer):
            index = int(action)
        elif isinstance(action, int) and not isinstance(action, bool):
            index = int(action)
        elif isinstance(action, np.ndarray) and action.shape in ((), (1,)) and np.issubdtype(action.dtype, np.integer):
            index = int(action.reshape(()))
        else:
            raise IllegalActionError(agent, action, None, f"expected an integer action in [0, {enc.num_actions})")
        if not 0 <= index < enc.num_actions:
            raise IllegalActionError(
                agent, action, None, f"out of range; expected an integer in [0, {enc.num_actions})"
            )
        if not self._legal[index]:
            raise IllegalActionError(agent, index, self.decode(index), self._why_illegal(index))
        apply_action(self.game, self.encoding, index)

    def _why_illegal(self, index: int) -> str:
        """Ask the engine on a copy why the move is refused (illegal moves are rare; clarity wins)."""
        try:
            apply_action(self.game.copy(), self.encoding, index)
        except IllegalMove as refusal:
            return str(refusal)
        return "the action mask does not allow it"

    def _penalize(self, agent: str, error: IllegalActionError) -> None:
        """PettingZoo's terminate-illegal behaviour: the offender gets -1, the game ends for all."""
        self._cumulative_rewards[agent] = 0.0
        for a in self.agents:
            self.terminations[a] = True
            self.rewards[a] = -1.0 if a == agent else 0.0
            self.infos[a] = {**INFO_DEFAULTS, "illegal_move": True, "offender": self._seat[agent]}
        self.refusal = str(error)
        self.offender = agent
        self._accumulate_rewards()
        self._set_mask(self._no_action)

    def _after_move(self) -> None:
        """Refresh the cached mask, select the next agent, and settle the end of the game."""
        game = self.game
        self._state_step = -1
        if game.over:
            loser = self.possible_agents[game.loser]
            win = 1.0 / (game.num_players - 1)
            for a in self.agents:
                self.rewards[a] = -1.0 if a == loser else win
                self.terminations[a] = True
                self.infos[a] = {
                    **INFO_DEFAULTS,
                    "loser": game.loser,
                    "loss_reason": LOSS_REASONS.index(game.loss_reason),
                }
            self._accumulate_rewards()
            self._set_mask(self._no_action)
            self.agent_selection = self.possible_agents[game.current]
            return
        # Rewards stay zero until the game ends (or an illegal action is penalized), so
        # there is nothing to clear on an ordinary move.
        self._set_mask(self._legal_mask())
        self.agent_selection = self.possible_agents[game.current]
        if self._max_steps is not None and game.steps >= self._max_steps:
            for a in self.agents:
                self.truncations[a] = True
                self.infos[a] = {**INFO_DEFAULTS, "truncated_at_step": game.steps}
            self._set_mask(self._no_action)

    def _set_mask(self, mask_and_bytes: tuple[np.ndarray, bytes]) -> None:
        """Make this the mask of the agent to act (the bytes serve the legality check in ``step``)."""
        self._mask, self._legal = mask_and_bytes

    def _legal_mask(self) -> tuple[np.ndarray, bytes]:
        """The mask of the agent to act, from a cache keyed by what it depends on."""
        game = self.game
        phase = game.phase
        if phase is Phase.OFFER:
            key = (phase, tuple(map(bool, game.hands[game.current])))
        elif phase is Phase.RESPOND:
            key = (phase, game.can_peek())
        elif phase is Phase.PASS:
            seat, n = game.current, game.num_players
            key = (phase, tuple((t - seat) % n for t in game.eligible_recipients()))
        else:
            key = (phase, tuple(game.placeable_cards()))
        cached = self._masks.get(key)
        if cached is None:
            mask = self._build_mask(key)
            cached = self._masks[key] = (mask, mask.tobytes())
        return cached

    def _build_mask(self, key: tuple) -> np.ndarray:
        enc = self.encoding
        phase, facts = key
        mask = np.zeros(enc.num_actions, np.int8)
        if phase is Phase.OFFER:
            offers = mask[: enc.offer_size].reshape(enc.num_cards, -1)
            offers[[c for c, in_hand in enumerate(facts) if in_hand]] = 1
        elif phase is Phase.RESPOND:
            mask[enc.respond_start] = mask[enc.respond_start + 1] = 1
            mask[enc.respond_start + 2] = int(facts)
        elif phase is Phase.PASS:
            passes = mask[enc.pass_start : enc.place_start].reshape(enc.num_targets, enc.num_claims)
            passes[[offset - 1 for offset in facts]] = 1
        else:
            mask[[enc.place_start + c for c in facts]] = 1
        mask.flags.writeable = False
        return mask

    # ------------------------------------------------------------------ observe
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        self._require_reset("observe()")
        seat = self._seat_of("agent", agent)
        game = self.game
        if self._state_step != game.steps:  # rewrite the state at most once per step
            self._writer.write(game)
            self._state_step = game.steps
        state = self._writer.out
        index = self._observation_indices[seat][has_private_view(game, seat)]
        mask = (self._mask if seat == game.current else self._zero_mask).copy()
        return {"observation": state[index], "action_mask": mask}

    def _full_state(self) -> np.ndarray:
        """The state vector (plus the zero slot), rewritten at most once per step."""
        if self._state_step != self.game.steps:
            self._writer.write(self.game)
            self._state_step = self.game.steps
        return self._writer.out

    def state(self) -> np.ndarray:
        self._require_reset("state()")
        return self._full_state()[:-1].copy()

    def observation_mask(self, agent: str) -> np.ndarray:
        """Boolean mask over ``state()`` of what ``agent`` may see now."""
        self._require_reset("observation_mask()")
        seat = self._seat_of("agent", agent)
        return self.encoding.observation_mask(seat, has_private_view(self.game, seat))

    # ------------------------------------------------------------------ moves
    def encode(self, move: Move, actor: str | None = None) -> int:
        """The action index of ``move`` for ``actor`` (default: the agent to act)."""
        enc, cards = self.encoding, self.cards
        if actor is None:
            self._require_reset("encode() without an actor")
        seat = self._seat_of("actor", actor) if actor is not None else self.game.current
        n = self.config.num_players

        def offset(target: Any) -> int:
            t = self._seat_of("target", target)
            if t == seat:
                raise ValueError(f"target={target!r} is the actor itself; expected another agent")
            return (t - seat) % n

        if not isinstance(move, Move) or move.kind not in MOVE_KINDS:
            raise ValueError(f"move={move!r} is not allowed; expected a Move with kind in {list(MOVE_KINDS)}")
        if move.kind == "offer":
            return enc.offer_action(cards.index(move.card), offset(move.target), cards.claim_index(move.claim))
        if move.kind == "call":
            if not isinstance(move.believe, bool):
                raise ValueError(f"believe={move.believe!r} is not allowed for a call; expected True or False")
            return enc.respond_start + (0 if move.believe else 1)
        if move.kind == "peek":
            return enc.respond_start + 2
        if move.kind == "pass":
            return enc.pass_action(offset(move.target), cards.claim_index(move.claim))
        if self.config.edition != "royal":
            raise ValueError("move kind 'place' exists only in the Royal edition")
        return enc.place_action(cards.index(move.card))

    def decode(self, action: int, actor: str | None = None) -> Move:
        """The ``Move`` an action index means for ``actor`` (default: the agent to act)."""
        enc, cards = self.encoding, self.cards
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise ValueError(f"action={action!r} is not allowed; expected an integer action in [0, {enc.num_actions})")
        index = int(action)
        if not 0 <= index < enc.num_actions:
            raise ValueError(f"action={action!r} is out of range; expected an integer in [0, {enc.num_actions})")
        if actor is None:
            self._require_reset("decode() without an actor")
        seat = self._seat_of("actor", actor) if actor is not None else self.game.current
        n = self.config.num_players
        decoded = enc.decode_action(index)
        kind = decoded[0]
        if kind == "offer":
            return Move(
                "offer",
                card=cards.identities[decoded[1]],
                target=self.possible_agents[(seat + decoded[2]) % n],
                claim=cards.claims[decoded[3]],
            )
        if kind == "call":
            return Move("call", believe=decoded[1])
        if kind == "peek":
            return Move("peek")
        if kind == "pass":
            return Move("pass", target=self.possible_agents[(seat + decoded[1]) % n], claim=cards.claims[decoded[2]])
        return Move("place", card=cards.identities[decoded[1]])

    def legal_moves(self) -> list[Move]:
        self._require_reset("legal_moves()")
        return [self.decode(a) for a in np.flatnonzero(self._mask)]

    # ------------------------------------------------------------------ public views
    def public_view(self) -> dict[str, Any]:
        """JSON-serializable public information: what every player may know.

        Once the game is over ``phase`` is ``"over"`` and ``to_act`` is ``None``, whatever ended it: a
        loss (``loser``, ``loss_reason``), an illegal action penalized under ``illegal_action="penalize"``
        (``env.offender`` chose it) or ``max_steps``.
        """
        self._require_reset("public_view()")
        game, cards, names = self.game, self.cards, self.possible_agents
        truncated = not game.over and self._max_steps is not None and game.steps >= self._max_steps
        over = game.over or truncated or self.offender is not None  # nobody acts once the env ended the game
        view: dict[str, Any] = {
            "edition": self.config.edition,
            "phase": Phase.OVER.value if over else game.phase.value,
            "to_act": None if over else names[game.current],
            "collections": {
                names[s]: {cards.identities[c]: n for c, n in enumerate(row) if n}
                for s, row in enumerate(game.collections)
            },
            "hand_sizes": {names[s]: game.hand_size(s) for s in range(game.num_players)},
            "chain": None,
            "history": {names[s]: dict(zip(STAT_NAMES, row)) for s, row in enumerate(game.stats)},
            "loser": None if game.loser is None else names[game.loser],
            "loss_reason": game.loss_reason,
        }
        if game.chain is not None:
            chain = game.chain
            view["chain"] = {
                "claim": cards.claims[chain.claim],
                "holder": names[chain.holder],
                "latest_passer": names[chain.latest_passer],
                "seen": [names[s] for s in chain.seen],
                "claims": [{"player": names[s], "claim": cards.claims[c]} for s, c in chain.claims],
                "peeked": game.phase is Phase.PASS,
            }
        if self.config.edition == "royal":
            view["penalty_top"] = cards.identities[game.penalty_deck[0]] if game.penalty_deck else None
            view["penalty_size"] = len(game.penalty_deck)
            view["special_holders"] = {cards.identities[c]: names[s] for c, s in game.known_special_holders().items()}
            if game.replacement is not None:
                view["replacement"] = replacement_view(game, names, private=False)
        return view

    @property
    def history(self) -> list[dict]:
        """The public events of this game with agent names, JSON-serializable."""
        self._require_reset("history")
        names = self.possible_agents
        events = []
        for event in self.game.events:
            named = dict(event)
            for key in ("player", "target", "taker", "starter"):
                if key in named:
                    named[key] = names[named[key]]
            if "hand_sizes" in named:
                named["hand_sizes"] = dict(zip(names, named["hand_sizes"]))
            if "collections" in named:
                named["collections"] = dict(zip(names, named["collections"]))
            events.append(named)
        return events

    # ------------------------------------------------------------------ render
    def render(
        self, mode: str | None = None, *, viewer: str | None = ..., full_information: bool = False
    ) -> str | np.ndarray | None:
        """The table as ``render_viewer`` sees it: text (``ansi``, ``human``) or an (H, W, 3) uint8 picture
        (``rgb_array``).

        ``render_viewer`` (set at construction, default ``None``: a spectator, public
        information only) or the keyword ``viewer=`` picks whose hand and seen cards
        are shown. ``full_information=True`` (keyword only) shows every hidden card,
        for debugging. ``mode`` is accepted for callers that pass the render mode
        positionally (RLlib's ``PettingZooEnv.render``); it must be this env's mode.
        """
        if mode is not None and mode != self.render_mode:
            raise ValueError(
                f"render({mode!r}) is not allowed; the positional argument can only repeat this env's "
                f"render_mode={self.render_mode!r} "
                "(full_information is keyword-only: render(full_information=True))"
            )
        if not isinstance(full_information, bool):
            raise ValueError(f"full_information={full_information!r} is not allowed; expected True or False")
        viewer = self.render_viewer if viewer is ... else self._render_viewer(viewer)
        if self.render_mode is None:
            gymnasium.logger.warn(
                "render() called without a render_mode; pass render_mode='ansi', 'human' or 'rgb_array'"
            )
            return None
        if self.render_mode == "rgb_array":
            from cockroach_env.picture import draw_table
            from cockroach_env.view import seat_view

            return draw_table(seat_view(self, viewer, full_information))
        from cockroach_env.render import render_text

        text = render_text(self, full_information, viewer)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def _render_viewer(self, viewer: Any) -> str | None:
        if viewer is not None and viewer not in self.possible_agents:
            raise ValueError(
                f"render_viewer={viewer!r} is not allowed; expected None (a spectator: public information only) "
                f"or one of {self.possible_agents}"
            )
        return viewer

    def close(self) -> None:
        pass

    @property
    def layout_version(self) -> int:
        return LAYOUT_VERSION
