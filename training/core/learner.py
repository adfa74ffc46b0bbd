"""The PPO learner, shared by the training loop (``training.algorithms.ppo``) and its update process
(``training.core.update_process``).

``Rollout``: a learner's decisions of one rollout (observations, masks, actions, their
log-probabilities and values, rewards, and each decision's successor in its game and
seat). ``Learner``: a network in training with its Adam state, its rollout and its
magnet. ``gae``: advantages and returns of a
rollout. ``ppo_update``: the clipped PPO update on a rollout's complete decisions; it checks its loss and gradient
before every step and the weights after the update, and raises ``NonFiniteUpdate`` (naming the term and the likely
option) rather than train on, or log, a value that is not finite.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterator

import numpy as np
import torch

from cockroach_env.window import WINDOW_DTYPE, window_from_observation, window_one_hot
from training.core.model import ActorCritic, mask_bias


class NonFiniteUpdate(ArithmeticError):
    """A training step met a loss, gradient or weight that is not finite (NaN or infinite).

    Raised before that step changes the weights when the loss or the gradient is not finite, and before anything of
    the update is logged or saved: the run stops, and its last checkpoint on disk is the last good one. ``update`` is
    the run's update (set by ``numbered``), ``options`` the config options that most likely caused it.
    """

    def __init__(self, what: str, options: list[str], update: int | None = None):
        super().__init__(what, options, update)
        self.what, self.options, self.update = what, list(options), update

    def __str__(self) -> str:
        where = f"update {self.update}: " if self.update is not None else ""
        return (
            f"{where}{self.what} is not finite, so the run stopped before training on it (nothing of this update "
            f"was saved or logged); likely cause: {' or '.join(self.options)} too large for this run"
        )


@contextlib.contextmanager
def numbered(update: int) -> Iterator[None]:
    """A ``NonFiniteUpdate`` raised inside names the run's ``update``."""
    try:
        yield
    except NonFiniteUpdate as error:
        error.update = update
        raise


def check_finite_weights(model: torch.nn.Module, options: list[str], what: str = "a weight of the network") -> None:
    """Raise ``NonFiniteUpdate`` if any parameter of ``model`` is NaN or infinite."""
    for name, parameter in model.named_parameters():
        if not bool(torch.isfinite(parameter).all()):
            raise NonFiniteUpdate(f"{what} ({name})", options)


def _non_finite_term(terms: dict[str, tuple[torch.Tensor, torch.Tensor, str, list[str]]]) -> NonFiniteUpdate:
    """The error for the first non-finite term of a loss: ``terms`` maps a term's name to (its value, its weighted
    value, the option of its weight, the options that most likely made the value itself non-finite).
    """
    for name, (raw, weighted, weight_option, raw_options) in terms.items():
        if not bool(torch.isfinite(weighted)):
            if bool(torch.isfinite(raw)):
                return NonFiniteUpdate(
                    f"the loss ({name} {float(raw.detach()):.3g} x {weight_option})", [weight_option]
                )
            return NonFiniteUpdate(f"the loss ({name} = {float(raw.detach())})", raw_options)
    return NonFiniteUpdate("the loss (its terms cancel: inf - inf)", ["ppo.learning_rate"])


