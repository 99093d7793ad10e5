"""Rewards scaled for IMPALA's and APPO's loss (``sweeps/algorithms/reward_scale.py``): the loss
the suite's learner computes with ``reward_scale`` is its loss on the batch with its rewards
scaled, for both learners; a bad scale is refused before Ray starts."""

from __future__ import annotations

import pytest
import torch

from sweeps.algorithms.reward_scale import check_scale, scaled
from tests.test_appo_loss import _loss, _on_cartpole


@pytest.fixture(scope="module", params=["impala", "appo"])
def learner(request):
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.impala import IMPALAConfig

    config = IMPALAConfig() if request.param == "impala" else APPOConfig()
    return _on_cartpole(config.training(entropy_coeff=0.01))


def test_the_loss_sees_the_rewards_scaled_and_nothing_else(learner):
    from ray.rllib.core.columns import Columns

    learner, config, batch = learner
    loss = learner.compute_loss_for_module
    by_option = _loss(learner, config, batch, loss, reward_scale=0.1)
    by_hand = _loss(learner, config, scaled(batch, 0.1), loss)
    assert by_option == pytest.approx(by_hand, rel=1e-6)
    assert by_option != pytest.approx(_loss(learner, config, batch, loss), rel=1e-3)
    assert scaled(batch, 1.0) is batch  # the default passes the batch on untouched
    assert torch.equal(scaled(batch, 0.5)[Columns.REWARDS], batch[Columns.REWARDS] * 0.5)


@pytest.mark.parametrize("value", [0, -1.0, float("inf"), float("nan"), "0.1", True, None])
def test_a_scale_is_a_finite_number_above_0(value):
    with pytest.raises(ValueError, match="reward_scale"):
        check_scale({"reward_scale": value})
    assert check_scale({}) == 1.0 and check_scale({"reward_scale": 2}) == 2.0


def test_only_the_suites_vtrace_learners_take_it():
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.algorithms.impala import IMPALAConfig

    from sweeps.harness.cli import UsageError, apply_settings, check_learner_settings

    for config in (IMPALAConfig(), APPOConfig()):
        check_learner_settings(config.learners(learner_config_dict={"reward_scale": 0.1}))
    with pytest.raises(ValueError, match="IMPALA and APPO"):
        check_learner_settings(DQNConfig().learners(learner_config_dict={"reward_scale": 0.1}))
    with pytest.raises(UsageError, match="reward_scale"):
        apply_settings(IMPALAConfig(), [("learner_config_dict", {"reward_scale": 0})])
