"""The KL-adapted learning rate (sweeps/algorithms/kl_lr.py): rl_games' rule on the suite's
IMPALA and APPO learners."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from sweeps.algorithms.kl_lr import (
    FACTOR,
    KL_METRIC,
    MAX_SCALE,
    RETURN_SCALE_METRIC,
    SCALE_METRIC,
    KLAdaptiveLR,
    check_kl_target,
    check_return_scale,
    next_scale,
)
from sweeps.algorithms.training_return import note_training_return


def test_the_scale_falls_above_twice_the_target_and_rises_below_half_of_it():
    assert next_scale(1.0, kl=0.05, target=0.01, low=0.1, high=4.0) == pytest.approx(1 / FACTOR)
    assert next_scale(1.0, kl=0.001, target=0.01, low=0.1, high=4.0) == pytest.approx(FACTOR)
    assert next_scale(2.0, kl=0.01, target=0.01, low=0.1, high=4.0) == 2.0  # within the band
    assert next_scale(4.0, kl=0.0, target=0.01, low=0.1, high=4.0) == 4.0  # bounded above
    assert next_scale(0.1, kl=1.0, target=0.01, low=0.1, high=4.0) == 0.1  # and below


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"lr_kl_target": "small"}, "must be a number"),
        ({"lr_kl_target": -0.01}, "must be > 0"),
        ({"lr_kl_target": 0.01, "lr_kl_max_scale": 0.5}, "<= 1 <="),
        ({"lr_kl_target": 0.01, "lr_kl_min_scale": False}, "must be a number"),
    ],
)
def test_a_bad_kl_target_is_one_clear_error(settings, words):
    with pytest.raises(ValueError, match=words):
        check_kl_target(settings)
    assert check_kl_target({}) is None
    assert check_kl_target({"lr_kl_target": 0}) is None  # a search space's "none"
    assert check_kl_target({"lr_kl_target": 0.01}) == (0.01, 0.1, MAX_SCALE)


@pytest.mark.parametrize(
    "points",
    [0.5, [], [[5, 1.0], [15, 0.0]], [[15, 1.0], [5, 0.2]], [[5, True]], [[5, 1.0, 2]]],
)
def test_a_bad_scale_by_return_is_one_clear_error(points):
    with pytest.raises(ValueError, match="lr_scale_by_return.*scale > 0"):
        check_return_scale({"lr_scale_by_return": points})
    assert check_return_scale({}) is None
    assert check_return_scale({"lr_scale_by_return": [[-5, 1], [15, 0.2]]}) == (
        (-5.0, 1.0),
        (15.0, 0.2),
    )


def test_only_the_suites_vtrace_learners_take_learner_settings():
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.dqn import DQNConfig

    from sweeps.harness.cli import check_learner_settings

    check_learner_settings(APPOConfig().learners(learner_config_dict={"lr_kl_target": 0.01}))
    check_learner_settings(DQNConfig())  # nothing set: nothing to refuse
    with pytest.raises(ValueError, match="must be > 0"):
        check_learner_settings(APPOConfig().learners(learner_config_dict={"lr_kl_target": -1}))
    with pytest.raises(ValueError, match="IMPALA and APPO"):
        check_learner_settings(DQNConfig().learners(learner_config_dict={"lr_kl_target": 0.01}))
    with pytest.raises(ValueError, match="lr_scale_by_return"):
        bad = {"lr_scale_by_return": [[5, 1.0], [15, -1.0]]}
        check_learner_settings(APPOConfig().learners(learner_config_dict=bad))


class _Base:
    """Stands in for RLlib's torch learner: its own loss is 0, one optimizer at a fixed lr."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        return torch.zeros(())

    @staticmethod
    def _set_optimizer_lr(optimizer, lr):
        for group in optimizer.param_groups:
            group["lr"] = lr