class Rollout:
    """The learner's decisions of one rollout, linked to their successors (flat arrays).

    With move slots (``window``, the model's ``cockroach_env.window.WindowLayout``), ``obs`` holds each observation up
    to its move slots, and ``window`` the slots as indices: a few ``int16`` per move, not its one-hot rows.
    """

    def __init__(self, capacity: int, obs_size: int, num_actions: int, window=None):
        self.layout = window
        if window is not None:
            obs_size = window.prefix
        self.obs = np.zeros((capacity, obs_size), np.float32)
        self.window = np.zeros((capacity, *window.shape), WINDOW_DTYPE) if window is not None else None
        self.mask = np.zeros((capacity, num_actions), bool)
        self.action = np.zeros(capacity, np.int64)
        self.logprob = np.zeros(capacity, np.float32)
        self.value = np.zeros(capacity, np.float32)
        self.reward = np.zeros(capacity, np.float32)
        self.terminal = np.zeros(capacity, bool)
        self.successor = np.full(capacity, -1, np.int64)
        self.size = 0
        # ``[start, stop)`` of the decisions made at the same environment step, in time order.
        self.blocks: list[tuple[int, int]] = []

    def clear(self) -> None:
        self.size = 0
        self.blocks = []

    def append(self, obs, mask, action, logprob, value, window=None) -> np.ndarray:
        start, stop = self.size, self.size + len(action)
        self.obs[start:stop] = obs
        if self.window is not None:
            self.window[start:stop] = window
        self.mask[start:stop] = mask
        self.action[start:stop] = action
        self.logprob[start:stop] = logprob
        self.value[start:stop] = value
        self.reward[start:stop] = 0.0
        self.terminal[start:stop] = False
        self.successor[start:stop] = -1
        self.size = stop
        self.blocks.append((start, stop))
        return np.arange(start, stop)

    def carry_into(self, other: Rollout, pending: np.ndarray) -> None:
        """Copy the decisions still waiting for a successor into the (cleared) ``other``; renumber ``pending``."""
        waiting = pending[pending >= 0]
        if len(waiting) == 0:
            return
        new = other.append(
            self.obs[waiting],
            self.mask[waiting],
            self.action[waiting],
            self.logprob[waiting],
            self.value[waiting],
            self.window[waiting] if self.window is not None else None,
        )
        pending[pending >= 0] = new

    def observations(self, rows: np.ndarray) -> np.ndarray:
        """The observations of decisions ``rows`` as the env gives them (move slots one-hot)."""
        if self.window is None:
            return self.obs[rows]
        return np.concatenate([self.obs[rows], window_one_hot(self.window[rows], self.layout)], axis=1)


