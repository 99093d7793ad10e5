"""Adam's epsilon (sweeps/algorithms/adam_eps.py) on the suite's IMPALA and APPO learners."""

from __future__ import annotations

import gymnasium as gym
import pytest

from sweeps.algorithms.adam_eps import check_adam_eps


@pytest.mark.parametrize("eps", [0, -1e-5, "small", True, float("inf"), float("nan")])
def test_a_bad_eps_is_one_clear_error(eps):
    with pytest.raises(ValueError, match="adam_eps.*must be a number > 0"):
        check_adam_eps({"adam_eps": eps})
    assert check_adam_eps({}) is None and check_adam_eps({"adam_eps": 1e-5}) == 1e-5


@pytest.mark.parametrize("algo", ["IMPALA", "APPO"])
def test_the_learners_adam_takes_the_configured_eps_and_keeps_the_lr_schedule(algo):
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.impala import IMPALAConfig

    from sweeps.algorithms.pg_learner import learner_class as bootstrapped_learner

    def learner(settings):
        config = {"IMPALA": IMPALAConfig, "APPO": APPOConfig}[algo]()
        config.environment("CartPole-v1").training(lr=[[0, 5e-4], [100, 1e-4]])
        config.learners(learner_config_dict=settings)
        config.learners(learner_class=bootstrapped_learner(config))
        return config.build_learner(env=gym.make("CartPole-v1"))

    tuned = learner({"adam_eps": 1e-5}).get_optimizer()
    assert type(tuned).__name__ == "Adam" and tuned.param_groups[0]["eps"] == 1e-5
    assert float(tuned.param_groups[0]["lr"]) == pytest.approx(5e-4)  # the schedule's start
    assert learner({}).get_optimizer().param_groups[0]["eps"] == 1e-8  # RLlib's, torch's default


def test_only_the_suites_vtrace_learners_take_it():
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.dqn import DQNConfig

    from sweeps.harness.cli import check_learner_settings

    check_learner_settings(APPOConfig().learners(learner_config_dict={"adam_eps": 1e-5}))
    with pytest.raises(ValueError, match="adam_eps"):
        check_learner_settings(APPOConfig().learners(learner_config_dict={"adam_eps": 0}))
    with pytest.raises(ValueError, match="IMPALA and APPO"):
        check_learner_settings(DQNConfig().learners(learner_config_dict={"adam_eps": 1e-5}))