class _Learner(KLAdaptiveLR, _Base):
    def __init__(self, lr):
        from ray.rllib.models.torch.torch_distributions import TorchCategorical

        module = SimpleNamespace(get_train_action_dist_cls=lambda: TorchCategorical)
        self.module = {"p": SimpleNamespace(unwrapped=lambda: module)}
        self.optimizer = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=lr)
        self._module_optimizers = {"p": ["p_default"]}
        self._named_optimizers = {"p_default": self.optimizer}
        self._optimizer_lr_schedules = {
            self.optimizer: SimpleNamespace(get_current_value=lambda: lr)
        }
        self.logged: dict = {}
        self.metrics = SimpleNamespace(log_value=lambda k, v, window: self.logged.update({k: v}))


def _step(learner, current_logits, behaviour_probs, settings):
    """One minibatch: two steps that took action 0 under ``behaviour_probs`` (a third step is
    masked out)."""
    from ray.rllib.core.columns import Columns

    batch = {
        Columns.ACTIONS: torch.tensor([0, 0, 1]),
        Columns.ACTION_LOGP: torch.log(torch.tensor([behaviour_probs[0]] * 2 + [1e-6])),
        Columns.LOSS_MASK: torch.tensor([True, True, False]),
    }
    fwd_out = {Columns.ACTION_DIST_INPUTS: torch.tensor([current_logits] * 3)}
    config = SimpleNamespace(learner_config_dict=settings)
    learner.compute_loss_for_module(module_id="p", config=config, batch=batch, fwd_out=fwd_out)


def test_a_policy_that_barely_moves_gets_a_larger_step_and_one_that_jumps_a_smaller():
    settings = {"lr_kl_target": 0.01}
    still = _Learner(lr=5e-4)
    for _ in range(2):  # current == behaviour: KL 0, twice up
        _step(still, [0.0, 0.0], [0.5, 0.5], settings)
    assert still.logged[("p", KL_METRIC)] == pytest.approx(0.0, abs=1e-7)
    assert still.logged[("p", SCALE_METRIC)] == pytest.approx(FACTOR**2)
    assert still.optimizer.param_groups[0]["lr"] == pytest.approx(5e-4 * FACTOR**2)

    jumped = _Learner(lr=5e-4)  # behaviour took action 0 at p=0.5; now p = e^2/(e^2+1) = 0.88
    _step(jumped, [2.0, 0.0], [0.5, 0.5], settings)
    ratio = math.exp(2) / (math.exp(2) + 1) / 0.5
    assert jumped.logged[("p", KL_METRIC)] == pytest.approx(ratio - 1 - math.log(ratio), rel=1e-5)
    assert jumped.optimizer.param_groups[0]["lr"] == pytest.approx(5e-4 / FACTOR)


def test_without_a_target_the_learning_rate_is_left_alone():
    learner = _Learner(lr=5e-4)
    _step(learner, [2.0, 0.0], [0.5, 0.5], {})
    assert learner.optimizer.param_groups[0]["lr"] == 5e-4 and not learner.logged


def test_by_return_the_rate_follows_the_best_training_return_handed_to_the_learner():
    settings = {"lr_scale_by_return": [[5, 1.0], [15, 0.2]]}
    learner = _Learner(lr=5e-4)
    _step(learner, [2.0, 0.0], [0.5, 0.5], settings)  # no game ended yet: the first scale
    assert learner.optimizer.param_groups[0]["lr"] == pytest.approx(5e-4)
    assert learner.logged == {("p", RETURN_SCALE_METRIC): 1.0}  # no KL target: no KL logged
    note_training_return(learner, 10.0)
    _step(learner, [2.0, 0.0], [0.5, 0.5], settings)
    assert learner.optimizer.param_groups[0]["lr"] == pytest.approx(5e-4 * 0.6)
    note_training_return(learner, -21.0)  # a worse iteration does not raise the rate again
    _step(learner, [2.0, 0.0], [0.5, 0.5], settings)
    assert learner.logged[("p", RETURN_SCALE_METRIC)] == pytest.approx(0.6)

    both = _Learner(lr=5e-4)  # with a KL target too, the step's rate is the product
    note_training_return(both, 20.0)
    _step(both, [0.0, 0.0], [0.5, 0.5], {**settings, "lr_kl_target": 0.01})  # KL 0: up
    assert both.optimizer.param_groups[0]["lr"] == pytest.approx(5e-4 * FACTOR * 0.2)