class Learner:
    """A network in training: its optimizer, its rollout, and each seat's decision still waiting for its successor."""

    def __init__(
        self,
        model: ActorCritic,
        learning_rate: float,
        capacity: int,
        batch: int,
        n_players: int,
        obs_size: int,
        num_actions: int,
    ):
        self.model = model
        self.learning_rate = learning_rate
        self.reset_optimizer()
        self.rollout = Rollout(capacity, obs_size, num_actions, model.window)
        self.spare = Rollout(capacity, obs_size, num_actions, model.window)
        # Rollout index of each seat's latest decision of this learner still waiting for its successor.
        self.pending = np.full((batch, n_players), -1, np.int64)
        # A frozen past copy of ``model`` that the update pulls towards (``ppo.magnet_coef``), or None.
        self.magnet: ActorCritic | None = None

    def reset_optimizer(self) -> None:
        """A fresh Adam state."""
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.learning_rate, eps=1e-5)

    def refresh_magnet(self) -> None:
        """The magnet becomes a frozen copy of the current network."""
        self.magnet = frozen_copy(self.model)

    def average_into_magnet(self, rate: float) -> None:
        """The magnet's weights move ``rate`` of the way to the current network's (an exponential moving average)."""
        with torch.no_grad():
            for magnet, current in zip(self.magnet.state_dict().values(), self.model.state_dict().values()):
                if magnet.is_floating_point():
                    magnet.lerp_(current, rate)
                else:
                    magnet.copy_(current)

    def restart(self) -> None:
        """The games restart: nothing is waiting any more."""
        self.pending[:] = -1
        self.rollout.clear()

    def act(self, step, rows: np.ndarray, seat: np.ndarray, sampler: torch.Generator, device) -> np.ndarray:
        """Sample the actions of ``rows`` (games where this learner is to act), record them and link them to their
        predecessors.
        """
        observation, window = self._inputs(step, rows)
        obs = torch.from_numpy(observation).to(device)
        mask = torch.from_numpy(step.action_mask[rows].astype(bool)).to(device)
        action, logprob, value = self.model.sample(
            obs, mask, sampler, window=torch.from_numpy(window).to(device) if window is not None else None
        )
        action = action.cpu().numpy()
        index = self.rollout.append(
            observation, mask.cpu().numpy(), action, logprob.cpu().numpy(), value.cpu().numpy(), window
        )
        previous = self.pending[rows, seat[rows]]
        linked = previous >= 0
        self.rollout.successor[previous[linked]] = index[linked]
        self.pending[rows, seat[rows]] = index
        return action

    def _inputs(self, step, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The observations of ``rows`` as the rollout keeps them: up to the move slots, and the slots as indices
        (``step.window``, or read from the one-hot slots where the step has none); the whole observations without move
        slots.
        """
        layout = self.model.window
        if layout is None:
            return step.observation[rows], None
        if step.window is not None:
            return step.observation[rows, : layout.prefix], step.window[rows]
        observation = step.observation[rows]
        return observation[:, : layout.prefix], window_from_observation(observation, layout)

    def finish(self, finished: np.ndarray, rewards: np.ndarray) -> None:
        """Games ``finished`` ended: each seat's last decision gets the seat's terminal reward."""
        waiting = self.pending[finished]
        has = waiting >= 0
        self.rollout.reward[waiting[has]] = rewards[finished][has]
        self.rollout.terminal[waiting[has]] = True
        self.pending[finished] = -1

    def carry_over(self) -> Rollout:
        """After a rollout: the decisions still waiting for a successor move into a fresh rollout; returns the finished
        one (for the update).
        """
        self.spare.clear()
        self.rollout.carry_into(self.spare, self.pending)
        self.rollout, self.spare = self.spare, self.rollout
        return self.spare


def window_rows(rollout: Rollout, rows: np.ndarray, device) -> torch.Tensor | None:
    """The move slots of decisions ``rows`` of ``rollout`` as indices on ``device``; None without move slots."""
    return torch.from_numpy(rollout.window[rows]).to(device) if rollout.window is not None else None


def gae(rollout: Rollout, ppo, bonus: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GAE over a rollout: ``(advantages, returns, rows to train)``.

    Walk the decisions backwards in time: each one's successor is later, so its
    advantage is already known. Decisions still waiting for their successor are not
    trained now; they are carried into the next rollout. ``bonus`` (one per decision) is
    added to the decisions' rewards (``magnet_bonus``).
    """
    size = rollout.size
    reward = rollout.reward[:size] if bonus is None else rollout.reward[:size] + bonus[:size]
    advantages = np.zeros(size, np.float32)
    complete = rollout.terminal[:size] | (rollout.successor[:size] >= 0)
    for start, stop in reversed(rollout.blocks):
        rows = slice(start, stop)
        successor = rollout.successor[rows]
        has_next = successor >= 0
        next_value = np.where(has_next, rollout.value[successor], 0.0)
        next_advantage = np.where(has_next, advantages[successor], 0.0)
        delta = reward[rows] + ppo.gamma * next_value - rollout.value[rows]
        advantages[rows] = np.where(complete[rows], delta + ppo.gamma * ppo.gae_lambda * next_advantage, 0.0)
    return advantages, advantages + rollout.value[:size], np.flatnonzero(complete)


def magnet_bonus(learner: Learner, rollout: Rollout, ppo, scale: float, device) -> np.ndarray | None:
    """With ``ppo.magnet_reward``: each decision's reward bonus ``-scale * magnet_coef * log(pi(a|s) / magnet(a|s))``
    (the reward transformation of R-NaD), from the log-probability the decision was sampled with; None otherwise.

    Its expectation over the policy's action is minus the KL divergence from the policy to the magnet at that
    decision, so the returns, and the values fitted to them, count the regularization of every later decision too:
    the regularized game's values, as in magnetic mirror descent over sequences.
    """
    if not (ppo.magnet_reward and ppo.magnet_coef):
        return None
    size = rollout.size
    if ppo.magnet == "uniform":
        magnet = -np.log(np.maximum(rollout.mask[:size].sum(1), 1)).astype(np.float32)
    elif learner.magnet is not None:
        with torch.no_grad():
            obs = torch.from_numpy(rollout.obs[:size]).to(device)
            mask = torch.from_numpy(rollout.mask[:size]).to(device)
            logits = learner.magnet(obs, mask, window_rows(rollout, np.arange(size), device))[0]
            action = torch.from_numpy(rollout.action[:size]).to(device)
            magnet = torch.log_softmax(logits, -1).gather(1, action[:, None]).squeeze(1).cpu().numpy()
    else:
        return None
    return (-scale * ppo.magnet_coef * (rollout.logprob[:size] - magnet)).astype(np.float32)


def ppo_update(
    learner: Learner,
    rollout: Rollout,
    advantages: np.ndarray,
    returns: np.ndarray,
    train_rows: np.ndarray,
    ppo,
    rng: np.random.Generator,
    device,
    scale: float = 1.0,
    regularize: bool = True,
) -> dict[str, float]:
    """Clipped PPO on a learner's complete decisions; returns the statistics of the last minibatch.

    The loss adds to PPO's the regularization of magnetic mirror descent where the config asks for it: the entropy
    bonus and the KL divergence to the magnet (``ppo.magnet``: a past copy or a moving average of the network, or the
    uniform policy), both times ``scale`` (``PPOConfig.regularization_scale``), and the KL divergence to the policy at
    the start of the update (``ppo.kl_coef``; divided by ``scale`` with ``ppo.anneal_step``). ``regularize=False`` (an
    exploiter) leaves out the KL terms, the scale and ``ppo.reward_units``.
    """
    model = learner.model
    model.train()
    b_obs, b_mask, b_action, b_logprob, b_value, b_advantage, b_return = (
        torch.from_numpy(column[train_rows]).to(device)
        for column in (rollout.obs, rollout.mask, rollout.action, rollout.logprob, rollout.value, advantages, returns)
    )
    b_inputs = model.network_inputs(b_obs, window_rows(rollout, train_rows, device))  # once per update (same values)
    magnet_log_policy, start_log_policy, b_mask = _loss_references(learner, b_inputs, b_mask, ppo, regularize)
    if not regularize:
        scale = 1.0
    proximal = ppo.kl_coef / scale if ppo.anneal_step else ppo.kl_coef  # (``anneal_step``: 1/eta follows 1/alpha)
    full_policy = magnet_log_policy is not None or start_log_policy is not None
    magnet_kl = start_kl = None
    n_train = len(train_rows)
    minibatch = max(1, math.ceil(n_train / ppo.num_minibatches))
    clipfracs = []
    for _epoch in range(ppo.update_epochs if n_train else 0):
        order = torch.from_numpy(rng.permutation(n_train)).to(device)
        for start in range(0, n_train, minibatch):
            mb = order[start : start + minibatch]  # (index_select: several times faster than indexing with a tensor)
            mb_inputs, mb_mask = b_inputs.index_select(0, mb), b_mask.index_select(0, mb)
            new_logprob, entropy, new_value, log_policy, policy = model.evaluate(
                mb_inputs, mb_mask, b_action.index_select(0, mb), full_policy=full_policy
            )
            log_ratio = new_logprob - b_logprob.index_select(0, mb)
            ratio = log_ratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - log_ratio).mean()
                clipfracs.append(((ratio - 1.0).abs() > ppo.clip_coef).float().mean().item())
            mb_advantage = b_advantage.index_select(0, mb)
            units = 1.0  # (``reward_units``: the regularization is divided by the advantages' scale too)
            if ppo.norm_adv and len(mb) > 1:
                spread = mb_advantage.std() + 1e-8
                mb_advantage = (mb_advantage - mb_advantage.mean()) / spread
                units = 1.0 / spread if ppo.reward_units and regularize else 1.0
            pg_loss = _clipped_policy_loss(mb_advantage, ratio, ppo.clip_coef)
            mb_value, mb_return = b_value.index_select(0, mb), b_return.index_select(0, mb)
            v_loss = _value_loss(new_value, mb_value, mb_return, ppo)
            entropy_loss = entropy.mean()
            loss = pg_loss - units * scale * ppo.ent_coef * entropy_loss + ppo.vf_coef * v_loss
            # KL(policy || reference) over the legal actions (illegal ones have probability 0)
            if magnet_log_policy is not None and not ppo.magnet_reward:
                magnet_kl = (policy * (log_policy - magnet_log_policy.index_select(0, mb))).sum(-1).mean()
                loss = loss + units * scale * ppo.magnet_coef * magnet_kl
            if start_log_policy is not None:
                start_kl = (policy * (log_policy - start_log_policy.index_select(0, mb))).sum(-1).mean()
                loss = loss + units * proximal * start_kl
            if not bool(torch.isfinite(loss)):
                raise _non_finite_loss(
                    ppo, pg_loss, v_loss, entropy_loss, magnet_kl, start_kl, units * scale, units * proximal
                )
            _gradient_step(learner, loss, ppo.max_grad_norm)
        if ppo.target_kl is not None and approx_kl.item() > ppo.target_kl:
            break
    check_finite_weights(model, ["ppo.learning_rate"])
    if not n_train:
        return {}
    return _update_statistics(
        pg_loss, v_loss, entropy_loss, approx_kl, clipfracs, b_return, b_value, magnet_kl, start_kl
    )


