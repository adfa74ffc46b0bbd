"""Magnetic mirror descent's regime in PPO: the step tied to the temperature (``ppo.anneal_step``), the regularization
in reward units (``ppo.reward_units``), separate actor and critic networks (``model.separate_critic``) and the policy
average a run ships (``schedule.average_last``).
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from cockroach_env import GameConfig  # noqa: E402
from cockroach_env.batched import BatchedGames  # noqa: E402
from training.core import checkpoint as ckpt  # noqa: E402
from training.core.config import ConfigError, PPOConfig, load_config  # noqa: E402
from training.core.learner import Learner, ppo_update  # noqa: E402
from training.core.model import ActorCritic  # noqa: E402

from . import test_training  # noqa: E402
from .test_training import _metrics, _train  # noqa: E402

updates_trained = test_training.updates_trained
"""The fixture listing the PPO updates trained in this process."""

GAME = GameConfig(num_players=4)


@pytest.mark.parametrize(
    "item, message",
    [
        ("ppo.anneal_step=true", r"anneal_step=True is not allowed; expected false with anneal_regularization 1"),
        ("ppo.reward_units=true", r"reward_units=True is not allowed; expected false with norm_adv false"),
        ("schedule.average_last=-1", r"average_last=-1 is not allowed"),
        ("schedule.average_last=3", r"average_last=3 is not allowed; .* 0 with keep_agent_every 0"),
        ("model.separate_critic=1", r"separate_critic"),
    ],
)
def test_bad_settings_are_refused_naming_the_value(item, message):
    extra = ["ppo.norm_adv=false"] if item.startswith("ppo.reward_units") else []
    with pytest.raises(ConfigError, match=message):
        load_config(None, [item, *extra])


def test_the_step_follows_the_temperature_the_proximal_weight_its_inverse():
    ppo = PPOConfig(anneal_regularization=0.01, anneal_step=True)
    assert ppo.step_scale(0.0) == 1.0 and ppo.step_scale(0.5) == pytest.approx(0.1)
    assert ppo.step_scale(1.0) == pytest.approx(ppo.regularization_scale(1.0))
    assert PPOConfig(anneal_regularization=0.01).step_scale(0.5) == 1.0


def _learner_on_a_rollout(seed: int = 1) -> tuple[Learner, np.ndarray]:
    """A learner whose rollout holds the first decisions of 64 games (first legal action taken), and their count."""
    step = BatchedGames(GAME, 64, seed=5).reset()
    torch.manual_seed(seed)
    model = ActorCritic(GAME, [16])
    with torch.no_grad():  # a policy far from the uniform magnet
        model.policy_head.weight.copy_(torch.randn(model.policy_head.weight.shape))
    learner = Learner(model, 0.01, 4096, 64, GAME.num_players, model.observation_size, model.num_actions)
    obs, mask = step.observation, step.action_mask.astype(bool)
    action = np.array([np.flatnonzero(m)[-1] for m in mask])
    learner.rollout.append(obs, mask, action, np.zeros(len(obs), np.float32), np.zeros(len(obs), np.float32))
    return learner, len(obs)


def _updated_weights(coefficient: float, reward_scale: float, reward_units: bool, scale: float = 1.0, **options):
    """The policy head's weights after one update on ``_learner_on_a_rollout``'s rows, with advantages (and returns)
    spread over ``[-reward_scale, reward_scale]`` and the entropy, magnet and proximal weights all ``coefficient``.
    """
    learner, rows = _learner_on_a_rollout()
    advantages = reward_scale * np.linspace(-1, 1, rows, dtype=np.float32)
    settings = dict(num_minibatches=1, update_epochs=1, magnet="uniform", reward_units=reward_units)
    settings.update(magnet_coef=coefficient, ent_coef=coefficient, kl_coef=coefficient)
    ppo = PPOConfig(**{**settings, "vf_coef": 0.0, **options})  # (the values' loss would shift the gradient's clip)
    ppo_update(
        learner, learner.rollout, advantages, advantages, np.arange(rows), ppo, np.random.default_rng(0), "cpu", scale
    )
    return learner.model.policy_head.weight.detach().clone()


def test_in_reward_units_the_regularization_weighs_against_the_advantages_as_they_come():
    """With ``reward_units``, rewards ten times larger and ten times the coefficients make the same update (alpha is in
    the rewards' units, the step keeps the normalized size); without it the normalized advantages ignore the rewards'
    scale, so the regularization weighs ten times more.
    """
    for units in (True, False):
        small = _updated_weights(0.1, 1.0, units)
        large = _updated_weights(1.0, 10.0, units)
        assert torch.allclose(small, large, atol=1e-6) == units, units


def test_anneal_step_divides_the_proximal_weight_by_the_temperatures_factor():
    """With ``anneal_step`` an update at regularization factor 0.5 pulls to the start as ``kl_coef`` 2x would."""
    steps = {"update_epochs": 4, "scale": 0.5}  # (the pull to the start acts from the second step on)
    tied = _updated_weights(0.0, 1.0, False, anneal_step=True, anneal_regularization=0.1, kl_coef=0.4, **steps)
    doubled = _updated_weights(0.0, 1.0, False, kl_coef=0.8, **steps)
    plain = _updated_weights(0.0, 1.0, False, kl_coef=0.4, **steps)
    assert torch.allclose(tied, doubled, atol=1e-7) and not torch.allclose(tied, plain, atol=1e-5)


def test_a_separate_critic_leaves_the_policy_to_its_own_trunk_and_loads_like_the_shared_network():
    """``separate_critic``: the value loss moves no weight of the policy's trunk; the policy draws the same initial
    weights from a seed as the shared network; its checkpoint entry builds it again, and an entry without the key
    builds the shared network (checkpoints written before it load unchanged).
    """
    shared = ActorCritic(GAME, [16, 8], seed=3)
    separate = ActorCritic(GAME, [16, 8], seed=3, separate_critic=True)
    assert separate.spec["separate_critic"] is True and "separate_critic" not in shared.spec
    for name, value in shared.state_dict().items():
        assert torch.equal(separate.state_dict()[name], value), name
    obs = torch.from_numpy(BatchedGames(GAME, 8, seed=1).reset().observation)
    inputs = separate.network_inputs(obs)
    separate.heads(inputs)[1].sum().backward()
    assert all(p.grad is None or not p.grad.any() for p in [*separate.trunk.parameters(), separate.policy_head.weight])
    assert any(p.grad.abs().sum() > 0 for p in separate.critic_trunk.parameters())
    shared.heads(shared.network_inputs(obs))[1].sum().backward()
    assert any(p.grad.abs().sum() > 0 for p in shared.trunk.parameters())
    again = ActorCritic.from_spec(GAME, separate.spec)
    assert again.spec == separate.spec and again.critic_trunk is not None
    assert ActorCritic.from_spec(GAME, {"hidden_sizes": [16, 8], "activation": "tanh"}).critic_trunk is None


MMD = ["ppo.magnet_coef=0.5", "ppo.magnet=uniform", "ppo.kl_coef=0.2", "ppo.ent_coef=0.05"]
MMD += ["schedule.checkpoint_every=2"]
"""A magnetic-mirror-descent run of ``_train``'s tiny budget."""


def _run_tensors(tmp_path, name: str) -> dict:
    return ckpt.load_checkpoint(tmp_path / name / "checkpoint", kind="run").tensors


def _assert_same_runs(tmp_path, first: str, second: str) -> None:
    one, two = _run_tensors(tmp_path, first), _run_tensors(tmp_path, second)
    assert one.keys() == two.keys()
    for key, value in one.items():
        assert torch.equal(value, two[key]), key
    assert _metrics(tmp_path / first / "metrics.csv") == _metrics(tmp_path / second / "metrics.csv")


def _model_changed(tmp_path, first: str, second: str) -> bool:
    one, two = _run_tensors(tmp_path, first), _run_tensors(tmp_path, second)
    return any(k not in two or not torch.equal(v, two[k]) for k, v in one.items() if k.startswith("model."))


def test_a_run_with_a_separate_critic_in_reward_units_resumes_exactly_and_each_option_changes_it(
    tmp_path, updates_trained
):
    """Split at a checkpoint and resumed, a run with separate actor and critic and the regularization in reward units
    equals the whole run, with and without overlap; its checkpoints record both; without either the weights differ.
    """
    options = ["model.separate_critic=true", "ppo.reward_units=true"]
    for overlap in ("false", "true"):
        args = [a for s in [*MMD, *options, f"ppo.overlap={overlap}"] for a in ("--set", s)]
        assert _train(tmp_path, f"whole{overlap}", 4, *args) == 0
        assert _train(tmp_path, f"split{overlap}", 2, *args) == 0
        updates_trained.clear()
        assert _train(tmp_path, f"split{overlap}", 4, "--resume", *args) == 0
        assert updates_trained == [2, 3]
        _assert_same_runs(tmp_path, f"whole{overlap}", f"split{overlap}")
    whole = ckpt.load_checkpoint(tmp_path / "wholefalse" / "checkpoint", kind="run")
    assert whole.metadata["model"]["separate_critic"] is True
    assert any(k.startswith("model.critic_trunk.") for k in whole.tensors)
    assert whole.metadata["training_config"]["ppo"]["reward_units"] is True
    assert ckpt.load_agent(tmp_path / "wholefalse" / "final").model.critic_trunk is not None
    for left_out in options:
        name = left_out.split("=")[0].replace(".", "-")
        rest = [a for s in [*MMD, *[o for o in options if o != left_out]] for a in ("--set", s)]
        assert _train(tmp_path, name, 4, *rest) == 0
        assert _model_changed(tmp_path, "wholefalse", name), left_out


def test_the_step_tied_to_the_temperature_follows_the_runs_schedule_across_a_stop(
    tmp_path, monkeypatch, updates_trained
):
    """``anneal_step``: the logged learning rate decays with the temperature's factor; a run stopped by SIGTERM and
    resumed (same total) equals the run that never stopped; without it the weights differ.
    """
    import signal

    from training.algorithms import ppo

    tied = [*MMD, "ppo.anneal_regularization=0.01", "ppo.anneal_step=true"]
    args = [a for s in tied for a in ("--set", s)]
    assert _train(tmp_path, "whole", 4, *args) == 0
    rollout, calls = ppo.collect_rollout, []

    def signal_in_the_third_rollout(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            signal.raise_signal(signal.SIGTERM)
        return rollout(*a, **k)

    monkeypatch.setattr(ppo, "collect_rollout", signal_in_the_third_rollout)
    assert _train(tmp_path, "split", 4, *args) == 128 + signal.SIGTERM
    monkeypatch.undo()
    updates_trained.clear()
    assert _train(tmp_path, "split", 4, "--resume", *args) == 0
    assert updates_trained == [2, 3]
    _assert_same_runs(tmp_path, "whole", "split")
    with (tmp_path / "whole" / "metrics.csv").open() as rows:
        rates = [float(r["learning_rate"]) for r in csv.DictReader(rows)]
    first = rates[0]
    assert rates == pytest.approx([first * 0.01 ** (u / 4) for u in range(4)], rel=1e-5)
    assert ckpt.read_metadata(tmp_path / "whole" / "final")["training_config"]["ppo"]["anneal_step"] is True
    assert _train(tmp_path, "untied", 4, *args[:-2]) == 0
    assert _model_changed(tmp_path, "whole", "untied")


def test_the_policy_average_is_the_uniform_mixture_of_the_last_kept_agents(tmp_path):
    """``schedule.average_last``: ``final-average`` holds the last K kept agents with equal weights and loads as a
    mixture agent; ``final`` is still the last iterate.
    """
    sets = ["schedule.keep_agent_every=1", "schedule.average_last=3"]
    assert _train(tmp_path, "avg", 4, *[a for s in sets for a in ("--set", s)]) == 0
    run = tmp_path / "avg"
    average = ckpt.load_checkpoint(run / "final-average")
    assert average.metadata["kind"] == "mixture"
    members = average.metadata["mixture"]["members"]
    assert [m["name"] for m in members] == [f"update_{u:07d}" for u in (2, 3, 4)]
    assert [m["weight"] for m in members] == pytest.approx([1 / 3] * 3)
    kept = ckpt.load_checkpoint(run / "agents" / "update_0000002")
    for name, value in kept.group("model").items():
        assert torch.equal(average.tensors[f"member.0.model.{name}"], value)
    agent = ckpt.load_agent(run / "final-average")
    assert len(agent.members) == 3 and agent.weights == pytest.approx([1 / 3] * 3)
    assert ckpt.read_metadata(run / "final")["kind"] == "agent"
