"""The compiled passes of training.core.kernels against the tensor operations they replace: the masked log-probability
and entropy (values and gradients), and the card-counting inputs.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("numba")

from cockroach_env import GameConfig  # noqa: E402
from cockroach_env.batched import BatchedGames, random_legal_actions  # noqa: E402
from training.core import kernels  # noqa: E402
from training.core.model import ActorCritic, CardCounting, mask_bias  # noqa: E402


def _tensor_path(logits, legal, action):
    log_policy = torch.log_softmax(logits + mask_bias(legal), dim=-1)
    policy = torch.softmax(logits + mask_bias(legal), dim=-1)
    return log_policy.gather(1, action[:, None]).squeeze(1), -(policy * log_policy).sum(-1)


def _real_masks(num_players=4, rows=600, seed=0):
    """Legal-action masks and legal actions of real positions (offers with many legal moves, calls with two or
    three).
    """
    games = BatchedGames(GameConfig(num_players=num_players), batch_size=rows, seed=seed)
    rng = np.random.default_rng(seed)
    step = games.reset(seed=seed)
    masks = []
    for _ in range(6):
        masks.append(step.action_mask.astype(bool))
        step = games.step(random_legal_actions(step.action_mask, rng))
    mask = np.concatenate(masks)
    return torch.from_numpy(mask), torch.from_numpy(random_legal_actions(mask, rng)).long()


@pytest.mark.parametrize("scale", [0.01, 1.0, 30.0])
def test_values_and_gradients_match_the_tensor_path(scale):
    legal, action = _real_masks()
    assert legal.sum(1).min() >= 1 and legal.sum(1).max() > 50  # both kinds of rows
    generator = torch.Generator().manual_seed(1)
    logits = (scale * torch.randn(legal.shape, generator=generator)).requires_grad_()
    weights_lp, weights_h = torch.randn(len(action), generator=generator), torch.randn(len(action), generator=generator)

    logprob, entropy = kernels.masked_logprob_entropy(logits, legal, action)
    ((weights_lp * logprob).sum() + (weights_h * entropy).mean()).backward()
    fast = logprob.detach(), entropy.detach(), logits.grad.clone()
    logits.grad = None
    logprob, entropy = _tensor_path(logits, legal, action)
    ((weights_lp * logprob).sum() + (weights_h * entropy).mean()).backward()

    tolerance = 1e-5 * max(1.0, scale)
    torch.testing.assert_close(fast[0], logprob.detach(), atol=tolerance, rtol=1e-5)
    torch.testing.assert_close(fast[1], entropy.detach(), atol=tolerance, rtol=1e-5)
    torch.testing.assert_close(fast[2], logits.grad, atol=1e-6, rtol=1e-4)
    assert torch.all(fast[2][~legal] == 0)  # an illegal action's logit gets no gradient


def test_one_output_alone_backpropagates():
    legal, action = _real_masks(rows=50)
    logits = torch.randn(legal.shape, requires_grad=True)
    for pick in (0, 1):
        logits.grad = None
        kernels.masked_logprob_entropy(logits, legal, action)[pick].sum().backward()
        expected = logits.detach().clone().requires_grad_()
        _tensor_path(expected, legal, action)[pick].sum().backward()
        torch.testing.assert_close(logits.grad, expected.grad, atol=1e-6, rtol=1e-4)


def test_a_single_legal_action_has_probability_one_and_no_entropy():
    legal = torch.zeros(3, 219, dtype=torch.bool)
    legal[torch.arange(3), torch.tensor([0, 100, 218])] = True
    logprob, entropy = kernels.masked_logprob_entropy(torch.randn(3, 219), legal, torch.tensor([0, 100, 218]))
    assert torch.all(logprob.abs() < 1e-6) and torch.all(entropy.abs() < 1e-6)


def test_bad_inputs_are_refused_with_the_shapes_named():
    legal, action = _real_masks(rows=10)
    with pytest.raises(TypeError, match="boolean mask"):
        kernels.masked_logprob_entropy(torch.randn(legal.shape), legal.float(), action)
    with pytest.raises(ValueError, match=r"logits \(60, 219\), legal \(60, 219\), action \(59,\)"):
        kernels.masked_logprob_entropy(torch.randn(legal.shape), legal, action[:-1])


def test_evaluate_takes_the_compiled_path_and_agrees_with_the_full_policy_path():
    config = GameConfig(num_players=4)
    model = ActorCritic(config, [32, 32], card_counting=True, seed=0)
    legal, action = _real_masks(rows=100)
    games = BatchedGames(config, batch_size=len(action), seed=3)
    obs = torch.from_numpy(np.repeat(games.reset(seed=3).observation[:1], len(action), axis=0))
    inputs = model.network_inputs(obs)
    fast = model.evaluate(inputs, legal, action)
    full = model.evaluate(inputs, legal, action, full_policy=True)
    assert fast.log_policy is None and full.log_policy is not None
    for a, b in [(fast.logprob, full.logprob), (fast.entropy, full.entropy), (fast.value, full.value)]:
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(full.logprob, full.log_policy.gather(1, action[:, None]).squeeze(1))
    # the mask as a precomputed bias gives the same full policy
    biased = model.evaluate(inputs, mask_bias(legal), action, full_policy=True)
    torch.testing.assert_close(biased.policy, full.policy)


@pytest.mark.parametrize(
    "rules",
    [
        dict(num_players=2),
        dict(num_players=4),
        dict(num_players=6),
        dict(num_players=3, edition="royal"),
        dict(preset="mini"),
        dict(preset="mini-3p"),
    ],
    ids=["classic-2p", "classic-4p", "classic-6p", "royal-3p", "mini", "mini-3p"],
)
def test_card_counting_matches_its_tensor_form_on_real_observations(rules):
    config = GameConfig.from_options(**rules)
    counting = CardCounting(config)
    games = BatchedGames(config, batch_size=256, seed=5)
    rng = np.random.default_rng(5)
    step = games.reset(seed=5)
    for _ in range(40):  # openings, chains in play (seen and unseen cards), collections filling up
        obs = torch.from_numpy(step.observation.copy())
        fast = counting(obs)
        assert fast.shape == (len(obs), counting.size) and fast.dtype == torch.float32
        torch.testing.assert_close(fast, counting.tensor_forward(obs), atol=1e-6, rtol=1e-5)
        step = games.step(random_legal_actions(step.action_mask, rng))


def test_card_counting_keeps_gradients_through_the_tensor_form():
    config = GameConfig(num_players=4)
    obs = torch.from_numpy(BatchedGames(config, batch_size=8, seed=0).reset(seed=0).observation.copy()).requires_grad_()
    CardCounting(config)(obs).sum().backward()  # a differentiable input takes the tensor operations
    assert obs.grad is not None and obs.grad.abs().sum() > 0


def test_sampling_draws_what_the_tensor_form_draws_from_the_same_uniform_numbers():
    legal, _ = _real_masks(rows=2000)
    generator = torch.Generator().manual_seed(2)
    logits = 3.0 * torch.randn(legal.shape, generator=generator)
    draws = torch.rand(len(legal), generator=generator)
    action, logprob = kernels.sample_masked(logits, legal, draws)
    assert bool(legal[torch.arange(len(legal)), action].all())  # never an illegal action
    masked = logits + mask_bias(legal)
    cumulative = torch.softmax(masked, -1).cumsum(-1)
    expected = torch.searchsorted(cumulative, draws[:, None] * cumulative[:, -1:], right=True).squeeze(1)
    assert (action == expected).float().mean() >= 0.999  # (a draw on a boundary may round the other way)
    torch.testing.assert_close(
        logprob, torch.log_softmax(masked, -1).gather(1, action[:, None]).squeeze(1), atol=1e-5, rtol=1e-5
    )
    # the extremes of the draw, uniform over the legal actions: 0 takes the first legal action, just below 1 the last
    flat = torch.zeros(legal.shape)
    first = kernels.sample_masked(flat, legal, torch.zeros(len(legal)))[0]
    assert torch.equal(first, legal.float().argmax(1))
    last = kernels.sample_masked(flat, legal, torch.full((len(legal),), 1.0 - 2**-24))[0]
    assert torch.equal(last, (legal.shape[1] - 1) - legal.flip(1).float().argmax(1))


def test_model_sample_takes_the_compiled_draw_and_keeps_the_generator_in_step():
    config = GameConfig(num_players=4)
    model = ActorCritic(config, [32, 32], card_counting=True, seed=0)
    step = BatchedGames(config, batch_size=300, seed=1).reset(seed=1)
    obs, legal = torch.from_numpy(step.observation.copy()), torch.from_numpy(step.action_mask.astype(bool))
    fast = model.sample(obs, legal, torch.Generator().manual_seed(7))
    tensor = model.sample(obs, mask_bias(legal), torch.Generator().manual_seed(7))  # a float mask takes the tensor form
    assert (fast[0] == tensor[0]).float().mean() >= 0.99
    torch.testing.assert_close(fast[2], tensor[2])


def test_the_lookup_sum_and_its_gradient_are_embedding_bags():
    """``kernels.lookup_sum`` (the network's read of the move window) equals ``embedding_bag`` in sum mode, a row named
    several times counting as often in the gradient.
    """
    generator = torch.Generator().manual_seed(0)
    table = torch.randn(40, 7, generator=generator)
    rows = torch.randint(0, 40, (300, 9), generator=generator)
    rows[:, 1] = rows[:, 0]  # repeated rows
    weights = torch.randn(300, 7, generator=generator)
    grads = []
    for lookup in (kernels.lookup_sum, lambda t, r: torch.nn.functional.embedding_bag(r, t, mode="sum")):
        leaf = table.clone().requires_grad_(True)
        out = lookup(leaf, rows)
        (out * weights).sum().backward()
        grads.append((out.detach(), leaf.grad))
    torch.testing.assert_close(grads[0][0], grads[1][0], rtol=0, atol=1e-5)
    torch.testing.assert_close(grads[0][1], grads[1][1], rtol=1e-5, atol=1e-5)