def _loss_references(
    learner: Learner, b_inputs: torch.Tensor, b_mask: torch.Tensor, ppo, regularize: bool
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor]:
    """The magnet's and the start policy's log-probabilities that the KL terms of the loss need (``None`` where
    the loss has no such term), and the mask the minibatches use: a bias over all actions once a KL term is on.
    """
    magnet_log_policy = start_log_policy = None
    if regularize and (ppo.magnet_coef or ppo.kl_coef):
        # the KL terms take the tensor path over all actions, with the mask as a bias, computed once
        b_bias = mask_bias(b_mask)
        magnet_log_policy, start_log_policy = _reference_policies(learner, b_inputs, b_mask, b_bias, ppo)
        if ppo.magnet_reward:  # the magnet is in the rewards (``magnet_bonus``), not in the loss
            magnet_log_policy = None
    if magnet_log_policy is not None or start_log_policy is not None:
        b_mask = b_bias
    return magnet_log_policy, start_log_policy, b_mask


def _clipped_policy_loss(advantage: torch.Tensor, ratio: torch.Tensor, clip_coef: float) -> torch.Tensor:
    """PPO's clipped surrogate objective, as a loss to minimize."""
    return torch.max(-advantage * ratio, -advantage * ratio.clamp(1 - clip_coef, 1 + clip_coef)).mean()


def _value_loss(new_value: torch.Tensor, mb_value: torch.Tensor, mb_return: torch.Tensor, ppo) -> torch.Tensor:
    """The critic's squared error, clipped around the rollout's values with ``ppo.clip_vloss``."""
    if ppo.clip_vloss:
        v_clipped = mb_value + (new_value - mb_value).clamp(-ppo.clip_coef, ppo.clip_coef)
        return 0.5 * torch.max((new_value - mb_return) ** 2, (v_clipped - mb_return) ** 2).mean()
    return 0.5 * ((new_value - mb_return) ** 2).mean()


def _non_finite_loss(
    ppo, pg_loss, v_loss, entropy_loss, magnet_kl, start_kl, regularization: float, proximal: float
) -> NonFiniteUpdate:
    """The error for a minibatch loss that is not finite, naming its first non-finite term.

    ``regularization`` and ``proximal`` are the factors of the entropy and magnet terms and of the start-policy
    term in the loss; ``magnet_kl`` and ``start_kl`` are ``None`` where the loss has no such term.
    """
    returns_options = (
        ["ppo.magnet_coef (with ppo.magnet_reward)"] if ppo.magnet_reward and ppo.magnet_coef else ["ppo.learning_rate"]
    )
    terms = {
        "pg_loss": (pg_loss, pg_loss, "", ["ppo.learning_rate", "ppo.clip_coef"]),
        "v_loss": (v_loss, ppo.vf_coef * v_loss, "ppo.vf_coef", returns_options),
        "entropy": (entropy_loss, regularization * ppo.ent_coef * entropy_loss, "ppo.ent_coef", ["ppo.learning_rate"]),
    }
    if magnet_kl is not None:
        kl = regularization * ppo.magnet_coef * magnet_kl
        terms["magnet_kl"] = (magnet_kl, kl, "ppo.magnet_coef", ["ppo.magnet_coef", "ppo.learning_rate"])
    if start_kl is not None:
        terms["start_kl"] = (start_kl, proximal * start_kl, "ppo.kl_coef", ["ppo.kl_coef", "ppo.learning_rate"])
    return _non_finite_term(terms)


def _gradient_step(learner: Learner, loss: torch.Tensor, max_grad_norm: float) -> None:
    """One optimizer step on ``loss``, with the gradient's norm clipped; a non-finite gradient is refused."""
    learner.optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(learner.model.parameters(), max_grad_norm)
    if not bool(torch.isfinite(norm)):
        raise NonFiniteUpdate(f"the gradient (norm {float(norm)})", ["ppo.learning_rate", "ppo.max_grad_norm"])
    learner.optimizer.step()


def _update_statistics(
    pg_loss, v_loss, entropy_loss, approx_kl, clipfracs: list[float], b_return, b_value, magnet_kl, start_kl
) -> dict[str, float]:
    """The last minibatch's statistics of an update, refused if one is not finite."""
    # (one sample has no variance: explained variance is undefined)
    var_y = b_return.var().item() if len(b_return) > 1 else 0.0
    stats = {
        "pg_loss": pg_loss.item(),
        "v_loss": v_loss.item(),
        "entropy": entropy_loss.item(),
        "approx_kl": approx_kl.item(),
        "clipfrac": float(np.mean(clipfracs)),
        "explained_variance": float("nan") if var_y == 0 else 1 - (b_return - b_value).var().item() / var_y,
        **({"magnet_kl": magnet_kl.item()} if magnet_kl is not None else {}),
        **({"start_kl": start_kl.item()} if start_kl is not None else {}),
    }
    for name, value in stats.items():
        # (explained variance is NaN, by definition, when the returns have no variance)
        if not math.isfinite(value) and not (name == "explained_variance" and var_y == 0):
            raise NonFiniteUpdate(f"the update's {name} ({value})", ["ppo.learning_rate", "ppo.clip_coef"])
    return stats


def _reference_policies(
    learner: Learner, inputs: torch.Tensor, mask: torch.Tensor, bias: torch.Tensor, ppo
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The log-policies the update's KL terms compare with, on the update's rows, once per update (not per minibatch
    and epoch): the magnet's (None without ``magnet_coef``) and the network's before the update (None without
    ``kl_coef``). ``bias`` is ``mask_bias(mask)``.
    """
    magnet = start = None
    with torch.no_grad():
        if ppo.magnet_coef and ppo.magnet == "uniform":
            legal = mask.sum(-1, keepdim=True).clamp(min=1).to(torch.float32)
            magnet = (-torch.log(legal)).expand(-1, mask.shape[1]).contiguous()
        elif ppo.magnet_coef and learner.magnet is not None:
            magnet = torch.log_softmax(learner.magnet.heads(inputs)[0] + bias, dim=-1)
        if ppo.kl_coef:
            start = torch.log_softmax(learner.model.heads(inputs)[0] + bias, dim=-1)
    return magnet, start


def frozen_copy(model: ActorCritic) -> ActorCritic:
    """A copy of ``model`` for inference only (snapshots, the magnet)."""
    frozen = copy.deepcopy(model)
    frozen.zero_grad(set_to_none=True)
    return frozen.eval().requires_grad_(False)
